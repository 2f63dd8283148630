r"""llguidance's grammar wrapper, for clients written against llguidance-based servers.

llguidance takes a ``TopLevelGrammar``: ``{"grammars": [g0, g1, ...]}`` where
each ``g`` holds a ``lark_grammar`` (llguidance's Lark dialect) or a
``json_schema``, and ``g0`` may reference the others (``@name``, ``@1``).
Exactly one grammar is accepted here, and it is compiled by the existing
compilers, so it means what the ``lark`` and ``json_schema`` grammar types
mean:

* ``{"grammars": [{"lark_grammar": "start: ..."}]}`` is read as Lark with
  start rule ``start`` (``compile_grammar(text, "lark")``);
* ``{"grammars": [{"json_schema": {...}}]}`` is ``compile_json_schema``
  in strict mode (keywords that cannot be enforced are refused). llguidance's
  ``x-guidance`` layout options are annotations to it and change nothing:
  output is xgrammar's ``", "`` / ``": "`` layout without free whitespace.

A grammar entry may also carry a ``name``, which is ignored. Everything else
is refused with the field that holds it: several grammars, other entry
fields (``nodes``, ``rx_nodes``, lexer options), a non-null ``max_tokens``,
and the llguidance extensions of Lark that have no Lark meaning —
``%json {...}``, ``%regex {...}``, ``@grammar`` references, special tokens
(``<|eot|>``, ``<[128010]>``), rule options (``name[stop="\n"]:``) and
``expr{m,n}`` counts (Lark writes ``expr~m..n``). ``%llguidance {}``, which
only marks a text as meant for llguidance, is dropped when its options are
empty. These are recognised where Lark's own parser stops, so a construct
is named only when it is what makes the grammar unreadable.

llguidance reads regexes with Rust's ``regex`` crate and lexes greedily;
here terminals are Python regexes read at the character level, exactly as
for the ``lark`` type (see ``lark_grammar``). The common syntax means the
same in both.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg import compile_grammar
from grammar_compiler.cfg_tree import lines
from grammar_compiler.errors import ConstraintError
from grammar_compiler.field_errors import FieldError, at_field
from grammar_compiler.json_schema import compile_json_schema

SOURCE_LANGUAGE = "llguidance"
_ENTRY_FIELDS = ("name", "lark_grammar", "json_schema")

# llguidance's Lark extensions, recognised at the place where Lark's parser stops.
_EXTENSIONS = (
    (re.compile(r"%json\b"), "inline JSON schemas (%json {...})"),
    (re.compile(r"%regex\b"), "structured regexes (%regex {...})"),
    (re.compile(r"%llguidance\b"), "grammar options (%llguidance {...})"),
    (re.compile(r"@"), "references to other grammars (@name)"),
    (re.compile(r"<"), "special tokens (<|name|>, <[id]>)"),
    (re.compile(r"\["), "rule options ([stop=...], [max_tokens=...], [lazy], [capture])"),
    (re.compile(r"\{\s*\d*\s*(?:,\s*\d*\s*)?\}"), "repetition counts expr{m,n} (Lark: expr~m..n)"),
    (re.compile(r"&"), "regex intersection (&)"),
)
_OPTIONS_DIRECTIVE = re.compile(r"^[ \t]*%llguidance[ \t]*", re.MULTILINE)


def llguidance_constraint(value: str | dict, field: str) -> CanonicalConstraint:
    """The constraint of an llguidance ``TopLevelGrammar`` (a dict or its JSON text).

    ``field`` is where the wrapper sits in the request (``grammar.value``);
    errors name the field below it that is wrong.

    Raises:
        FieldError: the wrapper is malformed, holds more or other than one
            grammar, or its grammar is invalid or uses an llguidance-only feature.
    """
    document = _load(value, field)
    grammars = document.get("grammars")
    if not isinstance(grammars, list) or not grammars:
        raise FieldError(f"{field}.grammars", "must be a list holding one grammar")
    if len(grammars) > 1:
        raise FieldError(
            f"{field}.grammars",
            f"holds {len(grammars)} grammars; exactly one is supported "
            "(references between grammars, @name, are llguidance-only)",
        )
    return replace(_grammar(grammars[0], f"{field}.grammars[0]"), source_language=SOURCE_LANGUAGE)


def _load(value: str | dict, field: str) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise FieldError(field, f"not valid JSON: {err.msg}", position=err.pos) from None
    if not isinstance(value, dict):
        raise FieldError(field, 'must be an llguidance grammar object {"grammars": [...]}')
    for key, item in value.items():
        if key == "max_tokens" and item is not None:
            raise FieldError(
                f"{field}.max_tokens", "is not supported; use the request's max_tokens"
            )
        if key not in ("grammars", "max_tokens"):
            raise FieldError(f"{field}.{key}", "is not supported (expected only grammars)")
    return value


def _grammar(entry: object, field: str) -> CanonicalConstraint:
    if not isinstance(entry, dict):
        raise FieldError(field, "must be an object with lark_grammar or json_schema")
    for key in entry:
        if key not in _ENTRY_FIELDS:
            raise FieldError(
                f"{field}.{key}", "is not supported (expected lark_grammar or json_schema)"
            )
    lark_text, schema = entry.get("lark_grammar"), entry.get("json_schema")
    if (lark_text is None) == (schema is None):
        raise FieldError(field, "must hold exactly one of lark_grammar and json_schema")
    if schema is not None:
        try:
            return compile_json_schema(schema)
        except ConstraintError as err:
            raise at_field(f"{field}.json_schema", err) from None
    if not isinstance(lark_text, str):
        raise FieldError(f"{field}.lark_grammar", "must be a string")
    return _lark(lark_text, f"{field}.lark_grammar")


def _lark(text: str, field: str) -> CanonicalConstraint:
    text = _without_empty_options(text, field)
    try:
        return compile_grammar(text, "lark")
    except ConstraintError as err:
        feature = _extension_at(text, err.line, err.column)
        if feature is None:
            raise at_field(field, err) from None
        raise FieldError(
            field,
            f"llguidance's {feature} cannot be translated; only plain Lark is accepted",
            line=err.line,
            column=err.column,
        ) from None


def _without_empty_options(text: str, field: str) -> str:
    """``text`` with each ``%llguidance {}`` blanked out (lines and columns kept)."""
    decoder = json.JSONDecoder()
    for directive in reversed(list(_OPTIONS_DIRECTIVE.finditer(text))):
        try:
            options, end = decoder.raw_decode(text, directive.end())
        except json.JSONDecodeError:
            continue  # left for Lark's parser to report, as an llguidance extension
        if options != {}:
            line = len(lines(text[: directive.start()]))
            raise FieldError(
                field, "llguidance grammar options (%llguidance {...}) are not supported", line=line
            )
        blank = re.sub(r"[^\r\n]", " ", text[directive.start() : end])
        text = text[: directive.start()] + blank + text[end:]
    return text


def _extension_at(text: str, line: int | None, column: int | None) -> str | None:
    """The llguidance extension that starts at 1-based ``line``/``column``, if one does."""
    all_lines = lines(text)
    if line is None or column is None or not 0 < line <= len(all_lines):
        return None
    rest = all_lines[line - 1][column - 1 :]
    return next((name for pattern, name in _EXTENSIONS if pattern.match(rest)), None)
