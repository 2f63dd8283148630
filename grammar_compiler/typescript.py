"""TypeScript type definitions in, a JSON Schema (and xgrammar's form of it) out.

``/v1/completion/typed`` takes exported TypeScript declarations and the name
of one of them; the output must be JSON of that type. The declarations are
read by a small hand-written tokenizer and recursive-descent parser for the
part of TypeScript that describes JSON data, turned into a JSON Schema
(2020-12, one ``$defs`` entry per declaration, so recursive types work), and
compiled by :func:`compile_json_schema` in strict mode. Anything outside the
subset is refused with its line and column, naming the construct.

The subset:

* ``export type X = T;``, ``export interface X extends A, B { ... }``, the
  ``export type X { ... }`` form of the API documentation, ``export enum``
  (string and numeric members, auto-incremented) and ``export { X, Y }``.
  Declarations without ``export`` may be referenced; ``type_name`` must name
  an exported one.
* ``string``, ``number``, ``boolean``, ``null``, ``any``/``unknown`` (any
  JSON), ``object`` (object or array), ``Date`` (an ISO 8601 date-time
  string, as ``JSON.stringify`` writes it); string, number and boolean
  literal types; ``Enum.Member``.
* unions (a leading ``|`` allowed; unions of literals become ``enum``),
  intersections of object types (merged), parentheses.
* ``T[]``, ``readonly T[]``, ``Array<T>``, ``ReadonlyArray<T>``; tuples with
  optional (``T?``), named (``x: T``) and rest (``...T[]``) elements.
* object types: members separated by ``;``, ``,`` or line breaks, optional
  members (``x?: T``; ``| undefined`` is dropped there), ``readonly``,
  quoted names, index signatures ``[key: string]: T``. Objects are closed
  (``additionalProperties: false``) unless they have an index signature.
* ``Record<string, T>`` and ``Record<"a" | "b", T>``; ``Partial``,
  ``Required``, ``Readonly``, ``Pick`` and ``Omit`` of object types.
* ``/** JSDoc */`` and ``//`` comments before a declaration or member, or
  after a member on its line, become ``description``.

Refused, by name: type parameters and other generics, conditional,
mapped, indexed-access, ``keyof``/``typeof``, function and constructor
types, template literal types, ``bigint``, ``symbol``, ``undefined`` outside
optional members, ``void``/``never``, classes, namespaces, imports, values.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema import compile_json_schema

MAX_SOURCE_LENGTH = 256 * 1024
MAX_NESTING = 64
"""Nesting of type expressions (parentheses, objects, arrays, generics)."""


def compile_typescript(source: str, type_name: str, *, strict: bool = True) -> CanonicalConstraint:
    """Compile the declarations to the JSON Schema of ``type_name``, then for xgrammar.

    Raises:
        ConstraintError: a syntax error or unsupported construct (with line and
            column), an unknown ``type_name`` (listing the exported ones), or a
            type no JSON value has.
    """
    schema = typescript_to_json_schema(source, type_name)
    constraint = compile_json_schema(schema, strict=strict)
    return dataclasses.replace(constraint, source_language="typescript")


def typescript_to_json_schema(source: str, type_name: str) -> dict:
    """The JSON Schema (2020-12) of ``type_name``, for tests and debugging."""
    if not isinstance(source, str) or not isinstance(type_name, str):
        raise ConstraintError("TypeScript source and type_name must be strings")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ConstraintError(
            f"TypeScript source too long: {len(source)} characters (at most {MAX_SOURCE_LENGTH})"
        )
    declarations = _Parser(_tokenize(source)).declarations()
    try:
        return _SchemaBuilder(declarations).document(type_name)
    except RecursionError:  # a long chain of '&', extends or utility types
        raise ConstraintError("types refer to each other too deeply") from None


# ---------------------------------------------------------------------------
# Tokens


@dataclass(frozen=True)
class _Comment:
    text: str
    line: int
    end_line: int


@dataclass(frozen=True)
class _Token:
    kind: str  # "name", "string", "number", "punct", "template", "end"
    text: str
    line: int
    column: int
    value: Any = None
    comments: tuple[_Comment, ...] = ()  # comments between the previous token and this one


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
)
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
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

    def error(self, message: str, pos: int | None = None) -> ConstraintError:
        pos = self.pos if pos is None else pos
        line = self.source.count("\n", 0, pos) + 1
        column = pos - (self.source.rfind("\n", 0, pos) + 1) + 1
        return ConstraintError(message, line=line, column=column)

    def tokens(self) -> Iterator[_Token]:
        while True:
            comments = self._skip_space_and_comments()
            line, column = self.line, self.pos - self.line_start + 1
            if self.pos >= len(self.source):
                yield _Token("end", "", line, column, comments=comments)
                return
            kind, text, value = self._token()
            yield _Token(kind, text, line, column, value, comments)

    def _advance(self, end: int) -> None:
        newlines = self.source.count("\n", self.pos, end)
        if newlines:
            self.line += newlines
            self.line_start = self.source.rfind("\n", self.pos, end) + 1
        self.pos = end

    def _skip_space_and_comments(self) -> tuple[_Comment, ...]:
        comments = []
        while self.pos < len(self.source):
            space = _SPACE.match(self.source, self.pos)
            if space:
                self._advance(space.end())
            elif self.source.startswith("//", self.pos):
                end = self.source.find("\n", self.pos)
                end = len(self.source) if end < 0 else end
                text = self.source[self.pos + 2 : end].strip()
                comments.append(_Comment(text, self.line, self.line))
                self._advance(end)
            elif self.source.startswith("/*", self.pos):
                end = self.source.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated comment")
                text = _comment_text(self.source[self.pos + 2 : end])
                line = self.line
                self._advance(end + 2)
                comments.append(_Comment(text, line, self.line))
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
            raise self.error("unsupported construct 'template literal type'")
        found = _NAME.match(source, start) or (
            _NUMBER.match(source, start) if char.isdigit() or char == "." else None
        )
        if found and found.group():
            self._advance(found.end())
            text = found.group()
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


def _tokenize(source: str) -> list[_Token]:
    return list(_Tokenizer(source).tokens())


# ---------------------------------------------------------------------------
# Syntax tree


@dataclass(frozen=True)
class _Keyword:
    name: str  # string, number, boolean, null, any, unknown, object, undefined
    token: _Token | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Literal:
    value: Any


@dataclass(frozen=True)
class _Reference:
    name: str
    arguments: tuple[Any, ...]
    token: _Token
    member: str | None = None  # Enum.Member


@dataclass(frozen=True)
class _ArrayType:
    element: Any


@dataclass(frozen=True)
class _TupleElement:
    type: Any
    optional: bool = False
    rest: bool = False


@dataclass(frozen=True)
class _TupleType:
    elements: tuple[_TupleElement, ...]


@dataclass(frozen=True)
class _Member:
    name: str
    type: Any
    optional: bool
    description: str | None
    token: _Token


@dataclass(frozen=True)
class _ObjectType:
    members: tuple[_Member, ...]
    index: Any = None  # the value type of [key: string]: T


@dataclass(frozen=True)
class _Union:
    options: tuple[Any, ...]


@dataclass(frozen=True)
class _Intersection:
    parts: tuple[Any, ...]
    token: _Token


@dataclass
class _Declaration:
    name: str
    kind: str  # "type", "interface", "enum"
    token: _Token
    exported: bool = False
    body: Any = None  # a type; for enums the list of member values
    extends: tuple[_Reference, ...] = ()
    description: str | None = None
    members: dict[str, Any] = field(default_factory=dict)  # enum member values


# ---------------------------------------------------------------------------
# Parsing

_KEYWORD_TYPES = frozenset({"string", "number", "boolean", "any", "unknown", "object", "undefined"})
_REFUSED_TYPES = {
    "bigint": "bigint (not JSON-serializable)",
    "symbol": "symbol (not JSON-serializable)",
    "void": "void",
    "never": "never",
    "keyof": "keyof type operator",
    "typeof": "typeof type query",
    "infer": "infer (conditional types)",
    "unique": "unique symbol",
    "new": "constructor type",
    "asserts": "assertion signature",
}
_REFUSED_STATEMENTS = {
    "import": "import",
    "declare": "ambient declaration (declare)",
    "namespace": "namespace",
    "module": "module declaration",
    "class": "class",
    "abstract": "class",
    "function": "function",
    "const": "value declaration",
    "let": "value declaration",
    "var": "value declaration",
    "default": "export default",
    "@": "decorator",
    "*": "export * (re-export)",
}


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0

    # -- helpers ---------------------------------------------------------

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def peek(self, offset: int = 1) -> _Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("punct", "name") and self.token.text in texts

    def advance(self) -> _Token:
        token = self.token
        if token.kind != "end":
            self.index += 1
        return token

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> _Token:
        if not self.at(text):
            raise self.error(f"expected {what or repr(text)}, found {_describe(self.token)}")
        return self.advance()

    def name(self, what: str) -> _Token:
        if self.token.kind != "name":
            raise self.error(f"expected {what}, found {_describe(self.token)}")
        return self.advance()

    def error(self, message: str, token: _Token | None = None) -> ConstraintError:
        token = token or self.token
        return ConstraintError(message, line=token.line, column=token.column)

    def unsupported(self, construct: str, token: _Token | None = None) -> ConstraintError:
        return self.error(f"unsupported construct '{construct}'", token)

    def leading_description(self, token: _Token, previous: _Token | None) -> str | None:
        """The comments right above ``token`` (no blank line between), not after ``previous``."""
        block: list[str] = []
        next_line = token.line
        for comment in reversed(token.comments):
            if comment.end_line < next_line - 1 or (previous and comment.line <= previous.line):
                break
            block.insert(0, comment.text)
            next_line = comment.line
        return "\n".join(t for t in block if t) or None

    def trailing_description(self, last: _Token) -> str | None:
        """A comment after ``last`` on the same line (``x: string; // the x``)."""
        texts = [c.text for c in self.token.comments if c.line == last.line]
        return "\n".join(t for t in texts if t) or None

    # -- declarations ----------------------------------------------------

    def declarations(self) -> dict[str, _Declaration]:
        found: dict[str, _Declaration] = {}
        exported_names: list[_Token] = []
        while self.token.kind != "end":
            if self.accept(";"):
                continue
            start = self.token
            description = self.leading_description(start, None)
            exported = self.accept("export")
            if exported and self.at("{"):
                exported_names += self._export_list()
                continue
            declaration = self._declaration(start)
            declaration.exported = exported
            declaration.description = declaration.description or description
            if declaration.name in found:
                raise self.error(
                    f"duplicate declaration of {declaration.name!r}", declaration.token
                )
            found[declaration.name] = declaration
        for token in exported_names:
            if token.text not in found:
                raise self.error(f"export of undeclared type {token.text!r}", token)
            found[token.text].exported = True
        return found

    def _export_list(self) -> list[_Token]:
        self.expect("{")
        names = []
        while not self.accept("}"):
            names.append(self.name("a type name"))
            if self.at("as"):
                raise self.unsupported("export ... as (renaming)")
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        self.accept(";")
        return names

    def _declaration(self, start: _Token) -> _Declaration:
        keyword = self.token
        if self.at("type"):
            return self._type_alias()
        if self.at("interface"):
            return self._interface()
        if self.at("enum"):
            return self._enum()
        if self.at("const") and self.peek().text == "enum":
            self.advance()
            return self._enum()
        construct = _REFUSED_STATEMENTS.get(keyword.text)
        if construct:
            raise self.unsupported(construct, keyword)
        raise self.error(
            f"expected a declaration (type, interface or enum), found {_describe(keyword)}"
        )

    def _type_alias(self) -> _Declaration:
        self.expect("type")
        name = self.name("a type name")
        self._no_type_parameters()
        if self.at("{"):  # the documentation's "export type X { ... }"
            body = self._object()
        else:
            self.expect("=", "'=' or '{'")
            body = self.type()
        self._end_statement()
        return _Declaration(name.text, "type", name, body=body)

    def _interface(self) -> _Declaration:
        self.expect("interface")
        name = self.name("an interface name")
        self._no_type_parameters()
        extends: list[_Reference] = []
        if self.accept("extends"):
            while True:
                reference = self.primary()
                if not isinstance(reference, _Reference):
                    raise self.error("an interface can only extend named types", name)
                extends.append(reference)
                if not self.accept(","):
                    break
        body = self._object()
        return _Declaration(name.text, "interface", name, body=body, extends=tuple(extends))

    def _enum(self) -> _Declaration:
        self.expect("enum")
        name = self.name("an enum name")
        self.expect("{")
        members: dict[str, Any] = {}
        following: Any = 0
        while not self.accept("}"):
            member = self.token
            if member.kind not in ("name", "string"):
                raise self.error(f"expected an enum member, found {_describe(member)}")
            self.advance()
            if self.accept("="):
                value = self._enum_value()
            elif isinstance(following, int) and not isinstance(following, bool):
                value = following
            else:
                raise self.error("an enum member after a string member needs a value", member)
            if member.value in members:
                raise self.error(f"duplicate enum member {member.value!r}", member)
            members[member.value] = value
            following = value + 1 if isinstance(value, int) else None
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        return _Declaration(name.text, "enum", name, members=members)

    def _enum_value(self) -> Any:
        negative = self.accept("-")
        token = self.token
        if token.kind == "string" and not negative:
            self.advance()
            return token.value
        if token.kind == "number":
            self.advance()
            return -token.value if negative else token.value
        raise self.unsupported("computed enum member", token)

    def _no_type_parameters(self) -> None:
        if self.at("<"):
            raise self.unsupported("generic type parameters")

    def _end_statement(self) -> None:
        if self.accept(";") or self.token.kind == "end" or self.at("}"):
            return
        if self.token.line > self.tokens[self.index - 1].line:
            return
        raise self.error(f"expected ';' or a line break, found {_describe(self.token)}")

    # -- types -----------------------------------------------------------

    def type(self) -> Any:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"types nest deeper than {MAX_NESTING} levels")
        try:
            result = self._union()
            if self.at("extends"):
                raise self.unsupported("conditional type")
            return result
        finally:
            self.depth -= 1

    def _union(self) -> Any:
        self.accept("|")
        options = [self._intersection()]
        while self.accept("|"):
            options.append(self._intersection())
        return options[0] if len(options) == 1 else _Union(tuple(options))

    def _intersection(self) -> Any:
        start = self.token
        self.accept("&")
        parts = [self._postfix()]
        while self.accept("&"):
            parts.append(self._postfix())
        return parts[0] if len(parts) == 1 else _Intersection(tuple(parts), start)

    def _postfix(self) -> Any:
        if self.at("readonly"):
            token = self.advance()
            result = self._postfix()
            if not isinstance(result, (_ArrayType, _TupleType)):
                raise self.error("'readonly' applies only to array and tuple types", token)
            return result
        result = self.primary()
        while self.at("[") and self.token.line == self.tokens[self.index - 1].line:
            bracket = self.advance()
            if not self.accept("]"):
                raise self.unsupported("indexed access type", bracket)
            result = _ArrayType(result)
        return result

    def primary(self) -> Any:
        token = self.token
        if token.kind == "string":
            self.advance()
            return _Literal(token.value)
        if token.kind == "number":
            self.advance()
            return _Literal(token.value)
        if self.at("-") and self.peek().kind == "number":
            self.advance()
            return _Literal(-self.advance().value)
        if self.at("("):
            return self._parenthesized()
        if self.at("{"):
            return self._object()
        if self.at("["):
            return self._tuple()
        if token.kind == "name":
            return self._named()
        if self.at("<"):
            raise self.unsupported("generic function type")
        raise self.error(f"expected a type, found {_describe(token)}")

    def _parenthesized(self) -> Any:
        start = self.token
        if self._is_function_type():
            raise self.unsupported("function type", start)
        self.advance()
        inner = self.type()
        self.expect(")", "')'")
        return inner

    def _is_function_type(self) -> bool:
        """``(`` starts a function type when its matching ``)`` is followed by ``=>``."""
        depth, index = 0, self.index
        while index < len(self.tokens) and self.tokens[index].kind != "end":
            text = self.tokens[index].text
            if text in "([{" and self.tokens[index].kind == "punct":
                depth += 1
            elif text in ")]}" and self.tokens[index].kind == "punct":
                depth -= 1
                if depth == 0:
                    return self.tokens[min(index + 1, len(self.tokens) - 1)].text == "=>"
            index += 1
        return False

    def _named(self) -> Any:
        token = self.advance()
        name = token.text
        if name in ("true", "false"):
            return _Literal(name == "true")
        if name == "null":
            return _Literal(None)
        if name in _KEYWORD_TYPES:
            return _Keyword(name, token)
        if name in _REFUSED_TYPES:
            raise self.unsupported(_REFUSED_TYPES[name], token)
        if name == "readonly":
            raise self.error("'readonly' applies only to array and tuple types", token)
        member = None
        if self.accept("."):
            member = self.name("an enum member").text
            if self.at("."):
                raise self.unsupported("qualified name", token)
        arguments: tuple[Any, ...] = ()
        if self.accept("<"):
            self.depth += 1
            args = [self.type()]
            while self.accept(","):
                args.append(self.type())
            self.expect(">", "'>'")
            self.depth -= 1
            arguments = tuple(args)
        return _Reference(name, arguments, token, member)

    def _tuple(self) -> _TupleType:
        self.expect("[")
        elements: list[_TupleElement] = []
        seen_optional = False
        while not self.accept("]"):
            start = self.token
            element = self._tuple_element()
            if element.rest and not isinstance(element.type, _ArrayType):
                raise self.error("a tuple rest element must be an array type", start)
            if seen_optional and not element.optional and not element.rest:
                raise self.error("a required tuple element cannot follow an optional one", start)
            seen_optional = seen_optional or element.optional
            elements.append(element)
            if elements[-1].rest and not self.at("]"):
                raise self.unsupported("rest element before the end of a tuple", start)
            if not self.accept(","):
                self.expect("]", "',' or ']'")
                break
        return _TupleType(tuple(elements))

    def _tuple_element(self) -> _TupleElement:
        rest = self.accept("...")
        optional_name = False
        if self.token.kind == "name" and self._named_element():
            self.advance()
            optional_name = self.accept("?")
            self.expect(":")
        element_type = self.type()
        optional = optional_name or self.accept("?")
        return _TupleElement(element_type, optional, rest)

    def _named_element(self) -> bool:
        """``[x: T]`` or ``[x?: T]``, as opposed to ``[T]`` and ``[T?]``."""
        after = self.peek().text
        return after == ":" or (after == "?" and self.peek(2).text == ":")

    def _object(self) -> _ObjectType:
        self.expect("{")
        members: list[_Member] = []
        index_type = None
        previous = self.tokens[self.index - 1]
        while not self.at("}"):
            description = self.leading_description(self.token, previous)
            is_member = not self.at("[")
            if is_member:
                members.append(self._member(description))
            else:
                index_type = self._index_signature(index_type)
            last = self.tokens[self.index - 1]
            separated = self.accept(";") or self.accept(",")
            if not separated and not self.at("}") and self.token.line == last.line:
                raise self.error(
                    f"expected ';', ',' or a line break, found {_describe(self.token)}"
                )
            trailing = self.trailing_description(self.tokens[self.index - 1])
            if trailing and is_member and not members[-1].description:
                members[-1] = dataclasses.replace(members[-1], description=trailing)
            previous = self.tokens[self.index - 1]
            if self.token.kind == "end":
                raise self.error("expected '}'")
        self.expect("}")
        seen: set[str] = set()
        for member in members:
            if member.name in seen:
                raise self.error(f"duplicate member {member.name!r}", member.token)
            seen.add(member.name)
        return _ObjectType(tuple(members), index_type)

    def _index_signature(self, existing: Any) -> Any:
        bracket = self.expect("[")
        if self.token.kind == "name" and self.peek().text == "in":
            raise self.unsupported("mapped type", bracket)
        if self.token.kind != "name" or self.peek().text != ":":
            raise self.error("expected an index signature '[key: string]: T'", bracket)
        self.advance()
        self.expect(":")
        key = self.token
        if not self.accept("string"):
            raise self.unsupported(f"index signature with {_describe(key)} keys", key)
        self.expect("]")
        self.expect(":")
        value_type = self.type()
        if existing is not None:
            raise self.error("duplicate index signature", bracket)
        return value_type

    def _member(self, description: str | None) -> _Member:
        if self.at("readonly") and self.peek().text not in (":", "?", "("):
            self.advance()  # a modifier, not a member named "readonly"
        token = self.token
        if token.kind in ("name", "string"):
            name = token.value
        elif token.kind == "number":
            name = _number_key(token.value)
        else:
            raise self.error(f"expected a member name, found {_describe(token)}")
        self.advance()
        optional = self.accept("?")
        if self.at("(", "<"):
            raise self.unsupported("method signature", token)
        self.expect(":", "':'")
        return _Member(name, self.type(), optional, description, token)


