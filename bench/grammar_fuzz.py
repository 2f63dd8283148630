"""Random grammars, every short text asked of xgrammar and of the grammar's judge.

``python -m bench.grammar_fuzz --seed 1 --grammars 50`` (about a minute)

``/v1/completion/cfg`` reads Lark through the ``lark`` library and writes it
for xgrammar, which has no lexer: ``%ignore`` runs, terminals that may be
empty, lazy quantifiers, left recursion, templates and priorities are each
rewritten, and each rewrite is where the two readings may part. The same
random grammar is written as Lark and, where the notation can say it, as
GBNF, ISO EBNF and ABNF (whose judges are Lark's parser over the tree their
reader built), and compiled as the endpoint does; for
every text of up to ``--length`` characters over the grammar's own
characters, a real xgrammar matcher and the judge the service runs on each
output are asked. A text xgrammar accepts and the judge refuses is
*unsound* (the service would generate it and then refuse it), one the judge
accepts and xgrammar refuses *incomplete*; both are printed with the
grammar, and the run exits 1 on any. Exhaustive up to the length, so a draw
that finds nothing says only that every short text agrees. It found a
grammar xgrammar crashes on (``r ::= r{0,3}``: a segmentation fault, now
refused by ``cfg_tree.check_unit_cycles``); ``--verbose`` names the grammar
when that happens again.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import xgrammar as xgr

from bench.differential import Findings, texts
from grammar_compiler.canonical import out_of_time
from grammar_compiler.cfg import compile_grammar

_LITERALS = ("a", "b", "ab", "ba", " ")
GRAMMAR_BUDGET_S = 20.0
"""Time one grammar's texts may take: the judge's Earley parse of an ambiguous
grammar is slow, and such a grammar is counted apart (``slow``) rather than
holding up the draw."""
_CLASSES = ("[ab]", "[a ]", "[^a]")


class GrammarMaker:
    """Random grammars from one seed, as an abstract tree of rules written to
    both Lark and GBNF: sequences, alternatives, ``?``/``*``/``+``, references
    to rules (left recursion included), terminals of strings and regexes."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def grammar(self) -> dict:
        # half the grammars use only what every notation writes, so GBNF, ISO
        # EBNF and ABNF get as many as Lark's own constructs do
        self.plain = self.rng.random() < 0.5
        self.rules = self.rng.randint(1, 3)
        self.terminals = self.rng.randint(0, 2)
        rules = {f"r{i}": self.expansion(2) for i in range(self.rules)}
        terminals = {f"T{i}": self.terminal(i) for i in range(self.terminals)}
        ignore = None if self.plain else self.rng.choice((None, '" "', "/ +/", "/ a*/"))
        priority = not self.plain and self.rng.random() < 0.3
        return {"rules": rules, "terminals": terminals, "ignore": ignore, "priority": priority}

    def expansion(self, depth: int) -> list:
        return [self.sequence(depth) for _ in range(self.rng.choice((1, 1, 2, 3)))]

    def sequence(self, depth: int) -> list:
        return [self.item(depth) for _ in range(self.rng.randint(1, 3))]

    def item(self, depth: int) -> tuple:
        rng = self.rng
        roll = rng.random()
        if depth > 0 and roll < 0.2:
            node: tuple = ("group", self.expansion(depth - 1))
        elif roll < 0.35:
            node = ("ref", f"r{rng.randrange(self.rules)}")  # left recursion included
        elif roll < 0.45 and self.terminals:
            node = ("term", f"T{rng.randrange(self.terminals)}")
        elif roll < 0.55:
            node = ("class", rng.choice(_CLASSES[:2] if self.plain else _CLASSES))
        else:
            node = ("lit", rng.choice(_LITERALS))
        roll = rng.random()
        if roll < 0.05 and node[0] != "group":  # a template takes no group
            return ("template", node)  # Lark's _pair{x}: x x | x
        if roll < 0.3:
            return ("repeat", node, rng.choice(("?", "*", "+", " ~ 2", " ~ 0..2")))
        if roll < 0.35:
            return ("optional", node)
        return node

    def terminal(self, index: int) -> tuple:
        rng = self.rng
        kind = (
            "lit" if self.plain else rng.choice(("lit", "regex", "regex", "caseless", "composed"))
        )
        if kind in ("lit", "caseless"):
            return (kind, rng.choice(_LITERALS))
        if kind == "composed" and index > 0:  # made of T0, defined before it
            return ("composed", f'T0 "{rng.choice(_LITERALS)}"')
        atoms = ("a", "b", "[ab]", " ", "a?", "b*", "[ab]+", "(ab|a)", "a+?", "(?i:b)")
        return ("regex", "".join(rng.choice(atoms) for _ in range(rng.randint(1, 3))))


