r"""``\b`` and ``\B`` inside a regex, as what they say about the text on each side.

A word boundary between two parts of a sequence, ``X\bY``, holds where X's
last character is a word character and Y's first is not (or Y is empty, the
end of the text), or the other way round; ``\B`` where both are or both are
not. Both sides are regular, so the pair is rewritten exactly as
``X_w Y_n | X_n Y_w`` (``\B``: ``X_w Y_w | X_n Y_n``), where ``X_w`` is X cut
to its texts that end with a word character, ``X_n`` to those that end with
another one or are empty (the start of the text counts as no word), and
``Y_w``/``Y_n`` likewise for how Y starts.

Each boundary is applied to all the text before it and to what follows it
up to the next boundary (the last: to the end), so a part between two
boundaries must not be able to be empty (``lookarounds`` refuses it). A
``\B`` never matches an empty text (Python's ``re`` says so).

The cuts are made on the tree itself, not with automata: a character keeps
the part of its set that fits, a sequence ends with its last item that is
not empty, a repeat with its last repetition. So counts stay counts
(``[a-z]{1,256}\b``) and the result grows with the tree, not with its
states. The same cuts apply lookarounds about one character, ``(?!-)`` and
``(?<!-)`` (``starting_with``, ``ending_with``).
"""

from __future__ import annotations

from grammar_compiler.code_points import SCALAR_VALUES, Ranges, complement, intersect
from grammar_compiler.regex_emit import Alt, Chars, Node, Repeat, Seq, length_bounds

_EMPTY = Seq(())


def at_boundary(
    before: Node, after: Node, word: Ranges, other: Ranges, *, negated: bool
) -> Node | None:
    """The texts ``before`` then ``after`` make with ``\\b`` (``negated``: ``\\B``)
    between them; None if there are none.

    ``word`` and ``other`` are the characters taken as word and as other
    characters: complements for one dialect, or, where two engines must agree
    (ECMA-262's ASCII ``\\w``, the judge's Unicode one), what both take as such.
    """
    before_word = _edge(before, word, last=True)
    before_other = _or_empty(_edge(before, other, last=True), before)
    after_word = _edge(after, word, last=False)
    after_other = _or_empty(_edge(after, other, last=False), after)
    pairs = (
        [(before_word, after_word), (before_other, after_other)]
        if negated
        else [(before_word, after_other), (before_other, after_word)]
    )
    joined = [Seq((a, b)) for a, b in pairs if a is not None and b is not None]
    return _alternatives(joined)


def starting_with(node: Node, chars: Ranges, *, negated: bool) -> Node | None:
    """The texts of ``node`` whose first character is in ``chars`` (``negated``:
    that are empty or start with another): a one-character lookahead, ``(?!-)``."""
    if not negated:
        return _edge(node, chars, last=False)
    return _or_empty(_edge(node, complement(chars), last=False), node)


def ending_with(node: Node, chars: Ranges, *, negated: bool) -> Node | None:
    """The texts of ``node`` whose last character is in ``chars`` (``negated``: that
    are empty or end with another): a one-character lookbehind, ``(?<!-)``."""
    if not negated:
        return _edge(node, chars, last=True)
    return _or_empty(_edge(node, complement(chars), last=True), node)


def without_empty(node: Node) -> Node | None:
    """``node`` less the empty text: Python's ``re`` finds no ``\\B`` in an empty
    text (``regex`` and ECMA-262 do), so a pattern with one never writes it."""
    if length_bounds(node)[0] > 0:
        return node
    return _edge(node, SCALAR_VALUES, last=False)


def _or_empty(edge: Node | None, node: Node) -> Node | None:
    """``edge``, and the empty text too where ``node`` matches it."""
    if length_bounds(node)[0] > 0:
        return edge
    return _EMPTY if edge is None else Repeat(edge, 0, 1)


def _edge(node: Node, chars: Ranges, *, last: bool) -> Node | None:
    """The texts of ``node`` whose last (else first) character is in ``chars``."""
    if isinstance(node, Chars):
        kept = intersect(node.ranges, chars)
        return Chars(kept) if kept else None
    if isinstance(node, Alt):
        return _alternatives([_edge(option, chars, last=last) for option in node.options])
    if isinstance(node, Seq):
        return _sequence_edge(list(node.items), chars, last=last)
    if node.high == 0:
        return None
    edge = _edge(node.item, chars, last=last)
    if edge is None:
        return None
    rest = Repeat(node.item, max(node.low - 1, 0), None if node.high is None else node.high - 1)
    return Seq((rest, edge) if last else (edge, rest))


def _sequence_edge(items: list[Node], chars: Ranges, *, last: bool) -> Node | None:
    """Each way the sequence can end (start): with item k, the items past it empty."""
    order = range(len(items) - 1, -1, -1) if last else range(len(items))
    options: list[Node] = []
    for k in order:
        edge = _edge(items[k], chars, last=last)
        if edge is not None:
            kept = [*items[:k], edge] if last else [edge, *items[k + 1 :]]
            options.append(kept[0] if len(kept) == 1 else Seq(tuple(kept)))
        if length_bounds(items[k])[0] > 0:  # it cannot be empty: no earlier (later) item ends it
            break
    return _alternatives(options)


def _alternatives(options: list[Node | None]) -> Node | None:
    kept = [option for option in options if option is not None]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Alt(tuple(kept))
