r"""Regex constraints: Python regexes in, one canonical xgrammar regex out.

Users write Python (``re``) regexes; xgrammar reads a JavaScript-like dialect
that differs in ways that silently change what a pattern means. So nothing is
passed through textually: Python's own parser (``re._parser``) decides the
syntax and the meaning, its parse tree is rebuilt as the tree of
``regex_emit`` (shared with ``ecma_regex``), and that module writes the regex
for xgrammar using only constructs xgrammar was probed to treat like Python.
Whatever cannot be expressed that way is rejected with a ``ConstraintError``
naming the feature and its position; nothing is approximated.

Translation rules (Python pattern -> xgrammar regex):

* The whole output must match, so anchors are implied. ``^`` and ``\A`` are
  dropped where the match necessarily starts (the start of the pattern, of an
  alternative there, of a group there, ...; other anchors may precede them),
  and ``$`` and ``\Z`` likewise where it ends. Anywhere else, or inside a group
  repeated more than once, an anchor is rejected: xgrammar would ignore it and
  accept text Python rejects (``a|^b`` is fine, ``a^b`` and ``(^a)*`` are not).
  ``(?m)`` is accepted because it only changes anchors away from those places.
* Every character, class, ``.`` and escape becomes an explicit set of code
  point ranges, because xgrammar's shorthands differ from Python's: its
  ``\d``, ``\w`` are ASCII-only while Python's match e.g. ``٣`` and ``é``;
  its ``.`` matches ``\n`` while Python's does not (unless ``(?s)``). The sets
  for ``\d \w \s \D \W \S`` are read off Python's ``re`` itself, so they
  agree with the judge ``matches`` exactly. Patterns are read with
  ``re.ASCII`` (``PATTERN_FLAGS``): ``\d`` is ``[0-9]``, ``\w`` is
  ``[A-Za-z0-9_]``, as in JavaScript and every constrained-decoding peer; a
  Unicode-wide ``\d`` would also cost ~11 KB of regex per use. Write explicit
  classes (``[0-9٠-٩]``, ``[\w\u00C0-\u024F]``) for more. Negated
  classes are complemented here, so xgrammar only ever sees positive ranges.
  Surrogates are left out: they cannot occur in UTF-8 text. A class never
  starts with ``^``, even escaped: xgrammar 0.2.8 reads ``[\^a]`` as ``[^a]``.
* ``(?i)`` (and ``(?i:...)``, Lark's ``/.../i``) is written out: each ASCII
  letter, in a character or a class, becomes both its cases
  (``(?i)[^a-c]x`` -> ``[^A-Ca-c][Xx]``), which is what ``re.ASCII |
  re.IGNORECASE`` matches; xgrammar has no flags.
* Characters are written literally when printable, ``\uXXXX``/``\UXXXXXXXX``
  otherwise, metacharacters escaped with ``\`` (xgrammar warns about, then
  takes literally, escapes it does not know, such as ``\#``; none are emitted).
  So Python-only spellings (``\N{...}``, octal ``\101``, ``\x41``, verbose-mode
  whitespace and comments, ``(?#...)``) reach xgrammar as the characters meant.
* Groups of every kind (capturing, ``(?P<name>...)``, ``(?:...)``, scoped
  flags ``(?s:...)``) become ``(?:...)`` where the structure needs a group
  (alternatives, a repeated part): xgrammar rejects ``(?P<`` and flags, and
  captures mean nothing to a constraint.
* Lazy quantifiers become greedy (the set of full matches is the same);
  ``{,n}`` becomes ``{0,n}`` (xgrammar rejects the former), and a literal
  ``{`` is escaped (xgrammar reads any ``{`` as a quantifier). ``x{m,}``
  with ``m`` above 16 becomes ``x{m}x*`` (``x*`` if ``x`` can be empty):
  xgrammar forces the former in time quadratic in ``m`` (``regex_emit``).
* A list of patterns becomes ``(?:p1)|(?:p2)|...``.
* ``(?<name>...)``, POSIX classes in sets (``[[:alpha:]]``) and Unicode
  properties (``\\p{L}``, ``\\P{Lu}``), which the judge's ``regex`` package
  reads and ``re`` refuses or reads as other characters, are first rewritten
  in Python's spelling (``_Respelled``): ``(?P<name>...)`` and the class's
  characters as the judge reads them under ``re.ASCII`` (``\\p{L}`` is the
  ASCII letters, a subset of its Unicode meaning; ``\\P{L}`` all else).

Lookarounds in the pattern's own sequence (or one of its top-level
alternatives), ``(?=.*\d)(?!admin$)[a-z\d]+``, ``[a-z-]+(?<!-)``,
``[a-z]+(?<!-)\.com``, are applied with automata or on the tree
(``lookarounds``): the whole output is matched, so a lookahead cuts what
follows it to the end and a lookbehind what precedes it from the start (a
lookahead where the output starts may say so with ``^``: Pydantic's
``^(?!^[-+.]*$)...``).

``\b`` and ``\B`` in that sequence say what the text on each side ends and
starts with (where the output starts or ends: nothing, no word), and are
applied to the two sides (``word_boundaries``): ``https?://\S+\b`` ends
with a word character, ``\bcat\b`` is ``cat``.

Lookarounds, word boundaries and anchors inside groups (ISO 8601 durations,
``(^|,)``, IPv4 with ``\b``) spread the pattern into alternatives that hold
them at top level (``marked_groups``), one per way through those groups;
ways no text takes (``a|b$c``: ``b`` then the end) are dropped. A group of
word boundaries repeated without bound (``(\b\w+\b\s?)+``) makes its
alternative one automaton (``boundary_automaton``).

Backreferences to a group every match of a sequence passes once, of a few
texts, spell that sequence out as one alternative per text
(``backreferences``): ``\d{1,2}([./-])\d{1,2}\1\d{4}``, ``(['"]).*\1``.

Rejected: other backreferences, conditionals, atomic groups, possessive
quantifiers, groups holding lookarounds or anchors repeated without bound
(where their marks look past the copy), the flag ``(?t)``,
repetition counts above ``MAX_REPEAT``, parts no text of
``shortest.MAX_SHORTEST_OUTPUT`` characters satisfies, classes that match nothing,
patterns longer than ``MAX_PATTERN_LENGTH`` and lists longer than
``MAX_PATTERNS``. The result is finally parsed by xgrammar, and any complaint
of its own is reported as a ``ConstraintError`` too.

``matches`` and ``could_still_match`` judge output against the ORIGINAL
patterns with the ``regex`` package, independently of all the
above, so tests can check the translation rather than trust it. The judge
of served outputs is ``matches_within``: the same full match, bounded in time.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import NamedTuple

import regex as regex_package
import xgrammar

from grammar_compiler import backreferences, boundary_automaton, lookarounds, marked_groups
from grammar_compiler.canonical import JUDGE_BUDGET_S, CanonicalConstraint, out_of_time
from grammar_compiler.code_points import (
    SCALAR_VALUES,
    Ranges,
    complement,
    intersect,
    normalize,
    python_class_escapes,
)
from grammar_compiler.errors import ConstraintError
from grammar_compiler.lookarounds import Boundary, Lookahead, Lookbehind
from grammar_compiler.regex_emit import (
    REGEX_SYNTAX,
    Alt,
    Chars,
    Node,
    Repeat,
    Seq,
    emit,
    length_bounds,
)
from grammar_compiler.shortest import capped, over_limit, times, too_long

try:
    from re import _parser
except ImportError:  # Python 3.10
    import sre_parse as _parser

# Every pattern, in compile_regex and in the judges, is read with these flags.
PATTERN_FLAGS = re.ASCII
MAX_PATTERN_LENGTH = 10_000
MAX_PATTERNS = 64
MAX_REPEAT = 10_000
"""Largest repetition count accepted; xgrammar overflows on Python's largest."""

