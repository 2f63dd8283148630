"""Classes that hold data: ``class User { id: number; name?: string }``.

Such a class is read as the interface of its instances, which is what
TypeScript checks a value against: its public fields (declared, or
constructor parameters marked ``public``/``readonly``), the members of the
classes or interfaces it ``extends``, its type parameters. ``static``
members belong to the class, not its instances, and are passed over, as
are decorators (``@IsString() name: string``, a DTO's way) and the bodies
of constructors and static methods. A field with no type takes its
initializer's (``count = 0``: number).

The class is also a value, its constructor (``typeof Order``): a constructor
type whose parameters are the constructor's (none without one, unknown for
a derived class without one, whose base's it would take) and whose result
is the instance type, so ``InstanceType<typeof Order>`` and
``ConstructorParameters<typeof Order>`` read it (``signatures``).

A getter is a member, as in an interface, and so is an index signature.
An optional method is one an instance may lack, so it is left out. A class
with a required instance method, setter, ``private``/``protected`` or
``#private`` member has no JSON value: TypeScript asks an object for each
method, and keeps private members nominal. Such a class is refused, naming
that member, and set aside like any program statement (refused only where a
type uses it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.signatures import read_signature, type_parameter_names
from grammar_compiler.typescript.syntax import (
    Declaration,
    Member,
    ObjectType,
    ProgramType,
    Reference,
    TupleElement,
    TupleType,
    own_reference,
)
from grammar_compiler.typescript.tokens import Token, describe
from grammar_compiler.typescript.values import value_type

if TYPE_CHECKING:
    from grammar_compiler.typescript.parser import _Parser

_FIELD_MODIFIERS = frozenset({"public", "readonly", "declare", "override", "accessor"})
_HIDDEN = frozenset({"private", "protected"})
_PARAMETER_MODIFIERS = _FIELD_MODIFIERS | _HIDDEN
_MEMBER_MODIFIERS = _PARAMETER_MODIFIERS | {"static", "abstract", "async"}
_AFTER_NAME = frozenset({":", "?", "!", "(", "=", ";", "<"})
"""What follows a member's name: a modifier word so followed is the name."""


def read_class(parser: _Parser) -> tuple[Declaration, TupleType | None]:
    """The class from ``class`` (or ``abstract class``) on, as an interface,
    and its constructor's parameters (None where not known: a derived class
    without a constructor takes its base's).

    Raises:
        UnsupportedConstruct: a member no JSON value can hold.
    """
    parser.accept("abstract")
    parser.expect("class")
    name = parser.name("a class name")
    parameters = parser.type_parameters()
    parser.this_type = own_reference(name, parameters)
    extends: list[Reference] = []
    if parser.accept("extends"):
        base = parser.primary()
        if not isinstance(base, Reference):
            raise parser.error("a class can only extend a named class", name)
        extends.append(base)
    if parser.accept("implements"):  # a check of the class, adding no member
        parser.primary()
        while parser.accept(","):
            parser.primary()
    parser.expect("{")
    members: list[Member] = []
    index: tuple[Any, Any] | None = None
    arguments: TupleType | None = None if extends else TupleType(())
    previous = parser.tokens[parser.index - 1]
    while not parser.accept("}"):
        if parser.token.kind == "end":
            raise parser.error("expected '}' to close the class")
        description = parser.leading_description(parser.token, previous)
        if _at_index_signature(parser):
            index = parser.index_signature(index)
        else:
            fields, constructor_arguments = _member(parser, description)
            members += fields
            if constructor_arguments is not None:
                arguments = constructor_arguments
        parser.accept(";") or parser.accept(",")
        previous = parser.tokens[parser.index - 1]
    seen: set[str] = set()
    for member in members:
        if member.name in seen:
            raise parser.error(f"duplicate member {member.name!r}", member.token)
        seen.add(member.name)
    declaration = Declaration(
        name.text,
        "interface",
        name,
        body=ObjectType(tuple(members), *(index or ())),
        extends=tuple(extends),
        parameters=parameters,
    )
    return declaration, arguments


def _at_index_signature(parser: _Parser) -> bool:
    """``[key: string]: T`` (``readonly`` too) among a class's members: its
    instances' index signature, as in an interface."""
    if parser.at("readonly") and parser.peek().text == "[":
        parser.advance()
    return parser.at("[") and not parser.at_computed_key()


