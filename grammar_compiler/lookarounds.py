r"""Lookaheads and lookbehinds of a regex's top-level sequence, applied with automata.

Both regex dialects read here (ECMA-262 patterns, ``ecma_regex``; Python
regexes, ``regex``) hand over the top-level sequence of one alternative as
trees with ``Lookahead`` markers between them: ``^(?=.*[A-Z])(?=.*\\d).{8,}$``
is ``[Lookahead(.*[A-Z]...), Lookahead(.*\\d...), .{8,}]``. Each run of
lookaheads cuts what follows it to the texts it allows (``regex_automaton``:
intersection, or difference for ``(?!``); a lookbehind that ends the text
says what the whole text ends with, so it becomes a lookahead at the start
(``Lookbehind.at_the_end``).

A lookbehind inside the sequence cuts all the text before it (the text
starts there, or, after a lookahead, what it looks at lies after that):
``^[a-z0-9-]{1,63}(?<!-)(\.[a-z0-9-]+)*$``. Lookarounds about one character
(``(?!-)``, ``(?=\d)``, ``(?<!-)``, and a lookbehind of one that ends the
text) are cut on the tree itself (``word_boundaries``), where counts stay
counts; so is a word boundary (``Boundary``).

Counts over one set (``[0-9]{6,10}``, ``.{8,}``, a length check such as
``(?=.{1,253}$)``) become a state per character. A count after the
lookaheads is tried inside the automata with a small bound on the regex
written back (exact); otherwise it and length checks are kept out as
length bounds and folded back in with ``restrict_length``: a subset where
several parts of the result vary. A regex written back that is still long
(classes of many ranges repeated over the automaton's paths) is cut to
printable ASCII, a subset xgrammar compiles far faster.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from grammar_compiler import regex_automaton
from grammar_compiler.code_points import SCALAR_VALUES, Ranges, minus
from grammar_compiler.regex_emit import (
    PATTERN_SYNTAX,
    Alt,
    Chars,
    Node,
    Repeat,
    Seq,
    emit,
    length_bounds,
)
from grammar_compiler.regex_lengths import restrict_length
from grammar_compiler.word_boundaries import (
    at_boundary,
    ending_with,
    starting_with,
    without_empty,
)

EXACT_COUNT_TREE = 400
"""The most parts a result with its count inside may take (``^(?!0+$)[0-9]{6,10}$``
takes about 100; two lookaheads before ``{8,16}`` 3,000)."""
LONG_REGEX = 16_000
"""Characters of a result past which printable ASCII is tried instead."""
MAX_EMPTY_GAPS = 5
"""Pairs of word boundaries with text that may be empty between them, each a
choice of two (empty or not) that the sequence is joined into."""
_PRINTABLE_ASCII = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))
"""Printable ASCII but ``"`` and backslash, which a patterned JSON string cannot hold."""
_ASCII_TEXT = Repeat(Chars(_PRINTABLE_ASCII), 0, None)
_ANY_CHARACTERS = Repeat(Chars(SCALAR_VALUES), 0, None)


