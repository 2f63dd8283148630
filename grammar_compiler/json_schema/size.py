"""Output size and compile cost: no part may need more than ``MAX_SHORTEST_OUTPUT`` characters,
the objects not too many optional properties together (``MAX_OPTIONAL_PROPERTIES_SQUARED``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from grammar_compiler import ecma_regex
from grammar_compiler.errors import ConstraintError
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
"""The squares of each object's written optional properties, summed over all objects:
the cost measured on the demo vocabulary (four objects of 90, 32,400: 0.7 s; 40 objects
of 50, 100,000: 2.6 s). Many small objects, such as the branches of a large tagged
union, cost little."""


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
    squares = 0
    for node in (root, *definitions.values()):
        _shortest(node, lengths, check=True)
        squares += _optional_squares(node)
    if squares > MAX_OPTIONAL_PROPERTIES_SQUARED:
        raise ConstraintError(
            f"the schema's objects have too many optional properties: the squares of their "
            f"counts add up to {squares} (at most {MAX_OPTIONAL_PROPERTIES_SQUARED}); "
            "xgrammar's compile time grows with them: require some"
        )


def _optional_squares(node: Node) -> int:
    """Written optional properties of ``node`` and of its parts, squared and summed."""
    optional = min(len(node.properties.keys() - node.required), MAX_OPTIONAL_PROPERTIES)
    return optional**2 + sum(_optional_squares(child) for child in children(node))


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