def _member(parser: _Parser, description: str | None) -> tuple[list[Member], TupleType | None]:
    """One class member: the instance fields it declares (none for a static one),
    and, for the constructor, its parameters."""
    while parser.at("@"):
        parser.skip_decorator()
    static = False
    while parser.token.text in _MEMBER_MODIFIERS and parser.peek().text not in _AFTER_NAME:
        modifier = parser.advance()
        if modifier.text in _HIDDEN:
            raise parser.program(f"{modifier.text} member", modifier)
        static = static or modifier.text == "static"
    token = parser.token
    if parser.at("constructor"):
        return _constructor(parser)
    if parser.at("#"):
        raise parser.program("#private member", token)
    if parser.at("get", "set") and parser.peek().kind in ("name", "string", "number"):
        if static:
            _skip_method(parser, parser.advance())
            return [], None
        if parser.at("set"):
            raise parser.program("set accessor", token)
        return [_getter(parser, description)], None
    if parser.at("["):
        name = parser.computed_key()
    elif token.kind in ("name", "string", "number"):
        parser.advance()
        name = token.value if token.kind != "number" else str(token.value)
    else:
        raise parser.error(f"expected a class member, found {describe(token)}")
    optional = parser.accept("?")
    parser.accept("!")  # definitely assigned: a check, not a type
    if parser.at("(", "<"):
        if static:
            _skip_method(parser, token)
            return [], None
        if not optional:
            raise parser.program("method", token)
        return [_optional_method(parser, name, description, token)], None
    if static:
        _skip_static_field(parser)
        return [], None
    field_type, _ = _field_type(parser, token)
    return [Member(name, field_type, optional, description, token)], None


def _optional_method(parser: _Parser, name: str, description: str | None, token: Token) -> Member:
    """``describe?(): string``: an instance may lack it, so a JSON value (which
    has no functions) still is one; kept as a program's part, left out."""
    signature = read_signature(parser, type_parameter_names(parser), arrow=False)
    if parser.at("{"):
        parser.skip_balanced("([{")
    method = ProgramType("method", token, signature=signature)
    return Member(name, method, True, description, token)


def _getter(parser: _Parser, description: str | None) -> Member:
    """``get total(): number { ... }``: a member of the instances' type, as in an
    interface (TypeScript asks an object for it, whatever computes it)."""
    parser.expect("get")
    name = parser.advance()
    parser.skip_balanced()
    if not parser.accept(":"):
        raise parser.error(f"getter {name.text!r} needs a return type", name)
    returned = parser.type()
    if parser.at("{"):
        parser.skip_balanced("([{")
    member = name.value if name.kind != "number" else str(name.value)
    return Member(member, returned, False, description, name)


def _field_type(parser: _Parser, name: Any) -> tuple[Any, bool]:
    """The annotation (an initializer beside it passed over), or the initializer's
    type; and whether there is an initializer (a parameter's default)."""
    if parser.accept(":"):
        annotated = parser.type()
        initialized = parser.accept("=")
        if initialized:
            parser.skip_expression()
        return annotated, initialized
    if not parser.at("="):
        raise parser.error(f"class field {name.text!r} needs a type", name)
    first = parser.index
    try:
        return value_type(parser, constant=False), True
    except ConstraintError:
        parser.index = first
        raise parser.unsupported(
            f"class field {name.text!r} typed by a computed initializer (give it a type)", name
        ) from None


def _constructor(parser: _Parser) -> tuple[list[Member], TupleType]:
    """``constructor(public id: string, readonly n = 0, other: T) { ... }``: its
    parameter properties are fields, and its parameters as ``Parameters`` reads
    them (a default makes one optional); the body is passed over."""
    parser.expect("constructor")
    parser.expect("(")
    fields: list[Member] = []
    arguments: list[TupleElement] = []
    while not parser.accept(")"):
        while parser.at("@"):
            parser.skip_decorator()
        marked = False
        while parser.token.text in _PARAMETER_MODIFIERS and parser.peek().kind == "name":
            modifier = parser.advance()
            if modifier.text in _HIDDEN:
                raise parser.program(f"{modifier.text} member", modifier)
            marked = True
        rest = not marked and bool(parser.accept("..."))
        name = parser.name("a parameter name")
        optional = parser.accept("?")
        field_type, defaulted = _field_type(parser, name)
        if marked:
            fields.append(Member(name.text, field_type, optional, None, name))
        arguments.append(TupleElement(field_type, bool(optional or defaulted) and not rest, rest))
        if not parser.accept(","):
            parser.expect(")", "',' or ')'")
            break
    if parser.at("{"):
        parser.skip_balanced("([{")
    return fields, TupleType(tuple(arguments))


def _skip_method(parser: _Parser, name: Any) -> None:
    """A static method's signature and body."""
    depth = 0
    while True:
        if parser.token.kind == "end":
            raise parser.error(f"expected the body of {name.text!r}", name)
        if depth == 0 and parser.at("{"):
            parser.skip_balanced("([{")
            return
        if depth == 0 and parser.at(";"):
            return
        if parser.at("(", "[", "<"):
            depth += 1
        elif parser.at(")", "]", ">"):
            depth -= 1
        parser.advance()


def _skip_static_field(parser: _Parser) -> None:
    """A static field's annotation and initializer (the class's, not an instance's)."""
    start = parser.index
    while parser.token.kind != "end" and not parser.at(";", "}"):
        if parser.index > start and parser.token.line > parser.tokens[parser.index - 1].line:
            return
        if parser.at("(", "[", "{", "<"):
            parser.skip_balanced()
        else:
            parser.advance()
