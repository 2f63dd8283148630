"""Whether the branches of a ``oneOf`` exclude each other, in time linear in their number.

xgrammar treats ``oneOf`` as ``anyOf``, so a ``oneOf`` is enforced only when
no generated value can match two branches. Comparing every pair of a
200-member tagged union is 20,000 comparisons, so the common shapes are
decided by grouping instead:

* values of ``enum``/``const`` branches are compared by key (a dict);
* object branches that all require one property whose schema is an
  ``enum``/``const`` (a discriminator: ``kind``, ``type``, ``op``) are
  grouped by its values; only branches sharing a value are compared;
* everything else is compared pair by pair, at most ``MAX_PAIR_CHECKS``
  times; past that the next pair counts as overlapping.

Kinds of which two branches match every value were dropped before
(``exclusive_one_of.without_shared_kinds``): the strings of two branches
without ``type`` whose keywords concern objects are not compared.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grammar_compiler.json_schema.nodes import (
    KINDS,
    Node,
    Unmergeable,
    effective_kinds,
    kind_of,
)

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler

MAX_PAIR_CHECKS = 64 * 63 // 2
"""Pairwise comparisons one oneOf may cost (all pairs of 64 branches)."""


@dataclass(frozen=True)
class _Branch:
    index: int  # of the oneOf branch it comes from (an anyOf branch contributes several)
    node: Node  # dereferenced: what it matches
    matches: frozenset[str]

    @property
    def opaque(self) -> bool:
        """A recursive ``$ref`` still being built: nothing is known about it."""
        return self.node.ref is not None


def first_overlap(
    compiler: Compiler, nodes: list[Node], partial: Mapping[int, frozenset[str]]
) -> tuple[int, int] | None:
    """Two branch indices that may both match one generated value, or None if none can.

    ``partial`` maps the branches whose nodes match less than their schemas
    to the kinds their ``type`` allows (``Compiler.lossy``).
    """
    branches = list(_branches(compiler, nodes))
    clash = _partial_clash(branches, partial)
    if clash is not None:
        return clash
    opaque = next((b for b in branches if b.opaque), None)
    if opaque is not None:
        other = next((b for b in branches if b.index != opaque.index), None)
        return None if other is None else _ordered(opaque, other)
    clash = _same_value(compiler, [b for b in branches if b.node.enum is not None])
    if clash is not None:
        return clash
    for checks, (a, b) in enumerate(_candidate_pairs(compiler, branches), start=1):
        if checks > MAX_PAIR_CHECKS or not _exclusive(compiler, a, b):
            return _ordered(a, b)
    return None


def _branches(compiler: Compiler, nodes: list[Node]) -> Iterator[_Branch]:
    for index, node in enumerate(nodes):
        stack, expanded = [node], set()
        while stack:
            current = stack.pop()
            if current.ref is not None:  # a union may contain itself through a $ref
                if current.ref in expanded:
                    continue
                expanded.add(current.ref)
            try:
                current = compiler.deref(current)
            except Unmergeable:
                yield _Branch(index, current, frozenset(KINDS))
                continue
            if current.any_of is not None:
                stack.extend(current.any_of)
            elif not current.never:
                yield _described(index, current)


def _described(index: int, node: Node) -> _Branch:
    if node.enum is not None:
        return _Branch(index, node, frozenset(kind_of(value) for value in node.enum))
    return _Branch(index, node, effective_kinds(node))


def _partial_clash(
    branches: list[_Branch], partial: Mapping[int, frozenset[str]]
) -> tuple[int, int] | None:
    """A branch whose node matches less than its schema, and another with a kind it allows.

    What the other generates may match that schema beyond the node, which no
    comparison of nodes can rule out: ``{type: number, not: {multipleOf: 3}}``
    (its ``not`` expressed in part) beside ``{type: integer}``, 4 matches both.
    """
    kinds_of: dict[int, set[str]] = {}
    for branch in branches:
        kinds_of.setdefault(branch.index, set()).update(branch.matches)
    for index, bound in partial.items():
        for other, kinds in kinds_of.items():
            if other != index and bound & kinds:
                return (index, other) if index < other else (other, index)
    return None


def _same_value(compiler: Compiler, enums: list[_Branch]) -> tuple[int, int] | None:
    """Two enum branches of different indices listing one value (which both then match)."""
    owner: dict[str, _Branch] = {}
    for branch in enums:
        for value in branch.node.enum or ():
            first = owner.setdefault(compiler.value_key(value), branch)
            if first.index != branch.index:
                return _ordered(first, branch)
    return None


def _candidate_pairs(
    compiler: Compiler, branches: list[_Branch]
) -> Iterator[tuple[_Branch, _Branch]]:
    """Pairs of different indices that one value of a shared kind might match.

    Enum pairs were compared by value already; object branches with a
    discriminator are compared only within a value.
    """
    seen: set[tuple[int, int]] = set()
    for kind in KINDS:
        sharing = [b for b in branches if kind in b.matches]
        for a, b in _pairs(compiler, kind, sharing):
            key = (id(a), id(b))
            if a.index != b.index and key not in seen:
                seen.add(key)
                yield a, b


def _pairs(
    compiler: Compiler, kind: str, branches: list[_Branch]
) -> Iterator[tuple[_Branch, _Branch]]:
    enums = [b for b in branches if b.node.enum is not None]
    plain = [b for b in branches if b.node.enum is None]
    yield from itertools.product(enums, plain)
    groups = _by_discriminator(compiler, plain) if kind == "object" else [plain]
    for group in groups:
        yield from itertools.combinations(group, 2)


def _by_discriminator(compiler: Compiler, branches: list[_Branch]) -> list[list[_Branch]]:
    """The branches grouped by the values of a property all of them require as an enum/const.

    Branches sharing no value need no comparison: objects with different
    values there match at most one of them. Without such a property, one
    group of all.
    """
    if len(branches) < 2:
        return []
    candidates = frozenset.intersection(*(b.node.required for b in branches))
    for name in sorted(candidates):
        values = [_values_of(compiler, b.node, name) for b in branches]
        if any(keys is None for keys in values):
            continue
        groups: dict[str, list[_Branch]] = {}
        for branch, keys in zip(branches, values, strict=True):
            for key in keys or ():
                groups.setdefault(key, []).append(branch)
        return [group for group in groups.values() if len(group) > 1]
    return [branches]


def _values_of(compiler: Compiler, node: Node, name: str) -> set[str] | None:
    """The keys of the values property ``name`` may take, if it is an enum/const."""
    prop = node.properties.get(name) or compiler.undeclared(node, name)
    try:
        prop = compiler.deref(prop)
    except Unmergeable:
        return None
    if prop.never:
        return set()
    if prop.enum is None:
        return None
    return {compiler.value_key(value) for value in prop.enum}


def _exclusive(compiler: Compiler, a: _Branch, b: _Branch) -> bool:
    """No value matches both (``disjoint`` is conservative)."""
    return compiler.disjoint(a.node, b.node)


def _ordered(a: _Branch, b: _Branch) -> tuple[int, int]:
    return (a.index, b.index) if a.index < b.index else (b.index, a.index)