def _number_key(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def _describe(token: _Token) -> str:
    if token.kind == "end":
        return "end of input"
    return f"{token.text!r}"


# ---------------------------------------------------------------------------
# JSON Schema


@dataclass(frozen=True)
class _Property:
    schema: dict
    optional: bool


@dataclass(frozen=True)
class _Shape:
    """An object type with its members resolved, for intersections and utility types."""

    properties: dict[str, _Property]
    additional: Any = False  # False, or the schema of an index signature


_UTILITIES = frozenset({"Partial", "Required", "Readonly", "Pick", "Omit"})


class _SchemaBuilder:
    def __init__(self, declarations: dict[str, _Declaration]) -> None:
        self.declarations = declarations
        self.definitions: dict[str, dict] = {}
        self._pending: list[str] = []
        self._shaping: list[str] = []

    def document(self, type_name: str) -> dict:
        declaration = self.declarations.get(type_name)
        if declaration is None or not declaration.exported:
            exported = sorted(d.name for d in self.declarations.values() if d.exported)
            listing = ", ".join(exported) if exported else "none"
            problem = "is not exported" if declaration else "is not declared"
            raise ConstraintError(f"type {type_name!r} {problem}; exported types: {listing}")
        root = self._reference_to(type_name)
        while self._pending:
            name = self._pending.pop()
            self.definitions[name] = self._declaration_schema(self.declarations[name])
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **root,
            "$defs": dict(sorted(self.definitions.items())),
        }

    def _reference_to(self, name: str) -> dict:
        if name not in self.definitions and name not in self._pending:
            self._pending.append(name)
            self.definitions[name] = {}  # placeholder, so recursion stops here
        return {"$ref": f"#/$defs/{name}"}

    def _declaration_schema(self, declaration: _Declaration) -> dict:
        if declaration.kind == "enum":
            schema: dict = {"enum": list(dict.fromkeys(declaration.members.values()))}
        elif declaration.kind == "interface":
            schema = self._shape_schema(self._interface_shape(declaration))
        else:
            schema = self.schema(declaration.body)
        if declaration.description:
            schema = {**schema, "description": declaration.description}
        return schema

    def schema(self, node: Any) -> dict:
        if isinstance(node, _Keyword):
            return self._keyword(node)
        if isinstance(node, _Literal):
            return {"const": node.value} if node.value is not None else {"type": "null"}
        if isinstance(node, _ArrayType):
            return {"type": "array", "items": self.schema(node.element)}
        if isinstance(node, _TupleType):
            return self._tuple(node)
        if isinstance(node, _ObjectType):
            return self._shape_schema(self._object_shape(node))
        if isinstance(node, _Union):
            return self._union(node)
        if isinstance(node, _Intersection):
            return self._shape_schema(self.shape(node))
        return self._reference(node)

    def _keyword(self, node: _Keyword) -> dict:
        if node.name == "undefined":
            raise _error_at(
                node.token,
                "'undefined' is not JSON; it is allowed only in the type of an optional member",
            )
        return {
            "string": {"type": "string"},
            "number": {"type": "number"},
            "boolean": {"type": "boolean"},
            "object": {"type": ["object", "array"]},
        }.get(node.name, {})

    def _tuple(self, node: _TupleType) -> dict:
        fixed = [e for e in node.elements if not e.rest]
        rest = [e for e in node.elements if e.rest]
        schema: dict = {"type": "array"}
        if fixed:
            schema["prefixItems"] = [self.schema(e.type) for e in fixed]
        required = sum(1 for e in fixed if not e.optional)
        if required:
            schema["minItems"] = required
        if rest:
            schema["items"] = self.schema(rest[0].type.element)
        else:
            schema["items"] = False
        return schema

    def _union(self, node: _Union) -> dict:
        options = list(_flatten_union(node))
        primitive = {"string", "number", "boolean"}
        if all(
            o == _Literal(None) or (isinstance(o, _Keyword) and o.name in primitive)
            for o in options
        ):
            names = dict.fromkeys("null" if isinstance(o, _Literal) else o.name for o in options)
            return {"type": list(names)}
        if all(isinstance(o, _Literal) for o in options):
            values = list(dict.fromkeys(_hashable(o.value) for o in options))
            return {"enum": [_unhashable(v) for v in values]}
        schemas = []
        for option in options:
            schema = self.schema(option)
            if schema not in schemas:
                schemas.append(schema)
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}

    def _reference(self, node: _Reference) -> dict:
        if node.name in _UTILITIES or node.name == "Record":
            return self._shape_schema(self.shape(node))
        if node.name in ("Array", "ReadonlyArray"):
            (element,) = self._arguments(node, 1)
            return {"type": "array", "items": self.schema(element)}
        if node.name == "Date" and node.name not in self.declarations:
            self._arguments(node, 0)
            return {"type": "string", "format": "date-time"}
        declaration = self._declaration(node)
        if node.member is not None:
            if declaration.kind != "enum" or node.member not in declaration.members:
                raise _error_at(node.token, f"{node.name}.{node.member} is not an enum member")
            return {"const": declaration.members[node.member]}
        self._arguments(node, 0)
        return self._reference_to(node.name)

    def _declaration(self, node: _Reference) -> _Declaration:
        declaration = self.declarations.get(node.name)
        if declaration is None:
            hint = _KNOWN_GLOBALS.get(node.name, "")
            raise _error_at(node.token, f"unknown type {node.name!r}{hint}")
        return declaration

    def _arguments(self, node: _Reference, count: int) -> tuple[Any, ...]:
        if len(node.arguments) != count:
            if count == 0:
                raise _error_at(
                    node.token, f"unsupported construct 'generic type {node.name}<...>'"
                )
            raise _error_at(node.token, f"{node.name} takes {count} type argument(s)")
        return node.arguments

    # -- object shapes ---------------------------------------------------

    def shape(self, node: Any) -> _Shape:
        """The members of an object type, resolving references, intersections and utilities."""
        if isinstance(node, _ObjectType):
            return self._object_shape(node)
        if isinstance(node, _Intersection):
            result = _Shape({})
            for part in node.parts:
                result = self._merge_shapes(result, self.shape(part), node.token)
            return result
        if isinstance(node, _Reference):
            return self._reference_shape(node)
        token = getattr(node, "token", None)
        message = "only object types can be combined with '&' or utility types"
        raise _error_at(token, message) if token else ConstraintError(message)

    def _reference_shape(self, node: _Reference) -> _Shape:
        if node.name == "Record":
            return self._record(node)
        if node.name in _UTILITIES:
            return self._utility(node)
        declaration = self._declaration(node)
        self._arguments(node, 0)
        if declaration.kind == "enum" or node.member is not None:
            raise _error_at(node.token, f"{node.name!r} is not an object type")
        if node.name in self._shaping:
            raise _error_at(node.token, f"{node.name!r} refers to itself through '&' or extends")
        self._shaping.append(node.name)
        try:
            if declaration.kind == "interface":
                return self._interface_shape(declaration)
            return self.shape(declaration.body)
        finally:
            self._shaping.pop()

    def _interface_shape(self, declaration: _Declaration) -> _Shape:
        result = _Shape({})
        for base in declaration.extends:
            result = self._merge_shapes(result, self._reference_shape(base), base.token)
        return self._merge_shapes(result, self._object_shape(declaration.body), declaration.token)

    def _object_shape(self, node: _ObjectType) -> _Shape:
        properties = {}
        for member in node.members:
            member_type = member.type
            if member.optional:
                member_type = _without_undefined(member_type)
            schema = self.schema(member_type)
            if member.description:
                schema = {**schema, "description": member.description}
            properties[member.name] = _Property(schema, member.optional)
        additional = False if node.index is None else self.schema(node.index)
        return _Shape(properties, additional)

    def _record(self, node: _Reference) -> _Shape:
        keys, value = self._arguments(node, 2)
        value_schema = self.schema(value)
        if isinstance(keys, _Keyword) and keys.name == "string":
            return _Shape({}, value_schema)
        names = [o.value for o in _flatten_union(keys) if isinstance(o, _Literal)]
        if len(names) != len(list(_flatten_union(keys))) or not all(
            isinstance(n, str) for n in names
        ):
            raise _error_at(node.token, "Record keys must be string or a union of string literals")
        return _Shape({name: _Property(value_schema, False) for name in names})

    def _utility(self, node: _Reference) -> _Shape:
        if node.name in ("Pick", "Omit"):
            target, keys = self._arguments(node, 2)
            names = {o.value for o in _flatten_union(keys) if isinstance(o, _Literal)}
            shape = self.shape(target)
            keep = (lambda n: n in names) if node.name == "Pick" else (lambda n: n not in names)
            return _Shape({n: p for n, p in shape.properties.items() if keep(n)}, shape.additional)
        (target,) = self._arguments(node, 1)
        shape = self.shape(target)
        if node.name == "Readonly":
            return shape
        optional = node.name == "Partial"
        properties = {n: _Property(p.schema, optional) for n, p in shape.properties.items()}
        return _Shape(properties, shape.additional)

    def _merge_shapes(self, a: _Shape, b: _Shape, token: _Token) -> _Shape:
        properties = dict(a.properties)
        for name, prop in b.properties.items():
            if name in properties:
                both = properties[name]
                schema = (
                    both.schema
                    if both.schema == prop.schema
                    else {"allOf": [both.schema, prop.schema]}
                )
                prop = _Property(schema, both.optional and prop.optional)
            properties[name] = prop
        additional = a.additional
        if b.additional is not False:
            if additional is not False and additional != b.additional:
                additional = {"allOf": [additional, b.additional]}
            else:
                additional = b.additional
        return _Shape(properties, additional)

    def _shape_schema(self, shape: _Shape) -> dict:
        schema: dict = {"type": "object"}
        if shape.properties:
            schema["properties"] = {n: p.schema for n, p in shape.properties.items()}
        required = [n for n, p in shape.properties.items() if not p.optional]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = shape.additional
        return schema