POSIX_CLASSES = (
    "alnum alpha ascii blank cntrl digit graph lower print punct space upper word xdigit".split()  # noqa: SIM905
)
"""The POSIX classes (``[[:alpha:]]``) the ``regex`` package reads; Python's ``re``
reads ``[[:alpha:]]`` as a set of ``[:ahlp`` then a ``]`` (with a FutureWarning)."""


class _Feature(Enum):
    """Constructs that are rejected, labelled as users would recognise them."""

    LOOKAHEAD = "lookahead (?=...)"
    NEGATIVE_LOOKAHEAD = "negative lookahead (?!...)"
    LOOKBEHIND = "lookbehind (?<=...)"
    NEGATIVE_LOOKBEHIND = "negative lookbehind (?<!...)"
    BACKREFERENCE = (
        r"backreference (\1 or (?P=name)) other than to a group each match passes once "
        f"and of at most {backreferences.MAX_SPELLED_OUT} texts"
    )
    CONDITIONAL = "conditional group (?(id)yes|no)"
    ATOMIC_GROUP = "atomic group (?>...)"
    POSSESSIVE = "possessive quantifier (*+, ++, ?+, {m,n}+)"
    WORD_BOUNDARY = r"word boundary \b"
    NON_WORD_BOUNDARY = r"non-word boundary \B"
    TEMPLATE = "template flag (?t)"
    LARGE_REPEAT = f"repetition count above {MAX_REPEAT}"
    EMPTY_SET = "character class that matches no character"
    UNKNOWN_POSIX_CLASS = f"POSIX class other than [:{':], [:'.join(POSIX_CLASSES)}:]"
    CASELESS_CLASS = (
        r"POSIX class or \p{...} under (?i) (the judge folds their case over all of Unicode)"
    )
    UNKNOWN_PROPERTY = (
        r"\p{...} that the judge does not know or that holds no ASCII character "
        r"(\d, \w, \s and \p{...} are ASCII here)"
    )
    START_ANCHOR = r"'^' or '\A'"
    END_ANCHOR = r"'$' or '\Z'"


_LOOKAROUND_FEATURES = frozenset(
    {
        _Feature.LOOKAHEAD,
        _Feature.NEGATIVE_LOOKAHEAD,
        _Feature.LOOKBEHIND,
        _Feature.NEGATIVE_LOOKBEHIND,
    }
)
_BOUNDARY_FEATURES = frozenset({_Feature.WORD_BOUNDARY, _Feature.NON_WORD_BOUNDARY})


class _Rejection(Exception):
    """Raised while translating; turned into a located ConstraintError."""

    def __init__(self, feature: _Feature) -> None:
        super().__init__(feature.value)
        self.feature = feature


# ---------------------------------------------------------------------------
# Public API


def compile_regex(pattern: str | list[str]) -> str:
    """Validate the pattern(s) and return one regex xgrammar compiles.

    The result matches exactly the texts that some pattern fully matches.

    Raises:
        ConstraintError: a pattern is invalid, unsupported, or too large.
    """
    patterns = _validated_list(pattern)
    indexed = not isinstance(pattern, str)
    pieces = [
        f"(?:{_translate(text, index if indexed else None)})" for index, text in enumerate(patterns)
    ]
    result = "|".join(pieces)
    _confirm_with_xgrammar(result, pieces if indexed else None)
    return result


def lookaround_in(pattern: str) -> str | None:
    """The first lookaround the pattern holds, named as users know it; None if none."""
    mark = next((m for m in _Scanner(pattern).marks if m.feature in _LOOKAROUND_FEATURES), None)
    return None if mark is None else mark.feature.value


def python_spelling(pattern: str) -> str:
    """The pattern as Python's ``re`` reads what it means (``_Respelled``)."""
    return _Respelled.of(_Scanner(pattern)).text


def lookarounds_stay_inside(pattern: str) -> bool:
    """Whether each lookaround of the pattern's own sequence looks only at text
    the pattern itself matches: a lookahead no longer than the shortest text
    after it, a lookbehind no longer than the shortest before it (``(?!\\d)\\w+``,
    not ``(?!if)[a-z]+``, whose ``i`` could be followed by another token's ``f``).
    A lexer applies lookarounds to the text around the token; the two readings
    agree only then. One inside a group is not measured: False."""
    tree = _parser.parse(python_spelling(pattern), PATTERN_FLAGS)
    items = list(tree)
    single_branch = len(items) == 1 and items[0][0] is _parser.BRANCH
    branches = [list(branch) for branch in items[0][1][1]] if single_branch else [items]
    for branch in branches:
        for index, (op, av) in enumerate(branch):
            if op not in _LOOKAROUNDS:
                if _holds_lookaround(op, av):
                    return False
                continue
            direction, body = av
            around = branch[index + 1 :] if direction > 0 else branch[:index]
            room = _parser.SubPattern(tree.state, around).getwidth()[0]
            if body.getwidth()[1] > room:
                return False
    return True


def _holds_lookaround(op: object, av: object) -> bool:
    if op is _parser.SUBPATTERN:
        inner = [av[-1]]
    elif op is _parser.BRANCH:
        inner = av[1]
    elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        inner = [av[-1]]
    else:
        return op in _LOOKAROUNDS
    return any(_holds_lookaround(*item) for items in inner for item in items)


def regex_constraint(pattern: str | list[str]) -> CanonicalConstraint:
    """``compile_regex`` plus its judge, in the shape every language returns."""
    canonical = compile_regex(pattern)
    patterns = _as_list(pattern)

    def judge(text: str) -> str | None:
        try:
            return None if matches_within(patterns, text) else "no pattern matches the whole output"
        except TimeoutError:
            return out_of_time()

    return CanonicalConstraint(kind="regex", value=canonical, source_language="regex", judge=judge)


