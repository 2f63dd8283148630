"""The parts behind llguidance's Lark dialect, one by one, against Python's ``re`` and xgrammar.

The end-to-end behaviour (translation against the judge) is tested with the
other Lark grammars in ``test_grammar_compiler_cfg.py``; here each piece is
checked on its own: the non-empty version of a regex the judge's lexer gets,
the shapes of lazy regexes that are read exactly, the special-token rules
the decoder resolves, inline JSON grammars renamed into a host grammar, and
error locations mapped back through the rewriting.
"""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
import xgrammar as xgr

from grammar_compiler import ConstraintError, compile_grammar, compile_json_schema
from grammar_compiler.embedded_ebnf import embedded_ebnf, renamed
from grammar_compiler.lark_dialect import read_dialect
from grammar_compiler.lazy_terminal import lazy_shape_problem
from grammar_compiler.nullable_terminals import nonempty_regex
from grammar_compiler.special_tokens import UnknownSpecialToken, resolve_special_tokens

_CHARACTERS = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def _texts(alphabet: str, longest: int) -> list[str]:
    return [
        "".join(chars)
        for length in range(longest + 1)
        for chars in itertools.product(alphabet, repeat=length)
    ]


@pytest.mark.parametrize(
    "regex",
    [
        r"(.|\n)*",
        r"a*b?",
        r"(a|)b*",
        r"(?s:.)*x?",
        r"[^x\d]*",
        r"(?:ab)*c?",
        r"(a?b?){2,3}",
        r"a??",
        r"(?s)a*.?",
        r"\w*-?\s*",
        r"x{0,2}(y|z{0,1})",
    ],
)
def test_nonempty_regex_matches_exactly_the_nonempty_matches(regex: str) -> None:
    written = nonempty_regex(regex)
    assert written is not None
    for text in _texts("abxyz1-\n ", 4):
        expected = text != "" and re.fullmatch(regex, text, re.ASCII) is not None
        assert (re.fullmatch(written, text, re.ASCII) is not None) == expected, (regex, text)


def test_nonempty_regex_of_the_empty_language_is_none() -> None:
    assert nonempty_regex("") is None
    assert nonempty_regex("(|)") is None
    assert nonempty_regex("a{0}") is None


@pytest.mark.parametrize(
    ("regex", "problem"),
    [
        (r"(.|\n)*?</think>", None),
        (r"<t>[^x]{2}(.|\n)+?\.\.", None),
        (r"(?s:.)*?;", None),
        (r"a{2,5}?", None),
        (r"(ab|a)*?b", "more than one character"),
        (r"a*?b+", "variable length"),
        (r"x*a*?b", "variable length"),
        (r"(a*?b)+", "repeated group or an alternative"),
        (r"a*?|b", "repeated group or an alternative"),
        (r"a*?b*?", "several lazy quantifiers"),
    ],
)
def test_lazy_shapes(regex: str, problem: str | None) -> None:
    found = lazy_shape_problem(regex)
    assert (found is None) if problem is None else (problem in found), found


# ---------------------------------------------------------------------------
# Special tokens


def test_special_token_rules_are_resolved_to_their_token() -> None:
    ebnf = compile_grammar('start: <think> "a" <think>', "lark").value
    assert 'special.token.3c7468696e6b3e ::= "<think>"' in ebnf
    resolved = resolve_special_tokens(ebnf, {"<think>": 7, "<s>": 0}, vocab_size=10)
    assert "special.token.3c7468696e6b3e ::= Token(7)" in resolved
    assert '"<think>"' not in resolved


@pytest.mark.parametrize(
    ("vocabulary", "size", "message"),
    [({"<s>": 0}, 10, "does not have"), ({"<think>": 12}, 10, "outside the model's vocabulary")],
)
def test_special_tokens_the_tokenizer_cannot_give_are_named(
    vocabulary: dict[str, int], size: int, message: str
) -> None:
    ebnf = compile_grammar("start: <think>", "lark").value
    with pytest.raises(UnknownSpecialToken, match=message) as caught:
        resolve_special_tokens(ebnf, vocabulary, size)
    assert "'<think>'" in str(caught.value)


def _allowed(compiled: xgr.CompiledGrammar, size: int) -> list[int]:
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, size)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
    return [int(token) for token in np.flatnonzero(bits[:size])]


def test_a_resolved_special_token_is_the_only_way_to_write_it() -> None:
    """Unresolved, the rule is the token's text, which characters can spell too;
    resolved, only the token itself is allowed."""
    vocabulary = ["<", "think", ">", "<think>", "a", "</s>"]
    info = xgr.TokenizerInfo(vocabulary, xgr.VocabType.RAW, stop_token_ids=[5])
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    ebnf = compile_grammar('start: <think> "a"', "lark").value
    assert set(_allowed(compiler.compile_grammar(ebnf), 6)) == {0, 3}
    resolved = resolve_special_tokens(ebnf, {"<think>": 3}, 6)
    assert _allowed(compiler.compile_grammar(resolved), 6) == [3]


# ---------------------------------------------------------------------------
# Inline JSON schemas


def test_renaming_leaves_strings_classes_and_keyword_arguments_alone() -> None:
    ebnf = 'root ::= "root" [root] sub Regex("root", json_string=true)\nsub ::= root\n'
    assert renamed(ebnf, "j.") == (
        'j.root ::= "root" [root] j.sub Regex("root", json_string=true)\nj.sub ::= j.root\n'
    )


def test_an_embedded_schema_means_what_it_means_alone() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"const": "root"}, "n": {"type": "integer", "minimum": 2}},
        "required": ["root"],
    }
    constraint = compile_json_schema(schema)
    embedded = embedded_ebnf(constraint, "json0.")
    host = f'root ::= "<" {embedded.root} ">"\n{embedded.ebnf}'
    alone = xgr.GrammarMatcher(
        _CHARACTERS.compile_json_schema(constraint.value, any_whitespace=False),
        terminate_without_stop_token=True,
    )
    inside = xgr.GrammarMatcher(
        _CHARACTERS.compile_grammar(host), terminate_without_stop_token=True
    )
    for value in (
        {"root": "root"},
        {"root": "root", "n": 2},
        {"root": "x"},
        {"root": "root", "n": 1},
    ):
        text = json.dumps(value)
        alone.reset()
        inside.reset()
        expected = alone.accept_string(text) and alone.is_terminated()
        assert (inside.accept_string(f"<{text}>") and inside.is_terminated()) == expected, text


# ---------------------------------------------------------------------------
# The rewriting and its locations


def test_generated_names_avoid_the_grammar_s_own() -> None:
    dialect = read_dialect('start: llg_json_0 %json {"type": "string"}\nllg_json_0: "a"')
    assert list(dialect.embedded) == ["llg0_json_0"]


def test_locations_after_rewritten_constructs_are_the_user_s() -> None:
    text = 'start: <think> x{2,} %json {\n  "type": "string"\n} "b" missing\nx: "a"'
    with pytest.raises(ConstraintError) as caught:
        compile_grammar(text, "lark")
    assert "missing" in caught.value.message
    assert (caught.value.line, caught.value.column) == (3, 7)
