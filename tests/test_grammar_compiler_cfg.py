"""grammar_compiler.cfg (BNF dialect, GBNF, Lark) against real xgrammar and the Lark judges.

Every accepted grammar is compiled by xgrammar as the decoder compiles it
(``GrammarCompiler.compile_grammar``) and driven with a ``GrammarMatcher``,
and every verdict is compared with the judge, which parses with Lark and
shares no code with the EBNF translation. Sentences for the property tests
come from a small random generator over the parsed grammar tree (below, in
the tests only); mutated sentences must be judged the same by both sides.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import xgrammar as xgr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_instances import Decoder

from grammar_compiler import ConstraintError, compile_grammar
from grammar_compiler.abnf import read_abnf
from grammar_compiler.bnf import read_bnf
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg import detect_format
from grammar_compiler.cfg_tree import (
    MAX_ALTERNATIVES,
    MAX_GRAMMAR_BYTES,
    MAX_NESTING,
    MAX_REPEAT,
    MAX_RULES,
    CharSet,
    Choice,
    Grammar,
    Node,
    Ref,
    Repeat,
    Sequence,
    Text,
)
from grammar_compiler.gbnf import read_gbnf
from grammar_compiler.iso_ebnf import read_iso_ebnf
from grammar_compiler.lark_dialect import read_dialect
from grammar_compiler.lark_grammar import MAX_EXPANDED_SYMBOLS, MAX_SEQUENCE, read_lark
from grammar_compiler.terminal_algebra import combined_regex

CORPUS = Path(__file__).resolve().parent / "corpus"
_XGRAMMAR = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
_READERS = {
    "bnf": read_bnf,
    "gbnf": lambda text: read_gbnf(text)[0],
    "ebnf": lambda text: read_gbnf(text)[0],
    "lark": read_lark,
    "iso-ebnf": read_iso_ebnf,
    "w3c-ebnf": lambda text: read_iso_ebnf(text, w3c=True),
    "abnf": read_abnf,
}


class _Xgrammar:
    """Asks a real xgrammar matcher, built from the canonical EBNF, about texts."""

    def __init__(self, ebnf: str) -> None:
        self.ebnf = ebnf
        self._matcher = xgr.GrammarMatcher(
            _XGRAMMAR.compile_grammar(ebnf), terminate_without_stop_token=True
        )

    def accepts(self, text: str) -> bool:
        self._matcher.reset()
        return self._matcher.accept_string(text) and self._matcher.is_terminated()


class _Compiled:
    """A grammar compiled every way the service uses it, plus its tree for sampling.

    A Lark grammar's inline JSON schemas (``%json``) are sampled by walking
    xgrammar's grammar for the schema (``json_instances.Decoder``): the tree
    holds only a stand-in for them. The judge reads their JSON in any layout,
    xgrammar in the service's, so there the judge may accept more.
    """

    def __init__(self, text: str, grammar_format: str = "auto") -> None:
        self.text = text
        self.constraint = compile_grammar(text, grammar_format)
        self.xgrammar = _Xgrammar(self.constraint.value)
        self.tree = _READERS[self.constraint.source_language](text)
        self.embedded: dict[str, Decoder] = {}
        if self.constraint.source_language == "lark":
            embedded = read_dialect(text).embedded
            self.embedded = {f"rule:{name}": Decoder(c.value) for name, c in embedded.items()}

    def verdicts(self, text: str) -> tuple[bool, bool]:
        """(judge accepts, xgrammar accepts)."""
        return self.constraint.judge(text) is None, self.xgrammar.accepts(text)


def _assert_agrees(compiled: _Compiled, good: list[str], bad: list[str]) -> None:
    """The listed texts are judged as listed by the judge and, identically, by xgrammar."""
    for text in good:
        assert compiled.constraint.judge(text) is None, (text, compiled.constraint.value)
        assert compiled.xgrammar.accepts(text), (text, compiled.constraint.value)
    for text in bad:
        assert compiled.constraint.judge(text) is not None, (text, compiled.constraint.value)
        assert not compiled.xgrammar.accepts(text), (text, compiled.constraint.value)


def _error(text: str, grammar_format: str = "auto") -> ConstraintError:
    with pytest.raises(ConstraintError) as caught:
        compile_grammar(text, grammar_format)
    return caught.value


# ---------------------------------------------------------------------------
# A random sentence generator over grammar trees (tests only)


def _heights(grammar: Grammar) -> dict[str, float]:
    """Least derivation height of each rule; infinite where a rule never finishes."""
    heights = dict.fromkeys(grammar.rules, math.inf)
    changed = True
    while changed:
        changed = False
        for name, body in grammar.rules.items():
            height = _height(body, heights)
            if height < heights[name]:
                heights[name] = height
                changed = True
    return heights


def _height(node: Node, heights: dict[str, float]) -> float:
    if isinstance(node, Ref):
        return heights[node.name] + 1
    if isinstance(node, Sequence):
        return max((_height(item, heights) for item in node.items), default=0)
    if isinstance(node, Choice):
        return min(_height(option, heights) for option in node.options)
    if isinstance(node, Repeat):
        return 0 if node.low == 0 else _height(node.item, heights)
    if isinstance(node, CharSet):
        return 0 if _some_character(node) else math.inf
    return 0


def _some_character(node: CharSet) -> bool:
    """Whether a non-surrogate character is in the set (any gap starts at 0, U+E000 or a high+1)."""
    if not node.negated:
        return bool(node.ranges)
    starts = {0, 0xE000} | {high + 1 for _, high in node.ranges}
    return any(
        code <= 0x10FFFF
        and not 0xD800 <= code <= 0xDFFF
        and not any(low <= code <= high for low, high in node.ranges)
        for code in starts
    )


_CANDIDATES = [*"aZ0 \n\t\"'\\-]^[#/*é中😀", "\x00", "\x7f", "\U0010ffff"]


class _Sampler:
    """Random sentences; past ``max_depth`` it takes the shortest way out."""

    def __init__(
        self,
        grammar: Grammar,
        rng: random.Random,
        max_depth: int = 10,
        embedded: dict[str, Decoder] | None = None,
    ) -> None:
        self.grammar = grammar
        self.rng = rng
        self.max_depth = max_depth
        self.heights = _heights(grammar)
        self.embedded = embedded or {}

    def sentence(self) -> str:
        return self.node(Ref(self.grammar.start), 0)

    def node(self, node: Node, depth: int) -> str:
        if isinstance(node, Text):
            return node.value
        if isinstance(node, CharSet):
            return self.character(node)
        if isinstance(node, Ref) and node.name in self.embedded:
            return self.json(self.embedded[node.name])
        if isinstance(node, Ref):
            return self.node(self.grammar.rules[node.name], depth + 1)
        if isinstance(node, Sequence):
            return "".join(self.node(item, depth) for item in node.items)
        if isinstance(node, Choice):
            options = [o for o in node.options if _height(o, self.heights) < math.inf]
            if depth > self.max_depth:
                options = [min(options, key=lambda o: _height(o, self.heights))]
            return self.node(self.rng.choice(options), depth)
        assert isinstance(node, Repeat)
        high = node.low + 3 if node.high is None else min(node.high, node.low + 3)
        finishes = _height(node.item, self.heights) < math.inf
        grow = finishes and depth <= self.max_depth
        count = self.rng.randint(node.low, high) if grow else node.low
        return "".join(self.node(node.item, depth + 1) for _ in range(count))

    def json(self, decoder: Decoder) -> str:
        while True:
            found = decoder.sample(self.rng)
            if found is not None:
                return found

    def character(self, node: CharSet) -> str:
        def inside(code: int) -> bool:
            found = any(low <= code <= high for low, high in node.ranges)
            return found != node.negated and not 0xD800 <= code <= 0xDFFF

        while not node.negated:
            low, high = self.rng.choice(node.ranges)
            code = self.rng.choice([low, high, self.rng.randint(low, high)])
            if inside(code):
                return chr(code)
        pool = [ord(c) for c in _CANDIDATES] + [self.rng.randint(0, 0x10FFFF) for _ in range(50)]
        self.rng.shuffle(pool)
        return chr(next(code for code in pool if inside(code)))


def _mutations(text: str, rng: random.Random, alphabet: str) -> list[str]:
    """Small random edits of ``text``: deletions, insertions, replacements, cuts, swaps."""
    chars = alphabet + "".join(_CANDIDATES)
    results = []
    for _ in range(4):
        at = rng.randint(0, len(text))
        kind = rng.randrange(6)
        if kind == 0 and text:
            at = min(at, len(text) - 1)
            results.append(text[:at] + text[at + 1 :])
        elif kind == 1:
            results.append(text[:at] + rng.choice(chars) + text[at:])
        elif kind == 2 and text:
            at = min(at, len(text) - 1)
            results.append(text[:at] + rng.choice(chars) + text[at + 1 :])
        elif kind == 3:
            results.append(text[:at])
        elif kind == 4 and len(text) > 1:
            at = min(at, len(text) - 2)
            results.append(text[:at] + text[at + 1] + text[at] + text[at + 2 :])
        else:
            results.append(text + text[at:])
    return results


def _check_sentences(compiled: _Compiled, rng: random.Random, count: int = 3) -> None:
    """Generated sentences are accepted by both; their mutations are judged alike by both
    (with inline JSON, a judge that accepts JSON in another layout is also right)."""
    sampler = _Sampler(compiled.tree, rng, embedded=compiled.embedded)
    for _ in range(count):
        sentence = sampler.sentence()
        assert compiled.verdicts(sentence) == (True, True), (sentence, compiled.constraint.value)
        for mutated in _mutations(sentence, rng, sentence):
            judge, xgrammar = compiled.verdicts(mutated)
            layout_only = compiled.embedded and judge and not xgrammar
            assert judge == xgrammar or layout_only, (mutated, judge, xgrammar)


# ---------------------------------------------------------------------------
# The BNF dialect: the document's example and its rules


def test_document_example_accepts_exactly_its_two_sentences() -> None:
    compiled = _Compiled("<start> ::= <noun> <verb> | <verb> <noun>")
    assert compiled.constraint.kind == "ebnf"
    assert compiled.constraint.source_language == "bnf"
    assert compiled.constraint.value.startswith("root ::= ")
    _assert_agrees(
        compiled,
        good=["noun verb", "verb noun"],
        bad=["", "noun", "nounverb", "noun  verb", "noun verb ", " noun verb", "verb verb"],
    )


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param("<start> ::= <a><b>", ["ab"], ["a b"], id="touching-symbols-concatenate"),
        pytest.param('<start> ::= "x"<a> "y"', ["xa y"], ["x a y", "xay"], id="string-touching"),
        pytest.param(
            "<start> ::= <a>\n    <b>\n  | <c>",
            ["a b", "c"],
            ["ab", "a\nb"],
            id="line-break-is-one-space",
        ),
        pytest.param(
            "<start> ::= <a> # comment\n <b>/* c */<c>",
            ["a b c"],
            ["a bc"],
            id="comments-are-space",
        ),
        pytest.param("<start> ::= <a>+", ["a", "aaa"], ["a a", ""], id="repeat-without-space"),
        pytest.param(
            "<start> ::= <a> (<b> <c>)?", ["a ", "a b c"], ["a", "ab c"], id="space-before-optional"
        ),
        pytest.param('<start> ::= <a>(" "<b>)?', ["a", "a b"], ["a ", "ab"], id="optional-word"),
        pytest.param("<start> ::= ( <a> | <b> )", ["a", "b"], [" a", "a "], id="edges-of-groups"),
        pytest.param(
            '<start> ::= "a"\t\t"b"  "c"',
            ["a b c"],
            ["a\t\tb  c"],
            id="any-whitespace-is-one-space",
        ),
    ],
)
def test_space_rule(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar), good, bad)


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        ('start: WORD ("," WORD)*\nWORD: /[[:alpha:]]+/', ["ab,Cd"], ["a]", "a1", "é"]),
        ("start: DATE\nDATE: /(?<y>[0-9]{4})-(?<m>[0-9]{2})/", ["2024-01"], ["2024-1"]),
    ],
)
def test_lark_terminals_in_the_spellings_its_lexer_reads(
    grammar: str, good: list[str], bad: list[str]
) -> None:
    """lark's lexer reads terminals with the ``regex`` package, which knows POSIX
    classes and ``(?<name>...)``; so does the translation."""
    _assert_agrees(_Compiled(grammar, "lark"), good, bad)


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param(
            '<first> ::= <other>\n<other> ::= "o"', ["o"], ["other"], id="root-is-first-rule"
        ),
        pytest.param(
            '<a> ::= "a"\n<start> ::= <a> <b>', ["a b"], ["a"], id="root-is-start-when-defined"
        ),
        pytest.param("<start> ::= <my word>", ["my word"], ["my"], id="undefined-name-with-space"),
        pytest.param("<start> ::= <Verb>", ["Verb"], ["verb"], id="names-are-case-sensitive"),
        pytest.param(
            r"""<start> ::= "a\"b" 'c\'d' "\\" "\n\t\r" "\u00e9\U0001F600\x41" """,
            ["a\"b c'd \\ \n\t\r éA"[:-1] + "😀A"],
            ["a\"b c'd \\ \n\t\r é😀"],
            id="string-escapes",
        ),
        pytest.param(
            r"<start> ::= [a-c\]\-\^\\x]+", ["ab]-^\\x"], ["d", "[", ""], id="class-escapes"
        ),
        pytest.param(r"<start> ::= [^a-z\n]", ["A", "é", "\t"], ["a", "\n", "AB"], id="negated"),
        pytest.param('<start> ::= "ab"{2}', ["abab"], ["ab", "ababab"], id="exact-count"),
        pytest.param("<start> ::= [0-9]{2,}", ["12", "12345"], ["1"], id="open-count"),
        pytest.param("<start> ::= [0-9]{1,3}", ["1", "123"], ["", "1234"], id="bounded-count"),
        pytest.param("<start> ::= [x]{0}", [""], ["x"], id="zero-count"),
        pytest.param(
            '<start> ::= "a"? "b"*', [" ", "a ", " bbb", "a b"], ["a", "b"], id="optional"
        ),
        pytest.param('<start> ::= ""', [""], [" "], id="empty-string"),
        pytest.param('<start> ::= "a\\u0000b"', ["a\x00b"], ["ab"], id="nul-in-string"),
        pytest.param(
            '<start> ::= <start>"a" | "b"', ["b", "baaa"], ["a", "ab"], id="left-recursion"
        ),
        pytest.param('<start> ::= "("<start>")" | ""', ["", "((()))"], ["(()", ")("], id="nesting"),
    ],
)
def test_bnf_constructs(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar, "bnf"), good, bad)


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param(
            "<s> ::= <subject> <verb>\n<subject> ::= I | you\n<verb> ::= run | 42",
            ["I run", "you 42"],
            ["Irun", "I  run", "subject run"],
            id="bare-words-are-literals",
        ),
        pytest.param(
            "<n> ::= <d> { <d> }\n<d> ::= 0 | 1",
            ["0", "1 0", "1 0 1"],
            ["10", "0 ", "1 01"],
            id="repetition-group-spaced",
        ),
        pytest.param(
            "<n> ::= <d>{<d>}\n<d> ::= 0 | 1", ["0", "10", "101"], ["1 0"], id="repetition-touching"
        ),
        pytest.param(
            "<n> ::= if <c> then <s> [ else <s> ]",
            ["if c then s", "if c then s else s"],
            ["if c then s ", "if c then selse s"],
            id="optional-group-takes-the-space-before",
        ),
        pytest.param(
            '<n> ::= [ "+" | "-" ] [ "~" ] <d>',
            ["+ ~ d", "- d", "~ d", "d"],
            ["+d", " d", "+  d"],
            id="leading-groups-take-the-space-after",
        ),
        pytest.param(
            '<l> ::= "(" [ <i> { "," <i> } ] ")"\n<i> ::= x',
            ["( )", "( x )", "( x , x , x )"],
            ["()", "( x, x )"],
            id="nested-groups",
        ),
        pytest.param('<s> ::= [ \\t]"x"', [" x", "\tx"], ["x"], id="spaced-class-is-a-class"),
        pytest.param('<s> ::= [ a-z]"x"', [" x", "bx"], ["x"], id="class-when-not-a-group"),
        pytest.param("<s> ::= [ -~]+", [" ", "a~ -"], ["", "é"], id="printable-class"),
        pytest.param("<s> ::= [\"']x", ['"x', "'x"], ["x"], id="quote-class"),
        pytest.param(
            '<s> ::= [a-z]+ ; # note\n<t> ::= "T" ;',
            ["abc"],
            ["T", "abc;"],
            id="semicolon-ends-rule",
        ),
        pytest.param(
            '<symbol> ::= "\\" | "]" | "x"',
            ["\\", "]", "x"],
            ['"', "\\x"],
            id="classic-bnf-backslash-is-literal",
        ),
    ],
)
def test_bnf_textbook_readings(grammar: str, good: list[str], bad: list[str]) -> None:
    """BNF pasted from textbooks, Wikipedia and the ALGOL report reads as its authors meant."""
    _assert_agrees(_Compiled(grammar, "bnf"), good, bad)


BNF_ERRORS = [
    ("", "the grammar is empty", 1, 1),
    ("# only a comment", "the grammar is empty", 1, 17),
    ('<start> ::= ("a"', "'(' is never closed", 1, 13),
    ('<start> ::= "a"\n  "b")', "')' has no matching '('", 2, 6),
    ('<start> ::= "abc', "string is not closed", 1, 13),
    ("<start> ::= 'a\n'", "string is not closed", 1, 13),
    ("<start> ::= [a-z", "character class is not closed", 1, 13),
    ("<start> ::= [z-a]", "character range is out of order", 1, 14),
    ('<start> ::= "\\q"', "unsupported escape '\\\\q'", 1, 14),
    ('<start> ::= "\\u12"', "needs exactly 4 hex digits", 1, 14),
    ('<start> ::= "\\ud800"', "surrogate", 1, 14),
    ('<start> ::= "a" |', "expected something to match after '|'", 1, 18),
    ('<start> ::= | "a"', "expected something to match after '::='", 1, 13),
    ("<start> ::=", "expected something to match after '::='", 1, 12),
    ('<start> ::= "a"\n<start> ::= "b"', "rule <start> is defined twice (first at line 1)", 2, 1),
    ('<start> := "a"', "expected '::=' after <start>", 1, 9),
    ('start ::= "a"', "expected a rule (<name> ::= ...)", 1, 1),
    ('<start> ::= "a" ]', "unexpected ']'", 1, 17),
    ('<start> ::= "a" *', "'*' must directly follow the symbol it repeats", 1, 17),
    ("<start> ::= *", "'*' must directly follow", 1, 13),
    ('<start> ::= "a"{3,1}', "bounds reversed", 1, 16),
    (f'<start> ::= "a"{{{MAX_REPEAT + 1}}}', "above MAX_REPEAT", 1, 16),
    ('<start> ::= "a"{,2}', "expected a number", 1, 17),
    ('<start> ::= "a" {2}', "'{' must directly follow the symbol it repeats", 1, 17),
    ('<start> ::= [ "a" ', "'[' is never closed", 1, 13),
    ('<start> ::= { "a" ', "'{' is never closed", 1, 13),
    ('<start> ::= "a" }', "unexpected '}'", 1, 17),
    ("<start> ::= {}", 'empty group "{}"', 1, 13),
    ("<start> ::= ()", "empty group", 1, 13),
    ("<start> ::= []", "matches no character", 1, 13),
    ('<start> ::= <start> "x"', "rule <start> matches no text", 1, 1),
    ("<start> ::= /* never closed", "comment '/*' is never closed", 1, 13),
    ("<start> ::= <a", "'<' does not start a name", 1, 13),
    ('<start> ::= "é" )', "')' has no matching '('", 1, 17),
]


@pytest.mark.parametrize(("grammar", "message", "line", "column"), BNF_ERRORS)
def test_bnf_errors_are_located(grammar: str, message: str, line: int, column: int) -> None:
    err = _error(grammar, "bnf")
    assert message in err.message
    assert (err.line, err.column) == (line, column), err.describe()


# ---------------------------------------------------------------------------
# GBNF / xgrammar EBNF


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param(
            'root ::= "a" . "b"', ["axb", "a\nb", "a😀b"], ["ab", "axxb"], id="dot-is-any-character"
        ),
        pytest.param(
            'root ::= "\\x41b" [\\x61-\\x62]', ["Aba"], ["\u041ba"], id="hex-is-two-digits"
        ),
        pytest.param(
            'root ::= "a" ws\nws ::= | " " | "\\n"',
            ["a", "a ", "a\n"],
            ["a  "],
            id="empty-alternative",
        ),
        pytest.param('root ::= ("x" | ) "y"', ["xy", "y"], ["x"], id="empty-alternative-in-group"),
        pytest.param('root ::= "a" *  "b" +', ["b", "aab"], ["a"], id="spaced-quantifiers"),
        pytest.param('root ::= "a"{2, 3}', ["aa", "aaa"], ["a"], id="spaced-count"),
        pytest.param("root ::= ()", [""], ["a"], id="empty-group"),
        pytest.param("root ::= [^]", ["\n", "x"], ["", "xy"], id="any-class"),
        pytest.param('root ::= [] | "a"', ["a"], [""], id="empty-class"),
        pytest.param(
            "root ::= [\\^^a] [-a-]", ["^-", "aa"], ["b-"], id="carets-and-dashes-in-classes"
        ),
        pytest.param('root ::= my-rule\nmy-rule ::= "x"', ["x"], [], id="dashed-names"),
        pytest.param(
            'root ::= <think> [a-z]* </think> "x" <|im_end|>',
            ["<think>ab</think>x<|im_end|>"],
            ["<think>ab</think>x", "think ab x"],
            id="tokens-as-their-text",
        ),
    ],
)
def test_gbnf_constructs(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar, "gbnf"), good, bad)


def test_gbnf_tokens_become_special_token_rules_the_decoder_resolves() -> None:
    constraint = compile_grammar('root ::= <think> "a" <think>', "gbnf")
    rule = "special.token.3c7468696e6b3e"
    assert constraint.value == f'root ::= {rule} "a" {rule}\n{rule} ::= "<think>"\n'


def test_gbnf_passes_through_except_llama_cpp_spellings() -> None:
    text = 'root ::= "a" . "\\x41"  # kept\n  | item+\nitem ::= [a-z] |\n'
    constraint = compile_grammar(text, "gbnf")
    assert constraint.value == (
        'root ::= "a" [\\u0000-\\U0010FFFF] "\\u0041"  # kept\n  | item+\nitem ::= [a-z] |""\n'
    )
    assert compile_grammar(text, "ebnf").source_language == "ebnf"


def test_xgrammar_lookahead_assertions_are_hints_the_judge_reads_as_nothing() -> None:
    """xgrammar's ``(= ...)`` ends a rule and steers its matcher without holding
    the rule to it, so the text after ``a`` may still be ``c``; the judge reads
    the grammar without it and agrees with xgrammar."""
    text = 'root ::= a "b" | a "c" | "x" tail\na ::= "a" | "aa" (= "b")\ntail ::= [0-9]+ (= [a-z])'
    compiled = _Compiled(text, "ebnf")
    assert '(= "b")' in compiled.constraint.value  # handed to xgrammar as written
    _assert_agrees(compiled, ["ab", "aab", "ac", "aac", "x12"], ["a", "abc", "x", "xa"])


GBNF_ERRORS = [
    ("root ::= x", "rule 'x' is not defined", 1, 10),
    ('foo ::= "a"', "a GBNF grammar starts at a rule named root", 1, 1),
    ('root ::= "a"\nroot ::= "b"', "rule 'root' is defined twice", 2, 1),
    ('root ::= Regex("a")', "Regex(...) macro is not supported", 1, 10),
    ('root ::= ("a" (= "b")) "b"', "xgrammar: Expect )", 1, 15),
    ('root ::= "a" (= "b"', "'(=' is never closed", 1, 14),
    ("root ::= 'a'", "double quotes", 1, 10),
    ('root ::= "a\\x00"', "NUL character", 1, 10),
    ('root ::= ("a"', "'(' is never closed", 1, 10),
    ('root ::= "a"{,2}', "expected a number", 1, 14),
    ("root ::= 1", "unexpected '1'", 1, 10),
    ('root ::= <[1000]> "x"', "a token given by id (<[1000]>) is not supported", 1, 10),
    ('root ::= "a" !<think>', "a negated token (!<...>) is not supported", 1, 14),
    ('root ::= <think "x"', "needs its closing '>'", 1, 10),
    ('root ::= < x> "x"', "'< x>' is not a token", 1, 10),
    ('root ::= root "a"', "rule 'root' matches no text", 1, 1),
    (
        'root ::= "a" c ::= "b"',
        "xgrammar: The rule name should be at the beginning of the line",
        1,
        14,
    ),
    ('root ::= . "é" x ::= "b"', "xgrammar: The rule name should be at the beginning", 1, 16),
    ('root ::= "é" x ::= "b"', "xgrammar: The rule name should be at the beginning", 1, 14),
]


@pytest.mark.parametrize(("grammar", "message", "line", "column"), GBNF_ERRORS)
def test_gbnf_errors_are_located(grammar: str, message: str, line: int, column: int) -> None:
    err = _error(grammar, "gbnf")
    assert message in err.message
    assert (err.line, err.column) == (line, column), err.describe()


# ---------------------------------------------------------------------------
# Lark


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param(
            'start: "a" "b"\n%ignore " "',
            ["ab", " a  b ", "a b"],
            ["a-b"],
            id="ignore-between-tokens",
        ),
        pytest.param('start: "ab"\n%ignore " "', ["ab", " ab "], ["a b"], id="ignore-not-inside"),
        pytest.param(
            'start: "a" " b"\n%ignore " "',
            ["a b", "a  b", " a b "],
            ["a ", "ab"],
            id="ignore-literal",
        ),
        pytest.param(
            'start: WORD ("," WORD)*\n%import common.WORD\n%import common.WS\n%ignore WS',
            ["a", " a ,\nb", "a,b,c"],
            ["a,", "a b", "1"],
            id="common-word-ws",
        ),
        pytest.param(
            'start: "select"i "x"', ["SELECTx", "sElEcTx"], ["selectX", "\u017felectx"], id="i-flag"
        ),
        pytest.param(
            'start: NAME "," WORD\nNAME: /[a-z_][a-z0-9_]*/i\nWORD: /(?i:ok|no)/',
            ["Ab_9,OK", "z,nO"],
            ["9a,ok", "a,ko", "\u212a,ok"],
            id="regex-i-flag",
        ),
        pytest.param("start: /[0-9]+/ /\\w+/", ["12ab_9"], ["12٣", "12é"], id="ascii-classes"),
        pytest.param(
            'start: x | y\nx.2: "q"\ny: "q" "r"?', ["q", "qr"], ["r"], id="rule-priority-ignored"
        ),
        pytest.param('start: A | B\nA.3: "x"\nB: "x"', ["x"], [""], id="terminal-priority-ignored"),
        pytest.param(
            '?start: pair+\n!pair: NAME "=" NAME -> kv\nNAME: "a".."c"',
            ["a=b", "a=bc=a"],
            ["a=d"],
            id="inline-keep-alias-range",
        ),
        pytest.param(
            'start: _list{"a", ","}\n_list{item, sep}: item (sep item)*',
            ["a", "a,a,a"],
            ["a,"],
            id="template",
        ),
        pytest.param('start: ("a" ~ 2) ("b" ~ 1..2)', ["aab", "aabb"], ["ab", "aabbb"], id="tilde"),
        pytest.param('start: [x] "b"\nx: "a"', ["ab", "b"], ["a"], id="maybe"),
        pytest.param("start: /a.b/s", ["a\nb", "axb"], ["ab"], id="dotall-flag"),
        pytest.param("start: /a b # c\n/x", ["ab"], ["a b"], id="verbose-flag"),
        pytest.param('start: "a"\n%override start: "b"', ["b"], ["a"], id="override"),
        pytest.param(
            "start: ESCAPED_STRING\n%import common.ESCAPED_STRING",
            ['""', '"a\\"b"', '"\\\\"'],
            ['"\\"', '"a"b"', '"\n"'],
            id="escaped-string",
        ),
        pytest.param(  # inside a terminal built of others: lark joins their regexes
            "start: VALUE\nVALUE: SIGNED_NUMBER | ESCAPED_STRING\n"
            "%import common.SIGNED_NUMBER\n%import common.ESCAPED_STRING",
            ['"a\\"b"', "-1.5", '""'],
            ['"a"b"', "1 2", '"\n"'],
            id="escaped-string-in-a-terminal",
        ),
        pytest.param(  # (lark's regex would also let the first run on to '"a"x":"b"',
            # where llguidance's lexer ends it at its first quote: never generated)
            'start: PAIR\nPAIR: ESCAPED_STRING ":" ESCAPED_STRING\n%import common.ESCAPED_STRING',
            ['"a":"b"', '"\\"":""'],
            ['"a":"b', '"a":b"'],
            id="escaped-strings-joined",
        ),
        pytest.param(
            'start: "a"+\n%ignore C_COMMENT\n%import common.C_COMMENT',
            ["a/**/a", "/* x */a/*a*/", "a/* */a"],
            ["a/* */ */a", "a/*"],
            id="ignored-c-comment",
        ),
        pytest.param(
            "start: C_COMMENT\n%import common.C_COMMENT",
            ["/**/", "/* a * / */", "/***/"],
            ["/* */ */", "/*/"],
            id="c-comment",
        ),
    ],
)
def test_lark_constructs(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar, "lark"), good, bad)


_LINE_COMMENTS = [
    'start: "a" "b"\nCOMMENT: /#[^\\n]*/\n%ignore COMMENT',
    'start: "a" " b"\n%ignore WS\n%import common.WS',
    'start: "a"+\nCOMMENT: /#[^\\n]*/\n%ignore COMMENT\n%ignore WS\n%import common.WS',
    'start: stmt+\nstmt: "let" NAME "=" INT ";"\nCOMMENT: /\\/\\/[^\\n]*/\n'
    "%import common.CNAME -> NAME\n%import common.INT\n%import common.WS\n"
    "%ignore WS\n%ignore COMMENT",
    'start: (line _NL)* line?\nline: KEY "=" VALUE\nKEY: /[a-z]+/\nVALUE: /[0-9]+/\n'
    "HASH: /#[^\\n]*/\nSLASH: /\\/\\/[^\\n]*/\n_NL: /\\n/\n%import common.WS_INLINE\n"
    "%ignore WS_INLINE\n%ignore HASH\n%ignore SLASH",
]


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param(_LINE_COMMENTS[0], ["ab", "ab#x", "ab#"], ["a#xb", "a#\nb", "#x\nab"]),
        pytest.param(_LINE_COMMENTS[1], ["a b", " a b", "a b\n"], ["a  b", "a\n b", "ab"]),
        pytest.param(
            _LINE_COMMENTS[2],
            ["a#x\na", "a #x\n a#y", "a#x \na", "a#x\n#y\n\ta", "a#xa"],
            ["#x\n", "a#x\nb"],
        ),
        pytest.param(
            _LINE_COMMENTS[4],
            ["a=1 # one\nb=2 // two\n// three", "a=1#x\n"],
            ["a=1 # x\nb", "a=1 b=2", "a=1 // x\nb"],
        ),
    ],
)
def test_lark_ignored_line_comments(grammar: str, good: list[str], bad: list[str]) -> None:
    """An ignored token that the next one could continue (a line comment before
    a name) ends only where Lark's longest match ends it: before a newline or
    at the end of the text."""
    _assert_agrees(_Compiled(grammar, "lark"), good, bad)


@pytest.mark.parametrize(
    ("grammar", "letters"),
    [
        ("start: /[a ]/\n%ignore / +/", "a "),
        ("start: /[^a]/ /[a ]/ ~ 2\n%ignore / +/", "a b"),
        ('start: X+\nX: /[ab ]b?/\n%ignore " "', "ab "),
        ('start: "a" (X | "b")\nX: / ?a/\n%ignore / a*/', "ab "),
        ('start: X "b"\nX: /#?[a#]/\nC: /#[a]*/\n%ignore C', "a#b"),
    ],
)
def test_lark_ignored_run_before_a_token_that_may_continue_it(grammar: str, letters: str) -> None:
    """A token whose first character may continue an ignored one (``/[a ]/``
    after ``%ignore / +/``) still follows ignored text where it starts with
    another (``" a"``): every text of up to 5 of the letters is judged alike by
    Lark and xgrammar (found by ``bench.grammar_fuzz``)."""
    compiled = _Compiled(grammar, "lark")
    accepted = 0
    for length in range(6):
        for text in map("".join, itertools.product(letters, repeat=length)):
            judged, written = compiled.verdicts(text)
            assert judged == written, (text, compiled.constraint.value)
            accepted += judged
    assert accepted > 0


@pytest.mark.parametrize(
    ("grammar", "grammar_format", "cycle"),
    [
        ("root ::= r0\nr0 ::= r0{0,2}", "gbnf", "rule r0 is only itself"),
        ("root ::= root{0,}", "gbnf", "rule root is only itself"),
        ("root ::= r{0,2}\nr ::= (root)", "gbnf", "rules root -> r -> root"),
        ('root ::= "x" r\nr ::= r{0,3}', "gbnf", "rule r is only itself"),
        ('root ::= "x" r\nr ::= "" r{0,2}', "gbnf", "rule r is only itself"),
        ('root ::= "x" r\nr ::= ("") r{0,0}', "gbnf", "rule r is only itself"),
        ('a = "x", b ;\nb = { c } ;\nc = b ;', "iso-ebnf", "rules b -> c -> b"),
        ('a = "x", b ;\nb = [ b ] ;', "iso-ebnf", "rule b is only itself"),
        ('a = "x" b\nb = 0*3b', "abnf", "rule b is only itself"),
        ("a ::= 'x' b\nb ::= b*", "w3c-ebnf", "rule b is only itself"),
        ('start: "x" r\nr: r', "lark", "rule r is only itself"),
    ],
)
def test_rules_that_only_repeat_one_another_are_refused(
    grammar: str, grammar_format: str, cycle: str
) -> None:
    """``r ::= r{0,2}`` matches the empty text at most; xgrammar 0.2.8 crashes the
    process (a segmentation fault) compiling it, which would take the decoder
    down, so it is refused at validation."""
    error = _error(grammar, grammar_format)
    assert cycle in error.message and "the empty text at most" in error.message


_WALK_VOCABULARY = [*"abeklmnotxyz019 \t\n/#=;", "let", "//", "\n  ", "<end>"]


@pytest.mark.parametrize("grammar", _LINE_COMMENTS)
def test_lark_ignored_line_comments_walked_through_xgrammar(grammar: str) -> None:
    """Every text xgrammar lets the model write is one Lark accepts, and comments
    followed by more tokens are among them."""
    compiled = _Compiled(grammar, "lark")
    vocabulary = xgr.TokenizerInfo(
        _WALK_VOCABULARY, xgr.VocabType.RAW, stop_token_ids=[len(_WALK_VOCABULARY) - 1]
    )
    matcher_grammar = xgr.GrammarCompiler(vocabulary).compile_grammar(compiled.constraint.value)
    rng = random.Random(7)
    finished = []
    for _ in range(150):
        text = _walk(matcher_grammar, vocabulary.vocab_size, rng)
        if text is not None:
            assert compiled.constraint.judge(text) is None, text
            finished.append(text)
    assert len(finished) >= 10
    if "[^\\n]*" in grammar and "WS" in grammar:  # a comment, then a newline, then a token
        assert any(re.search(r"(#|//)[^\n]*\n\s*[^\s#/]", text) for text in finished)


def _walk(grammar: xgr.CompiledGrammar, vocab_size: int, rng: random.Random) -> str | None:
    matcher = xgr.GrammarMatcher(grammar)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    pieces = []
    end = len(_WALK_VOCABULARY) - 1
    for _ in range(60):
        matcher.fill_next_token_bitmask(bitmask)
        bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        allowed = [int(t) for t in np.flatnonzero(bits[: len(_WALK_VOCABULARY)])]
        choices = [t for t in allowed if t != end]
        if end in allowed and (not choices or rng.random() < 0.1):
            return "".join(pieces)
        assert choices, f"xgrammar is stuck after {''.join(pieces)!r}"
        token = rng.choice(choices)
        assert matcher.accept_token(token)
        pieces.append(_WALK_VOCABULARY[token])
    return None


_CITY = '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param('start: "ab"{2}', ["abab"], ["ab", "ababab"], id="count"),
        pytest.param('start: "a"{2,}', ["aa", "aaaa"], ["a"], id="open-count"),
        pytest.param('start: "a"{,2} "b"', ["b", "aab"], ["aaab"], id="count-up-to"),
        pytest.param(
            'start: x{1,3}\nx: "a" | "b" "c"', ["a", "bca", "aaa"], ["", "aaaa"], id="rule-count"
        ),
        pytest.param(
            'start: (x "," ){2,} x\nx: "a"', ["a,a,a", "a,a,a,a"], ["a,a"], id="group-open-count"
        ),
        pytest.param(
            "start: D\nD: /[0-9]/{2,3}", ["12", "123"], ["1", "1234"], id="terminal-count"
        ),
        pytest.param('start: "a" ("" | "b")', ["a", "ab"], ["b"], id="empty-string"),
        pytest.param('start: EMPTY "a"\nEMPTY: ""', ["a"], [" a"], id="empty-terminal"),
        pytest.param('start: A\nA: "x" ("" | "y")', ["x", "xy"], ["y"], id="empty-in-terminal"),
        pytest.param(
            'start: "<" TEXT ">"\nTEXT: /[a-z]*/', ["<>", "<ab>"], ["<A>", "<"], id="nullable"
        ),
        pytest.param(
            'start: TEXT ("," TEXT)*\nTEXT: /[a-z]*/', ["", ",", "a,,b"], ["A"], id="nullable-list"
        ),
        pytest.param(
            'start: "a" "b"\n%ignore /[ ]*/', ["ab", " a  b "], ["a-b"], id="nullable-ignored"
        ),
        pytest.param(
            'start: /<t>(.|\\n)*?<\\/t>/ "!"',
            ["<t></t>!", "<t>a\n<t></t>!", "<t>a</b></t>!"],
            ["<t>a</t>b</t>!", "<t>a</t>", "<t></t></t>!"],
            id="lazy",
        ),
        pytest.param(
            "start: BLOCK+\nBLOCK: /\\/\\*(.|\\n)*?\\*\\//",
            ["/**/", "/* a *//**/", "/* * / */"],
            ["/* */ */", "/*/"],
            id="lazy-repeated",
        ),
        pytest.param(
            'start: "a" ITEM+\nITEM: /[ab]*?b;/',
            ["ab;", "aaab;b;", "abb;ab;"],
            ["ab;;", "a;", "aab;a"],
            id="lazy-class",
        ),
        pytest.param(
            'start: WORDS "."\nWORDS: /(.|\\n){1,5}?;/',
            ["a;.", ";;.", "abcde;."],
            ["abcdef;.", ";.", "a;b;."],
            id="lazy-bounded",
        ),
        pytest.param(
            'start: think "!"\nthink[lazy]: "<t>" TEXT "</t>"\nTEXT: /(.|\\n)*/',
            ["<t></t>!", "<t>a\n<t></t>!"],
            ["<t>a</t>b</t>!", "<t>a</t>"],
            id="lazy-rule",
        ),
        pytest.param(
            'start: think "!"\nthink[capture, suffix="</t>"]: /[a-z<>\\/]*/',
            ["</t>!", "ab<</t>!"],
            ["a</t></t>!", "a!"],
            id="suffix-rule",
        ),
        pytest.param(
            'start: digit "."\ndigit[lazy]: /[0-9]+/', ["1."], ["12.", "."], id="lazy-rule-shortest"
        ),
        pytest.param(
            'start: NAME ("," NAME)*\nNAME: /[a-z]+/ & ~KEYWORD\nKEYWORD: /if|else/',
            ["a,elsewhere", "i,iff"],
            ["if", "a,else"],
            id="and-not",
        ),
        pytest.param(
            "start: LINES\nLINES: /[a-z \\n]*/ & ~/(?s:.*)\\n\\n(?s:.*)/  // no empty line",
            ["a\nb c\n", ""],
            ["a\n\nb", "\n\n"],
            id="and-not-lines",
        ),
        pytest.param(
            'start: a+\na[capture="x", stop_capture="y"]: "a" | "b"',
            ["a", "ba"],
            ["c"],
            id="captures",
        ),
        pytest.param(
            'start: tool-call ("," tool-call)*\ntool-call: "t" NUM-X\nNUM-X: /[0-9]/',
            ["t1", "t1,t2"],
            ["t", "t12"],
            id="dashed-names",
        ),
        pytest.param(
            'start: <think> /[a-z ]*/ </think> "."',
            ["<think>a b</think>.", "<think></think>."],
            ["<think>a</think>", "think."],
            id="special-tokens-as-their-text",
        ),
        pytest.param(
            f'start: "call " %json {_CITY} "\\n"',
            ['call {"city": "Paris"}\n'],
            ['call {"city": 1}\n', "call {}\n", 'call {"city": "Paris"}'],
            id="json",
        ),
        pytest.param(
            'start: a | b\na: %json {"type": "integer"}\nb: %json {"type": "string"}',
            ["1", '"x"', "-20"],
            ["1.5", "x", "true"],
            id="json-alternatives",
        ),
        pytest.param(
            f'start: "[" %json {_CITY} ("," %json {_CITY})* "]"\n%ignore " "',
            ['[{"city": "a"}]', '[ {"city": "a"} , {"city": "b"} ]'],
            ['[{"city": "a"},]', '[{"town": "a"}]'],
            id="json-repeated-ignore",
        ),
        pytest.param(
            '%llguidance {"no_forcing": true}\n// a comment\n# another\nstart: "a"  # trailing',
            ["a"],
            ["b"],
            id="options-and-comments",
        ),
    ],
)
def test_llguidance_dialect_constructs(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar, "lark"), good, bad)


def test_json_spans_are_checked_in_some_parse_that_satisfies_them() -> None:
    """Digits can be split between TEXT and the JSON integer in many ways; the
    text passes when one split passes the schema."""
    grammar = 'start: TEXT %json {"type": "integer", "maximum": 5}\nTEXT: /[0-9]*/'
    compiled = _Compiled(grammar, "lark")
    _assert_agrees(compiled, ["123", "5", "99990"], ["66", "x1"])
    assert "does not match its schema" in compiled.constraint.judge("66")


def test_json_in_another_layout_passes_the_judge_not_the_grammar() -> None:
    compiled = _Compiled(f"start: %json {_CITY}", "lark")
    assert compiled.verdicts('{"city":"x"}') == (True, False)
    assert compiled.verdicts('{"city": "x"}') == (True, True)


def test_lazy_terminals_match_lark_on_every_short_text() -> None:
    """The automaton of the shortest match agrees with Lark's lexer (Python's ``re``)."""
    alphabet = "ab<>/\n"
    for regex in (r"(.|\n)*?</a>", r"<a>(.|\n)*?</a>", r"[ab<]*?a<", r"a.{1,4}?<>", r"b+?a"):
        escaped = regex.replace("/", "\\/")
        _assert_same_verdicts(_Compiled(f"start: /{escaped}/", "lark"), alphabet, 6)


@pytest.mark.parametrize(
    "rule",
    [
        'text[lazy]: "<" /(.|\\n)*/ "/>"',
        'text[suffix="/>"]: /[ab<\\/]*/',
        'text[lazy, suffix=END]: /[ab]{1,3}/\nEND: "<"',
        "text[lazy]: /a[ab]*b/",
    ],
)
def test_lazy_rules_match_lark_on_every_short_text(rule: str) -> None:
    """A lazy rule ends at the first place it can, as llguidance reads it; its
    grammar and the judge agree on every short text, with text after it."""
    _assert_same_verdicts(_Compiled(f'start: text text? ">"\n{rule}', "lark"), "ab<>/\n", 6)


@pytest.mark.parametrize(
    "definition",
    [
        "X: ~/a+/",
        "X: /[ab]+/ & ~/(.*)bb(.*)/",
        'X: (/[ab]{1,2}/ | "ba") & ~"ab"',
        "X: ~(/a/ | /b+/) & /[ab]{0,3}/",
    ],
)
def test_terminals_with_and_not_match_lark_on_every_short_text(definition: str) -> None:
    """The judge takes the written regex's longest match and every shorter one,
    so it agrees with the grammar on every text, the terminal repeated too."""
    _assert_same_verdicts(_Compiled(f'start: X+ "!"?\n{definition}', "lark"), "ab!", 6)


@pytest.mark.parametrize(
    ("definition", "means"),
    [
        ("/[a-z]+/ & ~/if|else/", lambda t: re.fullmatch("[a-z]+", t) and t not in ("if", "else")),
        ("~/(.*)ab(.*)/", lambda t: "ab" not in t),
        (
            "/[ab]*/ & ~/(.*)a/ | /a{3}/",
            lambda t: (re.fullmatch("[ab]*", t) and t[-1:] != "a") or t == "aaa",
        ),
        ('~("a" | /b*/)', lambda t: t != "a" and not re.fullmatch("b*", t)),
    ],
)
def test_and_not_regex_means_what_its_operands_say(definition: str, means) -> None:
    """Checked against the operands read by Python's ``re``, not by the automata."""
    pattern = re.compile(combined_regex(definition, _operand))
    for text in _strings("abefil", 4):
        assert bool(pattern.fullmatch(text)) == bool(means(text)), (definition, text)


