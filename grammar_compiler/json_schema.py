"""JSON Schema constraints: a user's schema in, the schema xgrammar compiles out.

xgrammar 0.2.8 (``compile_json_schema(value, any_whitespace=False)``,
strict mode) quietly ignores much of JSON Schema, and where it ignores a
keyword it generates JSON the schema rejects. So the schema is not passed
through: it is normalized into a form whose every keyword xgrammar was
probed to enforce, and each keyword that cannot be expressed that way is
refused (``strict=True``) or compiled without and listed in
``not_enforced`` (``strict=False``), with its JSON pointer. Generation is
always a subset of what the schema allows (never a superset), checked in
the tests by sampling xgrammar's own output against the judge.

Enforcement, as probed on xgrammar 0.2.8 and handled here:

=========================== ========= =============================================
keyword                     status    how
=========================== ========= =============================================
type (string or list)       enforced  native
enum, const                 enforced  values filtered by jsonschema against every
                                      sibling keyword (xgrammar ignores siblings
                                      of enum), so siblings are enforced too;
                                      fractional numbers become ranges [v, v]
                                      (xgrammar spells 0.07 0.070000000000000007)
properties, required        enforced  native; a required name missing from
                                      properties is added with the schema that
                                      applies to it (xgrammar ignored it)
additionalProperties        enforced  native (bool or schema); when absent,
                                      xgrammar generates no undeclared property
                                      unless there are no properties at all
patternProperties           partly    declared names matching a pattern get its
                                      schema merged in; refused if undeclared
                                      names can be generated (xgrammar generates
                                      only ``{}`` for it)
propertyNames               enforced  string keywords, as for strings below
minProperties               partly    only if no undeclared names can be generated
                                      (xgrammar lets them repeat) or it is implied
maxProperties               enforced  native
dependentRequired, -Schemas not       xgrammar ignores them
dependencies                not       xgrammar ignores it
items, prefixItems          enforced  native; draft-07 ``items: [...]`` and
                                      ``additionalItems`` become prefixItems/items
minItems, maxItems          enforced  native (prefixItems cut to maxItems)
uniqueItems                 not       ignored by xgrammar (fine if maxItems <= 1)
contains, min/maxContains   not       ignored by xgrammar
unevaluatedProperties/Items partly    ``false`` closes the merged object/array;
                                      a schema only without composition
minLength, maxLength        enforced  as a pattern: xgrammar's own lets raw
                                      control characters (a tab) in
pattern                     enforced  rewritten (see ``ecma_regex``): search
                                      semantics made explicit, ECMA/Python
                                      differences and JSON escaping handled,
                                      xgrammar's ``(?:a+b)?`` and U+FFFF-spanning
                                      class bugs avoided
pattern/format + lengths    enforced  xgrammar ignores the lengths; folded into
                                      the regex (a subset when several parts vary)
format                      enforced  date, time, date-time, duration, email,
                                      hostname, ipv4, ipv6, uuid, uri,
                                      uri-reference, json-pointer,
                                      relative-json-pointer: own regexes, as
                                      xgrammar's allow 02-31, leading-zero IPv4
                                      octets and raw quotes (json-pointer)
format (others)             not       idn-*, iri*, uri-template, regex, custom
minimum, maximum,           enforced  native; integer bounds rounded (xgrammar
exclusiveMinimum/Maximum              refuses 0.5) and clamped to +-2**62
multipleOf                  partly    integer steps up to 1024, with no bounds or
                                      both bounds under 10000 apart (xgrammar
                                      ignores it otherwise); other bounded ranges
                                      listed as an enum up to 1000 multiples;
                                      non-integer steps refused
anyOf                       enforced  native; sibling keywords distributed into
                                      the branches (xgrammar ignored them)
oneOf                       partly    as anyOf when the branches are provably
                                      exclusive (types, const/enum, a required
                                      discriminator property, disjoint ranges);
                                      xgrammar treats it as anyOf
allOf                       partly    merged here (xgrammar ignores it); refused
                                      when two patterns/formats must both hold
not                         partly    only ``not: {type: ...}`` (type removed)
if, then, else              not       ignored by xgrammar
$ref, $defs, definitions    enforced  local refs (pointers, anchors, embedded
                                      $id) hoisted into $defs; recursion kept;
                                      remote refs refused; siblings merged
                                      (2019-09+) or reported (draft-07 ignores
                                      them); cycles that never produce a value
                                      are refused
$dynamicRef, $recursiveRef  not
annotations                 ignored   title, description, default, examples,
                                      deprecated, readOnly, ..., x-*
unknown keywords            not       constrain nothing per JSON Schema; refused
                                      as likely typos (``nullable`` too: OpenAPI)
=========================== ========= =============================================

Known gaps of xgrammar that remain: undeclared property names may be
spelled with escapes (``"\\u0061"``) that decode to a declared name; the
judge catches the result.

Limits: ``MAX_SCHEMA_BYTES``, ``MAX_DEPTH``, ``MAX_ENUM_VALUES``,
``MAX_PROPERTIES``, ``MAX_OPTIONAL_PROPERTIES(_TOTAL)``, and no part may need more
than ``shortest.MAX_SHORTEST_OUTPUT`` characters. The judge (``json_judge``)
validates the output with ``jsonschema`` against the original schema.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

import jsonschema
import referencing.exceptions
import xgrammar
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from grammar_compiler import ecma_regex
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_judge import make_judge, pointer, validator_for
from grammar_compiler.shortest import (
    IMPOSSIBLE,
    capped,
    over_limit,
    shortest_by_name,
    times,
    too_long,
)

MAX_SCHEMA_BYTES = 256 * 1024
MAX_DEPTH = 64
"""Nesting of JSON objects and arrays in the schema document."""
MAX_ENUM_VALUES = 10_000
"""JSON values (nested ones included) in one enum or const."""
MAX_PROPERTIES = 5_000
"""Entries of all ``properties`` objects together."""
MAX_OPTIONAL_PROPERTIES = 100
"""Properties one object may declare without requiring them: xgrammar compiles an object
in time growing with the square of them (on a 4096-token vocabulary: 100 take 0.5 s,
250 take 3 s; more on a larger vocabulary), on the decoder's one compile thread."""
MAX_OPTIONAL_PROPERTIES_TOTAL = 300
"""Optional properties of all objects together (40 objects of 50 took 4.5 s)."""
MAX_BRANCHES = 64
"""anyOf branches after distributing sibling keywords and allOf into them."""
MAX_MULTIPLE_OF = 1024
"""Largest integer step xgrammar enforces (probed: 1025 is ignored)."""
MULTIPLE_OF_RANGE = 10_000
"""With minimum and maximum, xgrammar enforces multipleOf only over fewer integers than this."""
MAX_LISTED_MULTIPLES = 1_000
"""Multiples in a wider range are listed as an enum up to this many."""
INTEGER_LIMIT = 2**62
"""xgrammar refuses integer bounds beyond int64; bounds are clamped to this."""


def compile_json_schema(schema: str | dict | bool, *, strict: bool = True) -> CanonicalConstraint:
    """Validate a JSON Schema and return the schema xgrammar compiles, with its judge.

    Args:
        schema: JSON text or the parsed schema (draft-06/07, 2019-09, 2020-12).
        strict: refuse keywords that cannot be enforced; with False they are
            compiled without and listed in ``not_enforced``.

    Raises:
        ConstraintError: invalid JSON or schema, over a limit, unresolvable or
            remote ``$ref``, no value possible, or (strict) a keyword that
            cannot be enforced.
    """
    document = _load(schema)
    _check_limits(document)
    draft = _Draft.of(document)
    _check_metaschema(document, draft.validator_class)
    compiler = _Compiler(document, draft, strict)
    try:
        canonical = compiler.compile()
    except RecursionError:  # chains of $ref or allOf deeper than Python's stack
        raise ConstraintError("schema nests too deeply through $ref or allOf") from None
    value = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    _confirm_with_xgrammar(value)
    return CanonicalConstraint(
        kind="json_schema",
        value=value,
        source_language="json_schema",
        judge=make_judge(document, draft.validator_class),
        not_enforced=tuple(compiler.not_enforced),
    )


