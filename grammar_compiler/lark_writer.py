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

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from grammar_compiler.canonical import Judge
from grammar_compiler.cfg_tree import (
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
    """The judge that accepts exactly what ``parser`` parses."""

    def judge(text: str) -> str | None:
        try:
            parser.parse(text)
        except UnexpectedInput as err:
            return _reason(err, text)
        except RecursionError:
            return "text too deeply nested for the judge to check"
        return None

    return judge


def _reason(err: UnexpectedInput, text: str) -> str:
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

    def rule(self, name: str, body: Node) -> None:
        options = body.options if isinstance(body, Choice) else (body,)
        self.lines.append(f"{name}: " + " | ".join(self.sequence(option) for option in options))

    def helper(self, *options: str) -> str:
        name = f"h{self._helpers}"
        self._helpers += 1
        self.lines.append(f"{name}: " + " | ".join(options))
        return name

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
        required = [item] * node.low
        if node.high is None:
            return [*required, self.helper("()", f"h{self._helpers} {item}")]
        return required + self.at_most(item, node.high - node.low)

    def at_most(self, item: str, count: int) -> list[str]:
        """Symbols matching 0 to ``count`` copies of ``item``, in about 2 log2(count) rules.

        Optional blocks of 1, 2, 4, ... copies cover 0 to 2**k - 1 copies, each
        count in exactly one way, and one more optional block adds the rest.
        A rule per copy would cost Lark's grammar analysis a pass per rule;
        halving the count recursively would make parses hugely ambiguous.
        """
        if count == 0:
            return []
        blocks = [item]  # blocks[i] matches 2**i copies
        bits = (count + 1).bit_length() - 1
        while len(blocks) < bits:
            blocks.append(self.helper(f"{blocks[-1]} {blocks[-1]}"))
        optional = [self.helper("()", block) for block in blocks[:bits]]
        rest = count - (2**bits - 1)
        if rest:
            needed = [blocks[i] for i in range(rest.bit_length()) if rest >> i & 1]
            optional.append(self.helper("()", self.joined(needed)))
        return optional


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