def _operand(word: str, _offset: int) -> str:
    return word[1:-1] if word[0] == "/" else re.escape(word[1:-1])


def _assert_same_verdicts(compiled: _Compiled, alphabet: str, longest: int) -> None:
    """The judge and xgrammar agree on every text of up to ``longest`` characters."""
    for text in _strings(alphabet, longest):
        judge, xgrammar = compiled.verdicts(text)
        assert judge == xgrammar, (compiled.text, text)


def _strings(alphabet: str, longest: int) -> list[str]:
    return [
        "".join(chars)
        for length in range(longest + 1)
        for chars in itertools.product(alphabet, repeat=length)
    ]


@pytest.mark.parametrize(
    ("terminal", "alphabet", "longest"),
    [("ESCAPED_STRING", '"\\a\n', 5), ("C_COMMENT", "/*a\n", 6)],
)
def test_replaced_common_terminals_match_lark_exactly(
    terminal: str, alphabet: str, longest: int
) -> None:
    """Lark's lazy/lookbehind terminals and their replacements agree on every short text."""
    compiled = _Compiled(f"start: {terminal}\n%import common.{terminal}", "lark")
    _assert_same_verdicts(compiled, alphabet, longest)


@pytest.mark.parametrize(
    ("terminal", "alphabet"),
    [
        ("/a|ab/", "ab,"),
        ("/\\d+|\\d+\\.\\d+/", "1.,"),
        ("/(a|ab)(c|bcd)?/", "abcd,"),
        ("/x*|x+y/", "xy,"),
    ],
)
def test_terminals_whose_first_alternative_is_shorter_are_judged_at_every_length(
    terminal: str, alphabet: str
) -> None:
    """The judge takes a terminal's longest match first, then every shorter one,
    as the grammar reads it; Python's first match alone would never take the
    second alternative of /a|ab/ (nor "1.5" from /\\d+|\\d+\\.\\d+/)."""
    _assert_same_verdicts(_Compiled(f'start: T ("," T)*\nT: {terminal}', "lark"), alphabet, 5)


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        ('start: NAME (" " NAME)*\nNAME: /(?!\\d)\\w+/', "a1 b", "1a"),
        ('start: WORD ("," WORD)*\nWORD: /[a-z_]+(?<!_)/', "a_b,c", "ab_"),
    ],
)
def test_lark_lookarounds_that_stay_inside_the_token_agree_with_lark(
    grammar: str, good: str, bad: str
) -> None:
    """A lookaround no longer than the terminal's text beside it looks at what
    the lexer's does; Lark and xgrammar agree on every short text."""
    compiled = _Compiled(grammar, "lark")
    _assert_same_verdicts(compiled, "a1_ ,", 4)
    assert compiled.verdicts(good) == (True, True) and compiled.verdicts(bad) == (False, False)


