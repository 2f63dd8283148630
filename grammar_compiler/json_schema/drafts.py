"""The JSON Schema drafts this compiler reads: which one a document has, its rules, its metaschema.

Every draft in use is read by its own rules into the one normalized form:

* draft-04: ``id`` (a base URI, or ``#name`` an anchor), boolean
  ``exclusiveMinimum``/``exclusiveMaximum`` modifying ``minimum``/``maximum``,
  ``definitions``, ``dependencies``, ``items: [...]`` with ``additionalItems``,
  ``$ref`` hiding its siblings;
* draft-06 and draft-07: ``$id`` (``#name`` an anchor), numeric exclusive
  bounds, ``const``, ``contains``, ``propertyNames``, ``if`` (07), tuple
  ``items``, ``$ref`` hiding its siblings;
* 2019-09: ``$anchor``, ``$defs``, ``dependentRequired``/``-Schemas`` (and
  ``dependencies``, still read as draft-07 reads it), ``unevaluated*``,
  ``$recursiveRef``, tuple ``items``, ``$ref`` siblings apply;
* 2020-12: ``prefixItems``/``items``, ``$dynamicRef``, ``$ref`` siblings apply.

A keyword of another draft is not one of the document's: it constrains
nothing (the judge, that draft's validator, ignores it too) and is reported
as ignored. ``$schema`` is matched with or without ``#``, ``http``/``https``
and a trailing slash; ``http://json-schema.org/schema#`` (the latest) and
OpenAPI 3.1's dialect are 2020-12, hyper-schemas their draft, Snowplow's
self-describing schemas draft-04, draft-03 documents are rewritten as
draft-04 ones (``draft03``); any other metaschema is not fetched, and the
document is read as if it had no ``$schema`` (``unknown_metaschema``).

Without ``$schema`` a document is 2020-12, read leniently where the drafts
agree: the older spellings that 2020-12 cannot read select the draft that
can (``unmarked_draft``), so they are read by their own rules instead of
failing the metaschema check.

Two draft-03 leftovers are read by their old meaning, in the compiler and the
judge alike (``read_leftovers``); any other value malformed for its keyword is
a 400 naming it and its pointer, so the judge never meets one.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import regex
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from grammar_compiler import ecma_regex
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_judge import pointer
from grammar_compiler.json_schema.pointers import location
from grammar_compiler.json_schema.refs import schemas_in


@dataclass(frozen=True)
class Draft:
    """What differs between the drafts this module reads."""

    name: str
    validator_class: type[Validator]
    tuple_items: bool  # items: [...] and additionalItems (before 2020-12)
    ref_hides_siblings: bool  # $ref siblings are ignored (before 2019-09)
    legacy_ids: bool  # "#name" ids are anchors, ids next to $ref are ignored, no $anchor
    boolean_exclusive: bool  # exclusiveMinimum/Maximum are booleans modifying min/max (draft-04)
    id_keyword: str  # "id" in draft-04, "$id" later
    asserts_content: bool  # contentEncoding/-MediaType may be validated (draft-07 only)
    keywords: frozenset[str]
    """The keywords of this draft's validation (its validator's, and their modifiers)."""
    formats: frozenset[str]
    """The ``format`` names the draft defines (the others are the user's own annotations)."""

    @staticmethod
    def of(document: Any) -> Draft:
        declared = document.get("$schema") if isinstance(document, dict) else None
        if declared is None:
            return unmarked_draft(document)
        if not isinstance(declared, str):
            raise ConstraintError("$schema must be a string")
        return _DRAFTS.get(metaschema_key(declared)) or unmarked_draft(document)


def metaschema_key(declared: str) -> str:
    """A ``$schema`` URI without its scheme, ``#`` or trailing slash, lower-cased."""
    return re.sub(r"^https?://", "", declared.strip().lower()).rstrip("#/")


def unknown_metaschema(document: Any) -> str | None:
    """Why the document's ``$schema`` is not followed, when it names no draft
    this module knows: a vendor's or the user's own metaschema, which
    usually extends a draft with keywords of its own. Such a document is read
    by the draft its keywords are spelled in (``unmarked_draft``), the way
    validators read it without fetching the metaschema; a custom vocabulary
    that switches keywords off would make the output a subset, never invalid."""
    declared = document.get("$schema") if isinstance(document, dict) else None
    if not isinstance(declared, str) or metaschema_key(declared) in _DRAFTS:
        return None
    draft = unmarked_draft(document)
    return f"unknown metaschema (not fetched): the schema is read as {draft.name}"


def _draft(
    name: str,
    validator_class: type[Validator],
    formats: frozenset[str],
    *,
    modifiers: frozenset[str] = frozenset(),
) -> Draft:
    legacy = name in ("draft-04", "draft-06", "draft-07")
    return Draft(
        name=name,
        validator_class=validator_class,
        tuple_items=name != "2020-12",
        ref_hides_siblings=legacy,
        legacy_ids=legacy,
        boolean_exclusive=name == "draft-04",
        id_keyword="id" if name == "draft-04" else "$id",
        asserts_content=name == "draft-07",
        keywords=frozenset(validator_class.VALIDATORS) | modifiers,
        formats=formats,
    )


_IF = frozenset({"then", "else"})
# 2019-09 split dependencies into dependentRequired/-Schemas; the suite's compatibility
# tests (and users) still mean it, so it is read as draft-07 reads it, never dropped.
_LATER = frozenset({"then", "else", "minContains", "maxContains", "dependencies"})
_FORMATS_04 = frozenset({"date-time", "email", "hostname", "ipv4", "ipv6", "uri"})
_FORMATS_06 = _FORMATS_04 | {"uri-reference", "uri-template", "json-pointer"}
_FORMATS_07 = _FORMATS_06 | {
    *("date", "time", "iri", "iri-reference", "idn-email", "idn-hostname"),
    *("relative-json-pointer", "regex"),
}
_FORMATS_2019 = _FORMATS_07 | {"duration", "uuid"}
DRAFT_04 = _draft(
    "draft-04",
    jsonschema.Draft4Validator,
    _FORMATS_04,
    modifiers=frozenset({"exclusiveMinimum", "exclusiveMaximum"}),
)
DRAFT_06 = _draft("draft-06", jsonschema.Draft6Validator, _FORMATS_06)
DRAFT_07 = _draft("draft-07", jsonschema.Draft7Validator, _FORMATS_07, modifiers=_IF)
DRAFT_2019 = _draft("2019-09", jsonschema.Draft201909Validator, _FORMATS_2019, modifiers=_LATER)
DRAFT_2020 = _draft("2020-12", jsonschema.Draft202012Validator, _FORMATS_2019, modifiers=_LATER)
DRAFTS = (DRAFT_04, DRAFT_06, DRAFT_07, DRAFT_2019, DRAFT_2020)


def _uris() -> dict[str, Draft]:
    uris = {
        "json-schema.org/schema": DRAFT_2020,
        "spec.openapis.org/oas/3.1/dialect/base": DRAFT_2020,
        # Snowplow's self-describing schemas: draft-04 with a "self" annotation.
        "iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0": DRAFT_04,
    }
    for draft in DRAFTS:
        folder = draft.name if draft.name.startswith("draft") else f"draft/{draft.name}"
        for document in ("schema", "hyper-schema"):
            uris[f"json-schema.org/{folder}/{document}"] = draft
    return uris


_DRAFTS = _uris()

_NEWER_THAN_04 = frozenset().union(*(d.keywords for d in DRAFTS[1:])) - DRAFT_04.keywords | {
    "$id",
    "$defs",
    "$anchor",
}


def unmarked_draft(document: Any) -> Draft:
    """The draft of a document without ``$schema``: 2020-12 unless it is spelled the older way.

    * a boolean ``exclusiveMinimum``/``exclusiveMaximum`` (valid only in
      draft-04), or ``id`` without ``$id`` in a document using no keyword newer
      than draft-04: draft-04;
    * else ``items: [...]`` or ``additionalItems`` (which 2020-12 does not
      have): draft-07;
    * else 2020-12.

    With ``id`` next to newer keywords, ``id`` is taken for an annotation
    (2020-12 ignores it) rather than dropping the newer keywords.
    """
    old_id = newer = tuple_items = False
    for schema in schemas_in(document):
        if any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
            return DRAFT_04
        old_id = old_id or (isinstance(schema.get("id"), str) and "$id" not in schema)
        newer = newer or not _NEWER_THAN_04.isdisjoint(schema)
        tuple_items = tuple_items or isinstance(schema.get("items"), list)
        tuple_items = tuple_items or "additionalItems" in schema
    if old_id and not newer:
        return DRAFT_04
    return DRAFT_07 if tuple_items else DRAFT_2020


def read_leftovers(document: Any) -> Any:
    """The document with the draft-03 leftovers read by their old meaning (a copy if any).

    * ``"required": true`` inside a property's schema: the property is
      required (it joins the parent's ``required`` list); ``false`` is dropped.
    * ``"type": "any"`` (alone or in a list): any type, so no ``type``.

    Both are invalid in every later draft and would make the judge fail on
    every output (jsonschema raises on them), where their meaning is plain.
    """
    if not any(_leftovers(schema) for schema in schemas_in(document)):
        return document
    document = copy.deepcopy(document)
    for schema in schemas_in(document):
        properties = schema.get("properties")
        for name, sub in properties.items() if isinstance(properties, dict) else ():
            leftover = isinstance(sub, dict) and isinstance(sub.get("required"), bool)
            if leftover and sub.pop("required"):
                required = schema.setdefault("required", [])
                if isinstance(required, list) and name not in required:
                    required.append(name)
        declared = schema.get("type")
        if declared == "any" or (isinstance(declared, list) and "any" in declared):
            del schema["type"]
    return document


def _leftovers(schema: dict) -> bool:
    properties = schema.get("properties")
    declared = schema.get("type")
    return (
        (
            isinstance(properties, dict)
            and any(
                isinstance(s, dict) and isinstance(s.get("required"), bool)
                for s in properties.values()
            )
        )
        or declared == "any"
        or (isinstance(declared, list) and "any" in declared)
    )


_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_TYPE_ALIASES = {
    "int": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "bool": "boolean",
    "str": "string",
    "list": "array",
    "dict": "object",
    "map": "object",
}


def check_metaschema(document: Any, validator_class: type[Validator]) -> None:
    """The schema is checked against its draft's metaschema, regexes compiled by Python too.

    Violations that neither the compiler nor the judge minds are let through
    (``_harmless``): an empty or repeated ``required``/``enum``/``type`` list,
    draft-04's ``exclusiveMinimum`` without ``minimum``, descriptive
    annotations of the wrong type (``"description": 5``).
    """
    meta = validator_class(validator_class.META_SCHEMA, format_checker=REGEX_FORMAT_CHECKER)
    error = best_match(e for e in meta.iter_errors(document) if not _harmless(e))
    if error is None:
        return
    where = location(pointer(error.absolute_path))
    if error.validator == "format" and isinstance(error.instance, str):
        _explain_regex(error.instance, where)
    _explain_type(error, where)
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    raise ConstraintError(f"invalid JSON Schema at {where}: {message}")


REGEX_FORMAT_CHECKER = jsonschema.FormatChecker(formats=())


@REGEX_FORMAT_CHECKER.checks("regex", raises=regex.error)
def _reads_as_regex(instance: object) -> bool:
    """As the judge matches patterns (the ``regex`` package, ``bounded_regex``),
    which also reads the Unicode property escapes ``re`` does not; what
    ECMA-262 reads differently is refused later, by ``ecma_regex``."""
    return not isinstance(instance, str) or regex.compile(instance) is not None


_DESCRIPTIVE = frozenset(
    {"title", "description", "$comment", "examples", "default", "deprecated", "readOnly"}
    | {"writeOnly"}
)
"""Annotations neither the compiler nor the judge reads: a value of the wrong type
(``"examples": "x"``, ``"deprecated": "use v2"``) changes nothing."""
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


def _harmless(error: ValidationError) -> bool:
    path = list(error.absolute_path)
    keyword = path[-1] if path else None
    parent = path[-2] if len(path) > 1 else None
    if keyword in _DESCRIPTIVE and parent not in _SCHEMA_MAPS:  # not a property so named
        return True
    if error.validator in ("minItems", "uniqueItems") and isinstance(error.instance, list):
        return keyword in ("required", "enum", "type")
    # draft-04's metaschema: exclusiveMinimum/Maximum need minimum/maximum (alone they do nothing)
    return error.validator == "dependencies" and "exclusiveMinimum" in error.validator_value


def _explain_type(error: ValidationError, where: str) -> None:
    """A type name JSON Schema does not have, with the one it probably is."""
    path = [str(part) for part in error.absolute_path]
    names = error.instance if isinstance(error.instance, list) else [error.instance]
    at_type = path[-1:] == ["type"] and path[-2:-1] != ["properties"]
    in_type_list = path[-2:-1] == ["type"] and path[-3:-2] != ["properties"]
    if not (at_type or in_type_list):
        return
    unknown = next((n for n in names if isinstance(n, str) and n not in _TYPES), None)
    if unknown is None:
        return
    hint = _TYPE_ALIASES.get(unknown.lower())
    advice = f"; {unknown!r} is probably {hint!r}" if hint else ""
    raise ConstraintError(
        f"invalid JSON Schema at {where}: {unknown!r} is not a JSON Schema type "
        f"(one of {', '.join(_TYPES)}){advice}"
    )


def _explain_regex(pattern: str, where: str) -> None:
    """Python's re refused a regex; say why in terms of the dialects if this module can."""
    try:
        ecma_regex.parse_pattern(pattern)
    except ecma_regex.PatternError as err:
        raise ConstraintError(f"regex at {where}: {err.message}", position=err.position) from None
