"""Intersection and difference of regex trees (``regex_automaton``), and the
lookaheads ``ecma_regex`` applies with them, against brute force: every text
over a small alphabet, up to a length, matched by Python's own regexes."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammar_compiler import compile_regex, ecma_regex, regex_automaton
from grammar_compiler.regex_emit import PATTERN_SYNTAX, Chars, Repeat, Seq, emit

ALPHABET = "ab-"
TEXTS = ["".join(t) for n in range(6) for t in itertools.product(ALPHABET, repeat=n)]


def _regex(draw_depth: int = 2) -> st.SearchStrategy[str]:
    atoms = st.sampled_from(["a", "b", "-", "[ab]", "[^a]", "."])
    if draw_depth == 0:
        return atoms
    inner = st.deferred(lambda: _regex(draw_depth - 1))
    return st.one_of(
        atoms,
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda pair: f"(?:{pair[0]}|{pair[1]})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(
            lambda pair: f"(?:{pair[0]}){pair[1]}"
        ),
    )


def _matches(node, text: str) -> bool:
    return re.fullmatch(emit(node, PATTERN_SYNTAX), text) is not None


def _tree(regex: str):
    return ecma_regex.parse_pattern(f"^(?:{regex})$")


@given(first=_regex(), second=_regex())
@settings(max_examples=150, deadline=None)
def test_intersection_and_difference_match_exactly_what_they_should(
    first: str, second: str
) -> None:
    both = regex_automaton.intersection(_tree(first), _tree(second))
    only_first = regex_automaton.difference(_tree(first), _tree(second))
    for text in TEXTS:
        in_first = re.fullmatch(first, text) is not None
        in_second = re.fullmatch(second, text) is not None
        assert (both is not None and _matches(both, text)) == (in_first and in_second), text
        assert (only_first is not None and _matches(only_first, text)) == (
            in_first and not in_second
        ), text


def test_automata_past_their_bounds_are_refused() -> None:
    counted = Seq((Repeat(Chars(((0x61, 0x62),)), 0, 300), Chars(((0x61, 0x61),))))
    with pytest.raises(regex_automaton.TooComplex):
        regex_automaton.intersection(counted, Repeat(Chars(((0x61, 0x61),)), 0, None))


@pytest.mark.parametrize(
    ("pattern", "exact"),
    [
        ("^(?=.*a)(?=.*b).*$", True),
        ("^(?!.*--)[ab-]+$", True),
        ("^(?!a$|b$)[ab]+$", True),
        ("^(?=[^-]*-)[ab-]*$", True),
        ("(?=.*a-)", True),
        ("^a(?!b)", True),
        ("^(?!-)(?!.*-$).+$", True),
        ("^-(?!aa)[ab]{2}$", True),
        ("^(?=.{2,4}$)[ab]+$", True),
        ("^(?:(?!a).)*$", True),  # a tempered token: the lookahead stays in each copy
        ("^(?:(?!a)[ab-]|a-)*$", True),
        ("^((?!a-b).)*$", True),  # a tempered token ending the text
        ("^(?=.*a)(?=.*b)[ab-]{3,}$", False),  # the count is folded back in: a subset
    ],
)
def test_lookaheads_keep_the_texts_python_matches(pattern: str, exact: bool) -> None:
    node = ecma_regex.parse_pattern(pattern)
    for text in TEXTS:
        expected = re.search(pattern, text) is not None
        written = _matches(node, text)
        assert written == expected if exact else (not written or expected), text
    assert any(_matches(node, text) for text in TEXTS)


@pytest.mark.parametrize(
    ("pattern", "message", "position"),
    [
        ("^(?=a)(?=b)x$", "no text satisfies the lookahead", 1),
        ("^(?:(?!abc).x)*$", "a group holding a lookaround", 1),
        ("^(?=a$b)", "anchor '$' in a lookahead", 5),
        ("^(?=.{3}$).{5}$", "no text of the lengths", 1),
    ],
)
def test_lookaheads_that_cannot_be_written_are_refused(
    pattern: str, message: str, position: int
) -> None:
    with pytest.raises(ecma_regex.PatternError) as caught:
        ecma_regex.parse_pattern(pattern)
    assert message in caught.value.message and caught.value.position == position


def test_a_long_lookahead_regex_is_cut_to_printable_ascii() -> None:
    """``[^\\w\\s]`` over the whole plane, repeated over the automaton's paths,
    wrote 100 KB; printable ASCII (a subset) writes a few."""
    pattern = "^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d)(?=.*[^\\w\\s]).{10,72}$"
    written = emit(ecma_regex.parse_pattern(pattern), PATTERN_SYNTAX)
    assert len(written) <= 16_000
    for text in ("aA1!bbbbbb", "Zz9#" + "x" * 20):
        assert re.fullmatch(written, text) and re.search(pattern, text), text
    assert not re.fullmatch(written, "aA1bbbbbbbbb")  # no character outside \w and \s


@pytest.mark.parametrize(
    ("pattern", "exact"),
    [
        ("(?=.*a)(?=.*b)[ab-]*", True),
        ("^(?!a$|b$)[ab]+$", True),
        ("(?!.*--)[ab-]+(?<!-)", True),
        ("a(?!b)[ab-]*", True),
        ("x?(?=a)a|(?!a)[ab]", True),  # each top-level alternative has its own
        ("(?=[ab]{2,4}$).*", True),
        ("(?<!a)", True),  # a lookbehind alone: the empty output
        ("(?=.*a)(?=.*b)[ab-]{3,}", False),
    ],
)
def test_python_regex_lookarounds_keep_the_texts_python_fully_matches(
    pattern: str, exact: bool
) -> None:
    """A ``regex`` constraint matches the whole output: its lookaheads cut what
    follows them, through the same automata as JSON Schema patterns."""
    translated = compile_regex(pattern)
    for text in TEXTS:
        expected = re.fullmatch(pattern, text) is not None
        written = re.fullmatch(translated, text) is not None
        assert written == expected if exact else (not written or expected), text
