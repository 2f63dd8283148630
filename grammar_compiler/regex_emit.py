r"""The regex tree both regex translators build, and how it is written for xgrammar.

``regex`` (Python regexes: the regex endpoint, Lark terminals) and
``ecma_regex`` (JSON Schema ``pattern`` and ``format``) each read their own
dialect and decide what it means, then build the same small tree: sets of
code points (``Chars``), sequences, alternatives and counted repeats.
Writing that tree for xgrammar is one job, done here for both:

* A set is one character or a class of ranges, positive or (when it
  misses only a few BMP characters) negated, so xgrammar never interprets a
  shorthand (``\d``, ``.``) or a flag its own way. ``^`` is never first
  among a class's members, even escaped: xgrammar 0.2.8 reads ``[\^a]`` as
  ``[^a]``.
* A character is written literally when printable, a metacharacter after
  ``\`` (only those xgrammar knows: it warns about others, such as ``\#``),
  anything else as ``\uXXXX``.
* Alternatives, and repeated parts longer than one character, are grouped
  with ``(?:...)``. ``x{m,}`` with ``m`` above ``SPLIT_OPEN_REPEAT_ABOVE``
  is written ``x{m}x*`` (``x*`` if ``x`` can be empty), the same texts:
  xgrammar forces the former in time and memory quadratic in ``m``
  (``x{10000,}``: 11 s, 3 GB), the latter in linear. The body is written
  twice, which cannot compound: the shortest-output limit allows at most
  three nested counts above 16.
* A group's required copies (``(?:ab){3,}``) are written out, up to
  ``WRITE_OUT_COUNT_LIMIT`` copies and ``WRITE_OUT_TEXT_LIMIT`` characters a
  regex: xgrammar fills masks inside written-out copies far faster.

xgrammar reads regexes in two places that differ (probed on 0.2.8), so the
text is written for one of them (``Syntax``): ``Grammar.from_regex``, behind
the regex endpoint and Lark terminals (``REGEX_SYNTAX``), and the reader of
a JSON Schema ``pattern`` (``PATTERN_SYNTAX``), which does not know ``\U``
escapes, reads ``(?:a+b)?`` as also matching ``a``, and was seen computing
wrong token masks for counted repetitions of a class holding characters
both below and beyond U+10000 (such a class is written as two alternatives
there, unless it misses only BMP characters). Both readers compute wrong
masks for any such class under a count above 128, so larger counts are
written in parts (``MIXED_PLANE_COUNT_LIMIT``).

A set that misses only a few BMP characters is a negated class, for speed
(``NEGATED_COUNT_LIMIT``); its members are written as in a positive class.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from grammar_compiler.code_points import Ranges, intersect, minus

SPLIT_OPEN_REPEAT_ABOVE = 16
"""``x{m,}`` with a larger ``m`` is written ``x{m}x*``."""

MIXED_PLANE_COUNT_LIMIT = 128
"""The largest count xgrammar 0.2.8 masks right on a class spanning U+FFFF and
U+10000 (``x{m,n}`` with ``n`` above it and ``m`` at least 2, or ``x{m}``
above it, lets a token through that ends the run too early, then refuses
it); larger counts are written in parts no larger than this."""

NEGATED_COUNT_LIMIT = 128
"""The largest count under which a set is written as a negated class.

