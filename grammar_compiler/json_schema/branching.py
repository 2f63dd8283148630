"""What the rewrites into branches share: merging with alternatives, dropping dead ones, bounds.

``if``/``then``/``else``, the dependency keywords, ``contains`` and an
overlapping ``oneOf`` are enforced by rewriting them into alternatives
xgrammar takes (``anyOf``). Many alternatives turn out impossible once
merged with the rest of the schema (a discriminator value the property's
enum lacks, a property both required and absent); they are dropped here, as
early as possible, so the branch bound counts only live ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from grammar_compiler.json_schema.complement import ALL_KINDS
from grammar_compiler.json_schema.nodes import Node, Unmergeable, effective_kinds, kind_of, never
from grammar_compiler.json_schema.pointers import location

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler

MAX_REWRITE_BRANCHES = 64
"""Branches one rewrite may make: the bound ``MAX_BRANCHES`` sets on products of unions."""


def conjoin(compiler: Compiler, a: Node, b: Node, where: str) -> Node | None:
    """Both ``a`` and ``b``, or None where that cannot be expressed.

    Where the merge itself had to leave values out (a complement's regex
    meeting a pattern, ``complement.joined_regexes``), None too: the
    caller knows its result is a subset.
    """
    losses = compiler.losses
    try:
        merged = compiler.both(a, b, where)
    except Unmergeable:
        return None
    return None if compiler.losses > losses else merged


def generates_nothing(compiler: Compiler, node: Node) -> bool:
    """Whether the renderer will find that nothing can be generated here (False when unsure).

    Besides contradictions, numbers that must not be integers with a step
    count: the renderer writes non-integers alone only as spans between
    integers (``render._fractions_only``), where a step does not fit.
    """
    if node.never:
        return True
    if node.any_of is not None:
        return all(generates_nothing(compiler, branch) for branch in node.any_of)
    if node.enum is not None or node.ref is not None:
        return False
    kinds = effective_kinds(node)
    return not any(_kind_possible(compiler, node, kind, kinds) for kind in kinds)


def _kind_possible(compiler: Compiler, node: Node, kind: str, kinds: frozenset[str]) -> bool:
    if kind in ("null", "boolean"):
        return True
    if kind == "fraction" and "integer" not in kinds:
        stepped = node.multiple_of is not None or node.decimal_step is not None
        return not stepped and _numbers_possible(node, with_fraction=True)
    if kind == "fraction":
        return False  # generated as "number", with the integers (below)
    if kind == "integer":
        return _numbers_possible(node, with_fraction="fraction" in kinds)
    if kind == "string":
        return node.max_length is None or node.min_length <= node.max_length
    if kind == "array":
        if node.max_items is not None and node.min_items > node.max_items:
            return False
        needed = (node.item_at(i) for i in range(min(node.min_items, len(node.prefix) + 1)))
        return not any(item is not None and generates_nothing(compiler, item) for item in needed)
    return not any(
        generates_nothing(compiler, node.properties.get(name) or compiler.undeclared(node, name))
        for name in node.required
    )


def _numbers_possible(node: Node, *, with_fraction: bool) -> bool:
    low, high = node.minimum, node.maximum
    if low is None or high is None:
        return True
    if with_fraction and node.multiple_of is None:
        return low[0] < high[0] or (low[0] == high[0] and not low[1] and not high[1])
    first = math.floor(low[0]) + 1 if low[1] else math.ceil(low[0])
    last = math.ceil(high[0]) - 1 if high[1] else math.floor(high[0])
    return first <= last


def generated_kinds(compiler: Compiler, node: Node) -> frozenset[str]:
    """The kinds of values the renderer may generate for ``node`` (all, when unsure)."""
    if node.any_of is not None:
        return frozenset().union(*(generated_kinds(compiler, b) for b in node.any_of))
    if node.enum is not None:
        return frozenset(map(kind_of, node.enum))
    if node.ref is not None or node.never:
        return ALL_KINDS if node.ref is not None else frozenset()
    return effective_kinds(node)


def alternatives(
    compiler: Compiler,
    branches: Iterable[Node],
    where: str,
    keyword: str,
    origins: tuple[tuple[Any, str], ...],
) -> Node:
    """The union of the branches that can generate something, nested unions flattened.

    Raises:
        Unmergeable: more than ``MAX_REWRITE_BRANCHES`` of them, blamed on ``keyword``.
    """
    flat: list[Node] = []
    for branch in branches:
        flat.extend(branch.any_of if branch.any_of is not None else (branch,))
    kept = [branch for branch in flat if not generates_nothing(compiler, branch)]
    if len(kept) > MAX_REWRITE_BRANCHES:
        raise Unmergeable(
            keyword,
            f"it needs {len(kept)} branches together with the rest of the schema "
            f"(at most {MAX_REWRITE_BRANCHES})",
            where,
        )
    if not kept:
        return never(f"no value satisfies the {keyword} at {location(where)}", where)
    if len(kept) == 1:
        return kept[0]
    return compiler.label_union(Node(where=where, any_of=tuple(kept), origins=origins), keyword)