LARK_ERRORS = [
    ("start: a", "Rule 'a' used but not defined", 1, 8),
    ('start: ("a"', "'(' is not closed", 1, 12),
    ('start: "a" "', "unexpected character '\"'", 1, 12),
    ('start: "a"\nstart: "b"', "defined more than once", 2, 1),
    ('%import foo.bar\nstart: "a"', "only names from lark's common library", 1, 9),
    ('%import .common.WS\nstart: "a"', "only names from lark's common library", 1, 10),
    ("start: A\n%declare A", "%declare is not supported", 2, 10),
    ("start: /a/u", "regex flag 'u' (unicode) is not supported", 1, 8),
    ("start x", "expected ':' after the rule or terminal name", 1, 7),
    ("start: /(ab|a)*?b/", "lazy quantifier on more than one character", 1, 8),
    ("start: /a*?b+/", "variable length next to the lazy quantifier", 1, 8),
    ("start: /a*?b*?/", "several lazy quantifiers", 1, 8),
    ("start: T\nT: /(.|\\n){0,40}?<\\/think>/", "more than 128 automaton states", 2, 4),
    ("start: /^a/", "an anchor", 1, 8),
    ("start: A\nA: /\\bx/", "uses an anchor (^, $, \\A, \\Z, \\b, \\B)", 2, 4),
    ("start: /a(?=b)/", "lookahead (?=...) that can reach past the token", 1, 8),
    ("start: NAME\nNAME: /(?!let)[a-z]+/", "negative lookahead", 2, 7),
    ("start: X\nX: /(a(?=b))b/", "lookahead (?=...) that can reach past the token", 2, 4),
    ("start: X\nX: /x(\\bword)?/", "uses an anchor", 2, 4),
    ("start: /a(/", "invalid regex", 1, 8),
    ("start: A\nA: /(a)\\1|/", "can match the empty string and uses a backreference", 2, 1),
    ('main: "a"', "no rule named 'start'", 1, 1),
    # llguidance's dialect
    ("start: <[128010]>", "given by id", 1, 8),
    ('start: A\nA: "a" <think>', "only be used in rules", 2, 8),
    ('start: A\nA: %json {"type": "object"}', "only be used in rules", 2, 4),
    ('start: "a"\n  | %json {"type": "strin"}', "inline JSON schema (%json): invalid", 2, 5),
    ('start: %json {"type": "string"', "must be followed by a JSON object", 1, 31),
    ('start: %json {"type": "array", "uniqueItems": true, "minItems": 2}', "uniqueItems", 1, 8),
    ('start: "a"{3,1}', "maximum below its minimum", 1, 11),
    ('start: "a"{,}', "a count needs a number", 1, 11),
    ('start: my-rule\nmy-rule: "a"\nmy_rule: "b"', "both used", 1, 8),
    ('%llguidance {"allow_invalid_utf8": true}\nstart: "a"', "allow_invalid_utf8", 1, 1),
    ('%llguidance {"lenient": true}\nstart: "a"', "option 'lenient' is not supported", 1, 1),
    ('start: "a" @json', "references to other grammars", 1, 12),
    ("start: " + "%json {} " * 33, "too many inline JSON schemas", 1, 8 + 32 * 9),
    ("start: A\nA: /" + "a?" * 200 + "/", "too many optional parts", 2, 1),
    ("start: " + " ".join(f"<t{i}>" for i in range(600)), "too many rules and terminals", 1, 3391),
    ('start: gen\ngen[stop="\\n"]: /.*/', "rule option stop= is not supported", 2, 5),
    ("start: gen\ngen[max_tokens=5]: /.*/", "max_tokens= is not supported", 2, 5),
    ("start: gen\ngen[lazy, capture, slow]: /.*/", "rule option 'slow' is not supported", 2, 20),
    ("start: gen\ngen[lazy]: /a*b+/", "may repeat only one part", 2, 1),
    ("start: gen\ngen[lazy]: /(ab|a)*c/", "lazy quantifier on more than one character", 2, 1),
    ("start: gen\ngen[lazy]: TEXT\nTEXT: /a/ | /b/", "TEXT in a lazy rule must be", 2, 12),
    ('start: gen\ngen[lazy]: "a"\n  | "b"', "one line with no alternatives", 3, 1),
    ('start: T\nT[lazy]: "a"', "options on terminals", 2, 2),
    ("start: X\nX: /a/ & /b/", "the terminal matches no text", 2, 3),
    ("start: X\nX: " + "~" * 40 + "/a/", "nests parentheses and ~ more than 32 deep", 2, 37),
    ("start: X\nX: " + "(" * 40 + "/a/" + ")" * 40 + " & ~/b/", "more than 32 deep", 2, 37),
    ("start: X\nX: /a/ /b/ & /ab/", "joined by &, | and ~ only", 2, 8),
    ("start: X\nX: /[a-z]+/ & ~KW\nKW: /if/ | /else/", "KW in a terminal with & or ~", 2, 16),
    ("start: X\nX: /a+/ & ~/b/i", "regex flags 'i' in a terminal with & or ~", 2, 12),
    (
        'start: %json {"type": "object"}\n  | "x" missing',
        "Rule 'missing' used but not defined",
        2,
        9,
    ),
    ('start: %json {\n  "type": "object"\n} "x" missing', "used but not defined", 3, 7),
]