class LookaroundError(ValueError):
    """A lookaround that cannot be applied, and its offset in the regex.

    ``unsatisfiable``: no text passes it (rather than the compiler not
    supporting it), so an alternative it ends may be dropped.
    """

    def __init__(self, message: str, start: int, *, unsatisfiable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.start = start
        self.unsatisfiable = unsatisfiable


class BoundaryError(LookaroundError):
    """A word boundary that no text on its two sides satisfies."""


@dataclass(frozen=True)
class Lookahead:
    """A lookahead met in a top-level sequence, applied once the sequence is read."""

    node: Node  # what the rest of the text must (must not) match
    negative: bool
    start: int  # its offset in the regex, for errors
    reach: int | None = None  # the most characters it looks at (None: to the end, or no bound)


@dataclass(frozen=True)
class Lookbehind:
    """A lookbehind met in a top-level sequence; supported where it ends the text."""

    node: Node  # what the text before must (must not) end with
    negative: bool
    start: int

    def kept_in_place(self, items: list) -> bool:
        """Whether, ending ``items``, it is applied where it stands: on a sequence
        without lookaheads all the text lies before it (``_looked_behind``: counts
        before it stay counts); otherwise it becomes a lookahead (``at_the_end``)."""
        return not any(isinstance(i, Lookahead) for i in items)

    def at_the_end(self, anything: Node) -> Lookahead:
        """Ending the text, it says what the whole text must (not) end with:
        a lookahead at the very start (``a(?<!_)$`` is ``(?!.*_$)a$``)."""
        return Lookahead(Seq((anything, self.node)), self.negative, self.start)


@dataclass(frozen=True)
class Boundary:
    """``\\b`` (``\\B``: ``negative``) met in a top-level sequence (``word_boundaries``)."""

    word: Ranges  # characters that are word characters, for every engine concerned
    other: Ranges  # characters that are not, for every engine concerned
    negative: bool
    start: int


def resolved(items: list[Node | Lookahead | Lookbehind | Boundary]) -> Node:
    """The sequence with each run of lookaheads applied to all that follows it,
    and each word boundary to the two sides it joins.

    Raises:
        LookaroundError: a mark that looks past a lookahead, no text left, or
            automata past their bounds.
    """
    tail: list[Node | Boundary | Lookbehind] = []
    index = len(items)
    while index > 0:
        index -= 1
        item = items[index]
        if not isinstance(item, Lookahead):
            tail.insert(0, item)  # type: ignore[arg-type]
            continue
        run = [item]
        while index > 0 and isinstance(items[index - 1], Lookahead):
            index -= 1
            run.insert(0, items[index])  # type: ignore[arg-type]
        tail = [_looked_ahead(run, _joined(tail, at_text_start=index == 0))]
    joined = _joined(tail, at_text_start=True)
    return joined if isinstance(joined, Seq) else Seq((joined,))


def _joined(items: list[Node | Boundary | Lookbehind], *, at_text_start: bool) -> Node:
    """The items in a row, each word boundary and lookbehind applied to all the
    text before it (a boundary also to what follows it up to the next mark,
    the last one to the end).

    ``at_text_start``: whether the items begin the text; if not (they follow a
    lookahead), what a mark looks at before it must be among them.

    Raises:
        LookaroundError: no text satisfies a mark, what it looks at could lie
            outside the items, or the automata are past their bounds.
    """
    marks = [i for i, item in enumerate(items) if isinstance(item, (Boundary, Lookbehind))]
    if not marks:
        return _row(items)  # type: ignore[arg-type]
    gap = _empty_gap(items, marks)
    if gap is not None:
        return _split_at_gap(items, gap, at_text_start=at_text_start)
    before = _row(items[: marks[0]])  # type: ignore[arg-type]
    for number, mark in enumerate(marks):
        item = items[mark]
        last = number + 1 == len(marks)
        part = _row(items[mark + 1 : len(items) if last else marks[number + 1]])  # type: ignore[arg-type]
        if isinstance(item, Lookbehind):
            before = Seq((_looked_behind(item, before, at_text_start), part))
            continue
        assert isinstance(item, Boundary)
        if not at_text_start and length_bounds(before)[0] == 0:
            raise BoundaryError(
                "a word boundary where the text before it may end at a lookahead is not supported",
                item.start,
            )
        if not last and length_bounds(part)[0] == 0:
            raise BoundaryError(
                "a part between a word boundary and the next mark that may be empty is not "
                "supported",
                item.start,
            )
        joined = at_boundary(before, part, item.word, item.other, negated=item.negative)
        if joined is None:
            raise BoundaryError(
                "no text satisfies the word boundary", item.start, unsatisfiable=True
            )
        before = joined
    negated = [item for item in items if isinstance(item, Boundary) and item.negative]
    if negated:
        nonempty = without_empty(before)
        if nonempty is None:
            raise BoundaryError(
                "no text satisfies the word boundary", negated[0].start, unsatisfiable=True
            )
        before = nonempty
    return before


def _empty_gap(items: list, marks: list[int]) -> tuple[int, int] | None:
    """The first two word boundaries in a row with only text that may be empty
    between them (``\\bcat\\b.*\\bdog\\b``), by their indexes; None if there are
    none. Past ``MAX_EMPTY_GAPS`` such gaps, None too: ``_joined`` refuses them."""
    gaps = [
        (first, second)
        for first, second in itertools.pairwise(marks)
        if isinstance(items[first], Boundary)
        and isinstance(items[second], Boundary)
        and length_bounds(_row(items[first + 1 : second]))[0] == 0
    ]
    return gaps[0] if 0 < len(gaps) <= MAX_EMPTY_GAPS else None


def _split_at_gap(items: list, gap: tuple[int, int], *, at_text_start: bool) -> Node:
    """The items as two choices: the text between the two boundaries not empty,
    or empty, where both boundaries stand at one position (``\\b\\b`` is ``\\b``,
    ``\\b\\B`` holds nowhere), each joined on its own.

    Raises:
        BoundaryError: neither choice has a text (unsatisfiable).
    """
    first, second = gap
    choices = []
    between = without_empty(_row(items[first + 1 : second]))
    if between is not None:
        choices.append([*items[: first + 1], between, *items[second:]])
    if items[first].negative == items[second].negative:
        choices.append([*items[: first + 1], *items[second + 1 :]])
    options = []
    for choice in choices:
        try:
            options.append(_joined(choice, at_text_start=at_text_start))
        except LookaroundError as error:
            if not error.unsatisfiable:
                raise
    if not options:
        raise BoundaryError(
            "no text satisfies the word boundary", items[first].start, unsatisfiable=True
        )
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _looked_behind(lookbehind: Lookbehind, before: Node, at_text_start: bool) -> Node:
    """``before`` (all the text before the lookbehind) cut to what it allows."""
    _, longest = length_bounds(lookbehind.node)
    shortest_before, _ = length_bounds(before)
    if not at_text_start and (longest is None or shortest_before < longest):
        raise LookaroundError(
            "a lookbehind that may look back past a lookahead is not supported", lookbehind.start
        )
    if isinstance(lookbehind.node, Chars):  # (?<!-): on the tree, where counts stay counts
        cut = ending_with(before, lookbehind.node.ranges, negated=lookbehind.negative)
        if cut is None:
            raise LookaroundError(
                "no text satisfies the lookbehind", lookbehind.start, unsatisfiable=True
            )
        return cut
    combine = regex_automaton.difference if lookbehind.negative else regex_automaton.intersection
    counted = _count_over_one_set(before)
    try:
        if counted is None:
            cut = combine(before, Seq((_ANY_CHARACTERS, lookbehind.node)))
        else:
            cut = _counted_behind(lookbehind, before, counted)
    except regex_automaton.TooComplex as error:
        raise LookaroundError(
            f"the lookbehind cannot be written as one regex: {error}", lookbehind.start
        ) from None
    if cut is None:
        raise LookaroundError(
            "no text satisfies the lookbehind", lookbehind.start, unsatisfiable=True
        )
    return cut


def _counted_behind(
    lookbehind: Lookbehind, before: Node, counted: tuple[Node, int, int | None]
) -> Node | None:
    """``S{m,n}`` before a lookbehind of more than one character, cut to what it allows.

    A lookbehind at most ``w`` characters long sees only the last ``w``: a text
    of ``w`` or more is ``S{m-w,n-w}`` then ``w`` characters the lookbehind
    allows, a shorter one is allowed or not as a whole. Both automata are as
    small as ``w``, so this is exact at any count (``[a-z0-9-]{1,63}(?<!--)``).
    A lookbehind of no bounded length (ECMA's ``(?<=a.*)``) has the count tried
    inside the automata (exact), and where that is too large ``S*`` cut and
    the count folded back with ``restrict_length``, which may keep only some
    of the lengths.
    """
    combine = regex_automaton.difference if lookbehind.negative else regex_automaton.intersection
    ending = Seq((_ANY_CHARACTERS, lookbehind.node))
    base, low, high = counted
    assert isinstance(base, Repeat)
    _, width = length_bounds(lookbehind.node)
    if width is None:
        try:
            return combine(before, ending, max_size=EXACT_COUNT_TREE)
        except regex_automaton.TooComplex:
            cut = combine(base, ending)
            return None if cut is None else restrict_length(cut, low, high)
    options = []
    if high is None or high >= width:
        last = combine(Repeat(base.item, width, width), ending)
        if last is not None:
            lead = Repeat(base.item, max(low - width, 0), None if high is None else high - width)
            options.append(Seq((lead, last)))
    short_high = width - 1 if high is None else min(high, width - 1)
    if low <= short_high:
        short = combine(Repeat(base.item, low, short_high), ending)
        if short is not None:
            options.append(short)
    return None if not options else options[0] if len(options) == 1 else Alt(tuple(options))


def _one_character(lookahead: Lookahead, rest: Node) -> tuple[Ranges, bool] | None:
    """``(?=[set])``/``(?![set])``, a lookahead about the first character, as
    (set, False); ``(?!.*[set]$)``, about the last (a lookbehind that ends the
    text, ``Lookbehind.at_the_end``), as (set, True); else None. The ``.*`` must
    hold every character ``rest`` may hold."""
    node = lookahead.node
    if not (isinstance(node, Seq) and len(node.items) == 2):
        return None
    for edge, anything, last in ((node.items[0], node.items[1], False), (*node.items[::-1], True)):
        if (
            isinstance(edge, Chars)
            and isinstance(anything, Repeat)
            and (anything.low, anything.high) == (0, None)
            and isinstance(anything.item, Chars)
            and _covers(anything.item.ranges, rest)
        ):
            return edge.ranges, last
    return None


def _length_only(lookahead: Lookahead, rest: Node) -> bool:
    """Whether the lookahead only bounds the length (``(?=.{1,253}$)``): a count
    over a set holding every character ``rest`` may hold."""
    counted = None if lookahead.negative else _count_over_one_set(lookahead.node)
    if counted is None:
        return False
    base = counted[0]
    assert isinstance(base, Repeat) and isinstance(base.item, Chars)
    return _covers(base.item.ranges, rest)


def _covers(ranges: Ranges, node: Node) -> bool:
    """Whether every character ``node`` may hold is in ``ranges``."""
    if isinstance(node, Chars):
        return minus(node.ranges, ranges) == ()
    if isinstance(node, Repeat):
        return _covers(ranges, node.item)
    parts = node.items if isinstance(node, Seq) else node.options
    return all(_covers(ranges, part) for part in parts)


def _prefix_restricted(rest: Node, index: int, low: int, high: int | None, start: int) -> Node:
    """``rest`` with its first ``index`` items' length held to low..high."""
    items = _flat(rest)
    prefix = restrict_length(_row(items[:index]) if index else Seq(()), low, high)
    if prefix is None:
        raise LookaroundError(
            "no text of the lengths the lookahead allows before its character can be written "
            "as one regex",
            start,
        )
    return Seq((prefix, *items[index:]))


def _row(items: list[Node]) -> Node:
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _bounded_prefix(lookahead: Lookahead, rest: Node) -> tuple[int, int, int | None] | None:
    """``(?=S{m,n}c)`` (email's ``(?=.{1,64}@)``) on a ``rest`` that is ``P c ...``
    with no ``c`` in ``P`` and every character of ``P`` in ``S``, as (the number
    of ``rest``'s items in ``P``, m, n): the lookahead holds exactly where ``P``'s length is within
    m..n. (With ``c`` in ``S`` a later ``c`` could also end the count; it lies
    past n whenever ``P`` is longer than n, so that is exact too, once ``P`` is
    never shorter than m.) None for any other lookahead."""
    parts = _flat(lookahead.node)
    if lookahead.negative or len(parts) != 3:
        return None
    counted, mark, anything = parts
    if not (
        isinstance(counted, Repeat)
        and isinstance(counted.item, Chars)
        and isinstance(mark, Chars)
        and len(mark.ranges) == 1
        and mark.ranges[0][0] == mark.ranges[0][1]
        and isinstance(anything, Repeat)
        and (anything.low, anything.high) == (0, None)
        and isinstance(anything.item, Chars)
        and _covers(anything.item.ranges, rest)
    ):
        return None
    items = _flat(rest)
    not_mark = minus(SCALAR_VALUES, mark.ranges)
    for index, item in enumerate(items):
        if item == mark:
            prefix = _row(items[:index]) if index else Seq(())
            if not _covers(counted.item.ranges, prefix):
                return None
            mark_in_set = not minus(mark.ranges, counted.item.ranges)
            if mark_in_set and length_bounds(prefix)[0] < counted.low:
                return None
            return index, counted.low, counted.high
        if not _covers(not_mark, item):
            return None
    return None


def _length_with_optional_end(lookahead: Lookahead, rest: Node) -> tuple[int, int, Ranges] | None:
    """``(?=S{m,n}c?$)`` (zod's hostname: ``(?=.{1,253}\\.?$)``), ``S`` holding every
    character ``rest`` may hold, as (m, n, c): the text is m..n long, or n + 1
    long and ends with ``c``. None for any other lookahead."""
    parts = _flat(lookahead.node)
    if lookahead.negative or len(parts) != 2:
        return None
    counted, optional = parts
    if not (
        isinstance(counted, Repeat)
        and isinstance(counted.item, Chars)
        and counted.high is not None
        and isinstance(optional, Repeat)
        and (optional.low, optional.high) == (0, 1)
        and isinstance(optional.item, Chars)
        and _covers(counted.item.ranges, rest)
    ):
        return None
    return counted.low, counted.high, optional.item.ranges


def _within_length_or_one_more(
    rest: Node, low: int, high: int, last: Ranges, start: int
) -> Node | None:
    """``rest`` of low..high characters, or of high + 1 ending with ``last``."""
    within = restrict_length(rest, low, high)
    longer = restrict_length(rest, high + 1, high + 1)
    ending = None if longer is None else ending_with(longer, last, negated=False)
    kept = [node for node in (within, ending) if node is not None]
    if not kept:
        if length_bounds(rest)[0] > high + 1:
            return None  # no text is that short
        raise LookaroundError(
            "no text of the lengths the lookahead allows can be written as one regex", start
        )
    return kept[0] if len(kept) == 1 else Alt(tuple(kept))


def _flat(node: Node) -> list[Node]:
    """A sequence's items, nested sequences opened."""
    if not isinstance(node, Seq):
        return [node]
    return [part for item in node.items for part in _flat(item)]


def _looked_ahead(run: list[Lookahead], rest: Node) -> Node:
    edges = [_one_character(lookahead, rest) for lookahead in run]
    simple = (
        edge is not None
        or _length_only(lookahead, rest)
        or _bounded_prefix(lookahead, rest) is not None
        or _length_with_optional_end(lookahead, rest) is not None
        for lookahead, edge in zip(run, edges, strict=True)
    )
    if all(simple):
        # (?!-), (?=\d), (?!.*-$), (?=.{1,64}@) beside length checks only: cut on the
        # tree, where counts stay counts
        kept = []
        for lookahead, edge in zip(run, edges, strict=True):
            if edge is not None:
                chars, last = edge
                cut_edge = ending_with if last else starting_with
                cut = cut_edge(rest, chars, negated=lookahead.negative)
            elif (bounded := _bounded_prefix(lookahead, rest)) is not None:
                cut = _prefix_restricted(rest, *bounded, lookahead.start)
            elif (lengths := _length_with_optional_end(lookahead, rest)) is not None:
                cut = _within_length_or_one_more(rest, *lengths, lookahead.start)
            else:
                kept.append(lookahead)
                continue
            if cut is None:
                raise LookaroundError(
                    "no text satisfies the lookahead", lookahead.start, unsatisfiable=True
                )
            rest = cut
        run = kept
        if not run:
            return rest
    counted = _count_over_one_set(rest)
    if counted is not None:
        try:
            return _cut(run, rest, 0, None, EXACT_COUNT_TREE)
        except regex_automaton.TooComplex:
            rest, low, high = counted
            return _bounded(run, rest, low, high)
    return _bounded(run, rest, 0, None)


def _bounded(run: list[Lookahead], rest: Node, low: int, high: int | None) -> Node:
    try:
        cut = _cut(run, rest, low, high, regex_automaton.MAX_TREE_SIZE)
        written = len(emit(cut, PATTERN_SYNTAX))
        if written <= LONG_REGEX:
            return cut
        ascii_only = regex_automaton.intersection(rest, _ASCII_TEXT)
        if ascii_only is None:
            return cut
        shorter = _cut(run, ascii_only, low, high, regex_automaton.MAX_TREE_SIZE)
        return shorter if len(emit(shorter, PATTERN_SYNTAX)) < written else cut
    except regex_automaton.TooComplex as error:
        raise LookaroundError(
            f"the lookahead cannot be written as one regex: {error}", run[0].start
        ) from None


def _cut(run: list[Lookahead], rest: Node, low: int, high: int | None, max_size: int) -> Node:
    steps = []
    for lookahead in run:
        counted = None if lookahead.negative else _count_over_one_set(lookahead.node)
        if counted is None:
            steps.append(lookahead)
            continue
        node, count_low, count_high = counted
        low = max(low, count_low)
        high = count_high if high is None else min(high, count_high or high)
        steps.append(Lookahead(node, False, lookahead.start))
    allowed: Node | None = rest
    for step in steps:
        node = step.node
        if (
            not step.negative
            and isinstance(node, Repeat)
            and isinstance(node.item, Chars)
            and _covers(node.item.ranges, allowed)
        ):
            continue  # .{1,253}: a length, nothing more
        combine = regex_automaton.difference if step.negative else regex_automaton.intersection
        allowed = combine(allowed, step.node, max_size=max_size)
        if allowed is None:
            raise LookaroundError("no text satisfies the lookahead", step.start, unsatisfiable=True)
    bounded = None if high is not None and high < low else restrict_length(allowed, low, high)
    if bounded is None:
        raise LookaroundError(
            "no text of the lengths the lookahead and the count allow can be written as one regex",
            run[0].start,
        )
    return bounded


def _count_over_one_set(node: Node) -> tuple[Node, int, int | None] | None:
    """``S{m,n}`` as (``S*``, m, n); None for anything else, or ``S*`` itself."""
    if not isinstance(node, Repeat) or not isinstance(node.item, Chars):
        return None
    if (node.low, node.high) == (0, None):
        return None
    return Repeat(node.item, 0, None), node.low, node.high
