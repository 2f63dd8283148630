r"""Word boundaries inside groups repeated without bound, through one automaton.

Why: ``lookarounds`` applies a ``\b`` by cutting the trees on its two sides,
which needs the boundary in the pattern's own sequence; ``marked_groups``
spreads groups into such sequences and writes counted ones out. A group
repeated without bound whose boundaries look into the copy before or after
has no such form: ``(\b\w+\b\s?)+`` (words with optional spaces between,
where two words may not touch), ``^(?:\b[A-Z][a-z]*\b ?)+$``.

What a boundary asks is local: of the character before it and the one after
it (the text's start and end count as no word character). So the sequence
becomes one automaton whose configurations carry, beside the state of the
pattern's own automaton, what the last character was (a word character, an
other one, or one the engines concerned disagree on, beside which no
boundary holds) and what the boundaries just passed ask of the next
character. A boundary is an empty move taken with that condition. The
configurations reached together make the states of a deterministic
automaton, which is minimized and written back as a tree like an
intersection (``regex_automaton``). Counts would become states there; a part
whose characters are all of one kind (``[a-z]{1,50}``) is read as one
character standing for it (``_StandIns``), so its count stays a count, and
the automata's bounds limit the rest. Lookarounds beside such a group are
refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from grammar_compiler.code_points import Ranges, minus, normalize
from grammar_compiler.lookarounds import (
    Boundary,
    BoundaryError,
    Lookahead,
    LookaroundError,
    Lookbehind,
)
from grammar_compiler.lookarounds import (
    resolved as resolved_marks,
)
from grammar_compiler.marked_groups import BoundaryLoop, MarkedGroup
from grammar_compiler.regex_automaton import (
    MAX_TREE_SIZE,
    Classes,
    Dfa,
    Nfa,
    TooComplex,
    all_chars,
    holds,
    minimized,
    within_deadline,
    written_back,
)
from grammar_compiler.regex_emit import Alt, Chars, Node, Repeat, Seq, length_bounds
from grammar_compiler.word_boundaries import without_empty

_WORD, _OTHER, _NEITHER = "w", "o", "n"
_STAND_IN_FIRST, _STAND_IN_LAST = 0xD800, 0xDFFF
"""Code points the stand-ins are drawn from: surrogates, which no text holds
(nor, so, any set of a pattern's), and which are replaced before a regex is written."""
_ANY_NEXT = None
"""A configuration's condition on the next character when no boundary asks one."""

Condition = tuple[frozenset[int] | None, bool]
"""The classes the next character may be in (None: any) and whether the text may end."""
Configuration = tuple[int, tuple[str, ...], frozenset[int] | None, bool]
"""A state of the pattern's automaton, the kind of the last character for each
definition of word characters, and the condition on what follows."""


def resolved(items: list[Any]) -> Node:
    r"""A top-level sequence with its marks applied: by ``lookarounds`` unless it
    holds a ``BoundaryLoop``, then as one automaton; lookaheads where the text
    starts (``^(?=.{1,100}$)(\b\w+\b ?)+$``) are applied to it after.

    Raises:
        LookaroundError: another lookaround beside a boundary loop, no text
            left, or the automata past their bounds.
    """
    loops = [item for item in items if isinstance(item, BoundaryLoop)]
    if not loops:
        return resolved_marks(items)
    start = loops[0].group.start
    leading = 0
    while leading < len(items) and isinstance(items[leading], Lookahead):
        leading += 1
    lookaheads, items = items[:leading], items[leading:]
    if any(isinstance(item, (Lookahead, Lookbehind)) for item in items):
        raise LookaroundError(
            "a lookaround beside a group holding word boundaries repeated without bound "
            "is not supported (lookaheads where the text starts are)",
            start,
        )
    boundaries = list(_boundaries(items))
    try:
        with within_deadline():
            node, empty_passes_negated = _automaton_tree(items, boundaries)
    except TooComplex as error:
        raise LookaroundError(f"the word boundaries make {error}", start) from None
    if node is not None and empty_passes_negated:
        node = without_empty(node)  # Python's re finds no \B in an empty text
    if node is None:
        raise BoundaryError("no text satisfies the word boundaries", start, unsatisfiable=True)
    return resolved_marks([*lookaheads, node]) if lookaheads else node


def _automaton_tree(items: list[Any], boundaries: list[Boundary]) -> tuple[Node | None, bool]:
    r"""The texts of ``items``, and whether the empty one is among them only by
    way of a ``\B``."""
    definitions = sorted({(b.word, b.other) for b in boundaries})
    stand_ins = _StandIns(items, definitions)
    items = stand_ins.placed(items)
    trees = [*_nodes(items), *(Chars(r) for pair in definitions for r in pair if r)]
    classes = Classes(trees)
    nfa = _BoundaryNfa(classes)
    start = nfa.state()
    end = nfa.row(items, start)
    kinds = _Kinds(classes, definitions, stand_ins.kinds_by_class(classes))
    dfa = _deterministic(nfa, start, end, kinds)
    first = (start, kinds.text_start, _ANY_NEXT, True)
    without_negated = _closure(nfa, kinds, [first], negated=False)
    empty_passes_negated = dfa.accepting[0] and not _accepts(without_negated, end)
    tree = written_back(minimized(dfa), classes, MAX_TREE_SIZE)
    return (None if tree is None else stand_ins.restored(tree)), empty_passes_negated


class _StandIns:
    """Parts without marks whose every character is of one kind (``[a-z]{1,50}``:
    word characters), each read by the automaton as one character of a code
    point of its own, then put back in the tree written out. A boundary sees
    only the first and last character of such a part, of the same kind, so
    the texts are the same, and its counts stay counts (written out as states
    they would nest the tree past its bounds)."""

    def __init__(self, items: list[Any], definitions: list[tuple[Ranges, Ranges]]) -> None:
        self.definitions = definitions
        taken = normalize(
            r for node in _nodes(items) for chars in all_chars(node) for r in chars.ranges
        )
        codes = range(_STAND_IN_FIRST, _STAND_IN_LAST + 1)
        self._free = iter(code for code in codes if not holds(taken, code))
        self.parts: dict[int, tuple[Node, tuple[str, ...]]] = {}

    def placed(self, items: Sequence[Any]) -> list[Any]:
        return [self._placed(item) for item in items]

    def _placed(self, item: Any) -> Any:
        if isinstance(item, MarkedGroup):
            return MarkedGroup(tuple(tuple(self.placed(o)) for o in item.options), item.start)
        if isinstance(item, BoundaryLoop):
            return BoundaryLoop(self._placed(item.group), item.low, item.high)
        if isinstance(item, (Boundary, Chars)):
            return item
        optional = isinstance(item, Repeat) and item.low == 0 and item.high != 1
        if optional and length_bounds(item.item)[0] > 0:  # \w{0,200}: (\w{1,200})?
            return Repeat(self._stand_in(Repeat(item.item, 1, item.high)), 0, 1)
        return self._stand_in(item)

    def _stand_in(self, node: Node) -> Node:
        """A character standing for ``node``, or ``node`` itself where it may be
        empty or mixes kinds."""
        kind = self._kind(node)
        code = None if kind is None else next(self._free, None)
        if code is None:
            return node
        self.parts[code] = (node, kind)
        return Chars(((code, code),))

    def _kind(self, node: Node) -> tuple[str, ...] | None:
        if length_bounds(node)[0] == 0:
            return None  # as nothing, it would let the characters around it meet
        ranges = normalize(r for chars in all_chars(node) for r in chars.ranges)
        kind = []
        for word, other in self.definitions:
            if not minus(ranges, word):
                kind.append(_WORD)
            elif not minus(ranges, other):
                kind.append(_OTHER)
            else:
                return None
        return tuple(kind)

    def kinds_by_class(self, classes: Classes) -> dict[int, tuple[str, ...]]:
        return {
            next(iter(classes.of(Chars(((code, code),))))): kind
            for code, (_, kind) in self.parts.items()
        }

    def restored(self, node: Node) -> Node:
        if not self.parts:
            return node
        if isinstance(node, Seq):
            return Seq(tuple(self.restored(item) for item in node.items))
        if isinstance(node, Alt):
            return Alt(tuple(self.restored(option) for option in node.options))
        if isinstance(node, Repeat):
            return Repeat(self.restored(node.item), node.low, node.high)
        codes = [code for code in self.parts if holds(node.ranges, code)]
        if not codes:
            return node
        rest = minus(node.ranges, tuple((code, code) for code in sorted(codes)))
        options = [*([Chars(rest)] if rest else []), *(self.parts[code][0] for code in codes)]
        return options[0] if len(options) == 1 else Alt(tuple(options))


class _Kinds:
    """Each class's kind under each definition of word characters (a stand-in's
    that of the part it stands for), and what a boundary asks of the next
    character after a character of some kind."""

    def __init__(
        self,
        classes: Classes,
        definitions: list[tuple[Ranges, Ranges]],
        stand_ins: dict[int, tuple[str, ...]],
    ) -> None:
        self.definitions = {pair: index for index, pair in enumerate(definitions)}
        word = [_members(classes, word) for word, _ in definitions]
        other = [_members(classes, other) for _, other in definitions]
        self.of_class = [
            stand_ins.get(c)
            or tuple(
                _WORD if c in word[d] else _OTHER if c in other[d] else _NEITHER
                for d in range(len(definitions))
            )
            for c in range(len(classes.ranges))
        ]
        self.word = [
            frozenset(c for c, kind in enumerate(self.of_class) if kind[d] == _WORD)
            for d in range(len(definitions))
        ]
        self.other = [
            frozenset(c for c, kind in enumerate(self.of_class) if kind[d] == _OTHER)
            for d in range(len(definitions))
        ]
        self.text_start = (_OTHER,) * len(definitions)

    def asked(self, boundary: Boundary, last: tuple[str, ...]) -> Condition | None:
        """What ``boundary`` asks of the next character after ``last``; None
        where it cannot hold (the last character is one the engines disagree on)."""
        index = self.definitions[(boundary.word, boundary.other)]
        kind = last[index]
        if kind == _NEITHER:
            return None
        same_kind_next = boundary.negative
        after_word = kind == _WORD
        if after_word == same_kind_next:
            return self.word[index], False  # a word character next; the text may not end
        return self.other[index], True  # another character next, or the end


class _BoundaryNfa(Nfa):
    """Thompson's construction with a third kind of edge: word boundaries."""

    def __init__(self, classes: Classes) -> None:
        super().__init__(classes)
        self.marks: dict[int, list[tuple[Boundary, int]]] = {}

    def row(self, items: Sequence[Any], start: int) -> int:
        for item in items:
            start = self._item(item, start)
        return start

    def _item(self, item: Any, start: int) -> int:
        if isinstance(item, Boundary):
            end = self.state()
            self.marks.setdefault(start, []).append((item, end))
            return end
        if isinstance(item, MarkedGroup):
            end = self.state()
            for option in item.options:
                self.empty[self.row(option, start)].append(end)
            return end
        if isinstance(item, BoundaryLoop):
            return self._loop(item, start)
        return self.build(item, start)

    def _loop(self, loop: BoundaryLoop, start: int) -> int:
        return self.repeat(lambda at: self._item(loop.group, at), loop.low, loop.high, start)


def _deterministic(nfa: _BoundaryNfa, start: int, end: int, kinds: _Kinds) -> Dfa:
    """The subset construction over configurations (``Configuration``)."""
    dfa = Dfa(len(nfa.classes.ranges))
    first = _closure(nfa, kinds, [(start, kinds.text_start, _ANY_NEXT, True)])
    index = {first: dfa.add(_accepts(first, end))}
    pending = [first]
    while pending:
        current = pending.pop()
        targets: dict[int, set[Configuration]] = {}
        for state, _, allowed, _ in current:
            for members, target in nfa.edges[state]:
                for member in members:
                    if allowed is None or member in allowed:
                        fresh = (target, kinds.of_class[member], _ANY_NEXT, True)
                        targets.setdefault(member, set()).add(fresh)
        for member, reached in targets.items():
            closed = _closure(nfa, kinds, reached)
            if closed not in index:
                index[closed] = dfa.add(_accepts(closed, end))
                pending.append(closed)
            dfa.moves[index[current]][member] = index[closed]
    return dfa


def _closure(
    nfa: _BoundaryNfa,
    kinds: _Kinds,
    configurations: Iterable[Configuration],
    *,
    negated: bool = True,
) -> frozenset[Configuration]:
    r"""The configurations reached by empty moves and boundaries (``negated``
    False: not through a ``\B``)."""
    seen = set(configurations)
    pending = list(seen)
    while pending:
        state, last, allowed, may_end = pending.pop()
        following = [(target, last, allowed, may_end) for target in nfa.empty[state]]
        for boundary, target in nfa.marks.get(state, ()):
            if boundary.negative and not negated:
                continue
            asked = kinds.asked(boundary, last)
            if asked is None:
                continue
            both = asked[0] if allowed is None else allowed & asked[0]
            ends = may_end and asked[1]
            if both or ends:
                following.append((target, last, both, ends))
        for configuration in following:
            if configuration not in seen:
                seen.add(configuration)
                pending.append(configuration)
    return frozenset(seen)


def _accepts(configurations: frozenset[Configuration], end: int) -> bool:
    return any(state == end and may_end for state, _, _, may_end in configurations)


def _members(classes: Classes, ranges: Ranges) -> frozenset[int]:
    return classes.of(Chars(ranges)) if ranges else frozenset()


def _leaves(items: Iterable[Any]) -> Iterable[Node | Boundary]:
    """The nodes and boundaries inside ``items``, groups and loops looked into."""
    for item in items:
        if isinstance(item, MarkedGroup):
            for option in item.options:
                yield from _leaves(option)
        elif isinstance(item, BoundaryLoop):
            yield from _leaves([item.group])
        else:
            yield item


def _boundaries(items: Iterable[Any]) -> Iterable[Boundary]:
    return (leaf for leaf in _leaves(items) if isinstance(leaf, Boundary))


def _nodes(items: Iterable[Any]) -> Iterable[Node]:
    return (leaf for leaf in _leaves(items) if not isinstance(leaf, Boundary))
