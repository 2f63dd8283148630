"""JSDoc tags that say what TypeScript cannot: ``/** @minimum 0 @maximum 120 */ age: number``.

TypeScript has no type for "an integer from 0 to 120" or "an e-mail
address", so the tools that make JSON Schemas from TypeScript
(``typescript-json-schema``, ``ts-json-schema-generator``) read such limits
from JSDoc tags, and sources written for them carry the tags. The same tags
are read here, as those tools spell them, and become the JSON Schema keywords
they name: ``@minimum``, ``@maximum``, ``@exclusiveMinimum``,
``@exclusiveMaximum``, ``@multipleOf``, ``@minLength``, ``@maxLength``,
``@pattern``, ``@format``, ``@minItems``, ``@maxItems``, ``@uniqueItems``,
``@minProperties``, ``@maxProperties``, ``@title``, and ``@TJS-type
integer`` / ``@asType integer`` / ``@type integer`` for whole numbers. A
value is still a value of the TypeScript type: the tags only narrow it.
Annotations with nothing to enforce (``@default``, ``@example(s)``,
``@deprecated``) are dropped from the description; other tags (``@see``)
stay in it as text.
"""

from __future__ import annotations

import itertools
import json
import re

from grammar_compiler.errors import ConstraintError

_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)
_TEXTS = frozenset({"pattern", "format", "title"})
_TYPE_TAGS = frozenset({"TJS-type", "asType", "type"})
_DROPPED = frozenset({"default", "example", "examples", "deprecated"})
_TAG = re.compile(r"@([A-Za-z][\w-]*)")


def jsdoc_keywords(description: str | None) -> tuple[str | None, dict]:
    """The description without the tags read here, and the keywords they give.

    Raises:
        ConstraintError: a tag read here with a value it cannot take.
    """
    if not description or "@" not in description:
        return description, {}
    kept: list[str] = []
    keywords: dict = {}
    for piece in _pieces(description):
        found = _TAG.match(piece)
        name = found.group(1) if found else ""
        value = piece[found.end() :].strip() if found else ""
        if name in _DROPPED:
            continue
        if name in _NUMBERS | _COUNTS | _TEXTS | _TYPE_TAGS or name == "uniqueItems":
            keywords.update(_keyword(name, value))
        else:
            kept.append(piece)
    text = "\n".join(kept).strip()
    return text or None, keywords


def _pieces(description: str) -> list[str]:
    """The description's text before its first tag, then each tag with its value
    (a value runs to the next tag at the start of a word, across lines)."""
    starts = [m.start() for m in re.finditer(r"(?:(?<=\s)|^)@[A-Za-z]", description)]
    bounds = [0, *starts, len(description)]
    return [description[a:b].strip() for a, b in itertools.pairwise(bounds) if b > a]


def _keyword(name: str, value: str) -> dict:
    if name in _TYPE_TAGS:
        if value != "integer":
            return {}  # @type {string} is a JSDoc type annotation, not a limit
        return {"type": "integer"}
    if name == "uniqueItems":
        if value not in ("", "true", "false"):
            raise ConstraintError(f"JSDoc @uniqueItems takes true or false, got {value!r}")
        return {"uniqueItems": value != "false"}
    if name in _TEXTS:
        if not value:
            raise ConstraintError(f"JSDoc @{name} needs a value")
        if name == "pattern" and len(value) > 1 and value[0] == value[-1] == "/":
            value = value[1:-1]  # @pattern /^a+$/
        return {name: value}
    try:
        number = json.loads(value)
    except ValueError:
        number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ConstraintError(f"JSDoc @{name} takes a number, got {value!r}")
    if name in _COUNTS and (not isinstance(number, int) or number < 0):
        raise ConstraintError(f"JSDoc @{name} takes a whole number of at least 0, got {value!r}")
    return {name: number}
