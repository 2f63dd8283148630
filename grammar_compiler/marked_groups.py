r"""Groups holding lookarounds, word boundaries or anchors, spread into whole-pattern choices.

Why: ``lookarounds.resolved`` applies a mark to the text around it in one
top-level sequence, but real patterns put marks inside groups: ISO 8601
durations (``P(\d+D)?(T(?=\d)(\d+H)?(\d+M)?)?$``), zod's duration (a ``$``
ending some alternatives of each optional part), ``(?:(?=.*\d)[a-z\d]{6,})``,
and IPv4 written as ``((25[0-5]|...)\.?\b){4}``. A group is a choice
between its alternatives, and an optional or counted one a choice between
texts of copies, so ``x(a|b)y`` is ``xay|xby``: each choice made gives one
top-level sequence, whose marks then stand at top level (``spread``).

Alternatives without marks stay one node, so a choice costs a copy only
per alternative with marks. ``^`` and ``$`` inside the pattern say that
what comes before (after) them is empty: such a sequence keeps the items
there that may be empty as nothing and is dropped where one may not.
A group with marks repeated past ``MAX_UNROLLED`` copies is one node repeated
where each mark looks only at text of the same copy (a domain's labels,
``(\.(?!-)[a-z0-9-]{1,63}(?<!-))*``); one whose only marks are word
boundaries, which may look into the copies beside it (``(\b\w+\b\s?)+``), is
kept whole as a ``BoundaryLoop`` for ``boundary_automaton``; others are
refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from grammar_compiler.lookarounds import (
    Boundary,
    Lookahead,
    LookaroundError,
    Lookbehind,
    resolved,
)
from grammar_compiler.regex_emit import Alt, Chars, Node, Repeat, Seq, length_bounds

MAX_SPREAD = 64
"""Top-level sequences the marked groups of one alternative may spread into (each is
resolved on its own, with automata where its lookarounds need them)."""
NO_WAY_LEFT = (
    "no text satisfies the anchors inside the pattern (or a repeated group such as "
    "(?:(?!ab).)*, read only where it ends the text, is followed by more)"
)
MAX_UNROLLED = 8
"""Copies a counted group with marks is written out into (IPv4's ``{4}``)."""


@dataclass(frozen=True)
class TextStart:
    """``^`` inside the pattern: the text starts here."""

    start: int


@dataclass(frozen=True)
class TextEnd:
    """``$`` inside the pattern: the text ends here."""

    start: int


Mark = Union[Lookahead, Lookbehind, Boundary, TextStart, TextEnd]  # noqa: UP007 (a runtime alias)
Item = Union[Node, Mark, "MarkedGroup", "BoundaryLoop"]


@dataclass(frozen=True)
class MarkedGroup:
    """A choice between sequences, some holding marks."""

    options: tuple[tuple[Item, ...], ...]
    start: int  # its offset in the regex, for errors


@dataclass(frozen=True)
class BoundaryLoop:
    """A group whose only marks are word boundaries, repeated more often than is
    written out: it stays one item of the top-level sequence, which
    ``boundary_automaton`` then reads whole."""

    group: MarkedGroup
    low: int
    high: int | None


def group(options: list[list[Item]], start: int) -> Node | MarkedGroup:
    """The group of these alternatives: a node if none holds a mark."""
    options = [  # a group of one marked group (Python's parser inlines (?:...)) is that group
        list(inner)
        for option in options
        for inner in (
            option[0].options
            if len(option) == 1 and isinstance(option[0], MarkedGroup)
            else (option,)
        )
    ]
    plain = [option for option in options if all(isinstance(i, Node) for i in option)]
    if len(plain) == len(options):
        return _choice([_row(option) for option in options])  # type: ignore[arg-type]
    marked = [tuple(option) for option in options if option not in plain]
    if plain:
        marked.insert(0, (_choice([_row(option) for option in plain]),))  # type: ignore[arg-type]
    return MarkedGroup(tuple(marked), start)


def _choice(options: list[Node]) -> Node:
    """One node for the options; an empty one makes the rest optional."""
    nonempty = [option for option in options if option != Seq(())]
    if not nonempty:
        return Seq(())
    choice = nonempty[0] if len(nonempty) == 1 else Alt(tuple(nonempty))
    return choice if len(nonempty) == len(options) else Repeat(choice, 0, 1)


def repeated(item: MarkedGroup, low: int, high: int | None) -> Node | MarkedGroup | BoundaryLoop:
    """``item{low,high}``, written out as copies (``?`` is a choice of none or one);
    past ``MAX_UNROLLED`` copies, one node repeated where its marks stay in each
    copy, or a ``BoundaryLoop`` where its marks are word boundaries."""
    if high is None or high > MAX_UNROLLED:
        within = _within_each_copy(item)
        if within is None:
            tempered = _tempered_to_the_end(item, low, high)
            if tempered is not None:
                return tempered
            if _only_boundaries(item):
                return BoundaryLoop(item, low, high)
            raise LookaroundError(
                "a group holding a lookaround, word boundary or anchor may repeat at most "
                f"{MAX_UNROLLED} times (write it out), unless each of its marks looks only at "
                "text of the same copy",
                item.start,
            )
        return Repeat(within, low, high)
    optional = group([[], *map(list, item.options)], item.start)
    copies = (item,) * low + (optional,) * (high - low)
    return MarkedGroup((copies,), item.start)


def _within_each_copy(item: MarkedGroup) -> Node | None:
    """The group as one node where every mark in it looks only at text of the
    same copy (``(\\.(?!-)[a-z0-9-]{1,63}(?<!-))*``, a domain's labels): each
    way through it resolved on its own; None where a mark could look into the
    copy before or after, or the text's start or end."""
    try:
        ways = spread([item])
    except LookaroundError:
        return None
    nodes = []
    for items, starts, ends in ways:
        if starts or ends or not _marks_stay_inside(items):
            return None
        try:
            nodes.append(resolved(items))
        except LookaroundError as error:
            if not error.unsatisfiable:
                return None
    return _choice(nodes) if nodes else None


def _only_boundaries(item: MarkedGroup) -> bool:
    """Whether every mark in the group (and the groups inside it) is a word boundary."""
    return all(
        isinstance(part, (Node, Boundary, BoundaryLoop))
        or (isinstance(part, MarkedGroup) and _only_boundaries(part))
        for option in item.options
        for part in option
    )


def _tempered_to_the_end(item: MarkedGroup, low: int, high: int | None) -> MarkedGroup | None:
    """``(?:(?!X).){low,high}`` (a tempered token: "a line without X",
    ``^((?!hede).)*$``) where it ends the text: there its copies' lookaheads
    see only its own text, which holds no X; read as ending the text (a way
    through with more text after it is dropped)."""
    if len(item.options) != 1 or len(item.options[0]) != 2:
        return None
    lookahead, character = item.options[0]
    if not (isinstance(lookahead, Lookahead) and lookahead.negative):
        return None
    body = _looked_at(lookahead)
    if body is None or not isinstance(character, Chars):
        return None
    anywhere = Repeat(character, 0, None)
    avoided = Lookahead(Seq((anywhere, body, anywhere)), True, lookahead.start)
    return MarkedGroup(((avoided, Repeat(character, low, high), TextEnd(item.start)),), item.start)


def _looked_at(lookahead: Lookahead) -> Node | None:
    """The text a bounded lookahead looks for, without the rest of the text its
    node matches after it; None where it reaches to the end."""
    if lookahead.reach is None:
        return None
    alternatives = lookahead.node.options if isinstance(lookahead.node, Alt) else (lookahead.node,)
    if not all(isinstance(option, Seq) and option.items for option in alternatives):
        return None
    bodies = [Seq(option.items[:-1]) for option in alternatives]  # type: ignore[union-attr]
    return bodies[0] if len(bodies) == 1 else Alt(tuple(bodies))


def _marks_stay_inside(items: list) -> bool:
    """Whether each mark has text enough on the side it looks at: a lookahead no
    further than the shortest text after it, a lookbehind no further than the
    shortest before it, a word boundary a character on each side."""
    shortest = [length_bounds(item)[0] if isinstance(item, Node) else 0 for item in items]
    for index, item in enumerate(items):
        before, after = sum(shortest[:index]), sum(shortest[index + 1 :])
        if isinstance(item, Lookahead):
            if item.reach is None or item.reach > after:
                return False
        elif isinstance(item, Lookbehind):
            longest = length_bounds(item.node)[1]
            if longest is None or longest > before:
                return False
        elif isinstance(item, Boundary):
            if before < 1 or after < 1:
                return False
        elif isinstance(item, BoundaryLoop):  # its boundaries may look past the copy
            return False
    return True


def spread(
    items: list[Item],
) -> list[tuple[list[Node | Lookahead | Lookbehind | Boundary | BoundaryLoop], bool, bool]]:
    """The top-level sequences ``items`` stands for, each with whether a ``^``
    inside starts the text and a ``$`` inside ends it (the anchors themselves
    removed); an empty list where no text can pass them.

    Raises:
        LookaroundError: more than ``MAX_SPREAD`` sequences.
    """
    partials = [_Partial()]
    for item in items:
        partials = _extended(partials, item)
    return [(partial.items, partial.starts, partial.ends) for partial in partials]


@dataclass
class _Partial:
    """One way through the groups so far."""

    items: list = field(default_factory=list)
    starts: bool = False  # a ^ was met (the items before it were dropped as empty)
    ends: bool = False  # a $ was met: what follows must be empty

    def copy(self) -> _Partial:
        return _Partial(list(self.items), self.starts, self.ends)


def _extended(partials: list[_Partial], item: Item) -> list[_Partial]:
    if isinstance(item, MarkedGroup):
        result = []
        for option in item.options:
            chosen = [partial.copy() for partial in partials]
            for part in option:
                chosen = _extended(chosen, part)
            result += chosen
        if len(result) > MAX_SPREAD:
            raise LookaroundError(
                f"the groups holding lookarounds, word boundaries or anchors make more than "
                f"{MAX_SPREAD} alternatives of the pattern",
                item.start,
            )
        return result
    return [partial for partial in partials if _appended(partial, item)]


def _appended(partial: _Partial, item: Item) -> bool:
    """Adds ``item``; False where no text can follow that way."""
    if isinstance(item, TextStart):
        if not all(_may_be_empty(i) for i in partial.items if isinstance(i, Node)):
            return False
        partial.items = [i for i in partial.items if not isinstance(i, Node)]
        partial.starts = True
        return True
    if isinstance(item, TextEnd):
        partial.ends = True
        return True
    if not partial.ends:
        partial.items.append(item)
        return True
    # after a $: the rest is empty
    if isinstance(item, Node):
        return _may_be_empty(item)
    if isinstance(item, Lookahead):
        return _may_be_empty(item.node) != item.negative
    if isinstance(item, BoundaryLoop):  # none of its copies fits: it has text, or marks
        return item.low == 0
    partial.items.append(item)  # a lookbehind or boundary at the text's end
    return True


def _may_be_empty(node: Node) -> bool:
    return length_bounds(node)[0] == 0


def _row(items: list[Node]) -> Node:
    return items[0] if len(items) == 1 else Seq(tuple(items))