# ---------------------------------------------------------------------------
# Loading and checking the document


def _load(schema: str | dict | bool) -> Any:
    if isinstance(schema, str):
        if len(schema.encode()) > MAX_SCHEMA_BYTES:
            raise ConstraintError(_too_large(len(schema.encode())))
        try:
            document = json.loads(
                schema,
                parse_constant=_refuse_constant,
                parse_float=_finite_float,
                object_pairs_hook=_unique_keys,
            )
        except json.JSONDecodeError as err:
            raise ConstraintError(
                f"schema is not valid JSON: {err.msg}",
                position=err.pos,
                line=err.lineno,
                column=err.colno,
            ) from None
        except RecursionError:
            raise ConstraintError(f"schema nests deeper than {MAX_DEPTH} levels") from None
    elif isinstance(schema, (dict, bool)):
        try:
            size = len(json.dumps(schema, allow_nan=False).encode())
        except (TypeError, ValueError) as err:
            raise ConstraintError(f"schema is not JSON data: {err}") from None
        if size > MAX_SCHEMA_BYTES:
            raise ConstraintError(_too_large(size))
        document = schema
    else:
        raise ConstraintError("a JSON Schema must be JSON text, an object or a boolean")
    if not isinstance(document, (dict, bool)):
        raise ConstraintError("a JSON Schema must be an object or a boolean")
    return document


def _too_large(size: int) -> str:
    return f"schema too large: {size} bytes (at most {MAX_SCHEMA_BYTES})"


