r"""Terminals with a lazy quantifier: the token ends at the first place it can.

``/<think>(.|\n)*?<\/think>/`` is how llguidance and Lark users write "any
text up to the first ``</think>``". A lexer takes the shortest match of
such a terminal; a grammar has no notion of a shortest match, but the
texts a lexer can produce are a language of their own: those the regex
matches that have no shorter prefix it also matches. That language is
regular, and this module builds it exactly: an automaton of the regex read
greedily (``compile_regex`` already gives the tree of the texts it matches
as a whole), made deterministic, with every transition out of an accepting
state removed; each state becomes a grammar rule. For ``(.|\n)*?</think>``
that is "text not containing ``</think>``, then ``</think>``".

Two readings of a lazy terminal must agree for the judge to be right:
llguidance's (the token is the shortest prefix of the rest of the text in
the regex's language) and Python's ``re``, which Lark's lexer (the judge)
uses (repetitions are tried fewest first, and the first that lets the rest
match wins). They agree when the regex is ``P R{m,n}? S`` with ``P`` and
``S`` of fixed length (single characters, classes and fixed counts of
them) and ``R`` one character or class: each count of ``R`` gives one
length, tried in increasing order. ``lazy_shape_problem`` refuses every
other use of a lazy quantifier, naming what to write instead; there the
two readings can differ (``(ab|a)*?b`` on ``abb``: ``re`` takes ``abb``,
the shortest match is ``ab``).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence

from grammar_compiler.cfg_tree import (
    CharSet,
    Choice,
    Node,
    Ref,
    Repeat,
    Text,
    choice_of,
    merge_ranges,
)
from grammar_compiler.cfg_tree import (
    Sequence as Concatenation,
)
from grammar_compiler.code_points import minus
from grammar_compiler.errors import ConstraintError
from grammar_compiler.token_edges import positive_ranges

try:
    from re import _parser
except ImportError:  # Python 3.10
    import sre_parse as _parser

MAX_LAZY_STATES = 128
"""Most states of the automaton of one lazy terminal. Each becomes a grammar rule,
and xgrammar's compile time grows with them and the vocabulary (128 states: about
a second against 32k tokens). ``X*?`` before a suffix of ``k`` characters takes
``k`` states; ``X{m,n}?`` takes about ``(n - m) * k`` unless ``k`` is 1."""
_MAX_NFA_STATES = 50_000

_SINGLE = (_parser.LITERAL, _parser.NOT_LITERAL, _parser.ANY, _parser.IN)
SUPPORTED_FORM = (
    r"a lazy quantifier is supported as PREFIX X*? SUFFIX (also +?, ??, {m,n}?), where X "
    r"is one character or class and PREFIX and SUFFIX are fixed-length runs of characters "
    r"and classes, as in /<think>(.|\n)*?<\/think>/"
)


def is_lazy(regex: str) -> bool:
    """Whether ``regex`` has a lazy quantifier with a choice of counts (``{3}?`` has none)."""
    return any(_is_lazy(op, av) for op, av in _walk(_parse(regex)))


def lazy_shape_problem(regex: str) -> str | None:
    """Why the lazy quantifiers of ``regex`` cannot be read exactly, or None if they can."""
    tree = _parse(regex)
    if sum(_is_lazy(op, av) for op, av in _walk(tree)) > 1:
        return f"several lazy quantifiers in one terminal; {SUPPORTED_FORM}"
    items = _flattened(tree)
    lazy = [index for index, (op, av) in enumerate(items) if _is_lazy(op, av)]
    if not lazy:
        return f"a lazy quantifier inside a repeated group or an alternative; {SUPPORTED_FORM}"
    op, av = items[lazy[0]]
    if not _single_character(av[2]):
        return f"a lazy quantifier on more than one character; {SUPPORTED_FORM}"
    for index, (op, av) in enumerate(items):
        if index != lazy[0] and not _fixed_length(op, av):
            return f"a part of variable length next to the lazy quantifier; {SUPPORTED_FORM}"
    return None


def lazy_rules(tree: Node, prefix: str) -> tuple[str, dict[str, Node]]:
    """Rules matching exactly the texts of ``tree`` with no shorter prefix in it.

    ``tree`` is the greedy reading of the terminal (``regex_tree``), without
    rule references. Returns the start rule's name and the rules, each named
    ``prefix`` plus a state number.

    Raises:
        ConstraintError: the automaton has more than ``MAX_LAZY_STATES`` states.
    """
    direct = _before_one_character(tree)
    if direct is not None:
        return f"{prefix}0", {f"{prefix}0": direct}
    automaton = _Nfa()
    final = automaton.build(tree, automaton.start)
    states, moves = _determinized(automaton, final)
    accepting = {state for state, members in enumerate(states) if final in members}
    if 0 in accepting:  # the empty text: nothing is shorter, nothing follows
        return f"{prefix}0", {f"{prefix}0": Text("")}
    live = _reaching(moves, accepting)
    inner = sorted(live - accepting)
    names = {state: f"{prefix}{number}" for number, state in enumerate(inner)}
    rules: dict[str, Node] = {}
    for state in inner:
        options: list[Node] = []
        for target, ranges in moves[state].items():
            step = _compact(merge_ranges(ranges))
            if target in accepting:
                options.append(step)
            elif target in live:
                options.append(Concatenation((step, Ref(names[target]))))
        rules[names[state]] = choice_of(options)
    return names[0], rules


def _before_one_character(tree: Node) -> Node | None:
    """``P X{m,n}? c`` (``c`` one character or class) as ``P X{m} (X - c){0,n-m} c``.

    The repeat stops at the first ``c`` after its first ``m`` characters, so
    the rest avoids ``c``: a repetition xgrammar handles natively, where the
    automaton would need a state per count. None for other shapes.
    """
    items = list(tree.items) if isinstance(tree, Concatenation) else [tree]
    if items and isinstance(items[-1], Text) and len(items[-1].value) > 1:
        value = items[-1].value
        items[-1:] = [Text(value[:-1]), Text(value[-1])]
    if len(items) < 2:
        return None
    *head, repeat, last = items
    if not isinstance(repeat, Repeat) or repeat.low == repeat.high:
        return None
    each, stop = _character_ranges(repeat.item), _character_ranges(last)
    if each is None or stop is None or not all(_fixed(item) for item in head):
        return None
    rest = CharSet(minus(each, stop))
    more = None if repeat.high is None else repeat.high - repeat.low
    body = [*head, Repeat(repeat.item, repeat.low, repeat.low), Repeat(rest, 0, more), last]
    return Concatenation(tuple(item for item in body if item != Text("")))


def _character_ranges(node: Node) -> tuple[tuple[int, int], ...] | None:
    """The characters ``node`` matches if it always matches exactly one, else None."""
    if isinstance(node, Text):
        return ((ord(node.value), ord(node.value)),) if len(node.value) == 1 else None
    if isinstance(node, CharSet):
        return positive_ranges(node)
    if isinstance(node, Choice):
        options = [_character_ranges(option) for option in node.options]
        if any(option is None for option in options):
            return None
        return merge_ranges([span for option in options for span in option])
    return None


def _fixed(node: Node) -> bool:
    if isinstance(node, Repeat):
        return node.low == node.high and _fixed(node.item)
    if isinstance(node, Concatenation):
        return all(_fixed(item) for item in node.items)
    return isinstance(node, Text) or _character_ranges(node) is not None


# ---------------------------------------------------------------------------
# The shape of the regex, as Python's parser reads it


def _parse(regex: str) -> list:
    return list(_parser.parse(regex, re.ASCII))


def _walk(items: Sequence) -> list:
    found = []
    stack = list(items)
    while stack:
        op, av = stack.pop()
        found.append((op, av))
        if op is _parser.BRANCH:
            stack.extend(item for branch in av[1] for item in branch)
        elif op is _parser.SUBPATTERN:
            stack.extend(av[-1])
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
            stack.extend(av[2])
    return found


def _flattened(items: Sequence) -> list:
    """The top-level sequence, with groups that are not repeated spelled out in place."""
    flat = []
    for op, av in items:
        if op is _parser.SUBPATTERN:
            flat.extend(_flattened(av[-1]))
        else:
            flat.append((op, av))
    return flat


def _single_character(items: Sequence) -> bool:
    """Whether ``items`` always match exactly one character (``.``, ``[a-z]``, ``(.|\\n)``)."""
    if len(items) != 1:
        return False
    op, av = items[0]
    if op in _SINGLE:
        return True
    if op is _parser.SUBPATTERN:
        return _single_character(av[-1])
    if op is _parser.BRANCH:
        return all(_single_character(branch) for branch in av[1])
    return False


def _is_lazy(op: object, av: object) -> bool:
    return op is _parser.MIN_REPEAT and av[0] != av[1]


def _fixed_length(op: object, av: object) -> bool:
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        low, high, item = av
        return low == high and _single_character(item)
    return _single_character([(op, av)])


# ---------------------------------------------------------------------------
# Automata over code point ranges


class _Nfa:
    """A Thompson automaton: character moves on ranges, and empty moves."""

    def __init__(self) -> None:
        self.moves: list[list[tuple[tuple[tuple[int, int], ...], int]]] = []
        self.empty: list[list[int]] = []
        self.start = self.state()

    def state(self) -> int:
        if len(self.moves) >= _MAX_NFA_STATES:
            raise ConstraintError(
                f"lazy terminal too large: more than {_MAX_NFA_STATES} automaton states"
            )
        self.moves.append([])
        self.empty.append([])
        return len(self.moves) - 1

    def step(self, source: int, ranges: tuple[tuple[int, int], ...]) -> int:
        target = self.state()
        self.moves[source].append((ranges, target))
        return target

    def build(self, node: Node, source: int) -> int:
        """Adds ``node`` after ``source``; returns the state where its matches end."""
        if isinstance(node, Text):
            for char in node.value:
                source = self.step(source, ((ord(char), ord(char)),))
            return source
        if isinstance(node, CharSet):
            return self.step(source, positive_ranges(node))
        if isinstance(node, Concatenation):
            for item in node.items:
                source = self.build(item, source)
            return source
        if isinstance(node, Choice):
            end = self.state()
            for option in node.options:
                self.empty[self.build(option, source)].append(end)
            return end
        if isinstance(node, Repeat):
            return self._repeat(node, source)
        raise TypeError(f"a terminal has no rule references: {node!r}")

    def _repeat(self, node: Repeat, source: int) -> int:
        for _ in range(node.low):
            source = self.build(node.item, source)
        if node.high is None:
            loop = self.state()
            self.empty[source].append(loop)
            self.empty[self.build(node.item, loop)].append(loop)
            return loop
        end = self.state()
        for _ in range(node.high - node.low):
            self.empty[source].append(end)
            source = self.build(node.item, source)
        self.empty[source].append(end)
        return end

    def closure(self, states: set[int]) -> frozenset[int]:
        found = set(states)
        stack = list(states)
        while stack:
            for target in self.empty[stack.pop()]:
                if target not in found:
                    found.add(target)
                    stack.append(target)
        return frozenset(found)


def _compact(ranges: tuple[tuple[int, int], ...]) -> CharSet:
    """The set, written as its complement where that is shorter ("any character but <")."""
    gaps = positive_ranges(CharSet(ranges, negated=True))
    return CharSet(gaps, negated=True) if len(gaps) < len(ranges) else CharSet(ranges)


def _determinized(
    nfa: _Nfa, final: int
) -> tuple[list[frozenset[int]], list[dict[int, list[tuple[int, int]]]]]:
    """Subset construction with no moves out of accepting states (the shortest match)."""
    bounds = sorted(
        {
            edge
            for moves in nfa.moves
            for ranges, _ in moves
            for low, high in ranges
            for edge in (low, high + 1)
        }
    )
    pieces = [(low, high - 1) for low, high in itertools.pairwise(bounds)]
    covered = [
        [
            (bisect.bisect_left(bounds, low), bisect.bisect_left(bounds, high + 1), target)
            for ranges, target in moves
            for low, high in ranges
        ]
        for moves in nfa.moves
    ]
    states = [nfa.closure({nfa.start})]
    index = {states[0]: 0}
    moves: list[dict[int, list[tuple[int, int]]]] = []
    for current in states:  # grows while it is read
        targets: dict[int, set[int]] = {}
        if final not in current:
            for member in current:
                for first, end, target in covered[member]:
                    for piece in range(first, end):
                        targets.setdefault(piece, set()).add(target)
        by_state: dict[int, list[tuple[int, int]]] = {}
        for piece, members in sorted(targets.items()):
            state = nfa.closure(members)
            if state not in index:
                if len(states) >= MAX_LAZY_STATES:
                    raise ConstraintError(
                        f"lazy terminal too large: more than {MAX_LAZY_STATES} automaton states "
                        f"(limit MAX_LAZY_STATES = {MAX_LAZY_STATES}); a bounded lazy repeat "
                        "({m,n}?) before a suffix of several characters needs a state per count "
                        "and suffix character: use *? or a smaller bound"
                    )
                index[state] = len(states)
                states.append(state)
            by_state.setdefault(index[state], []).append(pieces[piece])
        moves.append(by_state)
    return states, moves


def _reaching(moves: list[dict[int, list[tuple[int, int]]]], accepting: set[int]) -> set[int]:
    """The states from which some text leads to an accepting one (those included)."""
    sources: dict[int, set[int]] = {}
    for state, targets in enumerate(moves):
        for target in targets:
            sources.setdefault(target, set()).add(state)
    live = set(accepting)
    stack = list(live)
    while stack:
        for source in sources.get(stack.pop(), ()):
            if source not in live:
                live.add(source)
                stack.append(source)
    return live
