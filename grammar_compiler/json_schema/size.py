"""Output size and compile cost: no part may need more than ``MAX_SHORTEST_OUTPUT`` characters,
and the objects write no more optional properties together than xgrammar compiles quickly
(``optional_property_cap``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from grammar_compiler import ecma_regex
from grammar_compiler.json_schema.nodes import KINDS, Node, children
from grammar_compiler.json_schema.pointers import location
from grammar_compiler.shortest import (
    IMPOSSIBLE,
    capped,
    over_limit,
    shortest_by_name,
    times,
    too_long,
)

MAX_OPTIONAL_PROPERTIES = 100
"""Optional properties of one object that are written; the renderer leaves out the rest
(a subset): xgrammar compiles an object in time growing with the square of them (on the
demo's 4096-token vocabulary, xgrammar 0.2.8, integer values: 100 take 0.2 s, 250 take
1.4 s, 400 take 3.4 s; on Llama 3's 128k vocabulary 0.02, 0.05 and 0.12 s)."""
MAX_OPTIONAL_PROPERTIES_SQUARED = 30_000
"""The squares of each object's written optional properties, summed over all objects
(``optional_property_cap`` lowers what each object writes to stay within): the cost
measured on the demo vocabulary (four objects of 90, 32,400: 0.7 s; 40 objects of 50,
100,000: 2.6 s). Many small objects, such as the branches of a large tagged union,
cost little."""


# The shortest JSON text of each kind: null, true, 0, 0 (a lower bound is enough).
_KIND_SHORTEST = {"null": 4, "boolean": 4, "integer": 1, "fraction": 1}
_SEPARATOR = 2  # ", " and ": ", as xgrammar writes them without free whitespace


def check_output_size(root: Node, definitions: dict[str, Node]) -> None:
    """Refuses a schema any part of which has no JSON text within the limit (``shortest``).

    ``minItems`` of required objects of required arrays multiply, and a
    forced one (constants) makes xgrammar build the whole text at once.
    """
    lengths = shortest_by_name(
        definitions,
        {name: list(_refs(node)) for name, node in definitions.items()},
        lambda name, known: _shortest(definitions[name], known, check=False),
    )
    for node in (root, *definitions.values()):
        _shortest(node, lengths, check=True)


def optional_property_cap(root: Node, definitions: dict[str, Node]) -> int:
    """How many optional properties each object writes (the renderer leaves out the
    rest, a subset): ``MAX_OPTIONAL_PROPERTIES``, or fewer where the objects' written
    counts, squared and summed, would pass ``MAX_OPTIONAL_PROPERTIES_SQUARED``
    (schemas that inline large trees, such as Kubernetes resources, are served
    with their objects' first options rather than refused)."""
    counts = [count for node in (root, *definitions.values()) for count in _optional_counts(node)]
    low, high = 0, MAX_OPTIONAL_PROPERTIES
    while low < high:  # the largest cap whose squares fit
        middle = (low + high + 1) // 2
        if sum(min(count, middle) ** 2 for count in counts) <= MAX_OPTIONAL_PROPERTIES_SQUARED:
            low = middle
        else:
            high = middle - 1
    return low


def _optional_counts(node: Node) -> Iterator[int]:
    """The optional properties of ``node`` and of each of its parts."""
    yield len(node.properties.keys() - node.required)
    for child in children(node):
        yield from _optional_counts(child)


def _refs(node: Node) -> Iterator[str]:
    if node.ref is not None:
        yield node.ref
    for child in children(node):
        yield from _refs(child)


def _shortest(node: Node, lengths: Mapping[str, float], *, check: bool) -> float:
    """Length of the shortest JSON text of ``node``; with ``check``, of every part too."""
    if check:
        for child in children(node):
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
        raise too_long(f"the schema at {location(node.where)}")
    return length


def _kind_shortest(kind: str, node: Node, lengths: Mapping[str, float]) -> float:
    if kind in _KIND_SHORTEST:
        return _KIND_SHORTEST[kind]
    if kind == "string":
        patterns = (ecma_regex.length_bounds(regex.node)[0] for regex in node.regexes)
        return capped(2 + max(node.min_length, *patterns, 0))

    def value(child: Node | None) -> float:
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
