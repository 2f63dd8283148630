"""ABNF (RFC 5234, with RFC 7405's case-sensitive strings), as the RFCs write it.

The texts people most want a model to get exactly right — timestamps
(RFC 3339), URIs (RFC 3986), e-mail addresses (RFC 5322), HTTP fields — are
specified in ABNF, so pasting the standard's own rules is the surest way to
ask for them. They are read into the grammar tree (``cfg_tree``) the other
grammar languages use, so one writer gives xgrammar its EBNF and another the
judge its Lark grammar:

* ``name = elements`` defines a rule and ``name =/ elements`` adds
  alternatives to one; names are case-insensitive (``DIGIT`` is ``digit``);
  a rule goes on over the lines that follow it until the next ``name =``.
* ``/`` separates alternatives; elements side by side concatenate (the
  whitespace between them means nothing); ``( )`` groups, ``[ ]`` is
  optional; ``*x``, ``1*x``, ``2*4x``, ``3x`` repeat.
* ``"text"`` matches its ASCII letters in either case, as RFC 5234 says
  (``"T"`` is ``T`` or ``t``); ``%s"text"`` matches exactly and ``%i"text"``
  in either case (RFC 7405). ``%x41``, ``%d65``, ``%b1000001`` are one
  character, ``%x30-39`` a range, ``%x0D.0A`` a sequence.
* ``;`` starts a comment that runs to the end of the line.
* The core rules of RFC 5234's appendix B (``ALPHA``, ``DIGIT``,
  ``HEXDIG``, ``SP``, ``CRLF``, ``VCHAR``, ...) are there to use unless the
  grammar defines them itself.

The start rule is the first one. A ``<prose value>`` is refused: it is
English for a reader, not something a matcher can enforce. So are rules used
but never defined, anything over the ``cfg_tree`` limits, and a start rule
that matches no text, each with line and column.
"""

from __future__ import annotations

import re

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_reader import RuleLimits
from grammar_compiler.cfg_tree import (
    MAX_CODE_POINT,
    MAX_NESTING,
    MAX_REPEAT,
    SURROGATES,
    CharSet,
    Grammar,
    Node,
    Ref,
    Repeat,
    Text,
    caseless,
    check_output_size,
    check_size,
    check_unit_cycles,
    choice_of,
    productive_rules,
    references,
    sequence_of,
    unfinishable_message,
)
from grammar_compiler.code_points import minus
from grammar_compiler.tree_constraint import tree_constraint

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_REPEAT = re.compile(r"(\d*)\*(\d*)|(\d+)")
_DIGITS = {"x": "0123456789abcdefABCDEF", "d": "0123456789", "b": "01"}
_BASES = {"x": 16, "d": 10, "b": 2}
_CLOSERS = {"(": ")", "[": "]"}

CORE_RULES = """\
ALPHA = %x41-5A / %x61-7A
BIT = "0" / "1"
CHAR = %x01-7F
CR = %x0D
CRLF = CR LF
CTL = %x00-1F / %x7F
DIGIT = %x30-39
DQUOTE = %x22
HEXDIG = DIGIT / "A" / "B" / "C" / "D" / "E" / "F"
HTAB = %x09
LF = %x0A
LWSP = *(WSP / CRLF WSP)
OCTET = %x00-FF
SP = %x20
VCHAR = %x21-7E
WSP = SP / HTAB
"""
"""RFC 5234 appendix B.1, verbatim."""


def compile_abnf(text: str) -> CanonicalConstraint:
    """Validate an ABNF grammar; return its xgrammar EBNF and its Lark judge.

    Raises:
        ConstraintError: the grammar is invalid or over a limit, with line and column.
    """
    return tree_constraint(read_abnf(text), "abnf")


