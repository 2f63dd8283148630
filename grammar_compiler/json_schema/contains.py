"""``contains`` with ``minContains``/``maxContains``, as positions of the array.

xgrammar cannot count matching items, but it takes a schema per position
(``prefixItems``). So the first positions that can match ``contains`` (its
schema merged with that position's) are made to match it, as many as
``minContains`` asks (1 by default, and always before 2019-09, which has no
``minContains``). With ``maxContains``, the positions after them may still
match freely until ``maxContains`` matches are possible at most, and every
later item must match a term of the complement of ``contains``
(``complement``): where that complement is partly expressible, those items
are fewer kinds of values; where not at all, the array ends there.

With one match required and no ``maxContains`` (draft-07's only reading,
and the common one: "a list that includes the primary region"), the match
need not come first: one branch per position the first match may take,
the positions before it holding the items ``contains`` rejects (or, where
that complement cannot be written exactly, any item: branches then
overlap, which xgrammar's parser takes), up to ``MAX_FIRST_MATCH``
positions past a tuple's prefix and fewer for large item schemas, each
branch being one more copy of them. Arrays whose first match comes later
are left out, a subset. Otherwise the matching items come first, a subset
too. ``minContains: 0`` without ``maxContains`` constrains nothing;
``minContains`` above ``maxContains`` leaves no array; ``maxContains``
without ``contains`` does nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from grammar_compiler.json_schema.branching import alternatives, conjoin, generates_nothing
from grammar_compiler.json_schema.complement import Complements, contains_counts
from grammar_compiler.json_schema.nodes import (
    KINDS,
    Node,
    Unmergeable,
    children,
    effective_kinds,
    never,
)
from grammar_compiler.json_schema.pointers import location

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler

MAX_CONTAINS_POSITIONS = 64
"""Positions made to match (``minContains``), or left free below ``maxContains``: each is a
copy of the item schema for xgrammar. Fewer free positions is a subset; more required
matches are refused."""
MAX_FIRST_MATCH = 6
"""Positions past the prefix where the one required match may first come (one branch each)."""
MAX_FIRST_MATCH_COPIES = 400
"""Nodes of item schemas the first-match branches may copy together (each copy is rendered
inline for xgrammar): large items get fewer positions."""


def enforce(compiler: Compiler, schema: dict, node: Node, where: str) -> Node:
    """``node`` (the rest of ``schema``) with the schema's ``contains``."""
    if "contains" not in schema:  # (node() passes only what the draft reads)
        return node
    low, high = contains_counts(compiler, schema)
    if low == 0 and high is None:
        return node
    if high is not None and high < low:
        return compiler.merge(node, _no_arrays(compiler, where), where)
    if low > MAX_CONTAINS_POSITIONS:
        keyword = "minContains" if "minContains" in schema else "contains"
        compiler.unenforceable(
            keyword, where, f"at most {MAX_CONTAINS_POSITIONS} matching items can be enforced"
        )
        return node
    anywhere = low == 1 and high is None
    try:
        try:
            return _Placement(compiler, schema["contains"], low, high, where, anywhere).apply(node)
        except Unmergeable:
            if not anywhere:
                raise
            # Too many branches beside the schema's other unions: the match comes first.
            return _Placement(compiler, schema["contains"], low, high, where, False).apply(node)
    except Unmergeable as problem:  # a recursive $ref still being built
        compiler.unenforceable("contains", where, problem.why)
        return node


def _no_arrays(compiler: Compiler, where: str) -> Node:
    origin = compiler.synthetic({"not": {"type": "array"}})
    return Node(where=where, kinds=frozenset(KINDS) - {"array"}, origins=((origin, where),))


