"""TypeScript source to tokens, each with its line, column and the comments before it.

The comments travel with the token that follows them because JSDoc and
``//`` comments become ``description`` annotations: the parser decides
which declaration or member a comment belongs to by where it lies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grammar_compiler.errors import ConstraintError


@dataclass(frozen=True)
class Comment:
    text: str
    line: int
    end_line: int


@dataclass(frozen=True)
class Token:
    kind: str  # "name", "string", "number", "bigint", "punct", "template", "regex", "end"
    text: str
    line: int
    column: int
    value: Any = None
    comments: tuple[Comment, ...] = ()  # comments between the previous token and this one


_PUNCTUATION = (
    "...",
    "=>",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    ";",
    ",",
    ":",
    "?",
    "|",
    "&",
    "=",
    ".",
    "-",
    "+",
    "*",
    "@",
    "!",
    "/",  # the rest only in the statements the parser passes over (functions, classes)
    "%",
    "^",
    "~",
    "#",
)
_NAME = re.compile(r"(?:[^\W\d]|\$)[\w$\u200c\u200d]*")
"""An identifier: Unicode letters too (``名前``, ``naïve``), as TypeScript allows."""
_BEFORE_OPERAND = frozenset(
    {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw"}
    | {"instanceof", "yield", "await"}
)
"""Words after which an operand follows, so that a ``/`` starts a regex literal."""
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
)
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0\ufeff\u2028\u2029]+")
_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class _Tokenizer:
    def __init__(self, source: str) -> None:
        self.source = source
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.previous: tuple[str, str] = ("punct", ";")  # as if a statement just ended

    def error(self, message: str, pos: int | None = None) -> ConstraintError:
        pos = self.pos if pos is None else pos
        line = self.source.count("\n", 0, pos) + 1
        column = pos - (self.source.rfind("\n", 0, pos) + 1) + 1
        return ConstraintError(message, line=line, column=column)

    def tokens(self) -> Iterator[Token]:
        while True:
            comments = self._skip_space_and_comments()
            line, column = self.line, self.pos - self.line_start + 1
            if self.pos >= len(self.source):
                yield Token("end", "", line, column, comments=comments)
                return
            kind, text, value = self._token()
            self.previous = (kind, text)
            yield Token(kind, text, line, column, value, comments)

    def _regex_allowed(self) -> bool:
        """Whether a ``/`` here starts a regex literal (in code the parser passes
        over: ``const EMAIL = /^[^@]+@/``) rather than dividing: where an operand
        is expected, as JavaScript decides it."""
        kind, text = self.previous
        if kind == "punct":
            return text not in (")", "]")
        return kind == "name" and text in _BEFORE_OPERAND

    def _regex(self) -> str:
        """A regex literal's text: up to its closing ``/`` (not one in a class or
        escaped), with its flags."""
        start, source = self.pos, self.source
        at, in_class = start + 1, False
        while True:
            if at >= len(source) or source[at] == "\n":
                raise self.error("unterminated regular expression literal", start)
            char = source[at]
            if char == "\\":
                at += 2
                continue
            if char == "/" and not in_class:
                break
            in_class = (in_class or char == "[") and char != "]"
            at += 1
        flags = _NAME.match(source, at + 1)
        end = flags.end() if flags else at + 1
        self._advance(end)
        return source[start:end]

    def _advance(self, end: int) -> None:
        newlines = self.source.count("\n", self.pos, end)
        if newlines:
            self.line += newlines
            self.line_start = self.source.rfind("\n", self.pos, end) + 1
        self.pos = end

    def _skip_space_and_comments(self) -> tuple[Comment, ...]:
        comments = []
        while self.pos < len(self.source):
            space = _SPACE.match(self.source, self.pos)
            if space:
                self._advance(space.end())
            elif self.source.startswith("//", self.pos):
                end = self.source.find("\n", self.pos)
                end = len(self.source) if end < 0 else end
                text = self.source[self.pos + 2 : end].strip()
                comments.append(Comment(text, self.line, self.line))
                self._advance(end)
            elif self.source.startswith("/*", self.pos):
                end = self.source.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated comment")
                text = _comment_text(self.source[self.pos + 2 : end])
                line = self.line
                self._advance(end + 2)
                comments.append(Comment(text, line, self.line))
            else:
                break
        return tuple(comments)

    def _token(self) -> tuple[str, str, Any]:
        source, start = self.source, self.pos
        char = source[start]
        if char in "\"'":
            value = self._string(char)
            return "string", source[start : self.pos], value
        if char == "`":
            return "template", "", self._template()
        if char == "/" and self._regex_allowed():
            text = self._regex()
            return "regex", text, text
        found = _NAME.match(source, start) or (
            _NUMBER.match(source, start) if char.isdigit() or char == "." else None
        )
        if found and found.group():
            self._advance(found.end())
            text = found.group()
            if found.re is _NUMBER and source.startswith("n", self.pos):
                self._advance(self.pos + 1)  # 100n: a bigint literal
                return "bigint", text + "n", text + "n"
            if found.re is _NUMBER:
                value = _number_value(text)
                if value is None:
                    raise self.error(f"number {text} is out of range", start)
                return "number", text, value
            return "name", text, text
        for punct in _PUNCTUATION:
            if source.startswith(punct, start):
                self._advance(start + len(punct))
                return "punct", punct, punct
        raise self.error(f"unexpected character {char!r}")

    def _template(self) -> tuple[Any, ...]:
        """A template literal type's pieces: text, and each ``${}``'s tokens
        (ending with an ``end`` token at its ``}``), which the parser reads as a type."""
        start = self.pos
        self._advance(self.pos + 1)
        pieces: list[Any] = []
        text: list[str] = []
        while True:
            if self.pos >= len(self.source):
                raise self.error("unterminated template literal type", start)
            char = self.source[self.pos]
            if char == "`":
                self._advance(self.pos + 1)
                break
            if char == "\\":
                text.append(self._escape())
            elif self.source.startswith("${", self.pos):
                pieces.append("".join(text))
                text = []
                opened = self.pos
                self._advance(self.pos + 2)
                pieces.append(self._placeholder(opened))
            else:
                text.append(char)
                self._advance(self.pos + 1)
        pieces.append("".join(text))
        return tuple(pieces)

    def _placeholder(self, opened: int) -> tuple[Token, ...]:
        tokens: list[Token] = []
        depth = 0
        while True:
            comments = self._skip_space_and_comments()
            line, column = self.line, self.pos - self.line_start + 1
            if self.pos >= len(self.source):
                raise self.error("unterminated '${' in a template literal type", opened)
            if self.source[self.pos] == "}" and depth == 0:
                self._advance(self.pos + 1)
                return (*tokens, Token("end", "}", line, column, comments=comments))
            kind, text, value = self._token()
            depth += {"{": 1, "}": -1}.get(text, 0) if kind == "punct" else 0
            tokens.append(Token(kind, text, line, column, value, comments))

    def _string(self, quote: str) -> str:
        start = self.pos
        self.pos += 1
        parts = []
        while True:
            if self.pos >= len(self.source) or self.source[self.pos] == "\n":
                raise self.error("unterminated string literal", start)
            char = self.source[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(parts)
            if char == "\\":
                parts.append(self._escape())
            else:
                parts.append(char)
                self.pos += 1

    def _escape(self) -> str:
        start = self.pos
        code = self.source[self.pos + 1 : self.pos + 2]
        self.pos += 2
        if code in _STRING_ESCAPES:
            return _STRING_ESCAPES[code]
        if code in ("x", "u"):
            if code == "u" and self.source.startswith("{", self.pos):
                end = self.source.find("}", self.pos)
                digits, after = self.source[self.pos + 1 : end], end + 1
            else:
                width = 2 if code == "x" else 4
                digits, after = self.source[self.pos : self.pos + width], self.pos + width
            if (
                not digits
                or not re.fullmatch(r"[0-9a-fA-F]+", digits)
                or int(digits, 16) > 0x10FFFF
            ):
                raise self.error("invalid escape in string literal", start)
            self.pos = after
            return chr(int(digits, 16))
        if code == "\n":
            self._advance(self.pos)
            return ""
        return code


def _comment_text(body: str) -> str:
    """A block comment's text without the leading ``*`` of JSDoc lines."""
    lines = [re.sub(r"^\s*\*?\s?", "", line).rstrip() for line in body.strip("*").splitlines()]
    return "\n".join(lines).strip()


def _number_value(text: str) -> int | float | None:
    """The literal's value; None when it is out of range (``1e999``)."""
    text = text.replace("_", "")
    if text[:2].lower() in ("0x", "0b", "0o"):
        return int(text, 0)
    value = float(text)
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def tokenize(source: str) -> list[Token]:
    return list(_Tokenizer(source).tokens())


def describe(token: Token) -> str:
    """How an error message names a token: quoted, or "end of input"."""
    if token.kind == "end":
        return "end of input"
    return f"{token.text!r}"


def error_at(token: Token | None, message: str) -> ConstraintError:
    """A ``ConstraintError`` located at ``token`` (unlocated without one)."""
    if token is None:
        return ConstraintError(message)
    return ConstraintError(message, line=token.line, column=token.column)