def matches(pattern: str | list[str], text: str) -> bool:
    """Whether any original pattern fully matches ``text``, read by the ``regex``
    package as the served judge (``matches_within``) reads it, without its time bound.

    ``regex`` and ``re`` agree on every pattern both read
    (``tests/test_hostile_limits.py``); ``regex`` also reads ``(?<name>...)`` and
    POSIX classes, which ``compile_regex`` rewrites (``_Respelled``), so this
    judges the rewriting too.
    """
    return any(regex_package.fullmatch(one, text, regex_package.ASCII) for one in _as_list(pattern))


def matches_within(pattern: str | list[str], text: str, timeout: float = JUDGE_BUDGET_S) -> bool:
    """``matches``, in bounded time: raises TimeoutError after ``timeout`` seconds.

    ``re`` cannot be stopped, and holds the GIL while it backtracks, so
    ``(a|a)*a{30}b`` would stall the whole process for minutes on a 31
    character output. The ``regex`` package matches the same syntax the
    same way (it agrees with ``re`` on every pattern this module accepts:
    ``tests/test_hostile_limits.py``), gives up after ``timeout`` and lets
    other threads run meanwhile.
    """
    deadline = time.monotonic() + timeout
    return any(
        regex_package.fullmatch(
            one, text, regex_package.ASCII, timeout=max(deadline - time.monotonic(), 0.001)
        )
        for one in _as_list(pattern)
    )


def could_still_match(pattern: str | list[str], text: str) -> bool:
    """Whether ``text`` is a prefix of some text a pattern fully matches.

    Uses the ``regex`` package's partial matching, so it shares no code with
    ``compile_regex``. A full match always counts, even where ``regex`` and
    ``re`` disagree on a class (``regex`` excludes U+001C..U+001F from ``\\s``).
    Known ``regex`` partial-match errors (2026.11.15): with a lazy quantifier
    and an alternative matching empty text, any one character passes
    (``a*?b|c*`` accepts ``"q"``); a ``(?a:`` scope is lost inside a nested
    ``(?s:`` scope.
    """
    return matches(pattern, text) or any(
        regex_package.fullmatch(one, text, regex_package.ASCII, partial=True)
        for one in _as_list(pattern)
    )


# ---------------------------------------------------------------------------
# Input checks


def _as_list(pattern: str | Sequence[str]) -> list[str]:
    return [pattern] if isinstance(pattern, str) else list(pattern)


def _validated_list(pattern: str | Sequence[str]) -> list[str]:
    """The patterns, once they are known to be strings of sensible number and size."""
    if not isinstance(pattern, (str, list, tuple)):
        raise ConstraintError("a regex constraint must be a string or a list of strings")
    patterns = _as_list(pattern)
    if not patterns:
        raise ConstraintError("the list of regex patterns is empty")
    if len(patterns) > MAX_PATTERNS:
        raise ConstraintError(f"too many regex patterns: {len(patterns)} (at most {MAX_PATTERNS})")
    indexed = not isinstance(pattern, str)
    for index, text in enumerate(patterns):
        where = index if indexed else None
        if not isinstance(text, str):
            raise ConstraintError("a regex pattern must be a string", pattern_index=where)
        if len(text) > MAX_PATTERN_LENGTH:
            raise ConstraintError(
                f"regex pattern too long: {len(text)} characters (at most {MAX_PATTERN_LENGTH})",
                pattern_index=where,
            )
    return patterns


def _confirm_with_xgrammar(result: str, pieces: list[str] | None) -> None:
    """Let xgrammar parse the result; blame the first piece it refuses if there are several."""
    reason = _xgrammar_complaint(result)
    if reason is None:
        return
    index = None
    if pieces is not None:
        index = next((i for i, piece in enumerate(pieces) if _xgrammar_complaint(piece)), None)
    raise ConstraintError(f"regex not accepted by xgrammar: {reason}", pattern_index=index)


def _xgrammar_complaint(regex: str) -> str | None:
    try:
        xgrammar.Grammar.from_regex(regex)
    except (RuntimeError, ValueError) as err:
        # Drop the "[time] /project/cpp/file.cc:83: " prefix of xgrammar's log line.
        return re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", str(err).strip())
    return None


# ---------------------------------------------------------------------------
# Parsing and translation of one pattern


def _translate(text: str, index: int | None) -> str:
    """The xgrammar regex for one pattern, or a ConstraintError located in it."""
    scanner = _Scanner(text)
    unknown = next((m for m in scanner.marks if m.feature in _UNREAD_CLASSES), None)
    if unknown is not None:
        raise _located_error(text, unknown.feature, index)
    respelled = _Respelled.of(scanner)
    classes = any(mark.feature is _Feature.CASELESS_CLASS for mark in scanner.marks)
    if classes and _ignores_case_anywhere(respelled.text):
        raise _located_error(text, _Feature.CASELESS_CLASS, index)
    try:
        return _translated(respelled.text, index)
    except ConstraintError as error:
        error.position = respelled.original_position(error.position)
        raise


def _ignores_case_anywhere(text: str) -> bool:
    try:
        return _flag_anywhere(_parser.parse(text, PATTERN_FLAGS), re.IGNORECASE)
    except (re.error, OverflowError, ValueError):
        return False  # reported, located, by the translation


def _translated(text: str, index: int | None) -> str:
    """``_translate`` for a pattern in Python's spelling."""
    return emit(_read(text, index, PATTERN_FLAGS), REGEX_SYNTAX)


def python_node(pattern: str) -> Node:
    """The texts ``pattern`` matches whole, read as the regex endpoint reads it
    (``re.ASCII``, as the Lark judge reads terminals too).

    Raises:
        ConstraintError: the pattern is invalid or holds what cannot be read.
    """
    return _read(pattern, None, PATTERN_FLAGS)