def _refuse_constant(name: str) -> Any:
    raise ConstraintError(f"schema is not valid JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ConstraintError(f"schema number {text} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ConstraintError(f"schema has the key {key!r} twice in one object")
        result[key] = value
    return result


def _check_limits(document: Any) -> None:
    """Depth, enum/const sizes and property counts, without recursion (any depth is safe)."""
    properties = 0
    stack: list[tuple[Any, str, int]] = [(document, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise ConstraintError(f"schema nests deeper than {MAX_DEPTH} levels at {_where(where)}")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            child_where = f"{where}/{_escape_token(str(key))}"
            if isinstance(value, dict) and key in ("enum", "const"):
                count = _count_values(child if key == "enum" else [child])
                if count > MAX_ENUM_VALUES:
                    raise ConstraintError(
                        f"{key} at {_where(where)} holds {count} values (at most {MAX_ENUM_VALUES})"
                    )
            if isinstance(value, dict) and key == "properties" and isinstance(child, dict):
                properties += len(child)
                if properties > MAX_PROPERTIES:
                    raise ConstraintError(
                        f"schema declares more than {MAX_PROPERTIES} properties in all"
                    )
            stack.append((child, child_where, depth + 1))


def _count_values(values: Any) -> int:
    count, stack = 0, [values]
    while stack:
        value = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children if isinstance(value, (dict, list)) else ():
            count += 1
            stack.append(child)
    return count


def _escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _where(where: str) -> str:
    return where or "the root"


@dataclass(frozen=True)
class _Draft:
    """What differs between the drafts this module reads."""

    name: str
    validator_class: type[Validator]
    tuple_items: bool  # items: [...] and additionalItems (before 2020-12)
    ref_hides_siblings: bool  # $ref siblings are ignored (before 2019-09)

    @staticmethod
    def of(document: Any) -> _Draft:
        declared = document.get("$schema") if isinstance(document, dict) else None
        if declared is None:
            return _DRAFT_07 if _uses_tuple_items(document) else _DRAFT_2020
        if not isinstance(declared, str):
            raise ConstraintError("$schema must be a string")
        key = re.sub(r"^https?://", "", declared).rstrip("#")
        draft = _DRAFTS.get(key)
        if draft is None:
            raise ConstraintError(
                f"unsupported $schema {declared!r}: use draft-06, draft-07, 2019-09 or 2020-12"
            )
        return draft


_DRAFT_07 = _Draft("draft-07", jsonschema.Draft7Validator, True, True)
_DRAFT_2020 = _Draft("2020-12", jsonschema.Draft202012Validator, False, False)
_DRAFTS = {
    "json-schema.org/draft-06/schema": _Draft("draft-06", jsonschema.Draft6Validator, True, True),
    "json-schema.org/draft-07/schema": _DRAFT_07,
    "json-schema.org/draft/2019-09/schema": _Draft(
        "2019-09", jsonschema.Draft201909Validator, True, False
    ),
    "json-schema.org/draft/2020-12/schema": _DRAFT_2020,
}


def _uses_tuple_items(document: Any) -> bool:
    """A schema without $schema is read as 2020-12 unless it is written the draft-07 way."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("items"), list) or "additionalItems" in value:
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _check_metaschema(document: Any, validator_class: type[Validator]) -> None:
    """The schema is checked against its draft's metaschema, regexes compiled by Python too."""
    checker = jsonschema.FormatChecker(formats=("regex",))
    meta = validator_class(validator_class.META_SCHEMA, format_checker=checker)
    error = best_match(meta.iter_errors(document))
    if error is None:
        return
    where = _where(pointer(error.absolute_path))
    if error.validator == "format" and isinstance(error.instance, str):
        _explain_regex(error.instance, where)
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    raise ConstraintError(f"invalid JSON Schema at {where}: {message}")


def _explain_regex(pattern: str, where: str) -> None:
    """Python's re refused a regex; say why in terms of the dialects if this module can."""
    try:
        ecma_regex.parse_pattern(pattern)
    except ecma_regex.PatternError as err:
        raise ConstraintError(f"regex at {where}: {err.message}", position=err.position) from None


def _confirm_with_xgrammar(value: str) -> None:
    try:
        xgrammar.Grammar.from_json_schema(value, any_whitespace=False, strict_mode=True)
    except (RuntimeError, ValueError) as err:
        reason = re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", str(err).strip())
        raise ConstraintError(f"schema not accepted by xgrammar: {reason}") from None


# ---------------------------------------------------------------------------
# Subschemas and $ref resolution

_SCHEMA_KEYWORDS = (
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_MAP_KEYWORDS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)
_SCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _subschemas(schema: dict) -> Iterator[tuple[str, Any]]:
    """(pointer suffix, subschema) for every schema directly inside ``schema``."""
    for key in _SCHEMA_KEYWORDS:
        if key in schema:
            yield f"/{key}", schema[key]
    for key in _SCHEMA_MAP_KEYWORDS:
        for name, sub in schema.get(key, {}).items():
            if isinstance(sub, (dict, bool)):  # dependencies may also hold name lists
                yield f"/{key}/{_escape_token(name)}", sub
    for key in _SCHEMA_LIST_KEYWORDS:
        for index, sub in enumerate(schema.get(key, ())):
            yield f"/{key}/{index}", sub
    items = schema.get("items")
    if isinstance(items, list):
        for index, sub in enumerate(items):
            yield f"/items/{index}", sub
    elif items is not None:
        yield "/items", items


class _Index:
    """Where every subschema is, its base URI, and the targets of anchors and ids."""

    def __init__(self, document: Any, draft: _Draft) -> None:
        self.document = document
        self.bases: dict[str, str] = {}
        self.resources: dict[str, str] = {}
        self.anchors: dict[tuple[str, str], str] = {}
        self._walk(document, "", "", draft)

    def _walk(self, schema: Any, where: str, base: str, draft: _Draft) -> None:
        if not isinstance(schema, dict):
            self.bases[where] = base
            return
        identifier = schema.get("$id")
        if isinstance(identifier, str):
            if identifier.startswith("#") and draft.ref_hides_siblings:
                self.anchors[(base, identifier[1:])] = where
            else:
                base = urldefrag(_join(base, identifier))[0]
                self.resources[base] = where
        if where == "":
            self.resources.setdefault(base, "")
        anchor = schema.get("$anchor")
        if isinstance(anchor, str):
            self.anchors[(base, anchor)] = where
        self.bases[where] = base
        for suffix, sub in _subschemas(schema):
            self._walk(sub, where + suffix, base, draft)

    def resolve(self, ref: str, where: str) -> str:
        """The pointer of the subschema ``ref`` (found at ``where``) names."""
        base = self.bases.get(where, "")
        uri, fragment = urldefrag(_join(base, ref))
        if uri not in self.resources:
            raise _RemoteRef(ref)
        resource = self.resources[uri]
        if fragment and not fragment.startswith("/"):
            target = self.anchors.get((uri, fragment))
            if target is None:
                raise ConstraintError(
                    f"unresolvable $ref {ref!r} at {_where(where)}: no such anchor"
                )
            return target
        target = resource + unquote(fragment)
        self.lookup(target, ref, where)
        return target

    def lookup(self, target: str, ref: str = "", where: str = "") -> Any:
        value = self.document
        for token in target.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                raise ConstraintError(f"unresolvable $ref {ref!r} at {_where(where)}")
        if not isinstance(value, (dict, bool)):
            raise ConstraintError(f"$ref {ref!r} at {_where(where)} does not point to a schema")
        return value


def _join(base: str, ref: str) -> str:
    """``urljoin``, except that a fragment keeps any base (``urljoin`` drops ``urn:`` ones)."""
    return urldefrag(base)[0] + ref if ref.startswith("#") else urljoin(base, ref)


class _RemoteRef(Exception):
    def __init__(self, ref: str) -> None:
        super().__init__(ref)
        self.ref = ref


# ---------------------------------------------------------------------------
# Normalized schemas

KINDS = ("null", "boolean", "object", "array", "string", "integer", "fraction")
"""JSON value kinds; "number" is integer + fraction, so type intersection is set intersection."""
_TYPE_KINDS = {
    "null": {"null"},
    "boolean": {"boolean"},
    "object": {"object"},
    "array": {"array"},
    "string": {"string"},
    "integer": {"integer"},
    "number": {"integer", "fraction"},
}
_Bound = tuple[float, bool]  # (value, exclusive)


@dataclass(frozen=True)
class _Regex:
    node: ecma_regex.Node
    keyword: str  # "pattern" or "format"
    where: str

    def label(self) -> str:
        return f"{self.keyword} at {_where(self.where)}"


@dataclass(frozen=True)
class _Node:
    """A schema as the conjunction of what it requires, in the terms xgrammar can take.

    ``kinds`` None allows every kind. A node with ``any_of`` or ``ref`` or
    ``enum`` carries nothing else that constrains (merging distributes or
    filters). ``origins`` are the user's subschemas this node stands for;
    enum values are filtered with jsonschema against all of them.
    """

    where: str = ""
    never: str | None = None  # why no value matches
    kinds: frozenset[str] | None = None
    enum: tuple[Any, ...] | None = None
    any_of: tuple[_Node, ...] | None = None
    ref: str | None = None
    min_length: int = 0
    max_length: int | None = None
    regexes: tuple[_Regex, ...] = ()
    minimum: _Bound | None = None
    maximum: _Bound | None = None
    multiple_of: int | None = None
    prefix: tuple[_Node, ...] = ()
    items: _Node | None = None  # None: absent
    min_items: int = 0
    max_items: int | None = None
    properties: dict[str, _Node] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    additional: _Node | None = None  # None: absent
    pattern_properties: tuple[tuple[str, _Node], ...] = ()
    property_names: _Node | None = None
    min_properties: int = 0
    max_properties: int | None = None
    origins: tuple[tuple[Any, str], ...] = ()

    def constrains(self) -> bool:
        return self != _Node(where=self.where, origins=self.origins)

    def item_at(self, index: int) -> _Node | None:
        return self.prefix[index] if index < len(self.prefix) else self.items


_STRING_FIELDS = ("min_length", "max_length", "regexes")
_NUMBER_FIELDS = ("minimum", "maximum", "multiple_of")
_ARRAY_FIELDS = ("prefix", "items", "min_items", "max_items")
_OBJECT_FIELDS = (
    "properties",
    "required",
    "additional",
    "pattern_properties",
    "property_names",
    "min_properties",
    "max_properties",
)
_KIND_FIELDS = {
    "string": _STRING_FIELDS,
    "integer": _NUMBER_FIELDS,
    "fraction": _NUMBER_FIELDS,
    "array": _ARRAY_FIELDS,
    "object": _OBJECT_FIELDS,
}


def _never(reason: str, where: str) -> _Node:
    return _Node(where=where, never=reason, kinds=frozenset())


class _Unmergeable(Exception):
    """Two requirements that both hold but cannot be expressed together for xgrammar."""

    def __init__(self, keyword: str, why: str) -> None:
        super().__init__(why)
        self.keyword = keyword
        self.why = why


# ---------------------------------------------------------------------------
# Keyword classes

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$defs",
        "definitions",
        "$comment",
        "$vocabulary",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
        "then",  # without "if" they do nothing; with it, "if" is reported
        "else",
        "minContains",  # likewise with "contains"
        "maxContains",
    }
)
_NOT_ENFORCEABLE = {
    "if": "if/then/else is not supported by xgrammar",
    "dependentRequired": "xgrammar ignores it",
    "dependentSchemas": "xgrammar ignores it",
    "dependencies": "xgrammar ignores it",
    "contains": "xgrammar ignores contains/minContains/maxContains",
    "$dynamicRef": "dynamic references are not supported",
    "$recursiveRef": "recursive references are not supported; use $ref",
}
_COMPOSITION = ("allOf", "anyOf", "oneOf", "$ref", "not", "if", "dependentSchemas")


# ---------------------------------------------------------------------------
# Normalization


class _Compiler:
    """Normalizes one document into nodes, then has them rendered for xgrammar."""

    def __init__(self, document: Any, draft: _Draft, strict: bool) -> None:
        self.document = document
        self.draft = draft
        self.strict = strict
        self.index = _Index(document, draft)
        self.validator = validator_for(document, draft.validator_class)
        self.definitions: dict[str, _Node] = {}
        self._names: dict[str, str] = {}  # target pointer -> definition name
        self._in_progress: set[str] = set()
        self._not_enforced: dict[str, None] = {}
        self._checks: dict[int, tuple[frozenset[str] | None, Validator]] = {}

    @property
    def not_enforced(self) -> list[str]:
        return list(self._not_enforced)

    def compile(self) -> dict:
        root = self.node(self.document, "")
        _check_output_size(root, self.definitions)
        return _Renderer(self).render_document(root)

    # -- reporting -------------------------------------------------------

    def unenforceable(self, keyword: str, where: str, why: str = "") -> None:
        """Strict: refuse. Best effort: remember, and let the caller drop the keyword."""
        message = f"keyword '{keyword}' at {_where(where)} cannot be enforced during generation"
        if why:
            message += f": {why}"
        if self.strict:
            raise ConstraintError(message)
        self._not_enforced[f"{keyword} at {_where(where)}"] = None

    def _check_keywords(self, schema: dict, where: str) -> None:
        known = self.draft.validator_class.VALIDATORS
        filtered = "enum" in schema or "const" in schema
        for key, value in schema.items():
            if key in _ANNOTATIONS or key.startswith("x-"):
                continue
            if key == "nullable":
                if value is True:
                    self.unenforceable(
                        key,
                        where,
                        "it is OpenAPI 3.0, not JSON Schema, and would not allow null; "
                        'write "type": [..., "null"]',
                    )
            elif key not in known:
                self.unenforceable(
                    key,
                    where,
                    f"it is not a {self.draft.name} keyword, so it constrains nothing "
                    "(prefix custom keywords with 'x-')",
                )
            elif key in _NOT_ENFORCEABLE and not filtered:
                self.unenforceable(key, where, _NOT_ENFORCEABLE[key])

    # -- schemas ---------------------------------------------------------

    def node(self, schema: Any, where: str) -> _Node:
        if schema is True:
            return _Node(where=where)
        if schema is False:
            return _never(f"the schema at {_where(where)} is false", where)
        self._check_keywords(schema, where)
        if "$ref" in schema and self.draft.ref_hides_siblings:
            self._report_hidden_siblings(schema, where)
            return self._ref(schema["$ref"], where)
        if "enum" in schema or "const" in schema:
            return self._enum(schema, where)
        parts = [self._own(schema, where)]
        if "$ref" in schema:
            parts.append(self._ref(schema["$ref"], where))
        parts += [
            self.node(sub, f"{where}/allOf/{i}") for i, sub in enumerate(schema.get("allOf", ()))
        ]
        if "anyOf" in schema:
            parts.append(self._any_of(schema["anyOf"], where))
        if "oneOf" in schema:
            parts.append(self._one_of(schema["oneOf"], where))
        if "not" in schema:
            parts.append(self._not(schema["not"], where))
        result = parts[0]
        for part in parts[1:]:
            result = self.merge(result, part, where)
        return self._close_unevaluated(schema, result, where)

    def _report_hidden_siblings(self, schema: dict, where: str) -> None:
        for key in schema:
            if key != "$ref" and key in self.draft.validator_class.VALIDATORS:
                self.unenforceable(
                    key,
                    where,
                    f"{self.draft.name} ignores keywords next to $ref (wrap them in allOf)",
                )

    def _enum(self, schema: dict, where: str) -> _Node:
        """Allowed values, already checked against every other keyword of the schema."""
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        origins = ((schema, where),)
        kept = self.filter_values(values, origins, where)
        if not kept:
            return _never(f"no value of the enum/const at {_where(where)} is valid there", where)
        return _Node(where=where, enum=tuple(kept), origins=origins)

    def filter_values(
        self, values: Iterable[Any], origins: Iterable[tuple[Any, str]], where: str
    ) -> list:
        """The distinct values valid against every origin, by jsonschema."""
        origins = tuple(origins)
        kept, seen = [], set()
        for value in values:
            key = _value_key(value)
            if key not in seen:
                seen.add(key)
                if all(self._valid(value, schema, where) for schema, _ in origins):
                    kept.append(value)
        return kept

    def _valid(self, value: Any, schema: Any, where: str) -> bool:
        check = self._checks.get(id(schema))
        if check is None:
            check = self._checks[id(schema)] = self._check_for(schema)
        listed, validator = check
        if listed is not None and _value_key(value) not in listed:
            return False
        try:
            return validator.is_valid(value)
        except referencing.exceptions.Unresolvable as err:
            raise ConstraintError(f"unresolvable $ref near {_where(where)}: {err}") from None

    def _check_for(self, schema: Any) -> tuple[frozenset[str] | None, Validator]:
        """The values ``enum``/``const`` list (as ``_value_key``s) and a validator for the rest.

        jsonschema compares a value with every listed one, so filtering an
        enum against its own schema took time quadratic in its length (a
        minute for 10,000 values); a set lookup gives the same answer (keys
        are equal exactly when jsonschema calls the values equal).
        """
        lists = isinstance(schema, dict) and ("enum" in schema or "const" in schema)
        if not lists or ("$ref" in schema and self.draft.ref_hides_siblings):
            return None, self.validator.evolve(schema=schema)
        keys = [{_value_key(value) for value in schema.get("enum", ())}] if "enum" in schema else []
        if "const" in schema:
            keys.append({_value_key(schema["const"])})
        rest = {key: value for key, value in schema.items() if key not in ("enum", "const")}
        return frozenset(set.intersection(*keys)), self.validator.evolve(schema=rest)

    def _ref(self, ref: str, where: str) -> _Node:
        try:
            target = self.index.resolve(ref, where)
        except _RemoteRef:
            self.unenforceable(
                "$ref", where, f"remote reference {ref!r}; only references into this schema work"
            )
            return _Node(where=where)
        schema = self.index.lookup(target, ref, where)
        name = self._names.get(target)
        if name is None:
            name = self._names[target] = self._new_name(target)
            self._in_progress.add(name)
            self.definitions[name] = self.node(schema, target)
            self._in_progress.discard(name)
        return _Node(where=where, ref=name, origins=((schema, target),))

    def target_of(self, name: str) -> str:
        return next(target for target, known in self._names.items() if known == name)

    def _new_name(self, target: str) -> str:
        last = target.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        stem = re.sub(r"[^A-Za-z0-9_]", "_", unquote(last)) or "root"
        name, number = stem, 2
        while name in self._names.values():
            name, number = f"{stem}_{number}", number + 1
        return name

    def _any_of(self, branches: list, where: str) -> _Node:
        nodes = [self.node(sub, f"{where}/anyOf/{i}") for i, sub in enumerate(branches)]
        return self._union(nodes, where, (({"anyOf": branches}, where),))

    def _one_of(self, branches: list, where: str) -> _Node:
        nodes = [self.node(sub, f"{where}/oneOf/{i}") for i, sub in enumerate(branches)]
        overlapping = next(
            (
                (i, j)
                for i in range(len(nodes))
                for j in range(i + 1, len(nodes))
                if not self.disjoint(nodes[i], nodes[j])
            ),
            None,
        )
        if overlapping is not None:
            self.unenforceable(
                "oneOf",
                where,
                f"branches {overlapping[0]} and {overlapping[1]} may both match and xgrammar "
                "cannot exclude that (make them differ by type, const/enum, or a required "
                "property with distinct const values)",
            )
        return self._union(nodes, where, (({"oneOf": branches}, where),))

    def _union(self, nodes: Iterable[_Node], where: str, origins: tuple) -> _Node:
        flat: list[_Node] = []
        for node in nodes:
            if not node.never:
                flat.extend(node.any_of if node.any_of is not None else (node,))
        if not flat:
            return _never(f"no branch of the anyOf/oneOf at {_where(where)} can match", where)
        if len(flat) > MAX_BRANCHES:
            raise _Unmergeable("anyOf", f"it would need more than {MAX_BRANCHES} branches")
        if len(flat) == 1:
            return replace(flat[0], origins=_joined(flat[0].origins, origins))
        return _Node(where=where, any_of=tuple(flat), origins=origins)

    def _not(self, schema: Any, where: str) -> _Node:
        """Only ``not: {type: ...}`` (and trivial ``not``) is expressible: it removes kinds."""
        origins = (({"not": schema}, where),)
        if schema is False:
            return _Node(where=where)
        constraining = (
            {k for k in schema if k not in _ANNOTATIONS and not k.startswith("x-")}
            if isinstance(schema, dict)
            else set()
        )
        if schema is True or not constraining:
            return _never(f"the 'not' at {_where(where)} excludes every value", where)
        if constraining == {"type"}:
            kept = frozenset(KINDS) - _kinds(schema["type"])
            if "fraction" not in kept or "integer" in kept:
                return _Node(where=where, kinds=kept, origins=origins)
        self.unenforceable("not", where, "only 'not: {\"type\": ...}' can be enforced")
        return _Node(where=where)

    def _close_unevaluated(self, schema: dict, node: _Node, where: str) -> _Node:
        """``unevaluatedProperties/Items: false`` closes what the merged schema declares."""
        composed = any(key in schema for key in _COMPOSITION)
        for keyword in ("unevaluatedProperties", "unevaluatedItems"):
            value = schema.get(keyword, True)
            if value is True:
                continue
            if value is not False and composed:
                self.unenforceable(keyword, where, "a schema here works only without composition")
                continue
            rest = self.node(value, f"{where}/{keyword}")
            try:
                node = self._apply_unevaluated(node, keyword, rest)
            except _Unmergeable as problem:
                self.unenforceable(keyword, where, problem.why)
        return node

    def _apply_unevaluated(self, node: _Node, keyword: str, rest: _Node) -> _Node:
        if node.never or node.enum is not None:
            return node
        if node.any_of is not None:
            branches = tuple(self._apply_unevaluated(b, keyword, rest) for b in node.any_of)
            return replace(node, any_of=branches)
        if node.ref is not None:
            node = self.deref(node)
        if keyword == "unevaluatedProperties":
            if node.additional is None and not node.pattern_properties:
                return replace(node, additional=rest)
        elif node.items is None:
            return replace(node, items=rest)
        return node

    def _own(self, schema: dict, where: str) -> _Node:
        """The node for the keywords that constrain values directly (no composition)."""
        node = _Node(where=where, origins=((schema, where),))
        if "type" in schema:
            node = replace(node, kinds=_kinds(schema["type"]))
        node = self._own_string(schema, where, node)
        node = self._own_number(schema, where, node)
        node = self._own_array(schema, where, node)
        return self._own_object(schema, where, node)

    def _own_string(self, schema: dict, where: str, node: _Node) -> _Node:
        regexes = []
        if "pattern" in schema:
            try:
                regex = ecma_regex.parse_pattern(schema["pattern"])
            except ecma_regex.PatternError as err:
                at = f" (character {err.position})" if err.position is not None else ""
                raise ConstraintError(
                    f"pattern at {_where(where)}: {err.message}{at}", position=err.position
                ) from None
            regexes.append(_Regex(regex, "pattern", where))
        if "format" in schema:
            name = schema["format"]
            if name in ecma_regex.FORMATS:
                regexes.append(_Regex(ecma_regex.format_node(name), "format", where))
            else:
                self.unenforceable(
                    "format",
                    where,
                    f"format {name!r} is not supported (supported: "
                    f"{', '.join(sorted(ecma_regex.FORMATS))})",
                )
        return replace(
            node,
            min_length=int(schema.get("minLength", 0)),
            max_length=_optional_int(schema.get("maxLength")),
            regexes=tuple(regexes),
        )

    def _own_number(self, schema: dict, where: str, node: _Node) -> _Node:
        lower = _tighter_lower(
            _bound(schema, "minimum", False), _bound(schema, "exclusiveMinimum", True)
        )
        upper = _tighter_upper(
            _bound(schema, "maximum", False), _bound(schema, "exclusiveMaximum", True)
        )
        node = replace(node, minimum=lower, maximum=upper)
        step = schema.get("multipleOf")
        if step is None:
            return node
        if float(step).is_integer():
            return replace(node, multiple_of=int(step))
        integers_only = node.kinds is not None and "fraction" not in node.kinds
        if integers_only and (1 / step).is_integer():
            return node  # every integer is a multiple of 1/k
        self.unenforceable("multipleOf", where, "only integer steps can be enforced")
        return node

    def _own_array(self, schema: dict, where: str, node: _Node) -> _Node:
        raw_items = schema.get("items")
        items: _Node | None = None
        if self.draft.tuple_items and isinstance(raw_items, list):
            prefix = [self.node(sub, f"{where}/items/{i}") for i, sub in enumerate(raw_items)]
            if "additionalItems" in schema:
                items = self.node(schema["additionalItems"], f"{where}/additionalItems")
        else:
            prefix = [
                self.node(sub, f"{where}/prefixItems/{i}")
                for i, sub in enumerate(schema.get("prefixItems", ()))
            ]
            if raw_items is not None:
                items = self.node(raw_items, f"{where}/items")
        max_items = _optional_int(schema.get("maxItems"))
        if schema.get("uniqueItems") is True and (max_items is None or max_items > 1):
            self.unenforceable("uniqueItems", where, "xgrammar ignores it")
        return replace(
            node,
            prefix=tuple(prefix),
            items=items,
            min_items=int(schema.get("minItems", 0)),
            max_items=max_items,
        )

    def _own_object(self, schema: dict, where: str, node: _Node) -> _Node:
        patterns = tuple(
            (pattern, self.node(sub, f"{where}/patternProperties/{_escape_token(pattern)}"))
            for pattern, sub in schema.get("patternProperties", {}).items()
        )
        properties = {}
        for name, sub in schema.get("properties", {}).items():
            prop = self.node(sub, f"{where}/properties/{_escape_token(name)}")
            for pattern, pattern_node in patterns:
                if re.search(pattern, name):
                    prop = self.merge(prop, pattern_node, where)
            properties[name] = prop
        additional = None
        if "additionalProperties" in schema:
            additional = self.node(schema["additionalProperties"], f"{where}/additionalProperties")
        names = None
        if "propertyNames" in schema:
            names = self.node(schema["propertyNames"], f"{where}/propertyNames")
        return replace(
            node,
            properties=properties,
            required=frozenset(schema.get("required", ())),
            additional=additional,
            pattern_properties=patterns,
            property_names=names,
            min_properties=int(schema.get("minProperties", 0)),
            max_properties=_optional_int(schema.get("maxProperties")),
        )

    # -- combining -------------------------------------------------------

    def deref(self, node: _Node) -> _Node:
        """The definition a ref node names; impossible while that definition is being built."""
        seen = set()
        while node.ref is not None:
            if node.ref in self._in_progress or node.ref in seen:
                raise _Unmergeable(
                    "$ref",
                    f"the recursive $ref to {node.ref!r} cannot be combined with other keywords",
                )
            seen.add(node.ref)
            extra = node.origins
            node = self.definitions[node.ref]
            node = replace(node, origins=_joined(node.origins, extra))
        return node

    def merge(self, a: _Node, b: _Node, where: str) -> _Node:
        """Both must hold. Best effort keeps ``a`` where they cannot be expressed together."""
        try:
            return self._merge(a, b, where)
        except _Unmergeable as problem:
            self.unenforceable(problem.keyword, where, problem.why)
            return a

    def _merge(self, a: _Node, b: _Node, where: str) -> _Node:
        if a.never:
            return a
        if b.never:
            return b
        origins = _joined(a.origins, b.origins)
        if a.enum is not None or b.enum is not None:
            values = a.enum if a.enum is not None else b.enum
            kept = self.filter_values(values, origins, where)
            if not kept:
                return _never(f"no enum/const value at {_where(where)} satisfies the rest", where)
            return _Node(where=a.where, enum=tuple(kept), origins=origins)
        if not b.constrains():
            return replace(a, origins=origins)
        if not a.constrains():
            return replace(b, origins=origins)
        if a.ref is not None and a.ref == b.ref:
            return replace(a, origins=origins)
        if a.ref is not None or b.ref is not None:
            return self._merge(self.deref(a), self.deref(b), where)
        if a.any_of is not None or b.any_of is not None:
            return self._merge_branches(a, b, where)
        kinds = a.kinds if b.kinds is None else b.kinds if a.kinds is None else a.kinds & b.kinds
        return _Node(
            where=a.where,
            kinds=kinds,
            min_length=max(a.min_length, b.min_length),
            max_length=_min_optional(a.max_length, b.max_length),
            regexes=a.regexes + tuple(r for r in b.regexes if r not in a.regexes),
            minimum=_tighter_lower(a.minimum, b.minimum),
            maximum=_tighter_upper(a.maximum, b.maximum),
            multiple_of=_combine_steps(a.multiple_of, b.multiple_of),
            **self._merge_arrays(a, b, where),
            **self._merge_objects(a, b, where),
            origins=origins,
        )

    def _merge_branches(self, a: _Node, b: _Node, where: str) -> _Node:
        left = a.any_of if a.any_of is not None else (a,)
        right = b.any_of if b.any_of is not None else (b,)
        if len(left) * len(right) > MAX_BRANCHES:
            raise _Unmergeable(
                "anyOf", f"combining it with other keywords needs over {MAX_BRANCHES} branches"
            )
        branches = [self._merge(x, y, where) for x in left for y in right]
        return self._union(branches, where, _joined(a.origins, b.origins))

    def _merge_arrays(self, a: _Node, b: _Node, where: str) -> dict:
        prefix = tuple(
            self._merge_optional(a.item_at(i), b.item_at(i), where) or _Node(where=where)
            for i in range(max(len(a.prefix), len(b.prefix)))
        )
        return {
            "prefix": prefix,
            "items": self._merge_optional(a.items, b.items, where),
            "min_items": max(a.min_items, b.min_items),
            "max_items": _min_optional(a.max_items, b.max_items),
        }

    def _merge_objects(self, a: _Node, b: _Node, where: str) -> dict:
        properties = {}
        for name in [*a.properties, *(n for n in b.properties if n not in a.properties)]:
            left = a.properties.get(name) or self.undeclared(a, name)
            right = b.properties.get(name) or self.undeclared(b, name)
            properties[name] = self._merge(left, right, where)
        return {
            "properties": properties,
            "required": a.required | b.required,
            "additional": self._merge_optional(a.additional, b.additional, where),
            "pattern_properties": a.pattern_properties + b.pattern_properties,
            "property_names": self._merge_optional(a.property_names, b.property_names, where),
            "min_properties": max(a.min_properties, b.min_properties),
            "max_properties": _min_optional(a.max_properties, b.max_properties),
        }

    def _merge_optional(self, a: _Node | None, b: _Node | None, where: str) -> _Node | None:
        if a is None or b is None:
            return a or b
        return self._merge(a, b, where)

    def undeclared(self, node: _Node, name: str) -> _Node:
        """What a property not in ``properties`` must satisfy: its patterns', else additional."""
        matching = [sub for pattern, sub in node.pattern_properties if re.search(pattern, name)]
        if not matching:
            return node.additional or _Node(where=node.where)
        result = matching[0]
        for sub in matching[1:]:
            result = self.merge(result, sub, node.where)
        return result

    def disjoint(self, a: _Node, b: _Node) -> bool:
        """Whether no value can match both (False when unsure)."""
        try:
            a, b = self.deref(a), self.deref(b)
        except _Unmergeable:
            return False
        if a.never or b.never:
            return True
        for one, other in ((a, b), (b, a)):
            if one.any_of is not None:
                return all(self.disjoint(branch, other) for branch in one.any_of)
        for one, other in ((a, b), (b, a)):
            if one.enum is not None:
                return not self.filter_values(one.enum, other.origins, other.where)
        shared = _effective_kinds(a) & _effective_kinds(b)
        return all(self._disjoint_within(kind, a, b) for kind in shared)

    def _disjoint_within(self, kind: str, a: _Node, b: _Node) -> bool:
        if kind in ("integer", "fraction"):
            return _ranges_apart(a, b)
        if kind != "object":
            return False
        for name in a.required & b.required:
            left = a.properties.get(name) or self.undeclared(a, name)
            right = b.properties.get(name) or self.undeclared(b, name)
            if self.disjoint(left, right):
                return True
        return False


def _joined(a: tuple, b: tuple) -> tuple:
    """Origins of both, each subschema once."""
    present = {id(schema) for schema, _ in a}
    return a + tuple(origin for origin in b if id(origin[0]) not in present)


def _kinds(declared: str | list[str]) -> frozenset[str]:
    names = [declared] if isinstance(declared, str) else declared
    return frozenset(kind for name in names for kind in _TYPE_KINDS[name])


def _effective_kinds(node: _Node) -> frozenset[str]:
    return frozenset(KINDS) if node.kinds is None else node.kinds


def _ranges_apart(a: _Node, b: _Node) -> bool:
    def below(upper: _Bound | None, lower: _Bound | None) -> bool:
        if upper is None or lower is None:
            return False
        return upper[0] < lower[0] or (upper[0] == lower[0] and (upper[1] or lower[1]))

    return below(a.maximum, b.minimum) or below(b.maximum, a.minimum)


def _value_key(value: Any) -> str:
    """Equal JSON values (1 and 1.0 included, true and 1 not) get equal keys."""
    return json.dumps(_numbers_normalized(value), sort_keys=True)


def _numbers_normalized(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_numbers_normalized(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers_normalized(v) for k, v in value.items()}
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _min_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _bound(schema: dict, keyword: str, exclusive: bool) -> _Bound | None:
    value = schema.get(keyword)
    return None if value is None else (value, exclusive)


def _tighter_lower(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return a if a[1] else b


def _tighter_upper(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return a if a[1] else b


def _combine_steps(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return a or b
    return math.lcm(a, b)


# ---------------------------------------------------------------------------
# Output size and compile cost: no part may need more than MAX_SHORTEST_OUTPUT
# characters, no object more than MAX_OPTIONAL_PROPERTIES optional properties

# The shortest JSON text of each kind: null, true, 0, 0 (a lower bound is enough).
_KIND_SHORTEST = {"null": 4, "boolean": 4, "integer": 1, "fraction": 1}
_SEPARATOR = 2  # ", " and ": ", as xgrammar writes them without free whitespace


def _check_output_size(root: _Node, definitions: dict[str, _Node]) -> None:
    """Refuses a schema any part of which has no JSON text within the limit (``shortest``).

    ``minItems`` of required objects of required arrays multiply, and a
    forced one (constants) makes xgrammar build the whole text at once.
    """
    lengths = shortest_by_name(
        definitions,
        {name: list(_refs(node)) for name, node in definitions.items()},
        lambda name, known: _shortest(definitions[name], known, check=False),
    )
    optional = 0
    for node in (root, *definitions.values()):
        _shortest(node, lengths, check=True)
        optional += _optional_properties(node)
    if optional > MAX_OPTIONAL_PROPERTIES_TOTAL:
        raise ConstraintError(
            f"the schema has {optional} optional properties in all (at most "
            f"{MAX_OPTIONAL_PROPERTIES_TOTAL}); xgrammar's compile time grows with them: "
            "require some"
        )


def _optional_properties(node: _Node) -> int:
    """Optional properties of ``node`` and its parts; refuses an object with too many."""
    optional = len(node.properties.keys() - node.required)
    if optional > MAX_OPTIONAL_PROPERTIES:
        raise ConstraintError(
            f"the object at {_where(node.where)} has {optional} optional properties "
            f"(at most {MAX_OPTIONAL_PROPERTIES}); xgrammar's compile time grows with their "
            "square: require some, or group them in nested objects"
        )
    return optional + sum(_optional_properties(child) for child in _children(node))


def _refs(node: _Node) -> Iterator[str]:
    if node.ref is not None:
        yield node.ref
    for child in _children(node):
        yield from _refs(child)


def _children(node: _Node) -> Iterator[_Node]:
    yield from node.any_of or ()
    yield from node.prefix
    yield from node.properties.values()
    yield from (child for _, child in node.pattern_properties)
    for child in (node.items, node.additional, node.property_names):
        if child is not None:
            yield child


def _shortest(node: _Node, lengths: Mapping[str, float], *, check: bool) -> float:
    """Length of the shortest JSON text of ``node``; with ``check``, of every part too."""
    if check:
        for child in _children(node):
            _shortest(child, lengths, check=True)
        for regex in node.regexes:
            if over_limit(ecma_regex.longest_part(regex.node)):
                raise too_long(f"the {regex.label()}")
    if node.never is not None:
        length = IMPOSSIBLE
    elif node.enum is not None:
        length = min(len(json.dumps(value, ensure_ascii=False)) for value in node.enum)
    elif node.any_of is not None:
        length = min(_shortest(branch, lengths, check=False) for branch in node.any_of)
    elif node.ref is not None:
        length = lengths.get(node.ref, IMPOSSIBLE)
    else:
        kinds = KINDS if node.kinds is None else node.kinds
        length = min((_kind_shortest(kind, node, lengths) for kind in kinds), default=IMPOSSIBLE)
    if check and over_limit(length):
        raise too_long(f"the schema at {_where(node.where)}")
    return length


def _kind_shortest(kind: str, node: _Node, lengths: Mapping[str, float]) -> float:
    if kind in _KIND_SHORTEST:
        return _KIND_SHORTEST[kind]
    if kind == "string":
        patterns = (ecma_regex.length_bounds(regex.node)[0] for regex in node.regexes)
        return capped(2 + max(node.min_length, *patterns, 0))

    def value(child: _Node | None) -> float:
        return 1 if child is None else _shortest(child, lengths, check=False)

    if kind == "array":
        count = node.min_items
        fixed = sum(value(child) for child in node.prefix[:count])
        rest = times(count - len(node.prefix), value(node.items)) if count > len(node.prefix) else 0
        return capped(2 + fixed + rest + _SEPARATOR * max(count - 1, 0))
    members = (
        len(json.dumps(name, ensure_ascii=False))
        + _SEPARATOR
        + value(node.properties.get(name, node.additional))
        for name in node.required
    )
    return capped(2 + sum(members) + _SEPARATOR * max(len(node.required) - 1, 0))


# ---------------------------------------------------------------------------
# Rendering the normalized form as xgrammar's schema


class _Renderer:
    """Turns nodes into the JSON Schema subset xgrammar enforces, dropping what cannot exist.

    Rendering returns None for a node no value can match: an impossible
    optional property, item or branch is dropped, an impossible required one
    makes its parent impossible. Definitions whose recursion never produces
    a finite value count as impossible (a fixpoint before rendering), so
    xgrammar is never handed a grammar that cannot finish.
    """

    def __init__(self, compiler: _Compiler) -> None:
        self.compiler = compiler
        self.alive: set[str] = set()
        self._used: list[str] = []
        self.first_contradiction: str | None = None

    def render_document(self, root: _Node) -> dict:
        dead: set[str] = set()
        while True:
            self.alive = self._productive(set(self.compiler.definitions) - dead)
            self._used = []
            rendered = self.render(root)
            definitions = self._render_definitions()
            newly_dead = {name for name, value in definitions.items() if value is None}
            if not newly_dead:
                break
            dead |= newly_dead
        if rendered is None:
            reason = self.first_contradiction or "a $ref recursion never ends"
            raise ConstraintError(f"no JSON value satisfies the schema: {reason}")
        return {**rendered, "$defs": definitions} if definitions else rendered

    def _render_definitions(self) -> dict[str, Any]:
        definitions: dict[str, Any] = {}
        while self._used:
            name = self._used.pop()
            if name not in definitions:
                definitions[name] = self.render(self.compiler.definitions[name])
        return definitions

    def _productive(self, candidates: set[str]) -> set[str]:
        alive: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name in candidates - alive:
                if self._can_end(self.compiler.definitions[name], alive):
                    alive.add(name)
                    changed = True
        return alive

    def _can_end(self, node: _Node | None, alive: set[str]) -> bool:
        """Whether some finite value matches, if only ``alive`` definitions have one."""
        if node is None:
            return True
        if node.never:
            return False
        if node.ref is not None:
            return node.ref in alive
        if node.any_of is not None:
            return any(self._can_end(branch, alive) for branch in node.any_of)
        if node.enum is not None:
            return True
        for kind in _effective_kinds(node):
            if kind == "array":
                needed = (node.item_at(i) for i in range(node.min_items))
            elif kind == "object":
                needed = (
                    node.properties.get(name) or self.compiler.undeclared(node, name)
                    for name in node.required
                )
            else:
                return True
            if all(self._can_end(sub, alive) for sub in needed):
                return True
        return False

    def _dead(self, reason: str) -> None:
        if self.first_contradiction is None:
            self.first_contradiction = reason

    def render(self, node: _Node) -> dict | None:
        if node.never:
            self._dead(node.never)
            return None
        if node.ref is not None:
            if node.ref not in self.alive:
                target = self.compiler.target_of(node.ref)
                self._dead(f"the $ref recursion through {_where(target)} never ends")
                return None
            self._used.append(node.ref)
            return {"$ref": f"#/$defs/{node.ref}"}
        if node.any_of is not None:
            branches = [b for b in map(self.render, node.any_of) if b is not None]
            if not branches:
                return None
            return branches[0] if len(branches) == 1 else {"anyOf": branches}
        if node.enum is not None:
            return _enum_schema(node.enum)
        return self._render_kinds(node)

    def _render_kinds(self, node: _Node) -> dict | None:
        kinds = node.kinds if node.kinds is not None else _implied_kinds(node)
        if kinds is None:
            return {}
        types, keywords, alternatives = [], {}, []
        for kind in KINDS:
            if kind in kinds and kind != "fraction":
                rendered = self._kind(kind, node, with_fraction="fraction" in kinds)
                if rendered is None:
                    continue
                if rendered[0] == "enum":
                    alternatives.append(rendered[1])
                else:
                    types.append(rendered[0])
                    keywords.update(rendered[1])
        if types:
            alternatives.append({"type": types[0] if len(types) == 1 else types, **keywords})
        if not alternatives:
            self._dead(f"no type allowed at {_where(node.where)} can be satisfied")
            return None
        return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}

    def _kind(self, kind: str, node: _Node, *, with_fraction: bool) -> tuple[str, dict] | None:
        if kind in ("null", "boolean"):
            return kind, {}
        if kind == "integer":
            return self._number(node, with_fraction=with_fraction)
        render = {"string": self._string, "array": self._array, "object": self._object}[kind]
        keywords = render(node)
        return None if keywords is None else (kind, keywords)

    def _string(self, node: _Node) -> dict | None:
        low, high = node.min_length, node.max_length
        if high is not None and low > high:
            self._dead(f"minLength {low} > maxLength {high} at {_where(node.where)}")
            return None
        if not node.regexes:
            if not low and high is None:
                return {}
            return {"pattern": ecma_regex.to_xgrammar(ecma_regex.any_string(low, high))}
        regex = node.regexes[0]
        for other in node.regexes[1:]:
            self.compiler.unenforceable(
                other.keyword,
                other.where,
                f"it must hold together with the {regex.label()}, and xgrammar takes one regex",
            )
        bounded = ecma_regex.restrict_length(regex.node, low, high)
        if bounded is None:
            shortest, longest = ecma_regex.length_bounds(regex.node)
            if max(shortest, low) > min(_cap(longest), _cap(high)):
                self._dead(f"no string of the allowed lengths matches the {regex.label()}")
                return None
            self.compiler.unenforceable(
                "minLength" if low else "maxLength",
                node.where,
                f"it cannot be folded into the {regex.label()}",
            )
            bounded = regex.node
        return {"pattern": ecma_regex.to_xgrammar(bounded)}

    def _number(self, node: _Node, *, with_fraction: bool) -> tuple[str, Any] | None:
        """("integer" or "number", keywords), or ("enum", schema) for listed multiples."""
        if not with_fraction or node.multiple_of is not None:
            return self._integer(node)
        if node.minimum and node.maximum and not _ranges_overlap(node.minimum, node.maximum):
            self._dead(f"the number range at {_where(node.where)} is empty")
            return None
        keywords = {}
        for bound, inclusive, exclusive in (
            (node.minimum, "minimum", "exclusiveMinimum"),
            (node.maximum, "maximum", "exclusiveMaximum"),
        ):
            if bound is not None:
                keywords[exclusive if bound[1] else inclusive] = bound[0]
        return "number", keywords

    def _integer(self, node: _Node) -> tuple[str, Any] | None:
        low = None if node.minimum is None else _integer_above(*node.minimum)
        high = None if node.maximum is None else _integer_below(*node.maximum)
        if low is not None and high is not None and low > high:
            self._dead(f"no integer lies in the range at {_where(node.where)}")
            return None
        if (low or 0) > INTEGER_LIMIT or (high or 0) < -INTEGER_LIMIT:
            self.compiler.unenforceable(
                "minimum" if (low or 0) > INTEGER_LIMIT else "maximum",
                node.where,
                f"xgrammar takes integer bounds within +-{INTEGER_LIMIT}",
            )
            low = high = None
        keywords: dict[str, Any] = {}
        if low is not None:
            keywords["minimum"] = max(low, -INTEGER_LIMIT)  # clamped: still a subset
        if high is not None:
            keywords["maximum"] = min(high, INTEGER_LIMIT)
        step = node.multiple_of
        if step is None or step == 1:
            return "integer", keywords
        if _native_multiple(step, low, high):
            return "integer", {**keywords, "multipleOf": step}
        if low is not None and high is not None:
            multiples = range(-(-low // step) * step, high + 1, step)
            if not multiples:
                self._dead(f"no multiple of {step} lies in the range at {_where(node.where)}")
                return None
            if len(multiples) <= MAX_LISTED_MULTIPLES:
                return "enum", {"enum": list(multiples)}
        self.compiler.unenforceable(
            "multipleOf",
            node.where,
            f"xgrammar enforces steps up to {MAX_MULTIPLE_OF} with no bounds or with both "
            f"bounds less than {MULTIPLE_OF_RANGE} apart (or up to {MAX_LISTED_MULTIPLES} "
            "multiples in range, listed)",
        )
        return "integer", keywords

    def _array(self, node: _Node) -> dict | None:
        prefix: list[Any] = []
        items: Any = None
        for item in node.prefix:
            rendered = self.render(item)
            if rendered is None:
                items = False  # no array can reach this position
                break
            prefix.append(rendered)
        if items is None and node.items is not None:
            rendered = self.render(node.items)
            items = False if rendered is None else rendered
        max_items = _min_optional(node.max_items, len(prefix) if items is False else None)
        if max_items is not None and max_items < len(prefix):
            prefix, items = prefix[:max_items], False
        if max_items is not None and node.min_items > max_items:
            self._dead(f"the array at {_where(node.where)} cannot have {node.min_items} items")
            return None
        keywords: dict[str, Any] = {}
        if prefix:
            keywords["prefixItems"] = prefix
        if items is not None:
            keywords["items"] = items
        if node.min_items:
            keywords["minItems"] = node.min_items
        if max_items is not None:
            keywords["maxItems"] = max_items
        return keywords

    def _object(self, node: _Node) -> dict | None:
        name_ok = self._name_check(node)
        properties: dict[str, Any] = {}
        required: list[str] = []
        forbidden = False  # a declared name no value can have, which must not come back as extra
        for name in [*node.properties, *sorted(node.required - set(node.properties))]:
            sub = node.properties.get(name) or self.compiler.undeclared(node, name)
            rendered = self.render(sub) if name_ok(name) else None
            if rendered is None:
                if name in node.required:
                    self._dead(f"required property {name!r} at {_where(node.where)} cannot exist")
                    return None
                forbidden = forbidden or name_ok(name)
                continue
            properties[name] = rendered
            if name in node.required:
                required.append(name)
        keywords: dict[str, Any] = {}
        if properties:
            keywords["properties"] = properties
        if required:
            keywords["required"] = required
        additional = self._additional(node)
        if additional is not None:
            keywords["additionalProperties"] = additional
        open_ended = additional is not False and (additional is not None or not properties)
        if open_ended and forbidden:  # xgrammar could write the forbidden name as an extra key
            keywords["additionalProperties"] = False
            open_ended = False
        if open_ended and node.property_names is not None:
            names = self.render(_as_string(node.property_names))
            if names is None:
                keywords["additionalProperties"] = False
                open_ended = False
            else:
                keywords["propertyNames"] = names
        if node.pattern_properties and open_ended:
            self.compiler.unenforceable(
                "patternProperties", node.where, "undeclared property names can be generated"
            )
        most = None if open_ended else len(properties)
        return self._property_counts(node, keywords, len(required), most)

    def _additional(self, node: _Node) -> Any:
        if node.additional is None:
            return None
        rendered = self.render(node.additional)
        if rendered is None:
            return False
        return True if rendered == {} else rendered

    def _name_check(self, node: _Node):
        if node.property_names is None:
            return lambda name: True
        origins = node.property_names.origins
        return lambda name: bool(self.compiler.filter_values([name], origins, node.where))

    def _property_counts(
        self, node: _Node, keywords: dict, required: int, most: int | None
    ) -> dict | None:
        low, high = node.min_properties, node.max_properties
        if (high is not None and high < required) or (most is not None and low > most):
            self._dead(f"the property counts at {_where(node.where)} cannot be met")
            return None
        if low > required:
            if most is None:
                self.compiler.unenforceable(
                    "minProperties",
                    node.where,
                    "xgrammar may repeat an undeclared property name, which counts once",
                )
            else:
                keywords["minProperties"] = low
        if high is not None and (most is None or high < most):
            keywords["maxProperties"] = high
        return keywords


def _enum_schema(values: tuple[Any, ...]) -> dict:
    """The values as xgrammar should offer them.

    xgrammar writes an enum's fractional numbers with 17 digits (0.07 only as
    0.070000000000000007), so those become ranges [v, v], which let 0.07 be
    written as 0.07.
    """
    fractions = [v for v in values if _plain_fraction(v)]
    alternatives = [{"type": "number", "minimum": v, "maximum": v} for v in fractions]
    rest = [v for v in values if not _plain_fraction(v)]
    if rest:
        alternatives.insert(0, {"enum": rest})
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def _plain_fraction(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer() and "e" not in repr(value)


def _implied_kinds(node: _Node) -> frozenset[str] | None:
    """Without "type", the kinds whose keywords are present (users mean those), else None (any)."""
    empty = _Node()
    kinds = {
        kind
        for kind, names in _KIND_FIELDS.items()
        if any(getattr(node, name) != getattr(empty, name) for name in names)
    }
    return frozenset(kinds) or None


def _as_string(node: _Node) -> _Node:
    kinds = frozenset({"string"}) if node.kinds is None else node.kinds & {"string"}
    return replace(node, kinds=kinds)


def _cap(value: int | None) -> float:
    return math.inf if value is None else value


def _ranges_overlap(low: _Bound, high: _Bound) -> bool:
    return low[0] < high[0] or (low[0] == high[0] and not low[1] and not high[1])


def _native_multiple(step: int, low: int | None, high: int | None) -> bool:
    """Whether xgrammar itself enforces multipleOf here (probed on 0.2.8)."""
    if step > MAX_MULTIPLE_OF:
        return False
    if low is None and high is None:
        return True
    return low is not None and high is not None and high - low < MULTIPLE_OF_RANGE


def _integer_above(value: float, exclusive: bool) -> int:
    return math.floor(value) + 1 if exclusive else math.ceil(value)


def _integer_below(value: float, exclusive: bool) -> int:
    return math.ceil(value) - 1 if exclusive else math.floor(value)
