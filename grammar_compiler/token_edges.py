"""Which characters can start a terminal, and which can continue one that is already complete.

Lark's lexer skips an ``%ignore`` terminal by its longest match, while a
grammar (xgrammar's reading) lets it end anywhere it matches. The two accept
the same texts exactly when no complete ignored token can be continued by
the first character of what may follow it; ``lark_grammar`` checks that with
the two sets computed here.

Both come from the positions of a Glushkov automaton of a terminal's tree
(one position per character of a literal or per class): ``first_characters``
unions the classes of the positions a match can start at, and
``continuing_characters`` those of the positions that can follow a position
where a match can end. Counted repetitions are treated as loops, which only
ever adds characters, so a terminal is never judged safer than it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grammar_compiler.cfg_tree import (
    MAX_CODE_POINT,
    CharSet,
    Choice,
    Node,
    Repeat,
    Sequence,
    Text,
    choice_of,
    merge_ranges,
    sequence_of,
)
from grammar_compiler.code_points import intersect

Ranges = tuple[tuple[int, int], ...]


def first_characters(node: Node) -> Ranges:
    positions = _Positions()
    summary = positions.visit(node)
    return positions.characters(summary.first)


def continuing_characters(node: Node) -> Ranges:
    positions = _Positions()
    summary = positions.visit(node)
    following = {after for before in summary.last for after in positions.follow[before]}
    return positions.characters(following)


def starting_with(node: Node, chars: Ranges) -> Node | None:
    """The non-empty texts of a terminal's tree whose first character is in
    ``chars``, as a tree (exact); None if there are none."""
    if isinstance(node, Text):
        return node if node.value and overlap(((ord(node.value[0]),) * 2,), chars) else None
    if isinstance(node, CharSet):
        kept = intersect(positive_ranges(node), chars)
        return CharSet(kept) if kept else None
    if isinstance(node, Choice):
        cuts = [starting_with(option, chars) for option in node.options]
        options = [cut for cut in cuts if cut is not None]
        return choice_of(options) if options else None
    if isinstance(node, Sequence):
        options = []
        for index, item in enumerate(node.items):  # the first character is item index's
            cut = starting_with(item, chars)
            if cut is not None:
                options.append(sequence_of([cut, *node.items[index + 1 :]]))
            if not _nullable(item):
                break
        return choice_of(options) if options else None
    if isinstance(node, Repeat):
        cut = None if node.high == 0 else starting_with(node.item, chars)
        if cut is None:
            return None
        rest = Repeat(node.item, max(node.low - 1, 0), None if node.high is None else node.high - 1)
        return sequence_of([cut, rest])
    raise TypeError(f"a terminal has no rule references: {node!r}")


def _nullable(node: Node) -> bool:
    summary = _Positions().visit(node)
    return summary.nullable


def overlap(first: Ranges, second: Ranges) -> int | None:
    """A code point in both sets, if there is one."""
    for low, high in first:
        for other_low, other_high in second:
            if max(low, other_low) <= min(high, other_high):
                return max(low, other_low)
    return None


@dataclass
class _Summary:
    nullable: bool
    first: set[int] = field(default_factory=set)
    last: set[int] = field(default_factory=set)


class _Positions:
    def __init__(self) -> None:
        self.sets: list[Ranges] = []
        self.follow: list[set[int]] = []

    def characters(self, positions: set[int]) -> Ranges:
        return merge_ranges([span for position in positions for span in self.sets[position]])

    def position(self, ranges: Ranges) -> _Summary:
        self.sets.append(ranges)
        self.follow.append(set())
        index = len(self.sets) - 1
        return _Summary(False, {index}, {index})

    def visit(self, node: Node) -> _Summary:
        if isinstance(node, Text):
            return self.sequence([self.position(((ord(c), ord(c)),)) for c in node.value])
        if isinstance(node, CharSet):
            return self.position(positive_ranges(node))
        if isinstance(node, Sequence):
            return self.sequence([self.visit(item) for item in node.items])
        if isinstance(node, Choice):
            options = [self.visit(option) for option in node.options]
            return _Summary(
                any(option.nullable for option in options),
                set().union(*(option.first for option in options)),
                set().union(*(option.last for option in options)),
            )
        if isinstance(node, Repeat):
            item = self.visit(node.item)
            if node.high is None or node.high > 1:
                self.link(item.last, item.first)
            return _Summary(item.nullable or node.low == 0, item.first, item.last)
        raise TypeError(f"a terminal has no rule references: {node!r}")

    def sequence(self, parts: list[_Summary]) -> _Summary:
        result = _Summary(True)
        for part in parts:
            self.link(result.last, part.first)
            first = result.first | part.first if result.nullable else result.first
            last = result.last | part.last if part.nullable else part.last
            result = _Summary(result.nullable and part.nullable, first, last)
        return result

    def link(self, before: set[int], after: set[int]) -> None:
        for position in before:
            self.follow[position] |= after


def positive_ranges(node: CharSet) -> Ranges:
    """The code points a class matches, as ranges (a negated class complemented)."""
    if not node.negated:
        return node.ranges
    gaps = []
    start = 0
    for low, high in node.ranges:
        if low > start:
            gaps.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE_POINT:
        gaps.append((start, MAX_CODE_POINT))
    return tuple(gaps)