def _read(text: str, index: int | None, flags: int) -> Node:
    """The tree of a pattern in Python's spelling, or a ConstraintError located in it."""
    try:
        try:
            tree = _parser.parse(text, flags)
        except OverflowError:  # a repetition count Python itself cannot hold
            raise _Rejection(_Feature.LARGE_REPEAT) from None
        _shortest(tree)
        return _whole_node(_with_backreferences_spelled_out(tree))
    except re.error as err:
        raise ConstraintError(
            f"invalid regex: {err.msg}", position=err.pos, pattern_index=index
        ) from None
    except _Rejection as rejection:
        raise _located_error(text, rejection.feature, index) from None
    except lookarounds.LookaroundError as error:
        features = (
            _BOUNDARY_FEATURES
            if isinstance(error, lookarounds.BoundaryError)
            else _LOOKAROUND_FEATURES
        )
        marks = _Scanner(text).marks
        mark = next((m for m in marks if m.feature in features), None) or next(
            (m for m in marks if m.feature in _MARK_FEATURES), None
        )
        position = mark.start if mark else None
        raise ConstraintError(error.message, position=position, pattern_index=index) from None
    except ConstraintError as err:  # a construct this module does not know at all
        raise ConstraintError(err.message, pattern_index=index) from None
    except RecursionError:
        raise ConstraintError("regex nests groups too deeply", pattern_index=index) from None
    except ValueError:  # Python's parser refuses (?u) next to the ASCII flag
        raise ConstraintError(
            "unsupported regex flag '(?u)': \\d, \\w and \\s are ASCII here; "
            "write explicit classes for other characters",
            pattern_index=index,
        ) from None


def _with_backreferences_spelled_out(tree: _parser.SubPattern) -> _parser.SubPattern:
    """The pattern with its backreferences spelled out where they can be
    (``backreferences``); one left is refused where it is translated."""
    if not backreferences.holds_backreference(tree):
        return tree
    context = _root_context(tree)
    items = backreferences.spelled_out(list(tree), lambda op, av: _character_set(op, av, context))
    return _parser.SubPattern(tree.state, items)


def _whole_node(tree: _parser.SubPattern) -> Node:
    """The tree of the whole pattern; marks inside groups spread it (``_spread_tree_node``)."""
    try:
        return _tree_node(tree)
    except _Rejection as rejection:
        if rejection.feature not in _MARK_FEATURES or _flag_anywhere(tree, re.MULTILINE):
            raise
        return _spread_tree_node(tree, rejection)


@dataclass(frozen=True)
class _Respelled:
    """A pattern in Python's spelling: ``(?<name>...)``, POSIX classes
    (``[[:alpha:]]``) and property escapes (``\\p{L}``), which the judge's
    ``regex`` package reads and ``re`` does not (or reads otherwise), rewritten
    as ``re`` reads what they mean."""

    text: str
    edits: tuple[tuple[int, int, int], ...]  # (start in text, its length there, in the original)

    @classmethod
    def of(cls, scanner: _Scanner) -> _Respelled:
        """The scanned pattern, respelled where its scanner found other spellings."""
        original = scanner.text
        parts: list[str] = []
        edits = []
        done = shift = 0
        for start, end, spelling in scanner.respellings:
            parts += [original[done:start], spelling]
            edits.append((start + shift, len(spelling), end - start))
            shift += len(spelling) - (end - start)
            done = end
        return cls("".join([*parts, original[done:]]), tuple(edits))

    def original_position(self, position: int | None) -> int | None:
        """Where ``position`` in ``text`` lies in the original pattern."""
        if position is None:
            return None
        shift = 0
        for start, length, original_length in self.edits:
            if position < start:
                break
            if position < start + length:
                return start - shift
            shift += length - original_length
        return position - shift


@dataclass(frozen=True)
class _Context:
    """What the enclosing pattern implies for the node being emitted.

    ``at_start``/``at_end``: every match of the node starts at the start (ends
    at the end) of the whole text, so a start (end) anchor there always holds.
    """

    dotall: bool
    ascii: bool
    ignore_case: bool = False
    multiline: bool = False  # $ holds before any newline, not only a final one
    at_start: bool = True
    at_end: bool = True


def _shortest(items: Sequence[tuple]) -> float:
    """Length of the shortest text ``items`` match; refuses any part over the limit.

    Checked before the tree is built, so no part can ask xgrammar to force
    a huge text (``shortest``); a count over ``MAX_REPEAT`` is reported as such.
    """
    total: float = 0
    for op, av in items:
        if op in _SINGLE_CHARACTER_OPS:
            length: float = 1
        elif op is _parser.BRANCH:
            length = min(_shortest(branch) for branch in av[1])
        elif op is _parser.SUBPATTERN:
            length = _shortest(av[-1])
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
            low, high, item = av
            if any(bound != _parser.MAXREPEAT and bound > MAX_REPEAT for bound in (low, high)):
                raise _Rejection(_Feature.LARGE_REPEAT)
            length = times(low, _shortest(item))
        else:  # anchors take no text; what the emitter rejects does not matter here
            length = 0
        total = capped(total + length)
        if over_limit(total):
            raise too_long("a part of the regex")
    return total


def _tree_node(tree: _parser.SubPattern) -> Node:
    """Python's parse tree as the tree ``regex_emit`` writes, with Python's meaning."""
    context = _root_context(tree)
    if len(tree) == 1 and tree[0][0] is _parser.BRANCH:  # alternatives, each a top sequence
        return Alt(tuple(_sequence_node(branch, context, top=True) for branch in tree[0][1][1]))
    return _sequence_node(tree, context, top=True)


def _root_context(tree: _parser.SubPattern) -> _Context:
    flags = tree.state.flags
    _check_flags(flags)
    return _Context(
        dotall=bool(flags & re.DOTALL),
        ascii=bool(flags & re.ASCII),
        ignore_case=bool(flags & re.IGNORECASE),
        multiline=bool(flags & re.MULTILINE),
    )


def _check_flags(flags: int) -> None:
    if "t" in _parser.FLAGS and flags & _parser.FLAGS["t"]:
        raise _Rejection(_Feature.TEMPLATE)


def _sequence_node(items: Sequence[tuple], context: _Context, *, top: bool = False) -> Node:
    """The nodes in a row, each told whether it sits where the match starts/ends.

    Only zero-width anchors may come before a node that is at the start (or
    after one at the end): anything else may consume text. ``top``: the
    pattern's own sequence (or one of its alternatives), where lookaheads,
    and lookbehinds that end it, are applied (``lookarounds``).
    """
    consuming = [i for i, (op, _) in enumerate(items) if op is not _parser.AT]
    first = consuming[0] if consuming else len(items)
    last = consuming[-1] if consuming else -1
    if top:
        items = _without_edge_lookbehinds(items, context, first)
        consuming = [i for i, (op, _) in enumerate(items) if op is not _parser.AT]
        first = consuming[0] if consuming else len(items)
        last = consuming[-1] if consuming else -1
    nodes = [
        (_top_level if top else _node)(
            op,
            av,
            replace(
                context,
                at_start=context.at_start and i <= first,
                at_end=context.at_end and i >= last,
            ),
        )
        for i, (op, av) in enumerate(items)
    ]
    kept = [node for node in nodes if node != _NOTHING]
    if any(isinstance(node, (Lookahead, Lookbehind, Boundary)) for node in kept):
        return _resolved_whole(kept)
    return kept[0] if len(kept) == 1 else Seq(tuple(kept))