@pytest.mark.parametrize(("grammar", "message", "line", "column"), LARK_ERRORS)
def test_lark_errors_are_located(grammar: str, message: str, line: int, column: int) -> None:
    err = _error(grammar, "lark")
    assert message in err.message
    assert (err.line, err.column) == (line, column), err.describe()


def test_lark_start_rule_can_be_chosen() -> None:
    constraint = compile_grammar('main: "a" other\nother: "b"', "lark", start="main")
    assert constraint.judge("ab") is None
    assert constraint.judge("b") is not None


# ---------------------------------------------------------------------------
# Detection


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<start> ::= <a>", "bnf"),
        ("# comment\n\n  <my rule> ::= 'x'", "bnf"),
        ('root ::= "a"', "gbnf"),
        ('# root comes later\nvalue ::= "a"\nroot ::= value', "gbnf"),
        ('start: "a"', "lark"),
        ('// comment\n?start: x\nx: "a"', "lark"),
        ('%import common.WS\nstart: "a"', "lark"),
        ('TERM.2: "a"\nstart: TERM', "lark"),
        ('(* ISO *)\ndigit = "0" | "1" ;', "iso-ebnf"),
        ("letter or digit = letter | digit ;", "iso-ebnf"),
        ('expression = term { "+" term } .', "iso-ebnf"),
        ('"a"', None),
    ],
)
def test_detection(text: str, expected: str | None) -> None:
    assert detect_format(text) == expected


