"""The normalized form of a schema: ``Node``, the conjunction of what it requires.

Normalization (``normalize``) builds nodes, the size check (``size``) and
the renderer (``render``) read them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from grammar_compiler import ecma_regex
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema.pointers import location

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
Bound = tuple[float, bool]  # (value, exclusive)


@dataclass(frozen=True)
class Regex:
    node: ecma_regex.Node
    keyword: str  # "pattern" or "format"
    where: str

    def label(self) -> str:
        return f"{self.keyword} at {location(self.where)}"


@dataclass(frozen=True)
class Node:
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
    any_of: tuple[Node, ...] | None = None
    ref: str | None = None
    min_length: int = 0
    max_length: int | None = None
    regexes: tuple[Regex, ...] = ()
    minimum: Bound | None = None
    maximum: Bound | None = None
    multiple_of: int | None = None  # integer multiples only
    decimal_step: Fraction | None = None  # a non-integer multipleOf (see ``numbers``)
    prefix: tuple[Node, ...] = ()
    items: Node | None = None  # None: absent
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False  # uniqueItems, which the decoder keeps (``engine/json_repeats.py``)
    properties: dict[str, Node] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    additional: Node | None = None  # None: absent
    pattern_properties: tuple[tuple[str, Node], ...] = ()
    property_names: Node | None = None
    min_properties: int = 0
    max_properties: int | None = None
    origins: tuple[tuple[Any, str], ...] = ()

    def constrains(self) -> bool:
        return self != Node(where=self.where, origins=self.origins)

    def item_at(self, index: int) -> Node | None:
        return self.prefix[index] if index < len(self.prefix) else self.items


_STRING_FIELDS = ("min_length", "max_length", "regexes")
_NUMBER_FIELDS = ("minimum", "maximum", "multiple_of", "decimal_step")
_ARRAY_FIELDS = ("prefix", "items", "min_items", "max_items", "unique")
_OBJECT_FIELDS = (
    "properties",
    "required",
    "additional",
    "pattern_properties",
    "property_names",
    "min_properties",
    "max_properties",
)
KIND_FIELDS = {
    "string": _STRING_FIELDS,
    "integer": _NUMBER_FIELDS,
    "fraction": _NUMBER_FIELDS,
    "array": _ARRAY_FIELDS,
    "object": _OBJECT_FIELDS,
}


def children(node: Node) -> Iterator[Node]:
    """The subschema nodes directly inside ``node`` (a ``$ref`` is a leaf)."""
    yield from node.any_of or ()
    yield from node.prefix
    yield from node.properties.values()
    yield from (child for _, child in node.pattern_properties)
    for child in (node.items, node.additional, node.property_names):
        if child is not None:
            yield child


def never(reason: str, where: str) -> Node:
    return Node(where=where, never=reason, kinds=frozenset())


class Unmergeable(Exception):
    """Two requirements that both hold but cannot be expressed together for xgrammar.

    Merging catches it and reports the keyword as not enforceable; where
    nothing catches it (a union too large by itself), ``refusal`` is the
    error the user gets.
    """

    def __init__(self, keyword: str, why: str, where: str) -> None:
        super().__init__(why)
        self.keyword = keyword
        self.why = why
        self.where = where

    def refusal(self) -> ConstraintError:
        return ConstraintError(f"{self.keyword} at {location(self.where)}: {self.why}")


def type_kinds(declared: str | list[str]) -> frozenset[str]:
    names = [declared] if isinstance(declared, str) else declared
    return frozenset(kind for name in names for kind in _TYPE_KINDS[name])


def declared_kinds(schema: Any) -> frozenset[str]:
    """The kinds a schema's own ``type`` lets through (every kind without one).

    A bound on what the schema matches, whatever part of it a node expresses.
    """
    declared = schema.get("type") if isinstance(schema, dict) else None
    names = [declared] if isinstance(declared, str) else declared
    if isinstance(names, list) and all(name in _TYPE_KINDS for name in names):
        return type_kinds(names)
    return frozenset(KINDS)


def effective_kinds(node: Node) -> frozenset[str]:
    return frozenset(KINDS) if node.kinds is None else node.kinds


def constrained_kinds(node: Node) -> frozenset[str]:
    """The kinds whose keywords are present ("number" keywords count for both number kinds).

    Without "type" a node allows every kind, each held only to its own
    keywords (JSON Schema's reading: ``properties`` says nothing about a
    number), so the renderer writes each kind; without any such keyword,
    any value.
    """
    empty = Node()
    return frozenset(
        kind
        for kind, names in KIND_FIELDS.items()
        if any(getattr(node, name) != getattr(empty, name) for name in names)
    )


def min_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def tighter_lower(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return a if a[1] else b


def tighter_upper(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return a if a[1] else b


def kind_of(value: Any) -> str:
    """The kind (``KINDS``) of a JSON value; an integral float is an integer (JSON Schema)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "fraction"
    return {str: "string", list: "array", dict: "object"}[type(value)]