def _resolved_whole(items: list[Node | Lookahead | Lookbehind | Boundary]) -> Node:
    """A sequence with marks that is the whole output, its marks applied."""
    ending = []
    while items and isinstance(items[-1], Lookbehind):  # the whole output ends here
        if items[-1].kept_in_place(items):
            break
        ending.insert(0, items.pop().at_the_end(_ANY_TEXT))
    return boundary_automaton.resolved([*ending, *items])


_LOOKAROUNDS = (_parser.ASSERT, _parser.ASSERT_NOT)
_ANY_TEXT = Repeat(Chars(SCALAR_VALUES), 0, None)
_BOUNDARIES = frozenset({_parser.AT_BOUNDARY, _parser.AT_NON_BOUNDARY})


def _top_level(
    op: object, av: object, context: _Context
) -> Node | Lookahead | Lookbehind | Boundary:
    """A node of the pattern's own sequence, where lookarounds and word boundaries
    are markers that ``lookarounds.resolved`` applies to the nodes around them."""
    if op in _LOOKAROUNDS:
        return _lookaround(op, av, context)
    if op is _parser.AT and av in _BOUNDARIES:
        word = python_class_escapes(context.ascii)[r"\w"]
        return Boundary(word, complement(word), av is _parser.AT_NON_BOUNDARY, 0)
    return _node(op, av, context)


def _without_edge_lookbehinds(items: Sequence[tuple], context: _Context, first: int) -> list[tuple]:
    """The items less a negative lookbehind of one or more characters where the
    output starts: nothing precedes the output, so it always holds (``(?<!\\\\)"``)."""
    kept = []
    for i, (op, av) in enumerate(items):
        at_start = context.at_start and i <= first
        if op is _parser.ASSERT_NOT and av[0] < 0 and at_start and _consumes(av[1]):
            continue
        kept.append((op, av))
    return kept


def _consumes(items: Sequence[tuple]) -> bool:
    """Whether every match of ``items`` holds at least one character (a sequence
    with a character in it; no repeat, group or alternative looked into)."""
    return any(op in _SINGLE_CHARACTER_OPS for op, _ in items)


def _lookaround(op: object, av: object, context: _Context) -> Lookahead | Lookbehind:
    """A lookahead's text is what follows it to the end of the output, unless
    it ends with ``$`` (``(?!admin$)``); a lookbehind's ends where it stands."""
    direction, items = av
    # a lookahead where the output starts may say so (Pydantic's Decimal: ^(?!^[-+.]*$)...)
    inner = replace(context, at_start=context.at_start and direction > 0, at_end=False)
    if direction < 0:
        return Lookbehind(_sequence_node(list(items), inner), op is _parser.ASSERT_NOT, 0)
    negative = op is _parser.ASSERT_NOT
    text, reach = _lookahead_text(list(items), inner, negative)
    return Lookahead(text, negative, 0, reach)


def _lookahead_text(
    items: list[tuple], context: _Context, negative: bool
) -> tuple[Node, int | None]:
    """What a lookahead (or one of its alternatives) lets the rest of the output
    be, and how far it looks (``Lookahead.reach``).

    Python's ``$`` also holds before a final newline (before any under ``(?m)``):
    a negative lookahead excludes those texts too; a positive one is read as the
    end only (a subset), which keeps length checks such as ``(?=.{8,20}$)``
    bounds rather than automata."""
    if len(items) == 1 and items[0][0] is _parser.BRANCH:
        options = [_lookahead_text(list(b), context, negative) for b in items[0][1][1]]
        reaches = [reach for _, reach in options]
        reach = None if None in reaches else max(reaches)  # type: ignore[type-var]
        return Alt(tuple(text for text, _ in options)), reach
    if items and items[-1][0] is _parser.AT and items[-1][1] in _END_ANCHORS:
        text = _sequence_node(items[:-1], context)
        if negative and items[-1][1] is _parser.AT_END:  # \Z is the end only
            after = Seq((Chars(_NEWLINE), _ANY_TEXT)) if context.multiline else Chars(_NEWLINE)
            return Seq((text, Repeat(after, 0, 1))), None
        return text, None
    text = _sequence_node(items, context)
    return Seq((text, _ANY_TEXT)), length_bounds(text)[1]


_NOTHING = Seq(())
"""What an anchor becomes where it is implied: no text."""


def _node(op: object, av: object, context: _Context) -> Node:
    if op in _SINGLE_CHARACTER_OPS:
        return _chars(_character_set(op, av, context))
    if op is _parser.BRANCH:
        return Alt(tuple(_sequence_node(branch, context) for branch in av[1]))
    if op is _parser.SUBPATTERN:
        _group, add_flags, del_flags, items = av
        return _sequence_node(items, _group_context(context, add_flags, del_flags))
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        return _repeat_node(*av, context)
    if op is _parser.AT:
        return _anchor(av, context)
    raise _Rejection(_unsupported_feature(op, av))


def _unsupported_feature(op: object, av: object) -> _Feature:
    if op in (_parser.ASSERT, _parser.ASSERT_NOT):
        direction = av[0]
        if op is _parser.ASSERT:
            return _Feature.LOOKAHEAD if direction > 0 else _Feature.LOOKBEHIND
        return _Feature.NEGATIVE_LOOKAHEAD if direction > 0 else _Feature.NEGATIVE_LOOKBEHIND
    feature = _UNSUPPORTED_OPS.get(op)
    if feature is None:
        raise ConstraintError(f"unsupported regex construct {op!r}")
    return feature


_UNSUPPORTED_OPS = {
    getattr(_parser, name): feature
    for name, feature in (
        ("GROUPREF", _Feature.BACKREFERENCE),
        ("GROUPREF_EXISTS", _Feature.CONDITIONAL),
        ("ATOMIC_GROUP", _Feature.ATOMIC_GROUP),  # Python 3.11+
        ("POSSESSIVE_REPEAT", _Feature.POSSESSIVE),  # Python 3.11+
    )
    if hasattr(_parser, name)
}


def _group_context(context: _Context, add_flags: int, del_flags: int) -> _Context:
    """Scoped flags, combined the way Python's compiler combines them."""
    _check_flags(add_flags)
    dotall = (context.dotall or bool(add_flags & re.DOTALL)) and not del_flags & re.DOTALL
    if add_flags & re.ASCII:
        ascii_only = True
    elif add_flags & re.UNICODE:
        ascii_only = False
    else:
        ascii_only = context.ascii
    ignore_case = (context.ignore_case or bool(add_flags & re.IGNORECASE)) and not (
        del_flags & re.IGNORECASE
    )
    multiline = (context.multiline or bool(add_flags & re.MULTILINE)) and not (
        del_flags & re.MULTILINE
    )
    return replace(
        context, dotall=dotall, ascii=ascii_only, ignore_case=ignore_case, multiline=multiline
    )


