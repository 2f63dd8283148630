"""Cutting a regex tree to the texts of some lengths, without automata.

``minLength``/``maxLength`` beside a pattern or format, and the counts a
lookahead's automata leave out (``lookarounds``), are folded into the tree
itself: where one part varies in length it gets exact bounds; where several
do, the length budget is shared between them, which keeps the result sound
(every text it allows has a valid length) but may leave some lengths out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from grammar_compiler.regex_emit import Alt, Node, Repeat, Seq, length_bounds


def restrict_length(node: Node, min_length: int, max_length: int | None) -> Node | None:
    """A regex for strings of ``node`` whose length is within the bounds, or None.

    Exact when at most one part of the pattern varies in length; otherwise a
    subset (the length budget is shared out), so None may also mean "cannot
    be expressed this way" rather than "impossible".
    """
    result: Node | None = node
    if max_length is not None:
        result = _at_most(node, max_length)
    if result is not None and min_length > 0:
        result = _at_least(result, min_length)
    if result is None:
        return None
    low, high = length_bounds(result)
    within = low >= min_length and (max_length is None or (high is not None and high <= max_length))
    if not within:
        raise AssertionError(f"length restriction went wrong: {low}..{high}")
    return result


def may_lose_lengths(node: Node) -> bool:
    """Whether restricting ``node``'s length may leave out texts of allowed lengths:
    where two parts of one sequence vary, or a repeated part does, the budget is
    shared out (alternatives are restricted each on its own)."""
    return _varying_parts(node) > 1


def _varying_parts(node: Node) -> int:
    low, high = length_bounds(node)
    if low == high:
        return 0
    if isinstance(node, Seq):
        return sum(_varying_parts(item) for item in node.items)
    if isinstance(node, Alt):
        return max(_varying_parts(option) for option in node.options)
    assert isinstance(node, Repeat)
    item_low, item_high = length_bounds(node.item)
    return 1 if item_low == item_high else 2


def _at_most(node: Node, limit: int) -> Node | None:
    low, high = length_bounds(node)
    if high is not None and high <= limit:
        return node
    if low > limit:
        return None
    if isinstance(node, Alt):
        return _alternatives(_at_most(option, limit) for option in node.options)
    if isinstance(node, Seq):
        return _share(node, limit, _at_most)
    assert isinstance(node, Repeat)
    item_low, item_high = length_bounds(node.item)
    if item_low == item_high:  # every repetition has the same length (> 0 here)
        return Repeat(node.item, node.low, min(_cap(node.high), limit // item_low))
    count = _best_count(node, limit)
    shortest = _shortest_options(node.item, item_low)
    if shortest is not None and limit // item_low > count:
        # [a-z]|%XX under 8 characters: eight of [a-z] rather than two of either
        return Repeat(shortest, node.low, min(_cap(node.high), limit // item_low))
    item = _at_most(node.item, limit // count)
    if item is None:  # not even one fits: an optional part is left out
        return Repeat(node.item, 0, 0) if node.low == 0 else None
    return Repeat(item, node.low, count)


def _best_count(node: Repeat, limit: int) -> int:
    """How many repetitions of a varying-length item to allow under a length limit.

    Each repetition then gets ``limit // count`` characters. Counting on
    repetitions of up to 16 characters (or the item's longest, if shorter)
    keeps several fair-sized labels in ``(\\.label)*`` rather than one long one.
    """
    item_low, item_high = length_bounds(node.item)
    share = min(_cap(item_high), max(_TYPICAL_REPETITION, item_low))
    return max(node.low, 1, min(_cap(node.high), limit // share))


_TYPICAL_REPETITION = 16


def _at_least(node: Node, limit: int) -> Node | None:
    low, high = length_bounds(node)
    if low >= limit:
        return node
    if high is not None and high < limit:
        return None
    if isinstance(node, Alt):
        return _alternatives(_at_least(option, limit) for option in node.options)
    if isinstance(node, Seq):
        return _share(node, limit, _at_least)
    assert isinstance(node, Repeat)
    item_low, item_high = length_bounds(node.item)
    if item_low == item_high:
        count = -(-limit // item_low)
        return Repeat(node.item, max(node.low, count), node.high)
    if item_low > 0:  # enough repetitions of even the shortest: every item kept whole
        count = max(node.low, -(-limit // item_low))
        if node.high is None or count <= node.high:
            return Repeat(node.item, count, node.high)
    count = max(node.low, 1) if item_high is None else max(node.low, -(-limit // item_high))
    if node.high is not None and count > node.high:
        return None
    item = _at_least(node.item, -(-limit // count))
    return None if item is None else Repeat(item, count, node.high)


def _cap(high: int | None) -> int:
    return sys.maxsize if high is None else high


def _alternatives(options: Iterable[Node | None]) -> Node | None:
    kept = tuple(option for option in options if option is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Alt(kept)


def _share(node: Seq, limit: int, restrict) -> Node | None:
    """Apply a length limit to a sequence by giving each varying item its share.

    For an upper limit, the slack above the items' minimum lengths is split
    evenly between the items that vary, or, where that leaves each fewer
    than ``_TYPICAL_REPETITION`` characters, between those that are not
    optional groups (a URI's query), which are then left out. For a lower
    limit, the missing length is taken from the last items that can grow
    (the free tail of a pattern, ``[^@]+@[a-z]+`` or what a lookahead leaves
    after what it requires, rather than the part before the first required
    character).
    """
    bounds = [length_bounds(item) for item in node.items]
    varying = [i for i, (low, high) in enumerate(bounds) if low != high]
    targets = {}
    if restrict is _at_most:
        slack = limit - sum(low for low, _ in bounds)
        required = [i for i in varying if not _optional(node.items[i])]
        sharing = varying
        if required and slack // len(varying) < _TYPICAL_REPETITION:
            sharing = required  # optional parts (a URI's ?query) left out, not all starved
        for i in varying:
            targets[i] = bounds[i][0] + (slack // len(sharing) if i in sharing else 0)
    else:
        missing = limit - sum(low for low, _ in bounds)
        for i in reversed(varying):
            room = _cap(bounds[i][1]) - bounds[i][0]
            take = min(missing, room)
            if take > 0:
                targets[i] = bounds[i][0] + take
                missing -= take
    items = []
    for i, item in enumerate(node.items):
        if i in targets:
            item = restrict(item, targets[i])
            if item is None:
                return None
        items.append(item)
    return Seq(tuple(items))


def _optional(node: Node) -> bool:
    """Whether ``node`` is ``(...)?``, a part that may be left out whole."""
    return isinstance(node, Repeat) and node.low == 0 and node.high == 1


def _shortest_options(node: Node, length: int) -> Node | None:
    """The options of an alternation that are all exactly ``length`` long, if any."""
    if not isinstance(node, Alt) or length == 0:
        return None
    return _alternatives(o for o in node.options if length_bounds(o) == (length, length))