def test_auto_mode_compiles_each_format() -> None:
    assert compile_grammar("<start> ::= <a>").source_language == "bnf"
    assert compile_grammar('root ::= "a"').source_language == "gbnf"
    assert compile_grammar('start: "a"').source_language == "lark"
    assert compile_grammar('digit = "0" | "1" ;').source_language == "iso-ebnf"
    assert compile_grammar("S ::= 'a' #x62").source_language == "w3c-ebnf"
    # a GBNF grammar without a W3C sign keeps GBNF's complaint about its root
    assert "root" in _error('value ::= "a"').message


@pytest.mark.parametrize(
    ("grammar", "grammar_format", "good", "bad"),
    [
        ('a = "x", [ "y" ], { "z" } ;', "iso-ebnf", ["x", "xy", "xzz", "xyz"], ["", "xyy", "y"]),
        ('a = "x" | "y" / "z" ! "w" ;', "iso-ebnf", ["x", "y", "z", "w"], ["xy"]),
        ("a = 2 * 'ab', (/ 'c' /), (: 'd' :) ;", "iso-ebnf", ["abab", "ababcdd"], ["ab"]),
        (
            'a = "q", { letter - "q" }, "q" ; letter = "a" | "b" | "q" ;',
            "iso-ebnf",
            ["qq", "qabq"],
            ["qqq", "qab"],
        ),
        ('a = b c . b = "1" . c = "2"? .', "iso-ebnf", ["1", "12"], ["1 2", "2"]),
        ('a = "tab\there", ? newline ? ;', "iso-ebnf", ["tab\there\n"], ["tab\\there\n"]),
        ("a = ;", "iso-ebnf", [""], ["x"]),
        (
            "a ::= [^a-c#x64] - 'e' b*\nb ::= #x41 | [#x30-#x31]",
            "w3c-ebnf",
            ["x", "zA01"],
            ["a", "d", "e", "x2"],
        ),
    ],
)
def test_iso_and_w3c_ebnf_constructs(
    grammar: str, grammar_format: str, good: list[str], bad: list[str]
) -> None:
    _assert_agrees(_Compiled(grammar, grammar_format), good, bad)