def _repeat_node(low: int, high: int, item: Sequence[tuple], context: _Context) -> Node:
    """Lazy or greedy, the same full matches; counts were checked by ``_shortest``."""
    if high > 1:  # later iterations neither start nor end the text
        context = replace(context, at_start=False, at_end=False)
    body = _sequence_node(item, context)
    return Repeat(body, low, None if high == _parser.MAXREPEAT else high)


_START_ANCHORS = frozenset({_parser.AT_BEGINNING, _parser.AT_BEGINNING_STRING})
_END_ANCHORS = frozenset({_parser.AT_END, _parser.AT_END_STRING})


def _anchor(code: object, context: _Context) -> Node:
    """Nothing where the anchor is implied; otherwise it cannot be honoured."""
    if code in _START_ANCHORS:
        if context.at_start:
            return _NOTHING
        raise _Rejection(_Feature.START_ANCHOR)
    if code in _END_ANCHORS:
        if context.at_end:
            return _NOTHING
        raise _Rejection(_Feature.END_ANCHOR)
    if code is _parser.AT_BOUNDARY:
        raise _Rejection(_Feature.WORD_BOUNDARY)
    if code is _parser.AT_NON_BOUNDARY:
        raise _Rejection(_Feature.NON_WORD_BOUNDARY)
    raise ConstraintError(f"unsupported regex anchor {code}")


# ---------------------------------------------------------------------------
# Marks inside groups: the pattern spread into alternatives with marks at top level

_UNREAD_CLASSES = frozenset({_Feature.UNKNOWN_POSIX_CLASS, _Feature.UNKNOWN_PROPERTY})
_ANCHOR_FEATURES = frozenset({_Feature.START_ANCHOR, _Feature.END_ANCHOR})
_MARK_FEATURES = _LOOKAROUND_FEATURES | _BOUNDARY_FEATURES | _ANCHOR_FEATURES


def _spread_tree_node(tree: _parser.SubPattern, rejection: _Rejection) -> Node:
    """The pattern as alternatives, one per way through its groups holding marks
    (``marked_groups``), each resolved as a whole output: ISO 8601 durations,
    ``((25[0-5]|...)\\.?\\b){4}``, ``(^|,)``. Tried only where the direct
    translation refused a mark inside a group, so every pattern it accepts keeps
    its (smaller) translation. ``rejection``: raised again, as it locates the
    anchor, where an anchor it names leaves no way (``a^b``).
    """
    context = _root_context(tree)
    ways = marked_groups.spread(_marked_items(list(tree), context))
    found: list[Node] = []
    unsatisfied: list[lookarounds.LookaroundError] = []
    for items, _starts, _ends in ways:
        try:
            found.append(_resolved_whole(items))
        except lookarounds.LookaroundError as error:
            if not error.unsatisfiable:
                raise
            unsatisfied.append(error)
    if found:
        return found[0] if len(found) == 1 else Alt(tuple(found))
    if unsatisfied:
        raise unsatisfied[0]
    if rejection.feature in _ANCHOR_FEATURES:
        raise rejection
    raise lookarounds.LookaroundError(marked_groups.NO_WAY_LEFT, 0, unsatisfiable=True)


def _marked_items(items: Sequence[tuple], context: _Context) -> list[marked_groups.Item]:
    """The items in a row with lookarounds, word boundaries and anchors as marks
    and groups holding any as ``MarkedGroup``s. ``context.at_start``: the row
    starts the output (a lookahead there may say so with ``^``)."""
    row: list[marked_groups.Item] = []
    for op, av in items:
        here = replace(context, at_start=context.at_start and not _consumed(row))
        if op in _LOOKAROUNDS:
            row.append(_lookaround(op, av, here))
        elif op is _parser.AT:
            row.append(_mark(av, context))
        elif op is _parser.BRANCH:
            row.append(marked_groups.group([_marked_items(b, here) for b in av[1]], 0))
        elif op is _parser.SUBPATTERN:
            _group, add_flags, del_flags, inner = av
            inner_context = _group_context(here, add_flags, del_flags)
            row.append(marked_groups.group([_marked_items(inner, inner_context)], 0))
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
            low, high, inner = av
            if high > 1:
                here = replace(here, at_start=False)
            body = marked_groups.group([_marked_items(inner, here)], 0)
            top = None if high == _parser.MAXREPEAT else high
            if isinstance(body, marked_groups.MarkedGroup):
                row.append(marked_groups.repeated(body, low, top))
            else:
                row.append(Repeat(body, low, top))
        else:
            row.append(_node(op, av, context))
    return row


def _consumed(row: list[marked_groups.Item]) -> bool:
    """Whether the row may hold text already."""
    held = (Node, marked_groups.MarkedGroup, marked_groups.BoundaryLoop)
    return any(isinstance(item, held) for item in row)


def _mark(code: object, context: _Context) -> marked_groups.Mark:
    if code in _BOUNDARIES:
        word = python_class_escapes(context.ascii)[r"\w"]
        return Boundary(word, complement(word), code is _parser.AT_NON_BOUNDARY, 0)
    # Python's $ also matches before a final newline; taking it as the end is a subset
    if code in _START_ANCHORS:
        return marked_groups.TextStart(0)
    if code in _END_ANCHORS:
        return marked_groups.TextEnd(0)
    raise ConstraintError(f"unsupported regex anchor {code}")


def _flag_anywhere(tree: _parser.SubPattern, flag: int) -> bool:
    """Whether ``flag`` applies anywhere (``(?m)``: ``^`` and ``$`` are then not
    marks of the text's ends; ``(?i)``: see ``_Feature.CASELESS_CLASS``)."""
    if tree.state.flags & flag:
        return True
    stack = [list(tree)]
    while stack:
        for op, av in stack.pop():
            if op is _parser.SUBPATTERN:
                if av[1] & flag:
                    return True
                stack.append(list(av[-1]))
            elif op is _parser.BRANCH:
                stack.extend(list(branch) for branch in av[1])
            elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.ASSERT, _parser.ASSERT_NOT):
                stack.append(list(av[-1]))
    return False


# ---------------------------------------------------------------------------
# Character sets, as sorted tuples of disjoint inclusive (low, high) code point ranges

_SINGLE_CHARACTER_OPS = frozenset({_parser.LITERAL, _parser.NOT_LITERAL, _parser.ANY, _parser.IN})
_NEWLINE: Ranges = ((ord("\n"), ord("\n")),)


def _chars(ranges: Ranges) -> Chars:
    """The set without surrogates, which cannot occur in UTF-8 text; refused if that is empty."""
    kept = intersect(ranges, SCALAR_VALUES)
    if not kept:
        raise _Rejection(_Feature.EMPTY_SET)
    return Chars(kept)