def read_abnf(text: str) -> Grammar:
    """The grammar tree of an ABNF text, with the core rules it uses added."""
    check_size(text)
    reader = _Reader(text)
    rules = reader.rules()
    start = next(iter(rules))
    core = _Reader(CORE_RULES).rules()
    wanted = [used for body in rules.values() for used in references(body)]
    while wanted:
        name = wanted.pop()
        if name not in rules and name in core:
            rules[name] = core[name]
            wanted.extend(references(core[name]))
    for body in rules.values():
        for used in references(body):
            if used not in rules:
                raise reader.error(
                    f"rule {reader.spelling[used]!r} is used but never defined", reader.uses[used]
                )
    grammar = Grammar(rules, start)
    if start not in productive_rules(grammar):
        raise reader.error(unfinishable_message(repr(start)), reader.rule_offsets[start])
    check_unit_cycles(grammar)
    check_output_size(grammar)
    return grammar


class _Reader(RuleLimits):
    """Reads rules at ``pos``, which only moves forward; names are kept lowercase."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        self.alternatives = 0
        self.rule_offsets: dict[str, int] = {}
        self.uses: dict[str, int] = {}
        self.spelling: dict[str, str] = {}

    def describe(self, name: str) -> str:
        return repr(self.spelling.get(name, name))

    def peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def skip_blank(self) -> None:
        """Skips whitespace, line breaks and ``;`` comments."""
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text[self.pos] == ";":
                while self.pos < len(text) and text[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                break

    # -- rules ------------------------------------------------------------------

    def rules(self) -> dict[str, Node]:
        rules: dict[str, Node] = {}
        self.skip_blank()
        if self.pos >= len(self.text):
            raise self.error("the grammar is empty: it defines no rule")
        while self.pos < len(self.text):
            offset = self.pos
            name = self._name()
            self.skip_blank()
            if self.peek() != "=":
                raise self.error(f"expected '=' after the rule name {self.describe(name)}")
            incremental = self.peek(1) == "/"
            self.pos += 2 if incremental else 1
            if incremental:
                if name not in rules:
                    raise self.error(
                        f"'=/' adds alternatives to {self.describe(name)}, "
                        "which is not defined above it",
                        offset,
                    )
                rules[name] = choice_of([rules[name], self.alternation()])
            else:
                self.admit_rule(rules, name, offset)
                rules[name] = self.alternation()
            self.skip_blank()
            if self.pos < len(self.text) and not self._rule_starts():
                raise self.error(f"unexpected {self.peek()!r}")
        return rules

    def _rule_starts(self) -> bool:
        """Whether ``name =`` (or ``name =/``) begins at ``pos``."""
        found = _NAME.match(self.text, self.pos)
        if found is None:
            return False
        saved = self.pos
        self.pos = found.end()
        try:
            self.skip_blank()
            return self.peek() == "="
        finally:
            self.pos = saved

    def _name(self) -> str:
        found = _NAME.match(self.text, self.pos)
        if found is None:
            raise self.error(f"expected a rule name (name = ...), found {self.peek()!r}")
        self.pos = found.end()
        name = found.group().lower()
        self.spelling.setdefault(name, found.group())
        return name

    # -- expressions --------------------------------------------------------------

    def alternation(self) -> Node:
        options = [self.concatenation()]
        while self.peek() == "/":
            self.add_alternative()
            self.pos += 1
            options.append(self.concatenation())
        return choice_of(options)

    def concatenation(self) -> Node:
        start = self.pos
        items: list[Node] = []
        while True:
            self.skip_blank()
            if self.pos >= len(self.text) or self.peek() in "/)]" or self._rule_starts():
                break
            items.append(self.repetition())
        if not items:
            raise self.error("expected something to match here", start)
        return sequence_of(items)

    def repetition(self) -> Node:
        offset = self.pos
        found = _REPEAT.match(self.text, self.pos)
        if found is None:
            return self.element()
        self.pos = found.end()
        low_text, high_text, exact = found.groups()
        if exact is not None:
            low = high = self._count(exact, offset)
        else:
            low = self._count(low_text, offset) if low_text else 0
            high = self._count(high_text, offset) if high_text else None
        if high is not None and high < low:
            raise self.error(f"repetition {low}*{high} has its bounds reversed", offset)
        if self.peek().isspace() or not self.peek():
            raise self.error("a repetition count must touch the element it repeats", offset)
        if high == 0 and self.peek() == "<" and ">" in self.text[self.pos :]:
            self.pos = self.text.index(">", self.pos) + 1  # RFC 3986's 0<pchar>: nothing
            return Text("")
        return Repeat(self.element(), low, high)

    def _count(self, digits: str, offset: int) -> int:
        value = int(digits)
        if value > MAX_REPEAT:
            raise self.error(f"repetition count {value} above MAX_REPEAT = {MAX_REPEAT}", offset)
        return value

    def element(self) -> Node:
        char = self.peek()
        if char in _CLOSERS:
            return self._group(char)
        if char == '"':
            return caseless(self._quoted())
        if char == "%":
            return self._percent()
        if char == "<":
            end = self.text.find(">", self.pos)
            shown = self.text[self.pos : end + 1] if end >= 0 else "<"
            raise self.error(f"prose value {shown!r} describes text in English; write it as rules")
        offset = self.pos
        found = _NAME.match(self.text, self.pos)
        if found is None:
            raise self.error(f"unexpected {char!r}")
        name = self._name()
        self.uses.setdefault(name, offset)
        return Ref(name)

    def _group(self, opener: str) -> Node:
        opening = self.pos
        if self.depth == MAX_NESTING:
            raise self.error(f"groups nested too deeply (limit MAX_NESTING = {MAX_NESTING})")
        self.depth += 1
        self.pos += 1
        self.skip_blank()
        body = self.alternation()
        self.skip_blank()
        closer = _CLOSERS[opener]
        if self.peek() != closer:
            raise self.error(f"{opener!r} is never closed with {closer!r}", opening)
        self.pos += 1
        self.depth -= 1
        return Repeat(body, 0, 1) if opener == "[" else body

    def _quoted(self) -> str:
        opening = self.pos
        end = self.text.find('"', self.pos + 1)
        line_end = min(
            (
                at
                for at in (self.text.find("\n", opening), self.text.find("\r", opening))
                if at >= 0
            ),
            default=len(self.text),
        )
        if end < 0 or end > line_end:
            raise self.error("string is not closed on the line it starts", opening)
        self.pos = end + 1
        return self.text[opening + 1 : end]

    def _percent(self) -> Node:
        opening = self.pos
        kind = self.peek(1).lower()
        if kind in ("s", "i") and self.peek(2) == '"':
            self.pos += 2
            text = self._quoted()
            return Text(text) if kind == "s" else caseless(text)
        if kind not in _BASES:
            raise self.error('expected %x, %d, %b, %s"..." or %i"..."', opening)
        self.pos += 2
        first = self._number(kind, opening)
        if self.peek() == "-":
            self.pos += 1
            last = self._number(kind, opening)
            if last < first:
                raise self.error("character range is out of order", opening)
            return CharSet(minus(((first, last),), (SURROGATES,)))
        codes = [first]
        while self.peek() == ".":
            self.pos += 1
            codes.append(self._number(kind, opening))
        for code in codes:
            if SURROGATES[0] <= code <= SURROGATES[1]:
                raise self.error("a surrogate code point cannot occur in text", opening)
        return Text("".join(map(chr, codes)))

    def _number(self, kind: str, opening: int) -> int:
        start = self.pos
        while self.peek() and self.peek() in _DIGITS[kind]:
            self.pos += 1
        if start == self.pos:
            raise self.error(f"expected digits after '%{kind}'", opening)
        value = int(self.text[start : self.pos], _BASES[kind])
        if value > MAX_CODE_POINT:
            raise self.error("a character beyond U+10FFFF", opening)
        return value