def _lark_item(node: tuple, rules: set[str], terminals: set[str]) -> str | None:
    kind = node[0]
    if kind == "lit":
        return f'"{node[1]}"'
    if kind == "class":
        return f"/{node[1]}/"
    if kind == "ref":
        return node[1] if node[1] in rules else None
    if kind == "term":
        return node[1] if node[1] in terminals else None
    if kind == "group":
        inner = _lark_expansion(node[1], rules, terminals)
        return None if inner is None else f"({inner})"
    inner = _lark_item(node[1], rules, terminals)
    if inner is None:
        return None
    if kind == "template":
        return f"_pair{{{inner}}}"
    return f"[{inner}]" if kind == "optional" else f"{inner}{node[2]}"


def _lark_expansion(expansion: list, rules: set[str], terminals: set[str]) -> str | None:
    alternatives = []
    for sequence in expansion:
        items = [_lark_item(item, rules, terminals) for item in sequence]
        if any(item is None for item in items):
            return None
        alternatives.append(" ".join(items))  # type: ignore[arg-type]
    return " | ".join(alternatives)


def as_lark(grammar: dict) -> str | None:
    """The grammar in Lark (``start`` is ``r0``); None if it names an undefined rule."""
    rules, terminals = set(grammar["rules"]), set(grammar["terminals"])
    lines = ["start: r0"]
    for name, expansion in grammar["rules"].items():
        body = _lark_expansion(expansion, rules, terminals)
        if body is None:
            return None
        lines.append(f"{name}: {body}")
    for index, (name, (kind, value)) in enumerate(grammar["terminals"].items()):
        body = {"lit": f'"{value}"', "caseless": f'"{value}"i', "regex": f"/{value}/"}
        priority = f".{index + 2}" if grammar["priority"] else ""
        lines.append(f"{name}{priority}: {body.get(kind, value)}")
    if "_pair{" in "\n".join(lines):
        lines.append("_pair{x}: x x | x")
    if grammar["ignore"]:
        lines.append(f"%ignore {grammar['ignore']}")
    return "\n".join(lines) + "\n"


def _gbnf_item(node: tuple) -> str:
    kind = node[0]
    if kind == "lit":
        return f'"{node[1]}"'
    if kind == "class":
        return node[1]
    if kind in ("ref", "term"):
        return node[1].lower()
    if kind == "group":
        return f"({_gbnf_expansion(node[1])})"
    if kind == "optional":
        return f"{_gbnf_item(node[1])}?"
    if kind == "template":
        inner = _gbnf_item(node[1])
        return f"({inner} {inner} | {inner})"
    counts = {" ~ 2": "{2}", " ~ 0..2": "{0,2}"}
    return f"{_gbnf_item(node[1])}{counts.get(node[2], node[2])}"


def _gbnf_expansion(expansion: list) -> str:
    return " | ".join(" ".join(_gbnf_item(item) for item in sequence) for sequence in expansion)


def as_gbnf(grammar: dict) -> str | None:
    """The grammar in GBNF, without ``%ignore`` (GBNF has none) or regex terminals."""
    if grammar["ignore"] or any(kind != "lit" for kind, _ in grammar["terminals"].values()):
        return None
    lines = ["root ::= r0"]
    for name, expansion in grammar["rules"].items():
        lines.append(f"{name} ::= {_gbnf_expansion(expansion)}")
    for name, (_, value) in grammar["terminals"].items():
        lines.append(f'{name.lower()} ::= "{value}"')
    return "\n".join(lines) + "\n"


_CLASS_MEMBERS = {"[ab]": "ab", "[a ]": "a "}
"""The classes ISO EBNF and ABNF write as alternatives (``[^a]`` they cannot)."""


@dataclass(frozen=True)
class Spelling:
    """How a standard grammar notation writes each construct."""

    literal: Callable[[str], str]
    join: Callable[[list[str]], str]  # items of a sequence
    separator: str  # between alternatives
    repeated: Callable[[str, bool], str]  # (item, at least once)
    twice: Callable[[str], str]
    up_to_twice: Callable[[str], str]
    rule: str  # "{name} = {body}" and its ending

    def options(self, options: list[str]) -> str:
        return options[0] if len(options) == 1 else f"( {self.separator.join(options)} )"

    def item(self, node: tuple) -> str | None:
        kind = node[0]
        if kind == "lit":
            return self.literal(node[1])
        if kind == "class":
            members = _CLASS_MEMBERS.get(node[1])
            return None if members is None else self.options([self.literal(c) for c in members])
        if kind in ("ref", "term"):
            return node[1].lower()
        if kind == "group":
            inner = self.expansion(node[1])
            return None if inner is None else f"( {inner} )"
        inner = self.item(node[1])
        if inner is None:
            return None
        if kind == "template":
            return self.options([self.join([inner, inner]), inner])
        if kind == "optional" or node[2] == "?":
            return f"[ {inner} ]"
        if node[2] in ("*", "+"):
            return self.repeated(inner, node[2] == "+")
        return self.twice(inner) if node[2] == " ~ 2" else self.up_to_twice(inner)

    def expansion(self, expansion: list) -> str | None:
        written = []
        for sequence in expansion:
            items = [self.item(item) for item in sequence]
            if any(item is None for item in items):
                return None
            written.append(self.join(items))  # type: ignore[arg-type]
        return self.options(written)

    def grammar(self, grammar: dict) -> str | None:
        """The grammar (start rule first), where it has only literal terminals."""
        if grammar["ignore"] or any(kind != "lit" for kind, _ in grammar["terminals"].values()):
            return None
        lines = [self.rule.format(name="start", body="r0")]
        for name, expansion in grammar["rules"].items():
            body = self.expansion(expansion)
            if body is None:
                return None
            lines.append(self.rule.format(name=name, body=body))
        for name, (_, value) in grammar["terminals"].items():
            lines.append(self.rule.format(name=name.lower(), body=self.literal(value)))
        return "\n".join(lines) + "\n"