def _character_set(op: object, av: object, context: _Context) -> Ranges:
    """The characters one item matches. Under ``(?i)`` a letter also matches its
    other case, and a negated item misses both: patterns are read with
    ``re.ASCII``, which pairs the ASCII letters and nothing else (Unicode case
    folding has odd pairs, ``k`` and U+212A KELVIN SIGN, that ``(?u)`` would
    bring; it is refused)."""
    cased = _both_cases if context.ignore_case else normalize
    if op is _parser.LITERAL:
        return cased(((av, av),))
    if op is _parser.NOT_LITERAL:
        return complement(cased(((av, av),)))
    if op is _parser.ANY:
        return complement(()) if context.dotall else complement(_NEWLINE)
    return _class_set(av, context.ascii, cased)


_LOWER = (ord("a"), ord("z"))
_UPPER = (ord("A"), ord("Z"))
_CASE_SHIFT = ord("a") - ord("A")


def _both_cases(ranges: Ranges) -> Ranges:
    """``ranges`` with the other case of each ASCII letter in them."""
    lower = intersect(ranges, (_LOWER,))
    upper = intersect(ranges, (_UPPER,))
    return normalize(
        [
            *ranges,
            *((low - _CASE_SHIFT, high - _CASE_SHIFT) for low, high in lower),
            *((low + _CASE_SHIFT, high + _CASE_SHIFT) for low, high in upper),
        ]
    )


def _class_set(
    items: Iterable[tuple], ascii_only: bool, cased: Callable[[Ranges], Ranges]
) -> Ranges:
    negate = False
    ranges: list[tuple[int, int]] = []
    for op, av in items:
        if op is _parser.NEGATE:
            negate = True
        elif op is _parser.LITERAL:
            ranges.append((av, av))
        elif op is _parser.RANGE:
            ranges.append(av)
        elif op is _parser.CATEGORY:
            ranges.extend(python_class_escapes(ascii_only)[_CATEGORY_ESCAPES[av]])
        else:
            raise ConstraintError(f"unsupported item {op!r} in a regex character class")
    merged = cased(normalize(ranges))
    return complement(merged) if negate else merged


_CATEGORY_ESCAPES = {
    _parser.CATEGORY_DIGIT: r"\d",
    _parser.CATEGORY_NOT_DIGIT: r"\D",
    _parser.CATEGORY_WORD: r"\w",
    _parser.CATEGORY_NOT_WORD: r"\W",
    _parser.CATEGORY_SPACE: r"\s",
    _parser.CATEGORY_NOT_SPACE: r"\S",
}


# ---------------------------------------------------------------------------
# Locating a rejected construct in the pattern text
#
# Python's parse tree has no positions, so a light scanner walks the text,
# already known to be valid, and marks where each construct of interest is.


class _Mark(NamedTuple):
    feature: _Feature
    start: int
    end: int


def _located_error(text: str, feature: _Feature, index: int | None) -> ConstraintError:
    if feature in (_Feature.START_ANCHOR, _Feature.END_ANCHOR):
        mark = _misplaced_anchor(text, feature)
        anchor = repr(text[mark.start : mark.end]) if mark else feature.value
        where = "start" if feature is _Feature.START_ANCHOR else "end"
        message = (
            f"anchor {anchor} must be at the {where} of the pattern or of one of its "
            "alternatives (the whole output is always matched)"
        )
    else:
        mark = next((m for m in _Scanner(text).marks if m.feature is feature), None)
        message = f"unsupported regex feature '{feature.value}'"
    return ConstraintError(message, position=mark.start if mark else None, pattern_index=index)


def _misplaced_anchor(text: str, feature: _Feature) -> _Mark | None:
    """The first anchor that is still rejected when it is the only anchor left.

    Whether an anchor is allowed does not depend on the other anchors (they
    are zero-width), so each candidate is judged alone with the others
    replaced by an empty group; the parse tree cannot say where nodes came
    from, and Python merges equal prefixes of alternatives.
    """
    anchors = [
        m for m in _Scanner(text).marks if m.feature in (_Feature.START_ANCHOR, _Feature.END_ANCHOR)
    ]
    for candidate in anchors:
        if candidate.feature is not feature:
            continue
        variant = _replace_marks(text, [m for m in anchors if m is not candidate], "(?:)")
        try:
            _tree_node(_parser.parse(variant, PATTERN_FLAGS))
        except _Rejection as rejection:
            if rejection.feature is feature:
                return candidate
        except (re.error, lookarounds.LookaroundError):
            continue
    return None


def _replace_marks(text: str, marks: list[_Mark], replacement: str) -> str:
    parts = []
    done = 0
    for mark in marks:
        parts += [text[done : mark.start], replacement]
        done = mark.end
    return "".join([*parts, text[done:]])


_VERBOSE_WHITESPACE = frozenset(" \t\n\r\v\f")
_BRACE_QUANTIFIER = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")
_FLAG_GROUP = re.compile(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])")
_POSIX_CLASS = re.compile(r"\[:(\^?)([a-z]+):\]")


_PROPERTY = re.compile(r"\\([pP])(?:\{([A-Za-z0-9_ =.&-]+)\}|([A-Za-z]))")
"""``\\p{L}``, ``\\P{Lu}``, ``\\pN``: Unicode properties, which the ``regex`` package
reads and ``re`` refuses."""


@functools.cache
def _ascii_class(judge_pattern: str, *, negated: bool) -> str | None:
    """The characters of a class as the judge's ``regex`` package reads it under
    ``re.ASCII`` (ASCII only: POSIX classes as in the C locale, ``\\p{L}`` the
    ASCII letters), written for inside a set (empty if it holds none); None
    where the package does not know the class."""
    try:
        judge = regex_package.compile(judge_pattern, regex_package.ASCII)
    except regex_package.error:
        return None
    codes = [code for code in range(128) if judge.fullmatch(chr(code))]
    ranges = normalize(tuple((code, code) for code in codes))
    if negated:
        ranges = complement(ranges)
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


_GROUP_FEATURES = (
    ("=", _Feature.LOOKAHEAD),
    ("!", _Feature.NEGATIVE_LOOKAHEAD),
    ("<=", _Feature.LOOKBEHIND),
    ("<!", _Feature.NEGATIVE_LOOKBEHIND),
    (">", _Feature.ATOMIC_GROUP),
)
_ESCAPE_FEATURES = {
    "b": _Feature.WORD_BOUNDARY,
    "B": _Feature.NON_WORD_BOUNDARY,
    "A": _Feature.START_ANCHOR,
    "Z": _Feature.END_ANCHOR,
}
_FLAG_FEATURES = {"t": _Feature.TEMPLATE}
_OCTAL_DIGITS = frozenset("01234567")


