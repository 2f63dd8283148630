"""A ``oneOf`` whose branches may overlap, rewritten so that each excludes the others.

``oneOf`` holds when exactly one branch matches: its values are, over the
branches, "this branch and none of the others". xgrammar reads ``oneOf`` as
``anyOf``, so each branch that may share a value with another is merged
with the terms of that other's complement (``complement``):

* ``oneOf: [{required: [a]}, {required: [b]}]``: "a, and b absent" or
  "b, and a absent" (non-objects match both, so none is left);
* object branches that differ by a property one requires and the other
  does not declare: that property absent from the other;
* a ``null`` branch beside a type-less object branch (which accepts null
  too): null is left out, as exactly-one demands;
* a branch inside another (``{type: number}`` beside ``{type: integer}``):
  the inner one is left out, the outer one loses it.

Branches provably disjoint from all others are kept as they are. Where
the terms are many, those adding the fewest required properties are kept
(``MAX_REWRITE_BRANCHES`` in all): a subset. Where a branch would lose
every value only because a complement cannot be expressed (``{type:
string}`` beside ``{type: string, format: date}`` needs "strings that are
not dates"; ``{type: number}`` beside ``{type: integer}`` needs numbers
xgrammar cannot generate alone), the rewrite is not made and the ``oneOf``
stays unenforceable: that would drop a branch silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from grammar_compiler.json_schema.branching import (
    MAX_REWRITE_BRANCHES,
    conjoin,
    generated_kinds,
    generates_nothing,
)
from grammar_compiler.json_schema.complement import ALL_KINDS, Complement, Complements
from grammar_compiler.json_schema.nodes import (
    Node,
    Unmergeable,
    constrained_kinds,
    effective_kinds,
)

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler

MAX_REWRITTEN_BRANCHES = 16
"""Branches a oneOf may have to be rewritten (each is compared with every other)."""


def without_shared_kinds(compiler: Compiler, nodes: list[Node], where: str) -> list[Node]:
    """The branches less the kinds of which two branches match every value.

    Such a value matches both, so no value of that kind satisfies the
    ``oneOf``: ``oneOf: [{required: [a]}, {required: [b]}]`` holds only for
    objects, and a 200-member tagged union of branches without ``type`` only
    for the objects its discriminator tells apart. Exact; done first, so
    that the comparisons and the rewrite see object branches.
    """
    counts = Counter(kind for node in nodes for kind in _every_value_matched(compiler, node))
    shared = frozenset(kind for kind, branches in counts.items() if branches > 1)
    if not shared:
        return nodes
    excluded = compiler.synthetic({"not": {"anyOf": [_KIND_SCHEMAS[kind] for kind in shared]}})
    others = Node(where=where, kinds=ALL_KINDS - shared, origins=((excluded, where),))
    return [conjoin(compiler, node, others, node.where) or node for node in nodes]


_KIND_SCHEMAS = {
    "null": {"type": "null"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "fraction": {"type": "number", "not": {"type": "integer"}},
}
"""Each kind as a schema, for the origin that filters enum values (``Compiler.filter_values``)."""


def _every_value_matched(compiler: Compiler, node: Node) -> frozenset[str]:
    """The kinds of which ``node`` matches every value (none, when unsure)."""
    try:
        node = compiler.deref(node)
    except Unmergeable:
        return frozenset()
    if node.any_of is not None:
        return frozenset().union(*(_every_value_matched(compiler, b) for b in node.any_of))
    if node.enum is not None or node.never:
        return frozenset()
    return effective_kinds(node) - constrained_kinds(node)


def rewrite(
    compiler: Compiler,
    schemas: list[Any],
    nodes: list[Node],
    where: str,
    partial: Mapping[int, frozenset[str]],
) -> list | str:
    """The branches, each excluding the others' values; or why that cannot be done.

    ``partial``: the branches whose nodes match less than their schemas, and
    the kinds their ``type`` allows (``exclusive.first_overlap``).
    """
    if len(nodes) > MAX_REWRITTEN_BRANCHES:
        return f"only a oneOf of at most {MAX_REWRITTEN_BRANCHES} branches is rewritten"
    complements: dict[int, Complement] = {}
    budget = max(1, MAX_REWRITE_BRANCHES // len(nodes))
    rewritten = []
    for index, node in enumerate(nodes):
        options, lossless = [node], True
        for other, other_node in enumerate(nodes):
            if (
                other == index
                or not options
                or _apart(compiler, node, other_node, partial.get(other))
            ):
                continue
            if other not in complements:
                at = f"{where}/oneOf/{other}"
                complements[other] = Complements(compiler).of(schemas[other], at)
            options, exact = _excluding(compiler, options, complements[other], where)
            lossless = lossless and exact
            if not options and not lossless and not generates_nothing(compiler, node):
                return f"branch {index} without the values of branch {other} cannot be expressed"
            if len(options) > budget:
                options = sorted(options, key=lambda option: len(option.required))[:budget]
                lossless = False
        if not lossless:
            compiler.subset("oneOf", where, f"branch {index} excludes the others only in part")
        rewritten.extend(options)
    return rewritten


def _apart(compiler: Compiler, node: Node, other: Node, other_kinds: frozenset[str] | None) -> bool:
    """No value of ``node`` matches the other branch: by their nodes, or where the other's
    node matches less than its schema, by the kinds that schema allows."""
    if other_kinds is None:
        return compiler.disjoint(node, other)
    return not generated_kinds(compiler, node) & other_kinds


def _excluding(
    compiler: Compiler, options: list[Node], rejected: Complement, where: str
) -> tuple[list[Node], bool]:
    """Each option merged with each term; whether nothing was lost beyond the empty ones."""
    kept = []
    exact = all(not generated_kinds(compiler, option) & rejected.lost for option in options)
    for option in options:
        for term in rejected.terms:
            merged = conjoin(compiler, option, term, where)
            if merged is None:
                exact = False
            elif not generates_nothing(compiler, merged):
                kept.append(merged)
            elif _needs_fractions_alone(merged):
                exact = False
    return kept, exact


def _needs_fractions_alone(node: Node) -> bool:
    """Non-integer numbers only: they exist, but xgrammar cannot generate them alone."""
    branches = node.any_of if node.any_of is not None else (node,)
    return any(
        branch.kinds is not None and "fraction" in branch.kinds and "integer" not in branch.kinds
        for branch in branches
    )
