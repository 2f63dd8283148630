"""The type of a variable whose value is written out, for ``typeof``.

``const SIZES = ["s", "m"] as const; type Size = typeof SIZES[number]`` and
``const Status = { On: "on", Off: "off" } as const; type Status = typeof
Status[keyof typeof Status]`` are how much TypeScript spells enums, so the
values that such declarations write out (strings, numbers, booleans,
``null``, arrays and objects of them) are read here, and typed as TypeScript
types them: ``as const`` keeps every literal (arrays become tuples); without
it, literals inside arrays and objects widen to their primitive, and so does
the whole value of a ``let`` or ``var``. A type annotation, ``as T`` or
``satisfies T`` is read as a type, and ``Object.freeze(...)`` as what it
freezes. An arrow function is read as its signature (for ``ReturnType``).
Anything else (calls, names of other variables) is computed when the
program runs: a ``ConstraintError`` the parser keeps and raises only if a
type uses the variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grammar_compiler.typescript.signatures import read_signature, type_parameter_names
from grammar_compiler.typescript.syntax import (
    ArrayType,
    Keyword,
    Literal,
    Member,
    ObjectType,
    ProgramType,
    TupleElement,
    TupleType,
    Union,
)
from grammar_compiler.typescript.tokens import describe

if TYPE_CHECKING:
    from grammar_compiler.typescript.parser import _Parser

_PRIMITIVES = {bool: "boolean", str: "string", int: "number", float: "number"}
_WORDS = {"true": True, "false": False, "null": None}


def value_type(parser: _Parser, *, constant: bool) -> Any:
    """The type of the variable declared from here on (after its name)."""
    if parser.accept(":"):
        annotated = parser.type()
        if parser.accept("="):
            _written_value(parser)  # checked to be data, typed by the annotation
        return annotated
    parser.expect("=", "'=' or ':'")
    if parser.at("Object") and parser.peek().text == "." and parser.peek(2).text == "freeze":
        return _frozen(parser)
    if _at_arrow_function(parser):
        return _arrow_function(parser)
    written = _written_value(parser)
    if parser.at("as") and parser.peek().text == "const":
        parser.advance()
        parser.advance()
    elif parser.accept("as"):
        written = parser.type()
    else:
        written = _widened(written, keep_literal=constant)
    if parser.accept("satisfies"):
        parser.type()  # a check of the value, which leaves its type as it is
    return written


def _at_arrow_function(parser: _Parser) -> bool:
    """``(x: T): R => ...``, ``async (...) => ...``, ``<T>(x: T) => ...``: a
    parameter list whose closing ``)`` is followed by ``:`` or ``=>``."""
    index = parser.index + (1 if parser.at("async") else 0)
    if parser.tokens[index].text == "<":
        return True
    if parser.tokens[index].text != "(":
        return False
    depth = 0
    while index < len(parser.tokens) - 1:
        token = parser.tokens[index]
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
            if depth == 0:
                return parser.tokens[index + 1].text in (":", "=>")
        index += 1
    return False


def _arrow_function(parser: _Parser) -> ProgramType:
    """An arrow function's type: its signature (its return type as written: one
    left to inference is not read), its body passed over."""
    start = parser.token
    parser.accept("async")
    signature = read_signature(parser, type_parameter_names(parser), arrow=False)
    parser.expect("=>")
    parser.skip_expression()
    return ProgramType("function", start, signature=signature)


def _frozen(parser: _Parser) -> Any:
    """``Object.freeze({ Red: "red" })``, the other way enums are spelled: TypeScript
    keeps the literals of the frozen object's own members (an ``as const`` inside
    keeps them all)."""
    for expected in ("Object", ".", "freeze", "("):
        parser.expect(expected)
    written = _written_value(parser)
    if parser.at("as") and parser.peek().text == "const":
        parser.advance()
        parser.advance()
    elif isinstance(written, ObjectType):
        written = ObjectType(
            tuple(
                Member(m.name, _widened(m.type, keep_literal=True), False, None, m.token)
                for m in written.members
            )
        )
    else:
        written = _widened(written, keep_literal=False)
    parser.expect(")")
    return written


def _written_value(parser: _Parser) -> Any:
    """The value's type with every literal kept (what ``as const`` gives)."""
    token = parser.token
    if token.kind in ("string", "number"):
        parser.advance()
        return Literal(token.value)
    if parser.at("-") and parser.peek().kind == "number":
        parser.advance()
        return Literal(-parser.advance().value)
    if token.kind == "template" and all(isinstance(piece, str) for piece in token.value):
        parser.advance()
        return Literal("".join(token.value))
    if token.kind == "name" and token.text in _WORDS:
        parser.advance()
        return Literal(_WORDS[token.text])
    if parser.at("["):
        return _array(parser)
    if parser.at("{"):
        return _object(parser)
    raise parser.error(
        f"typeof takes variables whose value is written out (strings, numbers, booleans, "
        f"null, arrays and objects of them); this one is computed, from {describe(token)}"
    )


def _array(parser: _Parser) -> TupleType:
    parser.expect("[")
    elements: list[TupleElement] = []
    while not parser.accept("]"):
        elements.append(TupleElement(_written_value(parser)))
        if not parser.accept(","):
            parser.expect("]", "',' or ']'")
            break
    return TupleType(tuple(elements))


def _object(parser: _Parser) -> ObjectType:
    parser.expect("{")
    members: dict[str, Member] = {}
    while not parser.accept("}"):
        token = parser.token
        if token.kind not in ("name", "string", "number") or parser.peek().text != ":":
            raise parser.error(
                f"expected 'name: value' in a written-out object, found {describe(token)}"
            )
        parser.advance()
        parser.advance()
        name = str(token.value)
        members[name] = Member(name, _written_value(parser), False, None, token)  # last wins
        if not parser.accept(","):
            parser.expect("}", "',' or '}'")
            break
    return ObjectType(tuple(members.values()))


def _widened(node: Any, *, keep_literal: bool) -> Any:
    """The type TypeScript infers without ``as const``: a ``const``'s own literal
    stays; literals inside arrays and objects (and a ``let``'s) become primitives."""
    if isinstance(node, Literal):
        if keep_literal or node.value is None:
            return node
        return Keyword(_PRIMITIVES[type(node.value)])
    if isinstance(node, TupleType):
        elements = list(dict.fromkeys(_widened(e.type, keep_literal=False) for e in node.elements))
        if not elements:
            return ArrayType(Keyword("any"))
        return ArrayType(elements[0] if len(elements) == 1 else Union(tuple(elements)))
    members = tuple(
        Member(m.name, _widened(m.type, keep_literal=False), False, None, m.token)
        for m in node.members
    )
    return ObjectType(members)
