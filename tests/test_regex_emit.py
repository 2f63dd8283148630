"""grammar_compiler.regex_emit, checked by the two xgrammar readers it writes for.

Each written regex is compiled the way the service compiles it (a regex
constraint with ``GrammarCompiler.compile_regex``; a JSON Schema ``pattern``
through ``compile_json_schema``) and asked, through a real matcher, which
texts it accepts: the text of the regex is not what matters.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
import xgrammar as xgr
from json_instances import Decoder, layout

from grammar_compiler import ecma_regex
from grammar_compiler.code_points import complement, intersect, minus, python_class_escapes
from grammar_compiler.regex_emit import (
    NEGATED_COUNT_LIMIT,
    PATTERN_SYNTAX,
    REGEX_SYNTAX,
    SPLIT_OPEN_REPEAT_ABOVE,
    WRITE_OUT_COUNT_LIMIT,
    WRITE_OUT_TEXT_LIMIT,
    Alt,
    Chars,
    Repeat,
    Seq,
    Syntax,
    always_extendable,
    emit,
    finite_texts,
    length_bounds,
    longest_part,
)

_REGEX_COMPILER = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)

# Beyond ASCII: printable and not (no-break space, soft hyphen, line separator,
# BOM, U+FFFF, a tag character, the last code point), both planes.
_NON_ASCII = [0xE9, 0xA0, 0xAD, 0x4E2D, 0x2028, 0x3000, 0xFEFF, 0xFFFF, 0x1F600, 0xE0001, 0x10FFFF]
# What a pattern may generate: JSON escapes are not generated (ecma_regex).
_JSON_UNSAFE = frozenset([*range(0x20), ord('"'), ord("\\")])


def _accepts(regex: str, syntax: Syntax, text: str) -> bool:
    """Whether xgrammar, reading ``regex`` as the service does for ``syntax``, matches ``text``."""
    if syntax is REGEX_SYNTAX:
        matcher = xgr.GrammarMatcher(
            _REGEX_COMPILER.compile_regex(regex), terminate_without_stop_token=True
        )
        return matcher.accept_string(text) and matcher.is_terminated()
    decoder = Decoder(json.dumps({"type": "string", "pattern": regex}))
    return decoder.accepts(layout(text))


def _writable(syntax: Syntax) -> list[int]:
    every = [*range(0x7F), *_NON_ASCII]
    if syntax is REGEX_SYNTAX:
        return every
    return [code for code in every if code not in _JSON_UNSAFE]


def _cases() -> list[object]:
    return [
        pytest.param(syntax, code, id=f"{name}-U+{code:04X}")
        for name, syntax in (("regex", REGEX_SYNTAX), ("pattern", PATTERN_SYNTAX))
        for code in _writable(syntax)
    ]


def _other(*avoid: int) -> str:
    """A character the regex under test must refuse."""
    return next(c for c in "xyz" if ord(c) not in avoid)


def _one(code: int) -> Chars:
    return Chars(((code, code),))


@pytest.mark.parametrize(("syntax", "code"), _cases())
def test_every_character_written_alone_matches_exactly_itself(syntax: Syntax, code: int) -> None:
    regex = emit(_one(code), syntax)
    character = chr(code)
    assert _accepts(regex, syntax, character), regex
    assert not _accepts(regex, syntax, character * 2), regex
    assert not _accepts(regex, syntax, _other(code)), regex


@pytest.mark.parametrize(("syntax", "code"), _cases())
def test_every_character_in_a_class_matches_exactly_itself(syntax: Syntax, code: int) -> None:
    """First in the class (where xgrammar could read ``^`` as a negation), in the middle
    (where ``-`` could make a range) and last."""
    for partners in ((0xE9,), (ord("!"),), (ord("!"), 0xE9)):
        if code in partners:
            continue
        members = sorted([code, *partners])
        regex = emit(Chars(tuple((member, member) for member in members)), syntax)
        for member in members:
            assert _accepts(regex, syntax, chr(member)), (regex, member)
        assert not _accepts(regex, syntax, _other(*members)), regex
        assert not _accepts(regex, syntax, chr(code) * 2), regex


@pytest.mark.parametrize(("syntax", "code"), _cases())
def test_every_character_missing_from_a_negated_class_is_refused(syntax: Syntax, code: int) -> None:
    """``[^...]`` is written for sets that miss only a few BMP characters (a
    positive class where one beyond is missing); the missing one must be
    refused wherever it lands among the members (``^`` first could read as a
    second negation), and everything else accepted."""
    everything = ((0, sys.maxunicode),) if syntax is REGEX_SYNTAX else _STRING_BODY
    for partners in ((), (ord("^"),), (ord("!"), 0xE9)):
        if code in partners:
            continue
        missing = tuple((member, member) for member in sorted([code, *partners]))
        regex = emit(Chars(minus(everything, missing)), syntax)
        assert regex.startswith("[^") == (code <= 0xFFFF), regex
        for member in (code, *partners):
            assert not _accepts(regex, syntax, chr(member)), (regex, member)
        for kept in ("x", "é", "😀", "\U0010ffff"):
            if ord(kept) not in (code, *partners):
                assert _accepts(regex, syntax, kept), (regex, kept)
        assert not _accepts(regex, syntax, "xx"), regex


@pytest.mark.parametrize(
    ("syntax", "low"),
    [
        pytest.param(syntax, low, id=f"{name}-U+{low:04X}")
        for name, syntax in (("regex", REGEX_SYNTAX), ("pattern", PATTERN_SYNTAX))
        for low in range(0x21, 0x7D)
        if all(code in _writable(syntax) for code in range(low - 1, low + 4))
    ],
)
def test_ranges_bounded_by_every_ascii_character_match_exactly_their_span(
    syntax: Syntax, low: int
) -> None:
    """Two- and three-character ranges: written ``ab`` and ``a-c``, metacharacters at either end."""
    for high in (low + 1, low + 2):
        regex = emit(Chars(((low, high),)), syntax)
        for code in range(low - 1, high + 2):
            assert _accepts(regex, syntax, chr(code)) == (low <= code <= high), (regex, code)


@pytest.mark.parametrize("syntax", [REGEX_SYNTAX, PATTERN_SYNTAX], ids=["regex", "pattern"])
def test_a_set_spanning_both_planes_matches_exactly_its_members(syntax: Syntax) -> None:
    chars = Chars(((ord("a"), ord("c")), (0x1F600, 0x1F602)))
    regex = emit(Repeat(chars, 2, 3), syntax)
    for text in ("ab", "a😀", "😂😀c", "abc"):
        assert _accepts(regex, syntax, text), (regex, text)
    for text in ("a", "d😀", "abca", "😃😀"):
        assert not _accepts(regex, syntax, text), (regex, text)


_JSON_ESCAPED = ((0, 0x1F), (ord('"'), ord('"')), (ord("\\"), ord("\\")), (0xD800, 0xDFFF))
_STRING_BODY = minus(((0, sys.maxunicode),), _JSON_ESCAPED)


def test_a_set_missing_only_bmp_characters_is_one_negated_class_for_patterns() -> None:
    """A JSON string's characters (maxLength, ``.``): one negated class rather
    than two alternatives or a positive class spanning both planes, whose
    token masks xgrammar fills tens to a thousand times slower."""
    regex = emit(Repeat(Chars(_STRING_BODY), 0, 5), PATTERN_SYNTAX)
    assert regex.startswith("[^") and regex.endswith("]{0,5}") and "|" not in regex, regex
    for count in (NEGATED_COUNT_LIMIT, NEGATED_COUNT_LIMIT + 1):
        counted = emit(Repeat(Chars(_STRING_BODY), 0, count), PATTERN_SYNTAX)
        assert counted.startswith("[^") == (count == NEGATED_COUNT_LIMIT), counted
        assert "|" not in counted, counted
    for text in ("", "a😀中é", "😀😀😀😀😀", "\uffff\U0010ffff", "a b~"):
        assert _accepts(regex, PATTERN_SYNTAX, text), (regex, text)
    for text in ("😀😀😀😀😀😀", "a\tb", "abcdef"):
        assert not _accepts(regex, PATTERN_SYNTAX, text), (regex, text)


# Tokens of several characters ending in the closing quote: a mask that ends
# the run too early lets them through.
_QUOTED_VOCABULARY = [*(chr(code) for code in range(0x20, 0x7F)), "é", "😀", ', "', '{"', 'ab"']


def _masked_walk_agrees(regex: str, syntax: Syntax, steps: int) -> list[str]:
    """Walks ``"regex"`` one character token at a time; at each step every
    token the mask allows must also be accepted. Returns the disagreements."""
    tokenizer = xgr.TokenizerInfo(_QUOTED_VOCABULARY, xgr.VocabType.RAW)
    compiler = xgr.GrammarCompiler(tokenizer, cache_enabled=False)
    if syntax is REGEX_SYNTAX:
        compiled = compiler.compile_regex(f'"{regex}"')
    else:
        schema = {"type": "string", "pattern": regex}
        compiled = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string('"')
    bitmask = xgr.allocate_token_bitmask(1, tokenizer.vocab_size)
    walked, disagreements = "", []
    for step in range(steps):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = [t for t in range(len(_QUOTED_VOCABULARY)) if bitmask[0, t // 32] >> (t % 32) & 1]
        for token in allowed:
            if matcher.accept_token(token):
                matcher.rollback(1)
            else:
                disagreements.append(walked + _QUOTED_VOCABULARY[token])
        character = "😀" if step % 3 == 0 else "x"
        if not matcher.accept_string(character):
            break
        walked += character
    return disagreements


@pytest.mark.parametrize(
    ("low", "high"),
    [(2, 300), (200, 200), (300, 5000), (130, None), (1, 300), (0, 5000), (10, 128)],
)
@pytest.mark.parametrize("syntax", [REGEX_SYNTAX, PATTERN_SYNTAX], ids=["regex", "pattern"])
def test_large_counts_of_a_class_spanning_both_planes_mask_right(
    low: int, high: int | None, syntax: Syntax
) -> None:
    """xgrammar 0.2.8 lets a token end such a run early under a count above
    128, then refuses it (the decoder would stop short of a match): larger
    counts are written in parts, and the texts stay the same."""
    regex = emit(Repeat(Chars(_STRING_BODY), low, high), syntax)
    assert _masked_walk_agrees(regex, syntax, steps=low + 12) == []
    lengths = {low - 1: False, low: True, low + 1: True}
    if high is not None:
        lengths |= {high: True, high + 1: False}
    for length, expected in lengths.items():
        if length >= 0:
            assert _accepts(regex, syntax, "é" * length) == expected, (regex, length)


def test_the_syntaxes_differ_only_where_their_readers_do() -> None:
    optional = Repeat(Seq((Repeat(_one(ord("a")), 1, None), _one(ord("b")))), 0, 1)
    assert emit(Repeat(_one(ord("a")), 0, 1), REGEX_SYNTAX) == "a?"
    assert emit(Repeat(_one(ord("a")), 0, 1), PATTERN_SYNTAX) == "a{0,1}"
    assert emit(optional, REGEX_SYNTAX) == emit(optional, PATTERN_SYNTAX) == "(?:|a+b)"
    assert emit(_one(0xE0001), REGEX_SYNTAX) == "\\U000E0001"
    assert emit(_one(0xE0001), PATTERN_SYNTAX) == "\U000e0001"
    both_planes = Chars(((ord("a"), ord("a")), (0x1F600, 0x1F600)))
    assert emit(both_planes, REGEX_SYNTAX) == "[a😀]"
    assert emit(both_planes, PATTERN_SYNTAX) == "(?:a|😀)"


@pytest.mark.parametrize("syntax", [REGEX_SYNTAX, PATTERN_SYNTAX], ids=["regex", "pattern"])
@pytest.mark.parametrize(
    ("pattern", "texts"),
    [
        (r"x(-[a-z]+)?", {"x": True, "x-ab": True, "x-": False, "x-a-b": False}),
        (r"(ab(cd)?)?e", {"e": True, "abe": True, "abcde": True, "cde": False, "abcd": False}),
        (r"[a-z]*(:\d+)?", {"": True, "ab": True, "ab:12": True, ":1": True, "ab:": False}),
        (r"(a|(b(c)?))?d", {"d": True, "ad": True, "bd": True, "bcd": True, "cd": False}),
        (r"(x(yz)?){2}", {"xx": True, "xyzx": True, "xyzxyz": True, "x": False, "xyzyz": False}),
    ],
)
def test_optional_groups_written_as_alternatives_take_the_same_texts(
    syntax: Syntax, pattern: str, texts: dict[str, bool]
) -> None:
    """Optional groups are written ``(?:|x)``, which xgrammar fills faster."""
    regex = emit(ecma_regex.parse_pattern(f"^{pattern}$"), syntax)
    assert "(?:|" in regex and "){0,1}" not in regex and ")?" not in regex, regex
    assert {text: _accepts(regex, syntax, text) for text in texts} == texts
    assert _masked_walk_agrees(regex, syntax, steps=6) == []


# ---------------------------------------------------------------------------
# Open repeats above SPLIT_OPEN_REPEAT_ABOVE are written x{m}x*

_A, _B = _one(ord("a")), _one(ord("b"))


@pytest.mark.parametrize(
    ("node", "written"),
    [
        (Repeat(_A, 20, None), "a{20}a*"),
        (Repeat(Seq((_A, _B)), 200, None), "(?:ab){200}(?:ab)*"),
        (Repeat(Alt((_A, _B)), 200, None), "(?:a|b){200}(?:a|b)*"),
        (Repeat(Repeat(_A, 0, 2), 20, None), "(?:a{0,2})*"),
        (Repeat(_A, SPLIT_OPEN_REPEAT_ABOVE, None), "a{16,}"),
    ],
)
@pytest.mark.parametrize("syntax", [REGEX_SYNTAX, PATTERN_SYNTAX], ids=["regex", "pattern"])
def test_open_repeats_are_split_into_the_same_texts(
    node: Repeat, written: str, syntax: Syntax
) -> None:
    assert emit(node, syntax) == written
    unit = "ab" if isinstance(node.item, Seq) else "a"
    for count in (0, 15, 16, 17, 20, 40, node.low - 1, node.low, node.low + 1):
        expected = count >= node.low or length_bounds(node.item)[0] == 0
        assert _accepts(written, syntax, unit * count) == expected, count


@pytest.mark.parametrize(
    ("low", "high", "written"),
    [
        (3, 3, "(?:ab)(?:ab)(?:ab)"),
        (2, 4, "(?:ab)(?:ab)(?:ab){0,2}"),
        (2, None, "(?:ab)(?:ab)(?:ab)*"),
        (1, 3, "(?:ab){1,3}"),  # one required copy: nothing to write out
        (WRITE_OUT_COUNT_LIMIT + 1, None, f"(?:ab){{{WRITE_OUT_COUNT_LIMIT + 1}}}(?:ab)*"),
    ],
)
@pytest.mark.parametrize("syntax", [REGEX_SYNTAX, PATTERN_SYNTAX], ids=["regex", "pattern"])
def test_required_copies_of_a_group_are_written_out(
    low: int, high: int | None, written: str, syntax: Syntax
) -> None:
    """xgrammar fills masks inside written-out copies far faster than inside a
    counted group (``WRITE_OUT_COUNT_LIMIT``); the texts stay the same."""
    node = Repeat(Seq((_A, _B)), low, high)
    assert emit(node, syntax) == written
    for count in range(low + 3):
        expected = count >= low and (high is None or count <= high)
        assert _accepts(written, syntax, "ab" * count) == expected, count
    assert not _accepts(written, syntax, "ab" * low + "a")


def test_a_group_too_long_to_write_out_keeps_its_count() -> None:
    long_group = Seq(tuple(_A for _ in range(WRITE_OUT_TEXT_LIMIT // 4 + 1)))
    assert emit(Repeat(long_group, 5, 5), REGEX_SYNTAX).endswith("){5}")
    assert emit(Repeat(Repeat(_A, 0, 2), 3, 3), REGEX_SYNTAX) == "(?:a{0,2}){3}"  # can be empty


def test_written_out_copies_share_one_budget_per_regex() -> None:
    """A pattern may hold many counted groups; together they write out at most
    ``WRITE_OUT_TEXT_LIMIT`` characters, then the rest keep their counts."""
    group = Repeat(Seq((_A, _B)), 100, 100)  # 600 characters written out
    written = emit(Seq((group,) * 4), REGEX_SYNTAX)
    assert written.count("{100}") == 4 - WRITE_OUT_TEXT_LIMIT // 600
    assert _accepts(written, REGEX_SYNTAX, "ab" * 400)
    assert not _accepts(written, REGEX_SYNTAX, "ab" * 399)


def test_lengths_of_a_tree() -> None:
    word = Seq((_A, Repeat(_B, 0, 3)))
    assert length_bounds(word) == (1, 4)
    assert length_bounds(Repeat(word, 2, None)) == (2, None)
    assert length_bounds(Repeat(Repeat(_A, 0, 0), 0, None)) == (0, 0)
    assert length_bounds(Alt((word, Repeat(_A, 5, 6)))) == (1, 6)
    forced = Alt((_A, Repeat(Repeat(_B, 999, 999), 99, 99)))
    assert length_bounds(forced)[0] == 1
    assert longest_part(forced) == 999 * 99


# ---------------------------------------------------------------------------
# The code point sets both translators build on


@pytest.mark.parametrize("ascii_only", [False, True])
def test_python_class_escapes_are_what_re_matches(ascii_only: bool) -> None:
    flags = re.ASCII if ascii_only else 0
    sample = [*range(0x300), 0x0660, 0x0969, 0x1680, 0x2000, 0x2028, 0x3000, 0xFEFF, 0x1D7CE]
    for escape, ranges in python_class_escapes(ascii_only).items():
        for code in sample:
            inside = any(low <= code <= high for low, high in ranges)
            assert inside == bool(re.fullmatch(escape, chr(code), flags)), (escape, hex(code))


def test_set_arithmetic() -> None:
    letters = ((ord("a"), ord("z")),)
    vowels = ((ord("a"), ord("a")), (ord("e"), ord("e")))
    assert intersect(letters, vowels) == vowels
    assert minus(letters, vowels) == ((ord("b"), ord("d")), (ord("f"), ord("z")))
    assert complement(complement(vowels)) == vowels
    assert minus(((0, sys.maxunicode),), ((0, sys.maxunicode),)) == ()


@pytest.mark.parametrize(
    ("pattern", "extendable"),
    [
        ("^[a-z0-9-]+$", True),
        ("^[a-z]{2}", True),  # unanchored: anything may follow
        ("^v[0-9]+\\.[0-9]+$", True),
        ("^[a-z]+(-[a-z]+)*$", True),
        ("^[a-z]{2}$", False),
        ("^(foo|bar)$", False),
        ("^(a+|b)$", False),  # "b" must end there
        ("^[a-z]+@[a-z]+\\.com$", False),  # "x@y.co" must end "m"
        ("^$", False),
    ],
)
def test_always_extendable_means_no_start_is_bound_to_end(pattern: str, extendable: bool) -> None:
    assert always_extendable(ecma_regex.parse_pattern(pattern)) is extendable


@pytest.mark.parametrize(
    ("pattern", "count"),
    [("^[a-z]{2}$", 676), ("^(?:yes|no|maybe)$", 3), ("^[ab]{1,3}-?$", 28), ("^a+$", None)],
)
def test_finite_texts_lists_a_bounded_pattern(pattern: str, count: int | None) -> None:
    texts = finite_texts(ecma_regex.parse_pattern(pattern), 1024)
    if count is None:
        assert texts is None
        return
    assert texts is not None and len(texts) == len(set(texts)) == count
    assert all(re.fullmatch(pattern.strip("^$"), text) for text in texts)
    assert finite_texts(ecma_regex.parse_pattern(pattern), count - 1) is None
