"""The constant expressions of enum members: ``Read = 1 << 0``, ``All = Read | Write``.

TypeScript evaluates an enum member's initializer when it is a constant
expression: number and string literals, earlier members (``Read``,
``Perm.Read``), members of enums declared before (``Other.X``), parentheses,
the unary ``+ - ~`` and the binary ``** * / % + - << >> >>> & ^ |``, with
JavaScript's arithmetic (bitwise operators on 32-bit integers, ``+`` joining
strings). Flag enums are written this way. Anything else (a call, a
variable) is computed when the program runs and refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from grammar_compiler.errors import ConstraintError

if TYPE_CHECKING:
    from grammar_compiler.typescript.parser import _Parser

_BINARY: dict[str, tuple[int, Callable[[Any, Any], Any]]] = {}
"""Operator -> (precedence, function), filled below."""


def _int32(value: float) -> int:
    value = int(value) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("not a number")
    return value


def _plus(a: Any, b: Any) -> Any:
    if isinstance(a, str) or isinstance(b, str):
        return _text(a) + _text(b)
    return _number(a) + _number(b)


def _text(value: Any) -> str:
    """A value as JavaScript's ``+`` writes it into a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_BINARY.update(
    {
        "|": (1, lambda a, b: _int32(_number(a)) | _int32(_number(b))),
        "^": (2, lambda a, b: _int32(_number(a)) ^ _int32(_number(b))),
        "&": (3, lambda a, b: _int32(_number(a)) & _int32(_number(b))),
        "<<": (4, lambda a, b: _int32(_int32(_number(a)) << (_int32(_number(b)) & 31))),
        ">>": (4, lambda a, b: _int32(_number(a)) >> (_int32(_number(b)) & 31)),
        ">>>": (4, lambda a, b: (_int32(_number(a)) & 0xFFFFFFFF) >> (_int32(_number(b)) & 31)),
        "+": (5, _plus),
        "-": (5, lambda a, b: _number(a) - _number(b)),
        "*": (6, lambda a, b: _number(a) * _number(b)),
        "/": (6, lambda a, b: _number(a) / _number(b)),
        "%": (6, lambda a, b: math.fmod(_number(a), _number(b))),
        "**": (7, lambda a, b: _number(a) ** _number(b)),
    }
)
_SPELLINGS = {op[:n] for op in _BINARY for n in range(1, len(op) + 1)}
"""Every operator and its beginnings, to read one spelled over several tokens."""
_UNARY = {
    "-": lambda a: -_number(a),
    "+": lambda a: _number(a),
    "~": lambda a: ~_int32(_number(a)),
}


def enum_value(
    parser: _Parser, enum: str, earlier: Mapping[str, Any], enums: Mapping[str, Mapping[str, Any]]
) -> Any:
    """The value of the initializer from here to the member's ``,`` or ``}``.

    Raises:
        UnsupportedConstruct: the initializer is not a constant expression.
    """
    start = parser.token
    try:
        value = _Evaluator(parser, enum, earlier, enums).expression(0)
        if not parser.at(",", "}"):
            raise ValueError("more follows")
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, ConstraintError):
        raise parser.unsupported(
            "computed enum member (give a constant: literals, earlier members, arithmetic)",
            start,
        ) from None
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise parser.unsupported("enum member that is not a finite number", start)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _Evaluator:
    def __init__(
        self,
        parser: _Parser,
        enum: str,
        earlier: Mapping[str, Any],
        enums: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.parser = parser
        self.enum = enum
        self.earlier = earlier
        self.enums = enums

    def expression(self, least: int) -> Any:
        value = self._operand()
        while True:
            operator, width = self._operator()
            entry = _BINARY.get(operator)
            if entry is None or entry[0] < least:
                return value
            for _ in range(width):
                self.parser.advance()
            # ** groups to the right; the others to the left
            right = self.expression(entry[0] if operator == "**" else entry[0] + 1)
            value = entry[1](value, right)

    def _operator(self) -> tuple[str, int]:
        """The operator here and how many tokens spell it: the tokenizer, made for
        types, writes ``<<``, ``>>``, ``>>>`` and ``**`` one character a token."""
        tokens = self.parser.tokens[self.parser.index : self.parser.index + 3]
        text, width = "", 0
        for token in tokens:
            follows = width == 0 or (
                token.line == tokens[width - 1].line
                and token.column == tokens[width - 1].column + 1
            )
            if token.kind != "punct" or not follows or (text + token.text) not in _SPELLINGS:
                break
            text, width = text + token.text, width + 1
        return text, width

    def _operand(self) -> Any:
        parser = self.parser
        token = parser.token
        if token.kind == "punct" and token.text in _UNARY:
            parser.advance()
            return _UNARY[token.text](self._operand())
        if parser.accept("("):
            value = self.expression(0)
            parser.expect(")")
            return value
        if token.kind in ("number", "string"):
            parser.advance()
            return token.value
        if token.kind == "template" and all(isinstance(p, str) for p in token.value):
            parser.advance()
            return "".join(token.value)
        if token.kind == "name":
            return self._member()
        raise ValueError("not a constant")

    def _member(self) -> Any:
        """``A`` (an earlier member), ``Enum.A`` or ``Other.A`` (a member of an enum before)."""
        parser = self.parser
        name = parser.advance().text
        if not parser.accept("."):
            if name in self.earlier:
                return self.earlier[name]
            raise ValueError("not a member")
        member = parser.name("a member name").text
        values = self.earlier if name == self.enum else self.enums.get(name)
        if values is None or member not in values:
            raise ValueError("not a member")
        return values[member]