class _Scanner:
    """Marks rejected constructs and anchors in pattern text, with their offsets.

    Follows Python's tokenization (escapes, classes, comments, verbose mode)
    just far enough to tell metacharacters from literal text. It never fails:
    on odd input it merely marks less.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.marks: list[_Mark] = []
        self.respellings: list[tuple[int, int, str]] = []  # (start, end, Python's spelling)
        self._verbose = [False]  # one entry per open group: is its content verbose
        position = 0
        while position < len(text):
            position = self._step(position)

    def _mark(self, feature: _Feature, start: int, end: int) -> None:
        self.marks.append(_Mark(feature, start, end))

    def _step(self, position: int) -> int:
        """Scan the token at ``position``; return where the next one starts."""
        text = self.text
        char = text[position]
        if self._verbose[-1] and char in _VERBOSE_WHITESPACE:
            return position + 1
        if self._verbose[-1] and char == "#":
            end = text.find("\n", position)
            return len(text) if end < 0 else end + 1
        if char == "\\":
            return self._escape(position)
        if char == "[":
            return self._class_end(position)
        if char == "(":
            return self._group(position)
        if char == ")":
            if len(self._verbose) > 1:
                self._verbose.pop()
            return position + 1
        if char == "^":
            self._mark(_Feature.START_ANCHOR, position, position + 1)
        elif char == "$":
            self._mark(_Feature.END_ANCHOR, position, position + 1)
        elif char in "*+?{":
            return self._quantifier(position)
        return position + 1

    def _property(self, position: int, *, in_set: bool) -> int | None:
        """Where a property escape at ``position`` ends, its respelling recorded;
        None if there is none."""
        found = _PROPERTY.match(self.text, position)
        if found is None:
            return None
        kind, name = found.group(1), found.group(2) or found.group(3)
        ranges = _ascii_class(rf"\p{{{name}}}", negated=kind == "P")
        if ranges == "" and in_set:  # nothing to add: a surrogate, which no text holds
            ranges = "\\ud800"
        if not ranges:
            self._mark(_Feature.UNKNOWN_PROPERTY, *found.span())
        else:
            self.respellings.append((position, found.end(), ranges if in_set else f"[{ranges}]"))
            self._mark(_Feature.CASELESS_CLASS, *found.span())
        return found.end()

    def _escape(self, position: int) -> int:
        text = self.text
        code = text[position + 1 : position + 2]
        if code in "pP":
            return self._property(position, in_set=False) or position + 2
        if code in _ESCAPE_FEATURES:
            self._mark(_ESCAPE_FEATURES[code], position, position + 2)
        elif code and code in "123456789" and not self._is_octal_escape(position):
            self._mark(_Feature.BACKREFERENCE, position, position + 2)
        elif code == "N" and text.startswith("{", position + 2):
            end = text.find("}", position)
            return len(text) if end < 0 else end + 1
        return position + 2

    def _is_octal_escape(self, position: int) -> bool:
        """``\\123`` is a character, ``\\12`` and ``\\18`` are backreferences."""
        digits = self.text[position + 1 : position + 4]
        return len(digits) == 3 and all(digit in _OCTAL_DIGITS for digit in digits)

    def _class_end(self, position: int) -> int:
        text = self.text
        position += 1
        if text.startswith("^", position):
            position += 1
        if text.startswith("]", position):  # a leading ']' is a literal
            position += 1
        while position < len(text):
            posix = _POSIX_CLASS.match(text, position)
            if posix:
                name = posix.group(2)
                negated = bool(posix.group(1))
                known = name in POSIX_CLASSES
                ranges = _ascii_class(f"[[:{name}:]]", negated=negated) if known else None
                if ranges:
                    self.respellings.append((position, posix.end(), ranges))
                    self._mark(_Feature.CASELESS_CLASS, *posix.span())
                else:
                    self._mark(_Feature.UNKNOWN_POSIX_CLASS, *posix.span())
                position = posix.end()
            elif text[position] == "\\":
                position = self._property(position, in_set=True) or position + 2
            elif text[position] == "]":
                return position + 1
            else:
                position += 1
        return len(text)

    def _group(self, position: int) -> int:
        text = self.text
        after = position + 2
        if not text.startswith("(?", position) or text.startswith(":", after):
            self._verbose.append(self._verbose[-1])
            return position + 1
        if text.startswith("#", after):
            return self._comment_end(after)
        if text.startswith("P=", after):
            self._mark(_Feature.BACKREFERENCE, position, position + 1)
            end = text.find(")", after)
            return len(text) if end < 0 else end + 1
        if text.startswith("(", after):
            self._mark(_Feature.CONDITIONAL, position, position + 1)
            self._verbose.append(self._verbose[-1])
            end = text.find(")", after)
            return len(text) if end < 0 else end + 1
        for prefix, feature in _GROUP_FEATURES:
            if text.startswith(prefix, after):
                self._mark(feature, position, after + len(prefix))
                self._verbose.append(self._verbose[-1])
                return after + len(prefix)
        flags = _FLAG_GROUP.match(text, after)
        if flags:
            return self._flag_group(position, flags)
        if text.startswith("<", after):  # (?<name>...), which Python spells (?P<name>...)
            self.respellings.append((after, after + 1, "P<"))
        self._verbose.append(self._verbose[-1])  # (?P<name>...)
        return after

    def _comment_end(self, position: int) -> int:
        text = self.text
        while position < len(text):
            if text[position] == "\\":
                position += 2
            elif text[position] == ")":
                return position + 1
            else:
                position += 1
        return len(text)

    def _flag_group(self, position: int, flags: re.Match[str]) -> int:
        added, removed, closer = flags.group(1), flags.group(2) or "", flags.group(3)
        for letter in added:
            if letter in _FLAG_FEATURES:
                self._mark(_FLAG_FEATURES[letter], position, flags.end())
        if closer == ")":  # global flags, which Python only allows at the very start
            self._verbose[-1] = self._verbose[-1] or "x" in added
        else:
            self._verbose.append((self._verbose[-1] or "x" in added) and "x" not in removed)
        return flags.end()

    def _quantifier(self, position: int) -> int:
        text = self.text
        end = position + 1
        if text[position] == "{":
            braces = _BRACE_QUANTIFIER.match(text, position)
            if braces is None or braces.group() == "{}":
                return end  # a literal '{'
            end = braces.end()
            if any(int(bound) > MAX_REPEAT for bound in braces.groups() if bound):
                self._mark(_Feature.LARGE_REPEAT, position, end)
        if text.startswith("+", end):
            self._mark(_Feature.POSSESSIVE, position, end + 1)
            return end + 1
        return end + 1 if text.startswith("?", end) else end
