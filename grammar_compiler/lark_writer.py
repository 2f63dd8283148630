r"""Grammar trees out as Lark grammars, and judges that parse with Lark.

The judge of a BNF or GBNF grammar must not share the EBNF writer, or a bug
there would be invisible: this module writes the same tree a second time,
in Lark's syntax, and Lark's Earley parser decides. Every terminal it writes
matches one character (of a literal, or of a class), so Lark's ``dynamic``
lexer, which tries each terminal where the parser expects it, accepts
exactly the texts the grammar derives: there is no tokenization to disagree
about, and a rejection is reported at the first character that cannot fit.

The output is plain BNF: every group with alternatives and every repetition
becomes a helper rule (``x*`` is ``h: () | h x``; ``x{2,4}`` is ``x x h``
where ``h`` matches up to two more). Lark would otherwise multiply inline
alternatives out (each ``?`` doubles a rule, ``~ 1..15`` adds fifteen), and
llama.cpp's json.gbnf would cost its Earley parser thousands of items per
character. Alternatives are kept short, since Lark's grammar analysis is
cubic in their length.

Lark reads a ``/regex/`` literal through Python string escapes before ``re``
sees it, so characters are written as ``\`` plus the character for ASCII
punctuation (literal to ``re`` either way) and as ``\uXXXX`` for everything
else that is not an ASCII letter or digit (turned into the character itself,
which is then not special to ``re``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from grammar_compiler import bounded_regex
from grammar_compiler.canonical import JUDGE_BUDGET_S, Judge, out_of_time
from grammar_compiler.cfg_tree import (
    MAX_JUDGE_RULES,
    CharSet,
    Choice,
    Grammar,
    Node,
    Ref,
    Repeat,
    Sequence,
    Text,
    reachable_rules,
)
from grammar_compiler.errors import ConstraintError

# A terminal that can never match: Lark refuses zero-width terminals, so the
# impossible lookahead is followed by one character.
_NOTHING = "/(?!)x/"
_LONGEST = 8


def write_lark(grammar: Grammar) -> tuple[str, str]:
    """The grammar in Lark syntax, and the name of its start rule there."""
    order = reachable_rules(grammar)
    writer = _Writer({name: f"r{index}" for index, name in enumerate(order)})
    for name in order:
        writer.rule(writer.names[name], grammar.rules[name])
    return "\n".join(writer.lines) + "\n", writer.names[grammar.start]


def bnf_judge(grammar: Grammar) -> Judge:
    """A judge for a BNF or GBNF grammar that shares nothing with the EBNF writer."""
    text, start = write_lark(grammar)
    return parser_judge(lark.Lark(text, start=start, **EARLEY_OPTIONS, lexer="dynamic"))


# Only acceptance matters to a judge: the shared forest is not turned into a
# tree, and ambiguity costs nothing.
EARLEY_OPTIONS = {"parser": "earley", "ambiguity": "forest", "maybe_placeholders": False}


def parser_judge(parser: lark.Lark) -> Judge:
    """The judge that accepts exactly what ``parser`` parses, within ``JUDGE_BUDGET_S``."""

    def judge(text: str) -> str | None:
        try:
            with bounded_regex.deadline(JUDGE_BUDGET_S):  # a Lark grammar's own terminals
                parser.parse(timed_text(text, time.monotonic() + JUDGE_BUDGET_S))
        except UnexpectedInput as err:
            return parse_failure(err, text)
        except RecursionError:
            return "text too deeply nested for the judge to check"
        except TimeoutError:
            return out_of_time()
        return None

    return judge


def timed_text(text: str, deadline: float) -> str:
    """``text`` for a lark parser, which raises TimeoutError once it reads past ``deadline``."""
    return _Timed(text, deadline)


class _Timed(str):
    """The text, which stops being read at a deadline.

    Earley parsing takes time cubic in the length for an ambiguous grammar
    (``s ::= s s | "a"``: 8 s for 200 characters), and lark cannot be told to
    stop. But with its dynamic lexers it reads the text by iterating over it,
    one character per parse step, so the iteration is where the parse can be
    ended; it is checked every character (each step costs far more).
    """

    deadline: float

    def __new__(cls, text: str, deadline: float) -> _Timed:
        timed = super().__new__(cls, text)
        timed.deadline = deadline
        return timed

    def __iter__(self) -> Iterator[str]:
        for char in str.__iter__(self):
            if time.monotonic() > self.deadline:
                raise TimeoutError
            yield char


def parse_failure(err: UnexpectedInput, text: str) -> str:
    """Why a lark parser refused ``text``, located."""
    if isinstance(err, UnexpectedEOF):
        return "the text ends before the grammar allows"
    offset = getattr(err, "pos_in_stream", None)
    if not isinstance(err, UnexpectedCharacters) or offset is None or offset >= len(text):
        return f"the text departs from the grammar at line {err.line}, column {err.column}"
    return (
        f"unexpected {text[offset]!r} at position {offset} (line {err.line}, column {err.column})"
    )


class _Writer:
    """Collects Lark rules; helper rules are named ``h0``, ``h1``, ..."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.lines: list[str] = []
        self._helpers = 0
        self._doublings: dict[str, list[str]] = {}  # item -> blocks of 1, 2, 4, ... copies
        self._optional: dict[str, str] = {}  # symbol -> a helper matching it or nothing

    def rule(self, name: str, body: Node) -> None:
        options = body.options if isinstance(body, Choice) else (body,)
        self._add(f"{name}: " + " | ".join(self.sequence(option) for option in options))

    def helper(self, *options: str) -> str:
        name = f"h{self._helpers}"
        self._helpers += 1
        self._add(f"{name}: " + " | ".join(options))
        return name

    def _add(self, line: str) -> None:
        """Lark's Earley set-up takes time about quadratic in the rules (300
        alternatives of ``"x"{10,1000}`` took a minute), so the judge's
        grammar is refused once it grows past the limit."""
        if len(self.lines) == MAX_JUDGE_RULES:
            raise ConstraintError(
                f"grammar too large to check outputs against: more than {MAX_JUDGE_RULES} "
                "rules once groups and repetitions are spelled out "
                f"(limit MAX_JUDGE_RULES = {MAX_JUDGE_RULES})"
            )
        self.lines.append(line)

    def sequence(self, node: Node) -> str:
        items = node.items if isinstance(node, Sequence) else (node,)
        return self.joined([symbol for item in items for symbol in self.symbols(item)])

    def joined(self, symbols: list[str]) -> str:
        """The symbols as one alternative of at most ``_LONGEST`` symbols.

        Lark's grammar analysis takes time cubic in the length of an
        alternative (300 symbols: tens of seconds), so longer runs are split
        into helper rules of ``_LONGEST`` symbols, recursively.
        """
        while len(symbols) > _LONGEST:
            symbols = [
                self.helper(" ".join(symbols[at : at + _LONGEST]))
                for at in range(0, len(symbols), _LONGEST)
            ]
        return " ".join(symbols) or "()"

    def symbols(self, node: Node) -> list[str]:
        """Terminals and rule names that together stand for ``node``."""
        if isinstance(node, Text):
            return [f"/{_regex_char(ord(char))}/" for char in node.value]
        if isinstance(node, CharSet):
            return [_regex_class(node)]
        if isinstance(node, Ref):
            return [self.names[node.name]]
        if isinstance(node, Choice):
            return [self.helper(*(self.sequence(option) for option in node.options))]
        if isinstance(node, Sequence):
            return [self.helper(self.sequence(node))]
        return self.repeat(node)

    def symbol(self, node: Node) -> str:
        """One symbol standing for ``node``, so repetitions stay linear in size when nested."""
        found = self.symbols(node)
        return found[0] if len(found) == 1 else self.helper(self.joined(found))

    def repeat(self, node: Repeat) -> list[str]:
        item = self.symbol(node.item)
        required = self.exactly(item, node.low)
        if node.high is None:
            return [*required, self.helper("()", f"h{self._helpers} {item}")]
        return required + self.at_most(item, node.high - node.low)

    def exactly(self, item: str, count: int) -> list[str]:
        """Symbols matching exactly ``count`` copies of ``item``: blocks of 1, 2, 4, ...
        copies, one per bit of ``count``, so ``x{1000}`` takes 9 rules, not 125."""
        if count <= _LONGEST:
            return [item] * count
        blocks = self.doubling(item, count.bit_length())
        return [blocks[i] for i in range(count.bit_length()) if count >> i & 1]

    def doubling(self, item: str, size: int) -> list[str]:
        """``size`` blocks, the i-th matching 2**i copies of ``item``; shared by every
        repetition of the same item, so many ``x{1000}`` cost no more rules than one."""
        blocks = self._doublings.setdefault(item, [item])
        while len(blocks) < size:
            blocks.append(self.helper(f"{blocks[-1]} {blocks[-1]}"))
        return blocks

    def optional(self, symbol: str) -> str:
        if symbol not in self._optional:
            self._optional[symbol] = self.helper("()", symbol)
        return self._optional[symbol]

    def at_most(self, item: str, count: int) -> list[str]:
        """Symbols matching 0 to ``count`` copies of ``item``, in about 2 log2(count) rules.

        Optional blocks of 1, 2, 4, ... copies cover 0 to 2**k - 1 copies, each
        count in exactly one way, and one more optional block adds the rest.
        A rule per copy would cost Lark's grammar analysis a pass per rule;
        halving the count recursively would make parses hugely ambiguous.
        """
        if count == 0:
            return []
        bits = (count + 1).bit_length() - 1
        blocks = self.doubling(item, bits)
        optional = [self.optional(block) for block in blocks[:bits]]
        rest = count - (2**bits - 1)
        if rest:
            needed = [blocks[i] for i in range(rest.bit_length()) if rest >> i & 1]
            optional.append(self.helper("()", self.joined(needed)))
        return optional


def regex_text(text: str) -> str:
    """The body of a Lark ``/regex/`` literal that matches exactly ``text``."""
    return "".join(_regex_char(ord(char)) for char in text)


def _regex_char(code: int) -> str:
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    if char.isascii() and char.isprintable() and char != " ":
        return "\\" + char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _regex_class(node: CharSet) -> str:
    if not node.ranges:
        return "/[\\s\\S]/" if node.negated else _NOTHING
    body = "".join(
        _regex_char(low) if low == high else f"{_regex_char(low)}-{_regex_char(high)}"
        for low, high in node.ranges
    )
    return f"/[{'^' if node.negated else ''}{body}]/"