class _Placement:
    """Where the matching items go in each branch's arrays."""

    def __init__(
        self,
        compiler: Compiler,
        contains: Any,
        low: int,
        high: int | None,
        where: str,
        anywhere: bool,
    ) -> None:
        self.compiler = compiler
        self.wanted = compiler.node(contains, f"{where}/contains")
        self.low = low
        self.high = high
        self.where = where
        self.anywhere = anywhere  # the one match may come at any position, not only first
        self.rejected: tuple[Node, ...] = ()  # the items contains rejects, as far as expressible
        self.rejected_exactly = False
        if high is not None or self.anywhere:
            complement = Complements(compiler).of(contains, f"{where}/contains")
            self.rejected, self.rejected_exactly = complement.terms, complement.exact
        self.rejected_origin = compiler.synthetic({"not": contains})

    def apply(self, node: Node) -> Node:
        if node.ref is not None:  # first: the definition may be a union
            node = self.compiler.deref(node)
        if node.enum is not None or node.never:
            return node  # an enum was filtered by contains already
        if node.any_of is not None:
            branches = [self.apply(branch) for branch in node.any_of]
            return alternatives(self.compiler, branches, node.where, "contains", node.origins)
        if "array" not in effective_kinds(node):
            return node
        return self._arrays(node)

    def _arrays(self, node: Node) -> Node:
        if self.anywhere:
            return self._first_match_anywhere(node)
        self.compiler.subset("contains", self.where, "the matching items are generated first")
        matching = self._matching_positions(node)
        if len(matching) < self.low:  # no array of this branch can have them
            others = effective_kinds(node) - {"array"}
            if others:
                return replace(node, kinds=others)
            return never(
                f"no array at {location(node.where)} has {self.low} items matching its contains",
                node.where,
            )
        end = max(matching, default=-1) + 1
        free = None if self.high is None else self.high - self.low
        prefix = []
        for index in range(end):
            if index in matching:
                prefix.append(matching[index])
            elif free is None or free > 0:
                prefix.append(self._position(node, index))
                free = None if free is None else free - 1
            else:
                prefix.append(self._excluded(self._position(node, index)))
        if free is None:
            prefix += node.prefix[end:]
            items = self._items_after(node)
            return replace(
                node, prefix=tuple(prefix), items=items, min_items=max(node.min_items, end)
            )
        limit = MAX_CONTAINS_POSITIONS if node.max_items is None else node.max_items
        while free > 0 and len(prefix) < limit:
            prefix.append(self._position(node, len(prefix)))
            free -= 1
        prefix += [self._excluded(item) for item in node.prefix[len(prefix) :]]
        items = node.items
        if node.max_items is None or node.max_items > len(prefix):
            items = self._excluded(node.items or self._anything())
        return replace(node, prefix=tuple(prefix), items=items, min_items=max(node.min_items, end))

    def _first_match_anywhere(self, node: Node) -> Node:
        """One branch per position the first matching item may take (module docstring)."""
        limit = len(node.prefix) + MAX_FIRST_MATCH
        if node.max_items is not None:
            limit = min(limit, node.max_items)
        weight = max((_weight(self._position(node, index)) for index in range(limit)), default=1)
        while limit > 1 and weight * limit * (limit + 1) // 2 > MAX_FIRST_MATCH_COPIES:
            limit -= 1
        branches: list[Node] = []
        before: list[Node] = []  # the positions before this one, where no item matches
        complete = node.max_items is not None and limit == node.max_items
        for index in range(limit):
            position = self._position(node, index)
            merged = conjoin(self.compiler, position, self.wanted, self.where)
            if merged is None or generates_nothing(self.compiler, merged):
                before.append(position)  # an item here never matches (or may, unexpressed)
                complete = complete and merged is not None
                continue
            prefix = (*before, merged, *node.prefix[index + 1 :])
            min_items = max(node.min_items, index + 1)
            branches.append(
                replace(node, prefix=prefix, items=self._items_after(node), min_items=min_items)
            )
            excluded = self._excluded(position) if self.rejected_exactly else position
            if generates_nothing(self.compiler, excluded):
                complete = True  # every item here matches: no first match comes later
                break
            before.append(excluded)
        if not branches:
            others = effective_kinds(node) - {"array"}
            if others:
                return replace(node, kinds=others)
            return never(
                f"no array at {location(node.where)} has an item matching its contains", node.where
            )
        if not complete:
            self.compiler.subset(
                "contains", self.where, f"the first matching item is among the first {limit}"
            )
        if len(branches) == 1:
            return branches[0]
        return alternatives(self.compiler, branches, node.where, "contains", node.origins)

    def _matching_positions(self, node: Node) -> dict[int, Node]:
        """The first ``low`` positions where an item can match, with their merged schemas."""
        found: dict[int, Node] = {}
        limit = len(node.prefix) + self.low
        if node.max_items is not None:
            limit = min(limit, node.max_items)
        for index in range(limit):
            if len(found) == self.low:
                break
            merged = conjoin(self.compiler, self._position(node, index), self.wanted, self.where)
            if merged is not None and not generates_nothing(self.compiler, merged):
                found[index] = merged
            elif index >= len(node.prefix):
                break  # every later position has the same schema
        return found

    def _items_after(self, node: Node) -> Node | None:
        """The items past the positions placed here. An array that names no items
        stays open: the renderer closes a tuple after its prefix (the strict
        reading of a user's ``prefixItems``), and this prefix is not the user's."""
        if node.items is None and not node.prefix:
            return self._anything()
        return node.items

    def _position(self, node: Node, index: int) -> Node:
        item = node.item_at(index)
        return item if item is not None else self._anything()

    def _anything(self) -> Node:
        """An item no user schema evaluates (``unevaluatedItems`` must still apply to it)."""
        return Node(where=self.where, origins=((self.compiler.synthetic({}), self.where),))

    def _excluded(self, item: Node) -> Node:
        """``item`` where it does not match ``contains`` (impossible if that is not expressible)."""
        options = [conjoin(self.compiler, item, term, self.where) for term in self.rejected]
        kept = [option for option in options if option is not None]
        origins = (*item.origins, (self.rejected_origin, self.where))
        try:
            return alternatives(self.compiler, kept, self.where, "maxContains", origins)
        except Unmergeable:
            return never("too many kinds of items that do not match contains", self.where)


def _weight(node: Node, budget: int = MAX_FIRST_MATCH_COPIES) -> int:
    """The nodes of ``node``'s tree (a ``$ref`` counts one), counted up to ``budget``."""
    count, stack = 0, [node]
    while stack and count < budget:
        count += 1
        stack.extend(children(stack.pop()))
    return count
