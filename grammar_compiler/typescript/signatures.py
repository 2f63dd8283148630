"""Function and constructor signatures: what ``Parameters<F>`` and ``ReturnType<F>`` read.

No JSON value is a function, so a function type stays a program's part
(``ProgramType``), refused where a value of it is asked for. Its signature is
still read, because data types are often written from functions:
``ReturnType<typeof getUser>``, ``Parameters<typeof save>[0]``,
``InstanceType<typeof Order>``, or a conditional type of one's own
(``F extends (...args: any) => infer R ? R : never``).

A parameter list is read as ``Parameters`` gives it, a tuple: each
parameter's type, ``?`` or a default value making it optional, ``...rest``
its rest element; names and destructuring patterns are dropped, as is a
leading ``this`` parameter (not an argument). A parameter without a type is
``any``, as TypeScript reads a signature without checks. A list this reader
cannot follow leaves the function without a signature, as before: only the
types read from it are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.generics import mentions
from grammar_compiler.typescript.syntax import (
    ArrayType,
    Keyword,
    ProgramType,
    Signature,
    TupleElement,
    TupleType,
    Union,
)
from grammar_compiler.typescript.tokens import Token, error_at

if TYPE_CHECKING:
    from grammar_compiler.typescript.parser import _Parser

_PARAMETER_MODIFIERS = frozenset({"public", "private", "protected", "readonly", "override"})
_ANY = Keyword("any")


def read_signature(
    parser: _Parser, own_parameters: frozenset[str], arrow: bool
) -> Signature | None:
    """The parameters from ``(`` to ``)`` and the return type after ``=>`` (``arrow``)
    or an optional ``:``; None, with the tokens passed over all the same, where the
    parameter list is not one this reader follows."""
    first = parser.index
    try:
        parameters = _parameters(parser)
    except ConstraintError:
        parser.index = first
        parser.skip_balanced()
        parameters = None
    if arrow:
        parser.expect("=>")
        returns = parser.returned_type()
    else:
        returns = parser.returned_type() if parser.accept(":") else None
    if parameters is None:
        return None
    return Signature(parameters, returns, own_parameters)


def function_type(parser: _Parser, start: Token, construct: str) -> ProgramType:
    """``(parameters) => R``, ``<T>(x: T) => T`` or ``new (...) => R``, from its first token."""
    signature = read_signature(parser, type_parameter_names(parser), arrow=True)
    return ProgramType(construct, start, signature=signature)


def type_parameter_names(parser: _Parser) -> frozenset[str]:
    """A generic signature's own type parameters (``<T, U>``), read past."""
    return frozenset(parameter.name for parameter in parser.type_parameters())


def _parameters(parser: _Parser) -> TupleType:
    parser.expect("(")
    elements: list[TupleElement] = []
    first = True
    while not parser.accept(")"):
        while parser.at("@"):
            parser.skip_decorator()
        while parser.token.text in _PARAMETER_MODIFIERS and parser.peek().kind == "name":
            parser.advance()
        rest = parser.accept("...")
        named_this = first and parser.at("this") and parser.peek().text in (":", ",", ")")
        if parser.at("{", "["):  # a destructuring pattern: its type follows
            parser.skip_balanced()
        else:
            parser.name("a parameter name")
        optional = parser.accept("?")
        written = parser.type() if parser.accept(":") else _ANY
        if rest and written in (_ANY, Keyword("unknown")):
            written = ArrayType(written)  # ...args: any takes any number of anything
        if parser.accept("="):
            parser.skip_expression()
            optional = True
        if not named_this:
            elements.append(TupleElement(written, optional and not rest, rest))
        first = False
        if not parser.accept(","):
            parser.expect(")", "',' or ')'")
            break
    return TupleType(tuple(elements))


SIGNATURE_UTILITIES = {
    "ReturnType": ("function", "returns"),
    "Parameters": ("function", "parameters"),
    "InstanceType": ("constructor", "returns"),
    "ConstructorParameters": ("constructor", "parameters"),
}
"""The built-ins that read a signature: of a function or of a constructor type, which part."""
_PARTS = {"returns": "result uses", "parameters": "parameters use"}
_FUNCTIONS = frozenset({"function type", "function", "method signature", "method"})
_CONSTRUCTORS = frozenset({"constructor type"})


def read_from_signatures(utility: str, functions: list[Any], token: Token) -> Any:
    """``ReturnType<F>`` and its kin: the part asked for of each member of ``F``
    (a union of functions gives the union of their parts, as TypeScript
    distributes these over a union).

    Raises:
        ConstraintError: at ``token``, for a member that is not a function (or
            constructor) type, or one whose signature is not known here.
    """
    wanted, part = SIGNATURE_UTILITIES[utility]
    found: list[Any] = []
    for function in functions:
        if function == Keyword("never"):
            continue
        if function == _ANY:
            found.append(_ANY)
            continue
        kind = _kind(function)
        if kind != wanted:
            raise error_at(token, f"{utility} takes a {wanted} type")
        signature = function.signature
        if signature is None:
            raise error_at(token, f"{utility}: the {kind}'s parameter list is not read here")
        found_part = signature.parameters if part == "parameters" else signature.returns
        if signature.own_parameters and mentions(found_part, signature.own_parameters):
            raise error_at(
                token,
                f"{utility} of a generic {kind} whose {_PARTS[part]} its type parameters "
                "(not known here)",
            )
        if part == "returns" and signature.returns is None:
            raise error_at(
                function.token,
                f"{utility}: this {kind} has no return type written (TypeScript infers it "
                "from the body, which this reader does not); write it",
            )
        found.append(found_part)
    unique = list(dict.fromkeys(found))
    if not unique:
        return Keyword("never")
    return unique[0] if len(unique) == 1 else Union(tuple(unique))


def _kind(node: Any) -> str | None:
    """ "function", "constructor", or None for any other type."""
    if not isinstance(node, ProgramType):
        return None
    if node.construct in _FUNCTIONS:
        return "function"
    return "constructor" if node.construct in _CONSTRUCTORS else None


def same_kind(a: Any, b: Any) -> bool:
    """Whether two types are signatures that may be compared: both functions, or
    both constructors."""
    return _kind(a) is not None and _kind(a) == _kind(b)


def is_signature(node: Any) -> bool:
    """Whether ``node`` is a function or constructor type."""
    return _kind(node) is not None
