r"""llguidance's ``&`` (and) and ``~`` (not) in a Lark terminal, computed into one regex.

``NAME: /[a-z]+/ & ~/(if|else)/`` is a name that is no keyword;
``LINES: /[a-z \n]*/ & ~/(?s:.*)\n\n(?s:.*)/`` lines without an empty one.
Lark has neither operator, so the terminal is worked out here and written
as one regex that Lark's lexer (the judge) and the translation both read:

* the definition is read as llguidance reads it: operands are string and
  regex literals and terminals defined as one (resolved by the caller),
  parentheses group, ``&`` binds tighter than ``|``, prefix ``~`` tighter
  still. A sequence or a count of operands is refused (write it inside one
  regex), so ``~`` never meets Lark's own ``item ~ 3`` count;
* each operand is a regex tree with Python's meaning (``regex.python_node``:
  ``\w``, ``\d`` and ``\s`` ASCII, as the judge reads every terminal) and
  the operators are automata (``regex_automaton``): ``A & B`` the texts both
  match, ``~A`` the texts ``A`` does not match among all texts of Unicode
  scalar values (llguidance also lets its negation take invalid UTF-8,
  which text outputs never hold).

The regex written back states the language itself, and the judge takes its
longest match first (``bounded_regex.LarkTerminals``), so the judge and the
grammar agree on every length; the tests check the regex against the
operands read by Python's ``re``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from grammar_compiler.code_points import SCALAR_VALUES
from grammar_compiler.errors import ConstraintError
from grammar_compiler.regex import python_node
from grammar_compiler.regex_automaton import TooComplex, difference, intersection
from grammar_compiler.regex_emit import REGEX_SYNTAX, Alt, Chars, Node, Repeat, emit

LITERAL = re.compile(r'"(?:\\"|\\\\|[^"\n])*"i?|/(?!/)(?:\\/|\\\\|[^/\n])*?/[a-z]*')
"""A Lark string or regex literal (one line), as Lark's own tokens spell them."""
_NAME = re.compile(r"_?[A-Za-z][A-Za-z0-9_]*")
_ANYTHING = Repeat(Chars(SCALAR_VALUES), 0, None)
_SIGN = re.compile(r"&|~[ \t]*[/\"(A-Za-z_]")
MAX_NESTING = 32
"""Parentheses and ``~`` one inside another that one definition may hold."""


class AlgebraError(ValueError):
    """A terminal definition this module refuses, and the offset in it where."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def outside_literals(line: str) -> Iterator[int]:
    """The offsets of ``line`` that are not inside a string or regex literal."""
    index = 0
    while index < len(line):
        if literal := LITERAL.match(line, index):
            index = literal.end()
        else:
            yield index
            index += 1


def uses_algebra(body: str) -> bool:
    """Whether a terminal's definition (one line) uses ``&`` or prefix ``~``
    outside its literals."""
    return any(_SIGN.match(body, index) for index in outside_literals(body))


def combined_regex(body: str, operand: Callable[[str, int], str]) -> str:
    """The body of one Lark ``/regex/`` literal matching what the definition does.

    ``operand(word, offset)`` gives the regex of a literal or terminal name.

    Raises:
        AlgebraError: the definition is malformed, refused, matches nothing,
            or its automata grow past their limits.
    """
    reader = _Reader(body, operand)
    node = reader.alternatives()
    reader.skip_space()
    if reader.index < len(body):
        raise AlgebraError(
            "with & and ~ a terminal's operands are joined by &, | and ~ only; write a "
            "sequence or a count inside one regex (/ab+/)",
            reader.index,
        )
    if node is None:
        raise AlgebraError("the terminal matches no text", 0)
    return emit(node, REGEX_SYNTAX).replace("/", "\\/")


class _Reader:
    """Recursive descent over one definition; ``None`` stands for no text at all."""

    def __init__(self, body: str, operand: Callable[[str, int], str]) -> None:
        self.body = body
        self.operand = operand
        self.index = 0
        self.depth = 0

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise AlgebraError(
                f"the terminal nests parentheses and ~ more than {MAX_NESTING} deep", self.index
            )

    def skip_space(self) -> None:
        while self.index < len(self.body) and self.body[self.index] in " \t":
            self.index += 1

    def take(self, sign: str) -> bool:
        self.skip_space()
        if self.body.startswith(sign, self.index):
            self.index += len(sign)
            return True
        return False

    def alternatives(self) -> Node | None:
        options = [self.conjunction()]
        while self.take("|"):
            options.append(self.conjunction())
        kept = tuple(option for option in options if option is not None)
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else Alt(kept)

    def conjunction(self) -> Node | None:
        result = self.negation()
        while self.take("&"):
            at = self.index
            other = self.negation()
            if result is not None and other is not None:
                result = _computed(intersection, result, other, at)
            else:
                result = None
        return result

    def negation(self) -> Node | None:
        at = self.index
        if self.take("~"):
            self.nested()
            operand = self.negation()
            self.depth -= 1
            return _ANYTHING if operand is None else _computed(difference, _ANYTHING, operand, at)
        return self.operand_node()

    def operand_node(self) -> Node | None:
        if self.take("("):
            self.nested()
            inner = self.alternatives()
            if not self.take(")"):
                raise AlgebraError("missing ')'", self.index)
            self.depth -= 1
            return inner
        self.skip_space()
        word = LITERAL.match(self.body, self.index) or _NAME.match(self.body, self.index)
        if word is None:
            raise AlgebraError("expected a string, a regex, a terminal name, ~ or (", self.index)
        regex = self.operand(word.group(), self.index)
        self.index = word.end()
        try:
            return python_node(regex)
        except ConstraintError as error:
            raise AlgebraError(f"{word.group()}: {error.message}", word.start()) from None


def _computed(
    operation: Callable[[Node, Node], Node | None], first: Node, second: Node, at: int
) -> Node | None:
    try:
        return operation(first, second)
    except TooComplex as error:
        raise AlgebraError(f"the terminal's automaton grows too large: {error}", at) from None