@pytest.mark.parametrize(
    ("grammar", "grammar_format", "message", "line", "column"),
    [
        ('a = "x" ;\nb = c ;', "iso-ebnf", "rule 'c' is used but never defined", 2, 5),
        ('a = "x"', "iso-ebnf", "expected ';' to end the rule 'a', found the end", 1, 8),
        ('a = "x" "y", "z" ;', "iso-ebnf", "expected ',' or the end of the rule", 1, 9),
        ('a = ( "x" ;', "iso-ebnf", "'(' is never closed with ')'", 1, 5),
        ('a = "x" - "xy" ;', "iso-ebnf", "between sets of single characters", 1, 5),
        ("a = ? unicorns ? ;", "iso-ebnf", "special sequence '? unicorns ?' has no meaning", 1, 5),
        ('a = "x" ;\na = "y" ;', "iso-ebnf", "rule 'a' is defined twice (first at line 1)", 2, 1),
        ('a = "x\n" ;', "iso-ebnf", "terminal string is not closed", 1, 5),
        ("(* never closed\na = 'x' ;", "iso-ebnf", "comment '(*' is never closed", 1, 1),
        ("a ::= #xD800", "w3c-ebnf", "'#xD800' is not a character", 1, 7),
        ("a ::= 'x' )", "w3c-ebnf", "unexpected ')'", 1, 11),
        ("a = b ; b = b ;", "iso-ebnf", "rule 'a' matches no text", 1, 1),
    ],
)
def test_iso_and_w3c_ebnf_errors_are_located(
    grammar: str, grammar_format: str, message: str, line: int, column: int
) -> None:
    error = _error(grammar, grammar_format)
    assert message in error.message, error.message
    assert (error.line, error.column) == (line, column), str(error)


_EBNF_PIECES = (
    *("a", "b", "c d", "=", "::=", ";", ".", ",", "|", "/", "!", "[", "]", "{", "}"),
    *("(", ")", "(/", "/)", "(:", ":)", '"x"', "'y'", '""', "3 *", "*", "+", "?", "-"),
    *("? letters ?", "? foo ?", "(* c *)", "/* c */", "#x41", "[a-z]", "[^#x30-#x39]"),
    *(" ", "\n", '"\\n"', "1000000 *", "#xD800", '"', "'", "(*", "letter", "#x110000"),
    *("%x41", "%x5A-41", "%d13.10", "%xD800", '%s"Ab"', "%i", "=/", "1*", "2*1", "3", "<p>"),
    *("; c\n", "DIGIT", "CRLF", "\n a = "),
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_EBNF_PIECES), min_size=1, max_size=14),
    grammar_format=st.sampled_from(("iso-ebnf", "w3c-ebnf", "abnf", "auto")),
    wrapped=st.booleans(),
)
def test_ebnf_text_compiles_or_is_refused_with_a_constraint_error(
    pieces: list[str], grammar_format: str, wrapped: bool
) -> None:
    text = "".join(pieces)
    text = f"a = {text} ;" if wrapped else text
    try:
        compiled = compile_grammar(text, grammar_format)  # type: ignore[arg-type]
    except ConstraintError as error:
        assert error.message
        return
    for probe in ("", "x", "a"):  # the judge and xgrammar agree on what it took
        assert (compiled.judge(probe) is None) == _Xgrammar(compiled.value).accepts(probe)


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        pytest.param('a = "Yes" / %s"No"', ["yes", "YES", "No"], ["no", "NO"], id="case-rules"),
        pytest.param('a = %i"ok" %x21', ["OK!", "oK!"], ["ok"], id="insensitive-string"),
        pytest.param("a = %x41-43 %d48.49 %b1000011", ["A01C", "C01C"], ["D01C"], id="numbers"),
        pytest.param("a = 2DIGIT *1ALPHA", ["12", "12x"], ["1", "12xy"], id="counts"),
        pytest.param("a = 2*3( %x61 )", ["aa", "aaa"], ["a", "aaaa"], id="ranged-count"),
        pytest.param(
            'A = b [ "-" B ]\nb = 1*HEXDIG', ["fF", "a-0"], ["g", "a-"], id="names-any-case"
        ),
        pytest.param('a = "x"\na =/ "y" ; more\n   / "z"', ["x", "y", "z"], ["w"], id="=/"),
        pytest.param('a = "<" 0<nothing here> ">"', ["<>"], ["< >"], id="zero-prose-is-nothing"),
        pytest.param("a = *(WSP / CRLF WSP) VCHAR", ["  x", "\r\n x"], ["\r\nx"], id="core"),
    ],
)
def test_abnf_constructs(grammar: str, good: list[str], bad: list[str]) -> None:
    _assert_agrees(_Compiled(grammar, "abnf"), good, bad)