ISO_EBNF = Spelling(
    literal='"{}"'.format,
    join=", ".join,
    separator=" | ",
    repeated=lambda item, once: f"{item}, {{ {item} }}" if once else f"{{ {item} }}",
    twice="2 * {}".format,
    up_to_twice=lambda item: f"[ {item}, [ {item} ] ]",
    rule="{name} = {body} ;",
)
ABNF = Spelling(  # strings as %x codes, which keep their case
    literal=lambda text: "%x" + ".".join(f"{ord(c):02X}" for c in text),
    join=" ".join,
    separator=" / ",
    repeated=lambda item, once: f"1*{item}" if once else f"*{item}",
    twice="2{}".format,
    up_to_twice="0*2{}".format,
    rule="{name} = {body}",
)


@dataclass
class GrammarFindings(Findings):
    """``Findings``, with the grammars stopped as slow and the count per notation."""

    slow: list[tuple[str, str]] = field(default_factory=list)
    by_format: dict[str, int] = field(default_factory=dict)


def letters(text: str) -> list[str]:
    """The characters texts are made of: those of ``_LITERALS`` the grammar
    holds, with ``A`` and ``B`` where a case-insensitive one could match them."""
    chosen = {c for c in "ab " if c in text} | {"a"}
    if '"i' in text or "(?i" in text:
        chosen |= {"A", "B"}
    return sorted(chosen)


def check(
    text: str,
    grammar_format: str,
    compiler: xgr.GrammarCompiler,
    length: int,
    found: GrammarFindings,
) -> None:
    constraint = found.compile(text, lambda: compile_grammar(text, grammar_format))
    if constraint is None:
        return
    found.by_format[grammar_format] = found.by_format.get(grammar_format, 0) + 1
    matcher = xgr.GrammarMatcher(
        compiler.compile_grammar(constraint.value), terminate_without_stop_token=True
    )
    deadline = time.monotonic() + GRAMMAR_BUDGET_S
    for candidate in texts(letters(text), length):
        if time.monotonic() > deadline:
            found.slow.append((text, f"stopped at {candidate!r}"))
            return
        matcher.reset()
        accepted = matcher.accept_string(candidate) and matcher.is_terminated()
        reason = constraint.judge(candidate)
        if reason == out_of_time():
            found.slow.append((text, f"the judge ran out of time on {candidate!r}"))
            return
        if accepted != (reason is None):
            found.disagreement(text, candidate, accepted=accepted)
            return


WRITERS = (
    ("lark", as_lark),
    ("gbnf", as_gbnf),
    ("iso-ebnf", ISO_EBNF.grammar),
    ("abnf", ABNF.grammar),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--grammars", type=int, default=50)
    parser.add_argument("--length", type=int, default=5, help="longest text compared")
    parser.add_argument("--show-refused", action="store_true", help="print each refusal's reason")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print each grammar before it is compiled (a crash of xgrammar ends the process)",
    )
    args = parser.parse_args()
    maker = GrammarMaker(args.seed)
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    found = GrammarFindings()
    for _ in range(args.grammars):
        grammar = maker.grammar()
        for grammar_format, write in WRITERS:
            text = write(grammar)
            if text is not None:
                if args.verbose:
                    print(f"{grammar_format}:\n{text}", file=sys.stderr, flush=True)
                check(text, grammar_format, compiler, args.length, found)
    found.print(show_refused=args.show_refused, shown=lambda text, detail: f"{detail}\n{text}")
    per_format = ", ".join(f"{name} {count}" for name, count in found.by_format.items())
    print(f"seed {args.seed}: {found.summary()} ({per_format}); {len(found.slow)} stopped as slow")
    return 1 if found.unsound or found.incomplete or found.crashed else 0


if __name__ == "__main__":
    sys.exit(main())
