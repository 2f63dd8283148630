"""Intersection and difference of ``regex_emit`` trees, through automata.

Why: xgrammar takes one regex per string, and a JSON Schema pattern's
lookaheads (``^(?=.*[A-Z])(?=.*\\d).{8,}$``, ``^(?!admin$)[a-z]+$``) say
that the rest of the text must also (or must not) match another regex.
Both are regular, so each side becomes a deterministic automaton over the
character classes the two trees tell apart, the automata are combined
(product; complement for a negative lookahead), minimized, and written back
as a tree by eliminating states one at a time.

Writing an automaton back as a regex can grow exponentially, so the work is
bounded (``MAX_NFA_STATES``, ``MAX_DFA_STATES``, ``MAX_TREE_SIZE``,
``MAX_TREE_DEPTH``): past a
bound ``TooComplex`` is raised and the caller refuses the pattern. Counted
repeats are expanded into states, so a caller keeps a length count out of
the automaton where it can (``ecma_regex`` folds ``.{8,}`` back in with
``restrict_length``).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator

from grammar_compiler import bounded_regex
from grammar_compiler.code_points import Ranges, normalize
from grammar_compiler.regex_emit import Alt, Chars, Node, Repeat, Seq

MAX_NFA_STATES = 4_000
MAX_DFA_STATES = 400
MAX_TREE_SIZE = 4_000
"""Nodes in a tree written back from an automaton."""
MAX_TREE_DEPTH = 80
"""Its nesting (a chain of states nests one optional group in the next; the trees are
read recursively, so this stays well within Python's stack)."""

_EMPTY = Seq(())  # the empty text


class TooComplex(ValueError):
    """The automata or the regex written back would be too large."""


def intersection(a: Node, b: Node, *, max_size: int = MAX_TREE_SIZE) -> Node | None:
    """The texts both match; None if there are none. ``max_size``: see ``_tree``."""
    with within_deadline():
        classes = Classes([a, b])
        product = _product(_dfa(a, classes), _dfa(b, classes))
        return written_back(minimized(product), classes, max_size)


def difference(a: Node, b: Node, *, max_size: int = MAX_TREE_SIZE) -> Node | None:
    """The texts ``a`` matches and ``b`` does not; None if there are none."""
    with within_deadline():
        classes = Classes([a, b])
        product = _product(_dfa(a, classes), _complemented(_dfa(b, classes)))
        return written_back(minimized(product), classes, max_size)


@contextlib.contextmanager
def within_deadline() -> Iterator[None]:
    """Each call is bounded in size; the many a schema may hold share the
    deadline of its compile (``bounded_regex.deadline``): past it, TooComplex."""
    try:
        bounded_regex.check_deadline()
        yield
    except TimeoutError:
        raise TooComplex("the time for the schema's patterns ran out") from None


# ---------------------------------------------------------------------------
# Character classes: the partition of code points that no set of either tree splits


class Classes:
    """The automata's alphabet: the partition of code points that no set of the
    trees splits, each part a class numbered from 0."""

    def __init__(self, trees: Iterable[Node]) -> None:
        sets = {chars.ranges for tree in trees for chars in all_chars(tree)}
        cuts = sorted({edge for ranges in sets for low, high in ranges for edge in (low, high + 1)})
        members: dict[tuple[bool, ...], list[tuple[int, int]]] = {}
        ordered = sorted(sets)
        for low, next_low in itertools.pairwise(cuts):
            signature = tuple(holds(ranges, low) for ranges in ordered)
            if any(signature):
                members.setdefault(signature, []).append((low, next_low - 1))
        self.ranges: list[Ranges] = [normalize(pieces) for pieces in members.values()]
        self._of_set = {
            ranges: frozenset(
                index for index, signature in enumerate(members) if signature[ordered.index(ranges)]
            )
            for ranges in ordered
        }

    def of(self, chars: Chars) -> frozenset[int]:
        return self._of_set[chars.ranges]


def holds(ranges: Ranges, code: int) -> bool:
    index = bisect.bisect_right(ranges, (code, 0x10FFFF + 1)) - 1
    return index >= 0 and ranges[index][0] <= code <= ranges[index][1]


def all_chars(node: Node) -> Iterable[Chars]:
    if isinstance(node, Chars):
        yield node
    elif isinstance(node, Repeat):
        yield from all_chars(node.item)
    else:
        for part in _children(node):
            yield from all_chars(part)


# ---------------------------------------------------------------------------
# Automata


class Nfa:
    """Thompson's construction: character edges and empty edges."""

    def __init__(self, classes: Classes) -> None:
        self.classes = classes
        self.edges: list[list[tuple[frozenset[int], int]]] = []
        self.empty: list[list[int]] = []

    def state(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:
            raise TooComplex(f"more than {MAX_NFA_STATES} automaton states")
        self.edges.append([])
        self.empty.append([])
        return len(self.edges) - 1

    def build(self, node: Node, start: int) -> int:
        """The state reached after ``node`` is matched from ``start``."""
        if isinstance(node, Chars):
            end = self.state()
            self.edges[start].append((self.classes.of(node), end))
            return end
        if isinstance(node, Seq):
            for item in node.items:
                start = self.build(item, start)
            return start
        if isinstance(node, Alt):
            end = self.state()
            for option in node.options:
                self.empty[self.build(option, start)].append(end)
            return end
        return self.repeat(lambda at: self.build(node.item, at), node.low, node.high, start)

    def repeat(self, copy: Callable[[int], int], low: int, high: int | None, start: int) -> int:
        """``low`` to ``high`` copies (None: no bound) in a row from ``start``,
        each made by ``copy`` from the state it starts at; the state after them."""
        for _ in range(low):
            start = copy(start)
        if high is None:
            loop = self.state()
            self.empty[start].append(loop)
            self.empty[copy(loop)].append(loop)
            return loop
        end = self.state()
        for _ in range(high - low):
            self.empty[start].append(end)
            start = copy(start)
        self.empty[start].append(end)
        return end

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        pending = list(seen)
        while pending:
            for target in self.empty[pending.pop()]:
                if target not in seen:
                    seen.add(target)
                    pending.append(target)
        return frozenset(seen)


class Dfa:
    """States 0..n-1, 0 the start; ``moves[state][class]`` absent: no way on."""

    def __init__(self, class_count: int) -> None:
        self.class_count = class_count
        self.moves: list[dict[int, int]] = []
        self.accepting: list[bool] = []

    def add(self, accepting: bool) -> int:
        if len(self.moves) >= MAX_DFA_STATES:
            raise TooComplex(f"more than {MAX_DFA_STATES} automaton states")
        bounded_regex.check_deadline()
        self.moves.append({})
        self.accepting.append(accepting)
        return len(self.moves) - 1


def _dfa(node: Node, classes: Classes) -> Dfa:
    nfa = Nfa(classes)
    start = nfa.state()
    end = nfa.build(node, start)
    dfa = Dfa(len(classes.ranges))
    first = nfa.closure([start])
    index = {first: dfa.add(end in first)}
    pending = [first]
    while pending:
        current = pending.pop()
        targets: dict[int, set[int]] = {}
        for state in current:
            for members, target in nfa.edges[state]:
                for member in members:
                    targets.setdefault(member, set()).add(target)
        for member, reached in targets.items():
            closed = nfa.closure(reached)
            if closed not in index:
                index[closed] = dfa.add(end in closed)
                pending.append(closed)
            dfa.moves[index[current]][member] = index[closed]
    return dfa


def _complemented(dfa: Dfa) -> Dfa:
    """Over every class (a missing move goes to a state that accepts everything after)."""
    result = Dfa(dfa.class_count)
    for accepting in dfa.accepting:
        result.add(not accepting)
    sink = result.add(True)
    every = range(dfa.class_count)
    for state, moves in enumerate([*dfa.moves, {}]):
        result.moves[state] = {member: moves.get(member, sink) for member in every}
    return result


def _product(a: Dfa, b: Dfa) -> Dfa:
    result = Dfa(a.class_count)
    index = {(0, 0): result.add(a.accepting[0] and b.accepting[0])}
    pending = [(0, 0)]
    while pending:
        pair = pending.pop()
        moves_a, moves_b = a.moves[pair[0]], b.moves[pair[1]]
        for member, target_a in moves_a.items():
            target_b = moves_b.get(member)
            if target_b is None:
                continue
            target = (target_a, target_b)
            if target not in index:
                index[target] = result.add(a.accepting[target_a] and b.accepting[target_b])
                pending.append(target)
            result.moves[index[pair]][member] = index[target]
    return result


def minimized(dfa: Dfa) -> Dfa:
    """Only states on a way to acceptance, equivalent ones merged (Moore's refinement)."""
    live = _live(dfa)
    if 0 not in live:
        return Dfa(dfa.class_count)
    block = {state: int(dfa.accepting[state]) for state in live}
    while True:
        signatures = {
            state: (
                block[state],
                tuple(
                    sorted(
                        (member, block[target])
                        for member, target in dfa.moves[state].items()
                        if target in live
                    )
                ),
            )
            for state in live
        }
        numbering: dict[tuple, int] = {}
        refined = {state: numbering.setdefault(signatures[state], len(numbering)) for state in live}
        if len(numbering) == len(set(block.values())):
            break
        block = refined
    result = Dfa(dfa.class_count)
    order = {block[0]: 0}
    result.add(dfa.accepting[0])
    pending = [0]
    seen = {block[0]}
    while pending:
        state = pending.pop()
        source = order[block[state]]
        for member, target in dfa.moves[state].items():
            if target not in live:
                continue
            if block[target] not in seen:
                seen.add(block[target])
                order[block[target]] = result.add(dfa.accepting[target])
                pending.append(target)
            result.moves[source][member] = order[block[target]]
    return result


def _live(dfa: Dfa) -> set[int]:
    """States from which an accepting state can be reached."""
    incoming: list[list[int]] = [[] for _ in dfa.moves]
    for state, moves in enumerate(dfa.moves):
        for target in moves.values():
            incoming[target].append(state)
    live = {state for state, accepting in enumerate(dfa.accepting) if accepting}
    pending = list(live)
    while pending:
        for source in incoming[pending.pop()]:
            if source not in live:
                live.add(source)
                pending.append(source)
    return live


# ---------------------------------------------------------------------------
# Back to a tree: state elimination


def written_back(dfa: Dfa, classes: Classes, max_size: int) -> Node | None:
    """The automaton as a tree; TooComplex past ``max_size`` parts."""
    if not dfa.moves:
        return None
    start, final = len(dfa.moves), len(dfa.moves) + 1
    edges: dict[tuple[int, int], Node] = {(start, 0): _EMPTY}
    for state, moves in enumerate(dfa.moves):
        grouped: dict[int, list[int]] = {}
        for member, target in moves.items():
            grouped.setdefault(target, []).append(member)
        for target, members in grouped.items():
            ranges = normalize(piece for m in members for piece in classes.ranges[m])
            edges[(state, target)] = Chars(ranges)
        if dfa.accepting[state]:
            edges[(state, final)] = _EMPTY
    remaining = set(range(len(dfa.moves)))
    while remaining:
        bounded_regex.check_deadline()
        state = min(remaining, key=lambda s: _degree(edges, s))
        remaining.discard(state)
        loop = edges.pop((state, state), None)
        middle = _EMPTY if loop is None else Repeat(loop, 0, None)
        ins = [(i, edge) for (i, j), edge in edges.items() if j == state]
        outs = [(j, edge) for (i, j), edge in edges.items() if i == state]
        for i, _ in ins:
            del edges[(i, state)]
        for j, _ in outs:
            del edges[(state, j)]
        for i, into in ins:
            for j, out in outs:
                path = _seq(_seq(into, middle), out)
                edges[(i, j)] = _alt(edges[(i, j)], path) if (i, j) in edges else path
                size, depth = _measure(edges[(i, j)])
                if size > max_size:
                    raise TooComplex(f"the regex would exceed {max_size} parts")
                if depth > MAX_TREE_DEPTH:  # checked as it grows, so the recursion stays shallow
                    raise TooComplex(f"the regex would nest more than {MAX_TREE_DEPTH} deep")
    return edges.get((start, final))


def _degree(edges: dict[tuple[int, int], Node], state: int) -> int:
    ins = sum(1 for i, j in edges if j == state and i != state)
    outs = sum(1 for i, j in edges if i == state and j != state)
    return ins * outs


def _seq(a: Node, b: Node) -> Node:
    items = [*(a.items if isinstance(a, Seq) else (a,)), *(b.items if isinstance(b, Seq) else (b,))]
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _alt(a: Node, b: Node) -> Node:
    if a == b:
        return a
    if isinstance(a, Chars) and isinstance(b, Chars):
        return Chars(normalize([*a.ranges, *b.ranges]))
    if b == _EMPTY:
        a, b = b, a
    if a == _EMPTY:
        return b if _nullable(b) else Repeat(b, 0, 1)
    options = [
        *(a.options if isinstance(a, Alt) else (a,)),
        *(b.options if isinstance(b, Alt) else (b,)),
    ]
    return Alt(tuple(dict.fromkeys(options)))


def _nullable(node: Node) -> bool:
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(map(_nullable, node.items))
    if isinstance(node, Alt):
        return any(map(_nullable, node.options))
    return node.low == 0 or _nullable(node.item)


def _measure(node: Node) -> tuple[int, int]:
    """The tree's parts and nesting, in one pass."""
    if isinstance(node, Chars):
        return 1, 1
    parts = (node.item,) if isinstance(node, Repeat) else _children(node)
    measures = [_measure(part) for part in parts]
    return 1 + sum(size for size, _ in measures), 1 + max((d for _, d in measures), default=0)


def _children(node: Seq | Alt) -> tuple[Node, ...]:
    return node.items if isinstance(node, Seq) else node.options


# ---------------------------------------------------------------------------
# Counting texts


class TextCounts:
    """How many texts of a regex each start can still end as (at most ``cap``):
    its minimized automaton, with that count for each state.

    Why: the decoder keeps a unique array's strings apart by refusing each
    start every ending of which is taken (``engine.json_repeats``), which
    needs, for a start, how many texts it can still become.
    """

    def __init__(self, node: Node, cap: int) -> None:
        classes = Classes([node])
        self._ranges = classes.ranges
        self._dfa = minimized(_dfa(node, classes))
        sizes = [sum(high - low + 1 for low, high in ranges) for ranges in classes.ranges]
        self.counts = _counts(self._dfa, sizes, cap)
        self._members: dict[int, int | None] = {}

    def total(self) -> int:
        return self.counts[0] if self.counts else 0

    def state_after(self, text: str, state: int = 0) -> int | None:
        """The state ``text`` leads to from ``state``; None where no text goes on so."""
        if not self.counts:
            return None
        for character in text:
            member = self._member(ord(character))
            reached = None if member is None else self._dfa.moves[state].get(member)
            if reached is None:
                return None
            state = reached
        return state

    def _member(self, code: int) -> int | None:
        """The class ``code`` is in (remembered: the decoder asks again and again)."""
        if code not in self._members:
            found = (i for i, ranges in enumerate(self._ranges) if holds(ranges, code))
            self._members[code] = next(found, None)
        return self._members[code]


def _counts(dfa: Dfa, sizes: list[int], cap: int) -> list[int]:
    """Texts accepted from each state, at most ``cap`` (every state of a minimized
    automaton leads to acceptance, so one on a loop has endless texts)."""
    counts: list[int | None] = [None] * len(dfa.moves)
    on_path: set[int] = set()

    def count(state: int) -> int:
        known = counts[state]
        if known is not None:
            return known
        if state in on_path:
            return cap
        on_path.add(state)
        total = int(dfa.accepting[state])
        for member, target in dfa.moves[state].items():
            total = min(cap, total + sizes[member] * count(target))
        on_path.discard(state)
        counts[state] = total
        return total

    return [count(state) for state in range(len(dfa.moves))]