_KNOWN_GLOBALS = {
    "Map": " (Map is not JSON-serializable; use Record<string, T>)",
    "Set": " (Set is not JSON-serializable; use T[])",
    "Promise": " (Promise is not JSON data)",
    "Function": " (functions are not JSON data)",
    "integer": " (TypeScript has no integer type; use number)",
    "int": " (TypeScript has no integer type; use number)",
    "float": " (use number)",
}


def _flatten_union(node: Any) -> Iterator[Any]:
    if isinstance(node, _Union):
        for option in node.options:
            yield from _flatten_union(option)
    else:
        yield node


def _without_undefined(node: Any) -> Any:
    if not isinstance(node, _Union):
        return node
    options = tuple(o for o in _flatten_union(node) if o != _Keyword("undefined"))
    if not options:
        return _Keyword("undefined")
    return options[0] if len(options) == 1 else _Union(options)


def _hashable(value: Any) -> Any:
    """Literal values as dictionary keys: True and 1 must stay distinct."""
    return (type(value).__name__ == "bool", value)


def _unhashable(key: Any) -> Any:
    return key[1]


def _error_at(token: _Token | None, message: str) -> ConstraintError:
    if token is None:
        return ConstraintError(message)
    return ConstraintError(message, line=token.line, column=token.column)
