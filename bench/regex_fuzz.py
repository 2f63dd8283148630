"""Random patterns, every short text over their alphabet asked of both judges.

``python -m bench.regex_fuzz --seed 1 --patterns 300`` (a few seconds)

``compile_regex`` rewrites what xgrammar cannot read (lookarounds, word
boundaries, backreferences, case folding, anchors inside groups, POSIX and
``\\p`` classes) into a regex it can; each rewrite is where the result may
come to mean something else. This draws patterns where those constructs
meet, compiles each as ``/v1/completion/regex`` does, and for every text up
to ``--length`` characters over a small alphabet (the pattern's own
characters and a few others) compares what a real xgrammar matcher accepts
with what the ``regex`` package (the served judge) matches. A text the
grammar accepts and the judge rejects is *unsound* (the service would
generate an output it then refuses); one the judge matches and the grammar
refuses is *incomplete* (a valid answer the model can never give), which is
reported apart since some subsets are deliberate (a pattern with ``\\B``
never writes the empty text, which Python's ``re`` before 3.14 refuses: not
compared). Exhaustive up to the
length, so a draw that finds nothing says every short text agrees, not more.
Exits 1 if anything was unsound or crashed. ``--json-schema`` does the same
for JSON Schema's ``pattern`` (ECMA-262, found anywhere in the string), each
text written as a JSON string and checked with the decoder's guard against
the schema's judge.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys

import regex as regex_package
import xgrammar as xgr

from bench.differential import Findings, texts
from bench.json_grammar import JsonGrammar
from grammar_compiler import compile_json_schema, compile_regex
from grammar_compiler.regex import matches

_LETTERS = ("a", "b", "B", "1", " ", "-")
_CLASSES = (
    *("[ab]", "[^a]", "[a-b1]", r"\d", r"\w", r"\s", r"\W", "."),
    *(r"\S", r"\D", r"[\w-]", r"[^\s1]", "[[:alpha:]]", r"\p{Lu}"),
)
_ANCHORS = ("^", "$", r"\b", r"\B", r"\A", r"\Z")


class PatternMaker:
    """Random patterns from one seed over ``_LETTERS``, nesting groups,
    quantifiers, lookarounds, anchors, backreferences and (Python) scoped
    flags; ``ecma``: only what ECMA-262 and Python both read."""

    def __init__(self, seed: int, *, ecma: bool = False) -> None:
        self.rng = random.Random(seed)
        self.ecma = ecma
        self.classes = [c for c in _CLASSES if not (ecma and c.startswith("[["))]
        self.anchors = _ANCHORS[:4] if ecma else _ANCHORS

    def pattern(self) -> str:
        self.groups = 0
        text = self.alternation(3)
        return ("(?i)" + text) if not self.ecma and self.rng.random() < 0.1 else text

    def alternation(self, depth: int) -> str:
        branches = [self.sequence(depth) for _ in range(self.rng.choice((1, 1, 1, 2, 3)))]
        return "|".join(branches)

    def sequence(self, depth: int) -> str:
        return "".join(self.item(depth) for _ in range(self.rng.randint(1, 3)))

    def item(self, depth: int) -> str:
        rng = self.rng
        roll = rng.random()
        if depth > 0 and roll < 0.25:
            return self.quantified(self.group(depth - 1))
        if roll < 0.35:
            return rng.choice(self.anchors)
        if depth > 0 and roll < 0.47:
            return self.lookaround(depth - 1)
        if roll < 0.52 and self.groups:
            return f"\\{rng.randint(1, self.groups)}"
        atom = rng.choice(self.classes) if roll < 0.7 else re.escape(rng.choice(_LETTERS))
        return self.quantified(atom)

    def group(self, depth: int) -> str:
        kinds = ("(", "(?:", "(?<g%d>") if self.ecma else ("(", "(?:", "(?i:", "(?P<g%d>")
        kind = self.rng.choice(kinds)
        if kind != "(?:" and kind != "(?i:":
            self.groups += 1
            kind = kind.replace("%d", str(self.groups))
        return f"{kind}{self.alternation(depth)})"

    def lookaround(self, depth: int) -> str:
        kind = self.rng.choice(("(?=", "(?!", "(?<=", "(?<!"))
        if kind.startswith("(?<"):  # the judge's regex package allows any width
            bodies = [self.behind() for _ in range(self.rng.choice((1, 1, 2)))]
            return f"{kind}{'|'.join(bodies)})"
        return f"{kind}{self.alternation(depth)})"

    def behind(self) -> str:
        atoms = (*self.classes[:4], "a", "b", "B")
        return "".join(
            self.quantified(self.rng.choice(atoms)) for _ in range(self.rng.randint(1, 2))
        )

    def quantified(self, atom: str) -> str:
        roll = self.rng.random()
        if roll < 0.55:
            return atom
        quantifier = self.rng.choice(("*", "+", "?", "{2}", "{1,2}", "{0,3}", "{2,}"))
        return atom + quantifier + ("?" if self.rng.random() < 0.15 else "")


def alphabet(pattern: str) -> list[str]:
    """The few characters the texts are made of: the pattern's letters that
    ``_LETTERS`` offers, and always one of each kind a class may test."""
    chosen = ["a", "1", " "]
    chosen += [c for c in _LETTERS if c not in chosen and c.lower() in pattern.lower()][:2]
    # a line break where "$" stands inside the pattern ($\s matches "\n") is a
    # known subset: such patterns are refused or keep the empty text only
    if any(mark in pattern for mark in (r"\Z", ".", r"\s")) and "$" not in pattern[:-1]:
        chosen.append("\n")
    return chosen


def check(pattern: str, compiler: xgr.GrammarCompiler, length: int, found: Findings) -> None:
    regex = found.compile(pattern, lambda: compile_regex(pattern))
    if regex is None:
        return
    matcher = xgr.GrammarMatcher(compiler.compile_regex(regex), terminate_without_stop_token=True)
    for text in texts(alphabet(pattern), length):
        matcher.reset()
        accepted = matcher.accept_string(text) and matcher.is_terminated()
        if accepted == matches(pattern, text) or (not text and r"\B" in pattern):
            continue  # \B never writes an empty text, which re (< 3.14) would refuse
        found.disagreement(pattern, text, accepted=accepted)
        return


def check_in_schema(
    pattern: str, compiler: xgr.GrammarCompiler, length: int, found: Findings
) -> None:
    """``check`` for a JSON Schema ``pattern`` (ECMA-262, found anywhere in the
    string): the schema's grammar, with the decoder's guard, against its judge."""
    schema = {"type": "string", "pattern": pattern}
    constraint = found.compile(pattern, lambda: compile_json_schema(schema))
    if constraint is None:
        return
    grammar = JsonGrammar(compiler, constraint.value)
    # a pattern's strings leave out what JSON escapes (a line break): a subset
    letters = [letter for letter in alphabet(pattern) if letter != "\n"]
    for text in texts(letters, length):
        written = json.dumps(text)
        accepted = grammar.accepts(written)
        if accepted == (constraint.judge(written) is None) or (not text and r"\B" in pattern):
            continue
        found.disagreement(pattern, text, accepted=accepted)
        return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--patterns", type=int, default=300)
    parser.add_argument("--length", type=int, default=5, help="longest text compared")
    parser.add_argument("--show-refused", action="store_true", help="print each refusal's reason")
    parser.add_argument(
        "--json-schema",
        action="store_true",
        help="ECMA-262 patterns as a JSON Schema string's pattern (found anywhere in it)",
    )
    args = parser.parse_args()
    maker = PatternMaker(args.seed, ecma=args.json_schema)
    check_one = check_in_schema if args.json_schema else check
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    found = Findings()
    invalid = 0
    for _ in range(args.patterns):
        pattern = maker.pattern()
        try:
            regex_package.compile(pattern)
        except regex_package.error:
            invalid += 1
            continue
        check_one(pattern, compiler, args.length, found)
    found.print(
        show_refused=args.show_refused, shown=lambda pattern, detail: f"{pattern!r}: {detail}"
    )
    print(f"seed {args.seed}: {invalid} invalid patterns, {found.summary()}")
    return 1 if found.unsound or found.crashed else 0


if __name__ == "__main__":
    sys.exit(main())