Measured on xgrammar 0.2.8 inside a JSON string with Llama 3's vocabulary,
mask fill p50: ``[^...]{0,24}`` 0.03 ms against 0.77 ms for the positive
class, ``{0,128}`` 0.03 against 0.39, ``+`` 0.03 against 0.30; but
``{0,129}`` 28 ms against 0.43 and ``{129}`` 20 ms against 0.02 (past 128,
xgrammar counts the repeat at run time, where a negated class has no
precomputed masks)."""

COUNT_LIMIT = 128
"""The largest count xgrammar 0.2.8 gets right everywhere in a JSON string's
pattern (its ``Regex(..., json_string=true)``). Past 128 it counts at run
time, and gets it wrong inside a group that is repeated, optional or one of
several alternatives (``a(?:b{0,129}c)?`` accepts ``abb``: Kubernetes' name
pattern with ``maxLength: 253`` wrote ``4fi-``) and right after an unbounded
repeat (``a*c{0,145}`` accepts ``acaa``). There such counts are written in
parts no larger than this (``b{0,128}b{0,1}``), which it expands and gets
right; elsewhere (``[^"]{0,500}``, ``[a-z]+ .{0,500}``: fuzzed right) they
stay, since expanding costs compile time, 30 s for ``.{0,500}`` with a 128k
vocabulary."""

WRITE_OUT_COUNT_LIMIT = 128
"""The largest required count of a group (not a single set) written as that
many copies rather than counted; ``WRITE_OUT_TEXT_LIMIT`` bounds the text.

Measured on xgrammar 0.2.8 with Llama 3's vocabulary, a sentence of 80 words
through ``[A-Z][a-z]+(?: [a-z]+,?){70,}\\.``: 0.76 ms a mask fill inside
the counted part, 0.005 ms with the 70 copies written out (compile 0.01 ->
0.34 s). An unbounded ``*`` tail fills at 0.15-0.3 ms either way; counts
of a single set are fast already."""
WRITE_OUT_TEXT_LIMIT = 2048
"""The most regex text one regex's written-out copies may take, all counts
together (a pattern may hold many): xgrammar's compile time grows with it,
~5 ms a copy of a short group with a 128k vocabulary (0.34 s for the 910
characters of the example above)."""


# ---------------------------------------------------------------------------
# The tree


@dataclass(frozen=True)
class Chars:
    """One character from a set of code point ranges (normalized, not empty)."""

    ranges: Ranges


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    low: int
    high: int | None  # None: unbounded


Node = Chars | Seq | Alt | Repeat


@functools.lru_cache(maxsize=65_536)
def length_bounds(node: Node) -> tuple[int, int | None]:
    """Shortest and longest text (None: unbounded), in code points.

    Cached because restricting lengths asks again at every level of a tree;
    bounded because the trees come from users' patterns.
    """
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Seq):
        bounds = [length_bounds(item) for item in node.items]
        low = sum(b[0] for b in bounds)
        highs = [b[1] for b in bounds]
        return low, None if None in highs else sum(h for h in highs if h is not None)
    if isinstance(node, Alt):
        bounds = [length_bounds(option) for option in node.options]
        highs = [b[1] for b in bounds]
        return min(b[0] for b in bounds), None if None in highs else max(
            h for h in highs if h is not None
        )
    if node.high == 0:
        return 0, 0
    low, high = length_bounds(node.item)
    if node.high is None:
        return low * node.low, None if high != 0 else 0
    return low * node.low, None if high is None else high * node.high


def finite_texts(node: Node, limit: int) -> list[str] | None:
    """Every text ``node`` matches, when there are at most ``limit`` of them
    (``^[A-Z]{2}$``: 676); None when there are more, or endlessly many.

    Why: items of a unique array that a pattern bounds can be listed, and
    listed values the decoder keeps apart without ever cornering itself."""
    if _count(node, limit) > limit:
        return None
    return sorted(set(_texts(node)))


def _count(node: Node, limit: int) -> float:
    """How many texts ``node`` matches at most (repeats counted), past ``limit`` capped."""
    if isinstance(node, Chars):
        return sum(high - low + 1 for low, high in node.ranges)
    if isinstance(node, (Seq, Alt)):
        parts = [
            _count(part, limit) for part in (node.items if isinstance(node, Seq) else node.options)
        ]
        if isinstance(node, Alt):
            return min(sum(parts), limit + 1)
        total = 1.0
        for part in parts:
            total = min(total * part, limit + 1)
        return total
    if node.high is None:
        return 1 if length_bounds(node.item)[1] == 0 else limit + 1
    each = _count(node.item, limit)
    return min(sum(each**k for k in range(node.low, node.high + 1)), limit + 1)


def _texts(node: Node) -> Iterator[str]:
    if isinstance(node, Chars):
        for low, high in node.ranges:
            yield from map(chr, range(low, high + 1))
    elif isinstance(node, Alt):
        for option in node.options:
            yield from _texts(option)
    elif isinstance(node, Seq):
        yield from ("".join(parts) for parts in itertools.product(*map(_listed, node.items)))
    else:
        item = _listed(node.item)
        high = node.high if node.high is not None else node.low
        for count in range(node.low, high + 1):
            yield from ("".join(parts) for parts in itertools.product(item, repeat=count))


def _listed(node: Node) -> list[str]:
    return list(_texts(node))


def always_extendable(node: Node) -> bool:
    """Whether every text that begins a match of ``node`` (the empty one
    included) can be finished in infinitely many ways.

    Why: a unique array's strings are kept apart by the decoder banning the
    close of a taken one (``engine/json_repeats.py``); that never leaves the
    decoder without a way on only if no text written so far is bound to
    end as a taken value. Checked per position: whatever follows a
    character, up to the end, must hold an unbounded repeat (one the
    character sits in, or a later part).
    """
    return length_bounds(node)[1] is None and _extendable(node, then_unbounded=False)


def _extendable(node: Node, *, then_unbounded: bool) -> bool:
    if isinstance(node, Chars):
        return then_unbounded
    if isinstance(node, Alt):
        return all(_extendable(option, then_unbounded=then_unbounded) for option in node.options)
    if isinstance(node, Repeat):
        again = node.high is None and length_bounds(node.item)[1] != 0
        return node.high == 0 or _extendable(node.item, then_unbounded=then_unbounded or again)
    unbounded_after = then_unbounded
    for item in reversed(node.items):
        if not _extendable(item, then_unbounded=unbounded_after):
            return False
        unbounded_after = unbounded_after or length_bounds(item)[1] is None
    return True


def within(node: Node, allowed: Ranges) -> Node | None:
    """The texts of ``node`` made only of ``allowed`` characters; None if there are none.

    Exact on a tree: each character of a text comes from one set, so keeping
    only the allowed part of every set keeps exactly the texts that avoid the
    others. Why: a JSON Schema pattern may allow characters a patterned
    string cannot hold (``(.|\\n)*``), and the rest of the pattern is still a
    language worth generating.
    """
    if isinstance(node, Chars):
        kept = intersect(node.ranges, allowed)
        return Chars(kept) if kept else None
    if isinstance(node, Alt):
        options = [kept for option in node.options if (kept := within(option, allowed)) is not None]
        if not options:
            return None
        return options[0] if len(options) == 1 else Alt(tuple(options))
    if isinstance(node, Seq):
        items = [within(item, allowed) for item in node.items]
        return None if None in items else Seq(tuple(items))  # type: ignore[arg-type]
    item = within(node.item, allowed)
    if item is None:
        return Seq(()) if node.low == 0 else None
    return Repeat(item, node.low, node.high)


def longest_part(node: Node) -> int:
    """The largest shortest length of any part of ``node`` (``shortest``): in ``a|(x{999}){99}``
    the whole can be one character, but the second alternative forces 98,901."""
    if isinstance(node, (Seq, Alt)):
        parts = node.items if isinstance(node, Seq) else node.options
        return max([length_bounds(node)[0], *map(longest_part, parts)])
    if isinstance(node, Repeat):
        return max(length_bounds(node)[0], longest_part(node.item))
    return length_bounds(node)[0]


# ---------------------------------------------------------------------------
# Writing it


@dataclass(frozen=True)
class Syntax:
    """What one of xgrammar's regex readers gets right, as probed on 0.2.8."""

    escapes_beyond_bmp: bool
    """It reads ``\\UXXXXXXXX``; otherwise characters beyond U+FFFF are written raw."""
    optional_mark: bool
    """It reads ``x?`` right; otherwise ``x{0,1}`` is written."""
    mixed_plane_classes: bool
    """It masks repeats of a class spanning U+FFFF and U+10000 right; otherwise the
    class is written as two alternatives."""
    large_counts: bool
    """It gets counts above ``COUNT_LIMIT`` right wherever they stand; otherwise they
    are written in parts where it would not."""


REGEX_SYNTAX = Syntax(
    escapes_beyond_bmp=True, optional_mark=True, mixed_plane_classes=True, large_counts=True
)
PATTERN_SYNTAX = Syntax(
    escapes_beyond_bmp=False, optional_mark=False, mixed_plane_classes=False, large_counts=False
)

_BMP: Ranges = ((0, 0xFFFF),)
_BEYOND_BMP: Ranges = ((0x10000, sys.maxunicode),)
_ALL_CODE_POINTS: Ranges = ((0, sys.maxunicode),)
_METACHARACTERS = frozenset("\\^$.|?*+()[]{}")
_CLASS_METACHARACTERS = frozenset("\\[]^-")
_CARET = ord("^")


def emit(node: Node, syntax: Syntax) -> str:
    """The regex, for ``syntax``'s reader, that matches exactly the texts ``node`` matches."""
    return _Writer(syntax).emit(node, negatable=True)


class _Writer:
    """One regex being written: its syntax and what is left of its write-out budget."""

    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
        self.write_out_left = WRITE_OUT_TEXT_LIMIT

    def emit(self, node: Node, *, negatable: bool, split_counts: bool = False) -> str:
        """``negatable``: whether a set may be written as a negated class here
        (not under a count above ``NEGATED_COUNT_LIMIT``); ``split_counts``:
        whether a count above ``COUNT_LIMIT`` is written in parts here."""
        syntax = self.syntax
        if isinstance(node, Chars):
            return _set(node.ranges, syntax, negatable=negatable)
        if isinstance(node, Seq):
            return "".join(
                self.emit(item, negatable=negatable, split_counts=split_counts or unbounded)
                for item, unbounded in zip(node.items, _after_unbounded(node.items), strict=True)
            )
        if isinstance(node, Alt):
            options = (self.emit(o, negatable=negatable, split_counts=True) for o in node.options)
            return "(?:" + "|".join(options) + ")"
        if split_counts and not syntax.large_counts:
            chunks = _count_chunks(node.low, node.high, COUNT_LIMIT)
            if len(chunks) > 1:
                parts = (Repeat(node.item, low, high) for low, high in chunks)
                return "".join(self.emit(part, negatable=negatable) for part in parts)
        negatable = negatable and max(node.low, node.high or 0) <= NEGATED_COUNT_LIMIT
        body = self.emit(node.item, negatable=negatable, split_counts=True)
        if isinstance(node.item, Chars) and _one_class_across_planes(node.item.ranges, syntax):
            split = _counted_across_planes(body, node.low, node.high, syntax)
            if split is not None:
                return split
        if (node.low, node.high) == (0, 1) and not isinstance(node.item, Chars):
            # An optional group as an alternative to nothing, not (?:x)? or (?:x){0,1}:
            # the same texts, and xgrammar 0.2.8 fills masks inside it ten times
            # faster (Llama 3's vocabulary, (?:[A-Z].*) optional in a JSON string:
            # 0.34 ms a fill against 0.034; a regex's (?:[A-Z][a-z ]*)?: 0.23
            # against 0.003). An optional class is as fast either way.
            return f"(?:|{body})"
        if not _is_atom(node.item):
            body = f"(?:{body})"
        written_out = self._written_out(body, node)
        if written_out is not None:
            return written_out
        if node.high is None and node.low > SPLIT_OPEN_REPEAT_ABOVE:
            return f"{body}{{{node.low}}}{body}*" if length_bounds(node.item)[0] else body + "*"
        return body + _quantifier(node.low, node.high, syntax)

    def _written_out(self, body: str, node: Repeat) -> str | None:
        """A repeated group's required copies written one after another
        (``(?:ab){3,}`` as ``(?:ab)(?:ab)(?:ab)(?:ab)*``), or None where the
        count stays (``WRITE_OUT_COUNT_LIMIT``)."""
        low, high = node.low, node.high
        if isinstance(node.item, Chars) or not 2 <= low <= WRITE_OUT_COUNT_LIMIT:
            return None
        if len(body) * low > self.write_out_left or length_bounds(node.item)[0] == 0:
            return None
        self.write_out_left -= len(body) * low
        required = body * low
        if high is None:
            return f"{required}{body}*"
        return required + (body + _quantifier(0, high - low, self.syntax) if high > low else "")


def _after_unbounded(items: tuple[Node, ...]) -> list[bool]:
    """For each item, whether the one before it is an unbounded repeat."""
    return [
        i > 0 and isinstance(items[i - 1], Repeat) and items[i - 1].high is None
        for i in range(len(items))
    ]


def _count_chunks(low: int, high: int | None, limit: int) -> list[tuple[int, int | None]]:
    """``x{low,high}`` as counts of at most ``limit`` in a row, which add up to it
    (``x{0,251}``: ``x{0,128}x{0,123}``; ``x{300,}``: ``x{128}x{128}x{44,}``)."""
    chunks: list[tuple[int, int | None]] = []
    while low > limit or (high is not None and high > limit):
        taken_low = min(low, limit)
        taken_high = taken_low if high is None else min(high, limit)
        chunks.append((taken_low, taken_high))
        low -= taken_low
        high = None if high is None else high - taken_high
    if (low, high) != (0, 0) or not chunks:
        chunks.append((low, high))
    return chunks


def _is_atom(node: Node) -> bool:
    """Whether the emitted text already repeats as a whole under a quantifier."""
    if isinstance(node, Seq):
        return len(node.items) == 1 and _is_atom(node.items[0])
    return isinstance(node, (Chars, Alt))  # one character, class or escape; a group


def _quantifier(low: int, high: int | None, syntax: Syntax) -> str:
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if low == high:
        return "" if low == 1 else f"{{{low}}}"
    if (low, high) == (0, 1) and syntax.optional_mark:
        return "?"
    return f"{{{low},{high}}}"


def _counted_across_planes(body: str, low: int, high: int | None, syntax: Syntax) -> str | None:
    """``body{low,high}`` in parts xgrammar masks right (``MIXED_PLANE_COUNT_LIMIT``),
    or None where the plain count is already right.

    The required part is whole blocks of the limit and a remainder, the
    optional part a count from 0, which xgrammar gets right at any size:
    ``x{300,5000}`` is written ``(?:x{128}){2}x{44}x{0,4700}``.
    """
    limit = MIXED_PLANE_COUNT_LIMIT
    if low == 0 or max(low, high or 0) <= limit:
        return None
    blocks, rest = divmod(low, limit)
    parts = [f"(?:{body}{{{limit}}}){_quantifier(blocks, blocks, syntax)}"] if blocks else []
    if rest:
        parts.append(body + _quantifier(rest, rest, syntax))
    if high is None:
        parts.append(body + "*")
    elif high > low:
        parts.append(body + _quantifier(0, high - low, syntax))
    return "".join(parts)


def _one_class_across_planes(ranges: Ranges, syntax: Syntax) -> bool:
    """Whether ``_set`` writes these ranges as one class holding characters on
    both sides of U+10000."""
    if not (intersect(ranges, _BMP) and intersect(ranges, _BEYOND_BMP)):
        return False
    return syntax.mixed_plane_classes or _misses_only_bmp(ranges)


def _set(ranges: Ranges, syntax: Syntax, *, negatable: bool) -> str:
    if negatable and _misses_only_bmp(ranges):
        return "[^" + _members(minus(_ALL_CODE_POINTS, ranges), syntax) + "]"
    if not syntax.mixed_plane_classes:
        below, beyond = intersect(ranges, _BMP), intersect(ranges, _BEYOND_BMP)
        if below and beyond and not _misses_only_bmp(ranges):
            return f"(?:{_class(below, syntax)}|{_class(beyond, syntax)})"
    return _class(ranges, syntax)


def _misses_only_bmp(ranges: Ranges) -> bool:
    """Whether the set is "any character but a few BMP ones" (a JSON string's
    characters under ``maxLength``, ``.``, ``[^x]``).

    Such a set is written as a negated class wherever it may be
    (``NEGATED_COUNT_LIMIT``), otherwise as one positive class although it
    spans U+FFFF/U+10000: xgrammar masks both right and fills their token
    masks far faster than two alternatives. What its negation gets wrong is
    UTF-8, not the set: it lets overlong byte spellings through (E0 80 A2 for
    a quote), which the engine's UTF-8 guard (``engine/utf8_guard.py``)
    refuses on every constrained row.
    """
    missing = minus(_ALL_CODE_POINTS, ranges)
    return bool(missing) and not intersect(missing, _BEYOND_BMP)


def _class(ranges: Ranges, syntax: Syntax) -> str:
    """A single character, or a positive class."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _character(ranges[0][0], _METACHARACTERS, syntax)
    return "[" + _members(ranges, syntax) + "]"


def _members(ranges: Ranges, syntax: Syntax) -> str:
    return "".join(_range(low, high, syntax) for low, high in _caret_last(ranges))


def _caret_last(ranges: Ranges) -> Ranges:
    (low, high), rest = ranges[0], ranges[1:]
    if low != _CARET:
        return ranges
    after_caret = ((_CARET + 1, high),) if high > _CARET else ()
    return (*after_caret, *rest, (_CARET, _CARET))


def _range(low: int, high: int, syntax: Syntax) -> str:
    first = _character(low, _CLASS_METACHARACTERS, syntax)
    if low == high:
        return first
    last = _character(high, _CLASS_METACHARACTERS, syntax)
    return first + last if high == low + 1 else f"{first}-{last}"


def _character(code: int, metacharacters: frozenset[str], syntax: Syntax) -> str:
    character = chr(code)
    if character in metacharacters:
        return "\\" + character
    if character.isprintable() or (code > 0xFFFF and not syntax.escapes_beyond_bmp):
        return character
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"