@pytest.mark.parametrize(
    ("grammar", "message", "line", "column"),
    [
        ('a = "x"\nb = c', "rule 'c' is used but never defined", 2, 5),
        ("a = <a prose value>", "prose value '<a prose value>' describes text", 1, 5),
        ('a = "x"\na = "y"', "rule 'a' is defined twice (first at line 1)", 2, 1),
        ('a =/ "x"', "'=/' adds alternatives to 'a', which is not defined", 1, 1),
        ('a = ( "x"', "'(' is never closed with ')'", 1, 5),
        ('a = "x', "string is not closed", 1, 5),
        ("a = 3*2DIGIT", "repetition 3*2 has its bounds reversed", 1, 5),
        ("a = 3 DIGIT", "must touch the element it repeats", 1, 5),
        ("a = %x5A-41", "character range is out of order", 1, 5),
        ("a = %q41", "expected %x, %d, %b", 1, 5),
        ("a = %xD800", "surrogate", 1, 5),
        ('a = "x" }', "unexpected '}'", 1, 9),
        ("a = b\nb = a", "rule 'a' matches no text", 1, 1),
    ],
)
def test_abnf_errors_are_located(grammar: str, message: str, line: int, column: int) -> None:
    error = _error(grammar, "abnf")
    assert message in error.message, error.message
    assert (error.line, error.column) == (line, column), str(error)


def test_auto_mode_reads_abnf_where_iso_ebnf_does_not() -> None:
    assert compile_grammar('digit = "0" / "1"').source_language == "abnf"
    assert compile_grammar('digit = "0" | "1" ;').source_language == "iso-ebnf"
    err = _error('a = "x"\nb = <prose>')
    assert "(read as abnf)" in err.message and (err.line, err.column) == (2, 5)


def test_auto_mode_names_the_format_it_assumed() -> None:
    err = _error("value ::= x")
    assert err.message == "rule 'x' is not defined (read as gbnf)"
    assert (err.line, err.column) == (1, 11)


def test_auto_mode_reports_the_furthest_error_when_nothing_is_recognised() -> None:
    err = _error('"a" ')
    assert "(read as bnf)" in err.message  # every format fails at 1:1; bnf is tried first
    assert (err.line, err.column) == (1, 1)


def test_unknown_format_is_rejected() -> None:
    assert "unknown grammar format 'yacc'" in _error("x", "yacc").message  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Limits


def _deep(language: str, depth: int) -> str:
    body = "(" * depth + '"a"' + ")" * depth
    return {"bnf": f"<start> ::= {body}", "gbnf": f"root ::= {body}", "lark": f"start: {body}"}[
        language
    ]


@pytest.mark.parametrize("language", ["bnf", "gbnf", "lark"])
def test_nesting_limit(language: str) -> None:
    compile_grammar(_deep(language, MAX_NESTING), language)
    err = _error(_deep(language, MAX_NESTING + 1), language)
    assert "MAX_NESTING" in err.message
    assert err.line == 1


@pytest.mark.parametrize("language", ["bnf", "gbnf", "lark"])
def test_rule_limit(language: str) -> None:
    rule = {"bnf": '<r{}> ::= "a"', "gbnf": 'r{} ::= "a"', "lark": 'r{}: "a"'}[language]
    first = {"bnf": '<start> ::= "a"', "gbnf": 'root ::= "a"', "lark": 'start: "a"'}[language]
    lines = [first] + [rule.format(i) for i in range(MAX_RULES)]
    err = _error("\n".join(lines), language)
    assert "MAX_RULES" in err.message
    assert (err.line, err.column) == (MAX_RULES + 1, 1)


@pytest.mark.parametrize("language", ["bnf", "gbnf"])
def test_alternative_limit(language: str) -> None:
    head = {"bnf": "<start> ::= ", "gbnf": "root ::= "}[language]
    err = _error(head + " | ".join(['"a"'] * (MAX_ALTERNATIVES + 1)), language)
    assert "MAX_ALTERNATIVES" in err.message
    assert err.line == 1


def test_lark_alternative_limit_counts_the_multiplied_out_groups() -> None:
    groups = ' ("a"|"b")' * 13  # 2 ** 13 = 8192 alternatives once lark expands them
    err = _error(f"start:{groups}", "lark")
    assert "has 8192 alternatives" in err.message
    assert "MAX_ALTERNATIVES" in err.message
    assert (err.line, err.column) == (1, 1)
    compile_grammar('start: ("a"|"b") ~ 10', "lark")  # 1024 alternatives of 10 symbols


