"""What the two ``::=`` languages (the BNF dialect and GBNF) have in common, read once.

Both write ``name ::= alternatives`` rules made of strings, character classes,
groups and quantifiers; they differ in how names look, which comments exist,
whether whitespace means anything, and what an undefined name is. A
``RuleReader`` subclass supplies those answers, and this module does the
character-level work and every check that locates a mistake by line and
column, so both languages report the same mistakes the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from grammar_compiler.cfg_tree import (
    MAX_ALTERNATIVES,
    MAX_CODE_POINT,
    MAX_NESTING,
    MAX_REPEAT,
    MAX_RULES,
    SURROGATES,
    CharSet,
    Node,
    Repeat,
    Text,
    choice_of,
    line_column,
    merge_ranges,
    sequence_of,
)
from grammar_compiler.errors import ConstraintError

_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'"}
_CLASS_ESCAPES = {**_SIMPLE_ESCAPES, "[": "[", "]": "]", "-": "-", "^": "^"}
_HEX_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}
_SURROGATE = "a surrogate code point cannot occur in text"


class EscapeError(ConstraintError):
    """A backslash escape that is not one: unknown, short of digits, or past U+10FFFF."""


class RuleLimits:
    """The checks a reader of ``name ::= ...`` or ``name = ... ;`` rules makes as
    it goes (here and in ``iso_ebnf``), so every language reports them alike."""

    text: str
    pos: int
    rule_offsets: dict[str, int]
    alternatives: int

    def error(self, message: str, offset: int | None = None) -> ConstraintError:
        """The error at ``offset`` (at ``pos`` if None), with its line and column."""
        line, column = line_column(self.text, self.pos if offset is None else offset)
        return ConstraintError(message, line=line, column=column)

    def describe(self, name: str) -> str:
        """A rule name as users write it, for messages."""
        return repr(name)

    def admit_rule(self, rules: dict[str, Node], name: str, offset: int) -> None:
        """Checks a rule about to be read at ``offset`` and notes where it starts.

        Raises:
            ConstraintError: the name is defined already, or rules are over the limit.
        """
        if name in rules:
            first, _ = line_column(self.text, self.rule_offsets[name])
            raise self.error(
                f"rule {self.describe(name)} is defined twice (first at line {first}); "
                "join its alternatives with '|' in one rule",
                offset,
            )
        if len(rules) == MAX_RULES:
            raise self.error(f"too many rules (limit MAX_RULES = {MAX_RULES})", offset)
        self.rule_offsets[name] = offset
        self.alternatives = 1

    def add_alternative(self) -> None:
        """Counts one more alternative in the rule being read, within the limit."""
        if self.alternatives == MAX_ALTERNATIVES:
            raise self.error(
                f"too many alternatives in one rule (limit MAX_ALTERNATIVES = {MAX_ALTERNATIVES})"
            )
        self.alternatives += 1


class RuleReader(RuleLimits):
    """Reads ``name ::= ...`` rules; subclasses define names, comments and spacing.

    ``pos`` only moves forward; errors are raised where the text stops making
    sense, with the offset of the construct that was not finished (the
    opening quote of an unterminated string, the ``(`` that is never closed).
    """

    QUOTES = '"'
    RULE_EXAMPLE = "name ::= ..."
    COMMENTS: tuple[str, ...] = ("#",)
    EMPTY_CLASS_ALLOWED = True
    ESCAPES = True
    """Whether a backslash in a string or class starts an escape (classic BNF has none)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._depth = 0
        self.alternatives = 0
        self.rule_offsets: dict[str, int] = {}

    # -- hooks for the languages ------------------------------------------------

    def rule_name_at(self, offset: int) -> tuple[str, int] | None:
        """The rule name starting at ``offset`` and the offset after it, if one does."""
        raise NotImplementedError

    def symbol(self) -> Node:
        """Reads a rule reference (or other language-specific element) at ``pos``."""
        raise NotImplementedError

    def separator(self) -> tuple[Node, ...]:
        """What whitespace between two items of a sequence stands for."""
        return ()

    def skip_blank_before_quantifier(self) -> None:
        """Languages whose tokens may be spaced apart skip blanks here."""

    def empty_group(self, offset: int) -> Node:
        return Text("")

    def on_hex_escape(self, offset: int, letter: str, digits: str) -> None:
        """Called for each ``\\x``, ``\\u`` and ``\\U`` escape read."""

    def sequence_ends(self) -> bool:
        """Whether the sequence being read ends at ``pos``."""
        return self.at_end() or self.peek() in "|)" or self.rule_start_at(self.pos)

    def skip_rule_end(self) -> None:
        """Languages that may close a rule with a mark (``;``) skip it here."""

    # -- positions and errors ---------------------------------------------------

    def escape_error(self, message: str, offset: int) -> EscapeError:
        line, column = line_column(self.text, offset)
        return EscapeError(message, line=line, column=column)

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self, offset: int | None = None) -> str:
        at = self.pos if offset is None else offset
        return self.text[at] if at < len(self.text) else ""

    def skip_blank(self) -> bool:
        """Skips whitespace and comments; whether there was any."""
        start = self.pos
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text.startswith("/*", self.pos) and "/*" in self.COMMENTS:
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("comment '/*' is never closed with '*/'")
                self.pos = end + 2
            elif any(text.startswith(mark, self.pos) for mark in self.COMMENTS if mark != "/*"):
                while self.pos < len(text) and text[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                break
        return self.pos > start

    def rule_start_at(self, offset: int) -> bool:
        """Whether a new rule (``name ::=``) begins at ``offset``."""
        found = self.rule_name_at(offset)
        if found is None:
            return False
        saved = self.pos
        self.pos = found[1]
        try:
            self.skip_blank()
            return self.text.startswith("::=", self.pos)
        finally:
            self.pos = saved

    # -- the grammar ------------------------------------------------------------

    def rules(self) -> dict[str, Node]:
        """Every rule in the text, in order, each checked against the limits."""
        rules: dict[str, Node] = {}
        self.skip_blank()
        if self.at_end():
            raise self.error("the grammar is empty: it defines no rule")
        while not self.at_end():
            name, offset = self._rule_head()
            self.admit_rule(rules, name, offset)
            rules[name] = self.choice("'::='")
            self.skip_rule_end()
            self.skip_blank()
            if not self.at_end():
                if self.peek() == ")":
                    raise self.error("')' has no matching '('")
                if not self.rule_start_at(self.pos):
                    raise self.error(f"unexpected {self.peek()!r}")
        return rules

    def _rule_head(self) -> tuple[str, int]:
        offset = self.pos
        found = self.rule_name_at(offset)
        if found is None:
            raise self.error(f"expected a rule ({self.RULE_EXAMPLE}), found {self.peek()!r}")
        name, self.pos = found
        self.skip_blank()
        if not self.text.startswith("::=", self.pos):
            raise self.error(f"expected '::=' after {self.describe(name)}")
        self.pos += 3
        return name, offset

    # -- expressions --------------------------------------------------------------

    def choice(self, after: str) -> Node:
        options = [self.sequence(after)]
        while self.peek() == "|":
            self.add_alternative()
            self.pos += 1
            options.append(self.sequence("'|'"))
        return choice_of(options)

    def sequence(self, after: str) -> Node:
        begin = self.pos
        items: list[Node] = []
        spaced_before: list[bool] = []
        while True:
            spaced = self.skip_blank()
            if self.sequence_ends():
                break
            start = self.pos
            items.append(self.quantified(self.element(), start))
            spaced_before.append(spaced)
        if not items:
            return self.empty_alternative(begin, after)
        return sequence_of(self.joined(items, spaced_before))

    def joined(self, items: list[Node], spaced_before: list[bool]) -> list[Node]:
        """A sequence's items with what the whitespace between them stands for."""
        joined: list[Node] = []
        for index, item in enumerate(items):
            if index and spaced_before[index]:
                joined.extend(self.separator())
            joined.append(item)
        return joined

    def empty_alternative(self, offset: int, after: str) -> Node:
        """An alternative with nothing in it, which began at ``offset``."""
        bar = after == "'|'" or self.peek() == "|"
        hint = ' (write "" for the empty string)' if bar else ""
        raise self.error(f"expected something to match after {after}{hint}")

    def element(self) -> Node:
        char = self.peek()
        if char == "(":
            return self.group()
        if char in self.QUOTES:
            return Text(self.string())
        if char == "[":
            return self.char_class()
        if char in _QUANTIFIERS or char == "{":
            raise self.error(f"{char!r} must directly follow the symbol it repeats")
        return self.symbol()

    def group(self, closer: str = ")") -> Node:
        """The choice between the bracket at ``pos`` and its ``closer``."""
        opening = self.pos
        bracket = self.peek()
        if self._depth == MAX_NESTING:
            raise self.error(f"groups nested too deeply (limit MAX_NESTING = {MAX_NESTING})")
        self._depth += 1
        self.pos += 1
        self.skip_blank()
        if self.peek() == closer:
            self.pos += 1
            self._depth -= 1
            return self.empty_group(opening)
        body = self.choice(f"{bracket!r}")
        if self.peek() != closer:
            raise self.error(f"{bracket!r} is never closed", opening)
        self.pos += 1
        self._depth -= 1
        return body

    def attempt(self, read: Callable[[], Node]) -> Node | ConstraintError:
        """What ``read`` returns, or its error with the reader put back as it was.

        For a construct with two readings (the BNF dialect's ``[...]``: an
        optional group or a character class), so the second can be tried.
        """
        saved = (self.pos, self._depth, self.alternatives)
        try:
            return read()
        except ConstraintError as error:
            self.pos, self._depth, self.alternatives = saved
            return error

    def quantified(self, item: Node, start: int) -> Node:
        self.skip_blank_before_quantifier()
        char = self.peek()
        if char and char in _QUANTIFIERS:
            self.pos += 1
            low, high = _QUANTIFIERS[char]
            return Repeat(item, low, high)
        if char == "{":
            return self._counted(item)
        return item

    def _counted(self, item: Node) -> Node:
        opening = self.pos
        self.pos += 1
        low = self._count(opening)
        high: int | None = low
        self._skip_spaces()
        if self.peek() == ",":
            self.pos += 1
            self._skip_spaces()
            high = None if self.peek() == "}" else self._count(opening)
        self._skip_spaces()
        if self.peek() != "}":
            raise self.error("expected '}' to close the repetition count", opening)
        self.pos += 1
        if high is not None and high < low:
            raise self.error(f"repetition {{{low},{high}}} has its bounds reversed", opening)
        return Repeat(item, low, high)

    def _count(self, opening: int) -> int:
        self._skip_spaces()
        start = self.pos
        while self.peek().isdigit() and self.peek().isascii():
            self.pos += 1
        if start == self.pos:
            raise self.error("expected a number in the repetition count '{m,n}'")
        value = int(self.text[start : self.pos])
        if value > MAX_REPEAT:
            raise self.error(f"repetition count {value} above MAX_REPEAT = {MAX_REPEAT}", opening)
        return value

    def _skip_spaces(self) -> None:
        while self.peek() in (" ", "\t"):
            self.pos += 1

    # -- strings and classes ------------------------------------------------------

    def string(self) -> str:
        opening = self.pos
        quote = self.text[opening]
        self.pos += 1
        chars: list[str] = []
        while True:
            char = self.peek()
            if char in ("", "\r", "\n"):
                raise self.error("string is not closed on the line it starts", opening)
            if char == quote:
                self.pos += 1
                return "".join(chars)
            chars.append(self._character(_SIMPLE_ESCAPES))

    def char_class(self) -> CharSet:
        opening = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if self.peek() in ("", "\r", "\n"):
                raise self.error("character class is not closed on the line it starts", opening)
            range_start = self.pos
            low = ord(self._character(_CLASS_ESCAPES))
            high = low
            if self.peek() == "-" and self.peek(self.pos + 1) not in ("]", "", "\r", "\n"):
                self.pos += 1
                high = ord(self._character(_CLASS_ESCAPES))
                if high < low:
                    raise self.error("character range is out of order", range_start)
            ranges.append((low, high))
        self.pos += 1
        if not ranges and not negated and not self.EMPTY_CLASS_ALLOWED:
            raise self.error("character class '[]' matches no character", opening)
        return CharSet(merge_ranges(ranges), negated)

    def _character(self, escapes: dict[str, str]) -> str:
        """One character of a string or class, escapes decoded."""
        start = self.pos
        char = self.text[start]
        if char != "\\" or not self.ESCAPES:
            self.pos += 1
            return _checked(self, char, start)
        letter = self.peek(start + 1)
        if letter in escapes:
            self.pos += 2
            return escapes[letter]
        width = _HEX_ESCAPE_DIGITS.get(letter)
        if width is None:
            shown = "\\" + letter if letter else "\\"
            raise self.escape_error(f"unsupported escape {shown!r}", start)
        digits = self.text[start + 2 : start + 2 + width]
        if len(digits) != width or not set(digits) <= _HEX_DIGITS:
            raise self.escape_error(f"escape '\\{letter}' needs exactly {width} hex digits", start)
        code = int(digits, 16)
        if code > MAX_CODE_POINT:
            raise self.escape_error(f"escape '\\{letter}{digits}' is beyond U+10FFFF", start)
        if SURROGATES[0] <= code <= SURROGATES[1]:
            raise self.escape_error(_SURROGATE, start)
        self.on_hex_escape(start, letter, digits)
        self.pos = start + 2 + width
        return chr(code)


def _checked(reader: RuleReader, char: str, offset: int) -> str:
    if SURROGATES[0] <= ord(char) <= SURROGATES[1]:
        raise reader.error(_SURROGATE, offset)
    return char