def test_lark_expansion_limits_come_before_lark_expands() -> None:
    """Lark's analysis is cubic in alternative length: ("a" ~ 40) ~ 40 would take minutes."""
    err = _error('start: "x"\nother: ("a" ~ 40) ~ 40', "lark")
    assert "alternative of 1600 symbols" in err.message
    assert "MAX_SEQUENCE" in err.message
    assert (err.line, err.column) == (2, 1)
    compile_grammar("start: " + '"a" ' * MAX_SEQUENCE, "lark")
    many = "\n".join(f'r{i}: ("a"|"b") ~ 8' for i in range(MAX_EXPANDED_SYMBOLS // 2048 + 1))
    err = _error(f"start: r0\n{many}", "lark")
    assert "MAX_EXPANDED_SYMBOLS" in err.message


def test_size_limit() -> None:
    text = "<start> ::= " + '"a"' * (MAX_GRAMMAR_BYTES // 3)
    assert "MAX_GRAMMAR_BYTES" in _error(text).message


# ---------------------------------------------------------------------------
# Judges


def test_judge_reasons_say_where() -> None:
    judge = compile_grammar('root ::= "ab" "c"').judge
    assert judge("abc") is None
    assert judge("abx") == "unexpected 'x' at position 2 (line 1, column 3)"
    assert judge("ab") == "the text ends before the grammar allows"


def test_canonical_constraint_shape() -> None:
    constraint = compile_grammar('start: "a"')
    assert isinstance(constraint, CanonicalConstraint)
    assert constraint.kind == "ebnf"
    assert constraint.not_enforced == ()


# ---------------------------------------------------------------------------
# The corpus: every grammar compiles, and sampled sentences satisfy both sides

CORPUS_FILES = sorted(
    path
    for kind in ("bnf", "gbnf", "lark", "iso-ebnf", "w3c-ebnf", "abnf")
    for path in (CORPUS / kind).glob("*")
)


def test_corpus_has_every_kind() -> None:
    kinds = [path.parent.name for path in CORPUS_FILES]
    assert kinds.count("gbnf") >= 10
    assert kinds.count("lark") >= 5
    assert kinds.count("bnf") >= 5
    assert kinds.count("iso-ebnf") >= 4
    assert kinds.count("w3c-ebnf") >= 2
    assert kinds.count("abnf") >= 4


@functools.cache
def _corpus(path: Path) -> _Compiled:
    compiled = _Compiled(path.read_text(encoding="utf-8"))
    assert compiled.constraint.source_language == path.parent.name
    return compiled


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda path: f"{path.parent.name}/{path.stem}")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_corpus_sentences_agree(path: Path, seed: int) -> None:
    _check_sentences(_corpus(path), random.Random(seed))


CORPUS_EXAMPLES = {
    "iso-ebnf/date_iso": (["2024-02-29", "1999-12-31"], ["2024-13-01", "2024-2-29", "24-01-01"]),
    "iso-ebnf/assignments": (
        ['PROGRAM DEMO BEGIN A:=-12; B2:="hi"; C:=A; END.', "PROGRAM X\nBEGIN\tEND."],
        ["PROGRAM demo BEGIN END.", 'PROGRAM X BEGIN A:="h i"; END.', "PROGRAM X BEGIN END"],
    ),
    "iso-ebnf/wirth_expression": (["1+2*(3.5-4)", "42"], ["1 + 2", "1+", "()", "3."]),
    "iso-ebnf/answer_choice": (
        ["Answer: B\nReason: it is the only one.", "Answer: A\nReason: Yes."],
        ["Answer: E\nReason: no.", "Answer: A\nReason: extra.", "Answer: A\nReason: ."],
    ),
    "w3c-ebnf/xml_element": (
        ['<?xml version="1.0"?> <a x="1"><b/>text</a>', '<?xml version="1.0"?><e/>'],
        ['<?xml version="1.0"?><a>x', '<?xml version="1.0"?><a x=1/>', "<a/>"],
    ),
    "w3c-ebnf/version_string": (["1.0.0", "10.2.3-rc.1+build-7"], ["01.0.0", "1.0", "1.0.0-"]),
    "bnf/noun_verb": (["noun verb", "verb noun"], ["noun", "verb  noun"]),
    "bnf/algol_textbook": (
        ["if x < 1 then y := 2 else z := x + 10", "x := 1", "if x = y then x := 1"],
        ["x:=1", "x := 1 +2", "if x < 1 then y := 2 "],
    ),
    "abnf/rfc3339_date_time": (
        ["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.123+05:30", "2024-01-02T03:04:05z"],
        ["2024-1-02T03:04:05Z", "2024-01-02T03:04:05", "2024-01-02 03:04:05Z"],
    ),
    "abnf/rfc3986_uri": (
        [
            "https://user@example.com:8080/a/b?q=1#f",
            "mailto:a@b.c",
            "ldap://[2001:db8::7]/c=GB?objectClass?one",
            "HTTP://192.168.0.1:80/",
        ],
        ["://x", "http://exa mple.com", "http://[::1::2]/"],
    ),
    "abnf/rfc5322_addr_spec": (
        ["john.doe@example.com", '"odd one"@x.org', "a@[127.0.0.1]", "x (note) @y.z"],
        ["a@@b", "@b.c", "a b@c"],
    ),
    "abnf/semver": (["1.0.0", "1.2.3-alpha.1+build.5"], ["01.0.0", "1.0", "1.0.0-"]),
    "bnf/greeting": (["hello Bob!", "good morning Ann!"], ["hello Bob !", "good  evening Al!"]),
    "bnf/arithmetic": (["1+2*(3.5-4)", "7"], ["1 + 2", "1+", "()"]),
    "bnf/date": (["2024-02-29", "2024-12-31 at 23:59"], ["2024-13-01", "2024-01-01at 10:00"]),
    "bnf/command": (["move forward 12 steps then turn left", "stop"], ["move  forward 1 step"]),
    "gbnf/json": (['{"a": [1, 2.5e3, true, null], "b": "x\\ny"}', "{}"], ['{"a" 1}', "[]"]),
    "gbnf/arithmetic": (["x= 1\n", "(a +2) *b= 3\n"], ["x= 1", "= 1\n", "a + 2= 3\n"]),
    "gbnf/chess": (["1. e4 e5 2. Nf3 Nc6", "1. O-O exd8=Q+"], ["1. e9 e5", "1. e4"]),
    "gbnf/date": (["2024-02-29", "1999-12-31T23:59:59.5Z"], ["2024-2-29", "2024-02-29T24:00Z"]),
    "gbnf/url": (["https://example.com:8080/a/b?q=1#top"], ["http//x", "https://-a.com"]),
    "gbnf/unicode": (["héllo Émile 😀", "Hej 中文 ❤"], ["hello Émile 😀"]),
    "lark/json": (['{"a": [1, -2.5e3, true, null], "b": "x"}', " [ ] "], ['{"a" 1}', "[1,]"]),
    "lark/calc": (["x = 1 + 2 * (3 - -y)", "42"], ["1 +", "x = = 1"]),
    "lark/sql_select": (["SELECT count(*) FROM t WHERE a >= 1 LIMIT 5;"], ["SELECT FROM t"]),
    "lark/config": (['[main] # c\nkey = "v" ; c\nn = [1, 2]\n'], ["key = \n", "n = 1 2\n"]),
    "lark/dates": (
        ["2024-02-29", "Monday, March 4, 2024", "dates: 2024-01-01, 2024-01-02"],
        ["2024-2-29", "dates: "],
    ),
    "lark/tool_call_json": (
        [
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo", '
            '"unit": "celsius"}}',
            '<|python_tag|>{"name": "web_search", "parameters": {"query": "tides"}}',
        ],
        [
            '{"name": "web_search", "parameters": {"query": "tides"}}',
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}',
            '<|python_tag|>{"name": "web_search", "parameters": {"query": "tides", "top_k": 0}}',
        ],
    ),
    "lark/think_json": (
        [
            '<think>\n</think>\n{"street": "Main St", "city": "Oslo", "zip": 12345}',
            '<think>\nthe <b>zip</b>\nfirst</think>\n{"street": "", "city": "", "zip": 99999}',
        ],
        [
            '<think>\n</think>\n{"street": "Main St", "city": "Oslo", "zip": 123}',
            '<think></think>\n{"street": "Main St", "city": "Oslo", "zip": 12345}',
            "<think>\n" + "x" * 121 + '</think>\n{"street": "a", "city": "b", "zip": 12345}',
        ],
    ),
    "lark/lazy_tool": (
        [
            'Let me look.<tool_call>\nget_weather {"city": "Oslo"}\n</tool_call>',
            '<tool_call>\nf {"a": "}"}\n</tool_call>\n<tool_call>\ng {}\n</tool_call> done',
        ],
        [
            "<tool_call>\nf {}\n</tool_call>}\n</tool_call>",
            "<tool_call>\nf []\n</tool_call>",
            "no call",
        ],
    ),
    "lark/lazy_sql": (
        ["SELECT a FROM t;", "DELETE x;\nINSERT 'a' ;"],
        ["SELECT a; b;", "INSERT 'a;' ;", "SELECT ;", "SELECT " + "x" * 61 + ";"],
    ),
    "lark/lazy_think_text": (
        ["<think>maybe</think>\nyes", "<think></think>\nunsure"],
        ["<think>a</think>b</think>\nno", "<think>a\nyes"],
    ),
    "lark/and_not_assignments": (
        ["x = 1", "iff = 12\nreturned = 7\n_ = 0", "fo = 1"],
        ["if = 1", "x = 1\nwhile = 2", "a = 1\nb = 2\nc = 3\nd = 4", "x1x = 12345"],
    ),
    "lark/lazy_rules_function_calls": (
        [
            'Looking.<function=lookup>{"q": "tides"}</function> Done.',
            "<function=wait>15</function><function=wait>2</function>",
            "no call at all",
        ],
        [
            "A <function=sleep>1</function>",
            '<function=lookup>{"q": 1}</function>',
            "<function=wait>12345</function>",
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CORPUS_EXAMPLES))
def test_corpus_examples(name: str) -> None:
    kind, stem = name.split("/")
    good, bad = CORPUS_EXAMPLES[name]
    _assert_agrees(_corpus(CORPUS / kind / f"{stem}.{kind}"), good, bad)


# ---------------------------------------------------------------------------
# Random grammars, written out as BNF and GBNF text, against both sides

_TEXT_CHARS = [*"ab\"\\'-]^[ \n\té😀#|()*:<>", "\x7f"]
_CODE_POINTS = sorted({ord(c) for c in _TEXT_CHARS} | {0, 0x41, 0x5A, 0x61, 0x7A, 0xFFFF, 0x10FFFF})


def _char_sets() -> st.SearchStrategy[CharSet]:
    ranges = st.lists(
        st.tuples(st.sampled_from(_CODE_POINTS), st.sampled_from(_CODE_POINTS)).map(sorted),
        min_size=1,
        max_size=3,
    )
    return st.builds(
        lambda found, negated: CharSet(tuple(tuple(r) for r in found), negated),
        ranges,
        st.booleans(),
    )


def _trees(names: list[str], nul: bool) -> st.SearchStrategy[Node]:
    chars = _TEXT_CHARS + (["\x00"] if nul else [])
    leaves = st.one_of(
        st.text(alphabet=chars, max_size=3).map(Text),
        _char_sets(),
        *([st.sampled_from(names).map(Ref)] if names else []),
    )

    def compound(kids: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
        return st.one_of(
            st.lists(kids, min_size=2, max_size=3).map(lambda items: Sequence(tuple(items))),
            st.lists(kids, min_size=2, max_size=3).map(lambda items: Choice(tuple(items))),
            st.builds(
                lambda item, low, extra: Repeat(item, low, None if extra is None else low + extra),
                kids,
                st.integers(0, 2),
                st.one_of(st.none(), st.integers(0, 2)),
            ),
        )

    return st.recursive(leaves, compound, max_leaves=6)


@st.composite
def _random_grammars(draw: st.DrawFn, nul: bool) -> list[Node]:
    """Rule bodies r0..rN, each referring only to later rules, so every rule finishes."""
    count = draw(st.integers(1, 3))
    bodies: list[Node] = []
    for index in range(count):
        later = [f"r{i}" for i in range(index + 1, count)]
        bodies.append(draw(_trees(later, nul)))
    return bodies


class _Spelling:
    """Writes a tree as BNF or GBNF text, choosing among equivalent spellings at random."""

    def __init__(self, language: str, rng: random.Random) -> None:
        self.language = language
        self.rng = rng

    def name(self, name: str) -> str:
        if self.language == "gbnf":
            return "root" if name == "r0" else name
        return f"<{name}>"

    def grammar(self, bodies: list[Node]) -> str:
        return "\n".join(
            f"{self.name(f'r{i}')} ::= {self.choice(body)}" for i, body in enumerate(bodies)
        )

    def choice(self, node: Node) -> str:
        if isinstance(node, Choice):
            return " | ".join(self.sequence(option) for option in node.options)
        return self.sequence(node)

    def sequence(self, node: Node) -> str:
        if isinstance(node, Sequence):
            # Touching items: whitespace would add spaces in the BNF dialect.
            glue = "" if self.language == "bnf" else self.rng.choice([" ", "\n  ", " # c\n "])
            return glue.join(self.item(item) for item in node.items)
        return self.item(node)

    def item(self, node: Node) -> str:
        if isinstance(node, Repeat):
            return self.atom(node.item) + self.quantifier(node.low, node.high)
        return self.atom(node)

    def atom(self, node: Node) -> str:
        if isinstance(node, Text):
            quote = self.rng.choice("\"'") if self.language == "bnf" else '"'
            return quote + "".join(self.char(c, quote) for c in node.value) + quote
        if isinstance(node, CharSet):
            return self.char_class(node)
        if isinstance(node, Ref):
            return self.name(node.name)
        return f"({self.choice(node)})"

    def quantifier(self, low: int, high: int | None) -> str:
        spellings = [f"{{{low},}}" if high is None else f"{{{low},{high}}}"]
        if high == low:
            spellings.append(f"{{{low}}}")
        spellings += {(0, None): ["*"], (1, None): ["+"], (0, 1): ["?"]}.get((low, high), [])
        return self.rng.choice(spellings)

    def char(self, char: str, quote: str, specials: str = "") -> str:
        code = ord(char)
        forms = [f"\\u{code:04x}"] if code <= 0xFFFF else [f"\\U{code:08X}"]
        if code < 0x100:
            forms.append(f"\\x{code:02X}")
        if char in "\\" + quote + specials:
            forms.append("\\" + char)
        elif char.isprintable():
            forms.append(char)
        if char in "\n\t":
            forms.append({"\n": "\\n", "\t": "\\t"}[char])
        return self.rng.choice(forms)

    def char_class(self, node: CharSet) -> str:
        parts = []
        for low, high in node.ranges:
            first = self.char(chr(low), "", "]-^[")
            parts.append(first if low == high else f"{first}-{self.char(chr(high), '', ']-^[')}")
        return "[" + ("^" if node.negated else "") + "".join(parts) + "]"


@pytest.mark.parametrize("language", ["bnf", "gbnf"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32))
def test_random_grammars_agree(language: str, data: st.DataObject, seed: int) -> None:
    bodies = data.draw(_random_grammars(nul=language == "bnf"))
    rng = random.Random(seed)
    text = _Spelling(language, rng).grammar(bodies)
    tree = Grammar({f"r{i}": body for i, body in enumerate(bodies)}, "r0")
    if _heights(tree)["r0"] == math.inf:
        assert "matches no text" in _error(text, language).message
        return
    _check_sentences(_Compiled(text, language), rng, count=4)
