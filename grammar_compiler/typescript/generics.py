"""Generic declarations instantiated with their arguments: ``Box<number>``, ``Page<Result<User>>``.

Each distinct instantiation is its own declaration with the arguments
substituted into its body, so the schema builder never sees a type
parameter, and it becomes its own ``$defs`` entry (a recursive generic such
as ``Tree<T>`` refers to its own entry, as a recursive interface does).
Instantiations are told apart by their arguments written out canonically
(``Box<number, string>`` when ``U`` defaults to ``string``); the ``$defs``
name is derived from that text.

A generic can ask for ever larger arguments (``type T<X> = T<X[]>``): such
an expansion never ends, and is refused once arguments nest deeper than
``MAX_ARGUMENT_NESTING`` or are longer than ``MAX_ARGUMENT_TEXT`` written
out, or the instantiations outnumber ``MAX_INSTANTIATIONS``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from grammar_compiler.typescript.syntax import (
    ArrayType,
    CaseMapped,
    Conditional,
    Declaration,
    IndexedAccess,
    Infer,
    Intersection,
    KeyOf,
    Keyword,
    Literal,
    MappedType,
    Member,
    ObjectType,
    ProgramType,
    Reference,
    TemplateType,
    TupleElement,
    TupleType,
    TypeQuery,
    Union,
)
from grammar_compiler.typescript.tokens import Token, error_at

MAX_INSTANTIATIONS = 256
"""Distinct instantiations of generic declarations in one document."""
MAX_ARGUMENT_NESTING = 64
"""Nesting of a type argument, like the nesting of a written type."""
MAX_ARGUMENT_TEXT = 4096
"""Characters of one instantiation's arguments, written out."""
_MAX_NAME = 64
"""Characters of a ``$defs`` name derived from the arguments (a counter keeps it unique)."""


@dataclass(frozen=True)
class Instance:
    """A declaration with its type arguments substituted: what one ``$defs`` entry holds."""

    key: str  # the declaration's name, or "Box<number, string>"
    name: str  # its $defs name
    declaration: Declaration
    body: Any
    extends: tuple[Reference, ...]


class Instantiator:
    """The instances of one document's declarations, made once each."""

    def __init__(self, declarations: Mapping[str, Declaration]) -> None:
        self._taken_names = set(declarations)
        self._instances: dict[str, Instance] = {}
        self._generic_instances = 0

    def instance(
        self, declaration: Declaration, arguments: tuple[Any, ...], token: Token | None
    ) -> Instance:
        """``declaration`` with ``arguments`` (which have no type parameters left in them).

        Raises:
            ConstraintError: at ``token``, for a wrong number of arguments or an
                expansion without end.
        """
        if not declaration.parameters:
            if arguments:
                raise error_at(
                    token, f"{declaration.name!r} is not generic: it takes no type arguments"
                )
            return self._instances.get(declaration.name) or self._add(
                Instance(
                    declaration.name,
                    declaration.name,
                    declaration,
                    declaration.body,
                    declaration.extends,
                )
            )
        arguments = self._with_defaults(declaration, arguments, token)
        text = _arguments_text(arguments)
        if text is None:
            raise error_at(
                token,
                _endless(
                    declaration, f"its type arguments grow past {MAX_ARGUMENT_TEXT} characters here"
                ),
            )
        key = f"{declaration.name}<{text}>"
        known = self._instances.get(key)
        if known is not None:
            return known
        if any(_nesting(a) > MAX_ARGUMENT_NESTING for a in arguments):
            raise error_at(
                token,
                _endless(
                    declaration,
                    f"its type arguments grow past {MAX_ARGUMENT_NESTING} levels of nesting here",
                ),
            )
        if self._generic_instances >= MAX_INSTANTIATIONS:
            raise error_at(
                token,
                f"more than {MAX_INSTANTIATIONS} instantiations of generic types (at {key[:80]})",
            )
        self._generic_instances += 1
        bindings = {p.name: a for p, a in zip(declaration.parameters, arguments, strict=True)}
        return self._add(
            Instance(
                key,
                self._new_name(key),
                declaration,
                substitute(declaration.body, bindings),
                tuple(substitute(base, bindings) for base in declaration.extends),
            )
        )

    def _add(self, instance: Instance) -> Instance:
        self._instances[instance.key] = instance
        return instance

    def _with_defaults(
        self, declaration: Declaration, arguments: tuple[Any, ...], token: Token | None
    ) -> tuple[Any, ...]:
        parameters = declaration.parameters
        required = declaration.required_parameters
        if not required <= len(arguments) <= len(parameters):
            expected = (
                str(len(parameters))
                if required == len(parameters)
                else f"{required} to {len(parameters)}"
            )
            plural = "s" if len(parameters) > 1 else ""
            raise error_at(
                token,
                f"generic type {declaration.name!r} takes {expected} type argument{plural}, "
                f"got {len(arguments)}",
            )
        bindings = {p.name: a for p, a in zip(parameters, arguments, strict=False)}
        for parameter in parameters[len(arguments) :]:
            bindings[parameter.name] = substitute(parameter.default, bindings)
        return tuple(bindings[p.name] for p in parameters)

    def _new_name(self, key: str) -> str:
        base = _mangled(key)[:_MAX_NAME].rstrip("_")
        name, number = base, 1
        while name in self._taken_names:
            number += 1
            name = f"{base}_{number}"
        self._taken_names.add(name)
        return name


def substitute(node: Any, bindings: Mapping[str, Any]) -> Any:
    """``node`` with each type parameter named in ``bindings`` replaced by its argument."""
    if not bindings:
        return node
    if isinstance(node, Reference):
        if node.name in bindings and node.member is None:
            if node.arguments:
                raise error_at(node.token, f"type parameter {node.name!r} takes no type arguments")
            return bindings[node.name]
        if node.name in bindings:
            raise error_at(node.token, f"type parameter {node.name!r} has no members")
        arguments = tuple(substitute(a, bindings) for a in node.arguments)
        return Reference(node.name, arguments, node.token, node.member)
    if isinstance(node, ArrayType):
        return ArrayType(substitute(node.element, bindings))
    if isinstance(node, TupleType):
        return TupleType(
            tuple(
                TupleElement(substitute(e.type, bindings), e.optional, e.rest)
                for e in node.elements
            )
        )
    if isinstance(node, ObjectType):
        members = tuple(
            Member(m.name, substitute(m.type, bindings), m.optional, m.description, m.token)
            for m in node.members
        )
        index = None if node.index is None else substitute(node.index, bindings)
        key = (
            node.index_key
            if isinstance(node.index_key, str)
            else substitute(node.index_key, bindings)
        )
        return ObjectType(members, index, key)
    if isinstance(node, KeyOf):
        return KeyOf(substitute(node.target, bindings), node.token)
    if isinstance(node, MappedType):
        return _substitute_mapped(node, bindings)
    if isinstance(node, Conditional):
        return _substitute_conditional(node, bindings)
    if isinstance(node, IndexedAccess):
        target = substitute(node.target, bindings)
        if target == Keyword("any"):  # any[K] is any: DeepPartial<any> takes any[K] again
            return target
        return IndexedAccess(target, substitute(node.index, bindings), node.token)
    if isinstance(node, TemplateType):
        parts = tuple(p if isinstance(p, str) else substitute(p, bindings) for p in node.parts)
        return TemplateType(parts, node.token)
    if isinstance(node, Union):
        return Union(tuple(substitute(o, bindings) for o in node.options))
    if isinstance(node, Intersection):
        return Intersection(tuple(substitute(p, bindings) for p in node.parts), node.token)
    if isinstance(node, ProgramType) and node.signature is not None:
        return _substitute_signature(node, bindings)
    return node  # keywords, literals, typeof and infer


def _substitute_signature(node: ProgramType, bindings: Mapping[str, Any]) -> ProgramType:
    """A function type's parameters and return type with ``bindings`` in place,
    but for a generic one's own type parameters, which shadow them."""
    signature = node.signature
    if signature is None:
        return node
    inner = {n: v for n, v in bindings.items() if n not in signature.own_parameters}
    parameters = substitute(signature.parameters, inner)
    returns = None if signature.returns is None else substitute(signature.returns, inner)
    return replace(node, signature=replace(signature, parameters=parameters, returns=returns))


def mentions(node: Any, names: frozenset[str]) -> bool:
    """Whether ``node`` refers to any of the type parameters ``names``."""
    if isinstance(node, Reference) and node.name in names and node.member is None:
        return True
    return any(mentions(child, names) for child in _children(node))


def _substitute_mapped(node: MappedType, bindings: Mapping[str, Any]) -> MappedType:
    """A mapped type over ``keyof T`` that binds ``T`` keeps a template with
    ``T`` open (named after where the mapped type is written), which later
    bindings reach too."""
    inner = {name: value for name, value in bindings.items() if name != node.parameter}
    template = node.template
    if template is not None:
        template = (template[0], substitute(template[1], bindings))
    elif _keys_of_parameter(node.keys, bindings):
        parameter = node.keys.target
        opened = f"{parameter.name}@{node.token.line}:{node.token.column}"
        kept_open = {**bindings, parameter.name: Reference(opened, (), parameter.token)}
        template = (opened, _substitute_mapped(node, kept_open))
    return MappedType(
        node.parameter,
        substitute(node.keys, bindings),
        substitute(node.value, inner),
        node.optional,
        node.token,
        substitute(node.rename, inner),
        template,
    )


def _keys_of_parameter(keys: Any, bindings: Mapping[str, Any]) -> bool:
    """Whether mapped keys are ``keyof T`` with ``T`` a type parameter bound here
    to something other than a type parameter kept open."""
    if not isinstance(keys, KeyOf) or not isinstance(keys.target, Reference):
        return False
    target = keys.target
    if target.name not in bindings or target.member is not None or target.arguments:
        return False
    bound = bindings[target.name]
    return not (isinstance(bound, Reference) and "@" in bound.name)


def _substitute_conditional(node: Conditional, bindings: Mapping[str, Any]) -> Conditional:
    """A conditional type whose check is a type parameter alone keeps that
    parameter in its other parts, naming its argument as the one it distributes
    over; the names its pattern infers are its own."""
    inferred = _inferred_names(node.pattern)
    check = node.check
    parameter = node.parameter
    naked = isinstance(check, Reference) and not check.arguments and check.member is None
    if parameter is None and naked and check.name in bindings:
        parameter = check.name
    inner = {n: v for n, v in bindings.items() if n != parameter and n not in inferred}
    outer = {n: v for n, v in bindings.items() if n != parameter}
    return Conditional(
        substitute(check, bindings),
        substitute(node.pattern, outer),
        substitute(node.when_true, inner),
        substitute(node.when_false, outer),
        node.token,
        parameter,
    )


def _inferred_names(node: Any) -> set[str]:
    if isinstance(node, Infer):
        return {node.name}
    return set().union(*(_inferred_names(child) for child in _children(node)))


def _arguments_text(arguments: tuple[Any, ...]) -> str | None:
    """The arguments written out canonically (literals as JSON, so ``1`` and ``true``
    differ), or None when that takes more than ``MAX_ARGUMENT_TEXT`` characters."""
    parts: list[str] = []
    budget = [MAX_ARGUMENT_TEXT]
    _write_list(arguments, parts, budget)
    return "".join(parts) if budget[0] >= 0 else None


def _write(node: Any, out: list[str], budget: list[int]) -> None:
    """Appends ``node``'s text to ``out``, stopping once ``budget`` characters are spent
    (a doubling argument such as ``[X, X]`` would otherwise take exponential time)."""
    if budget[0] < 0:
        return

    def text(piece: str) -> None:
        out.append(piece)
        budget[0] -= len(piece)

    if isinstance(node, Keyword):
        text(node.name)
    elif isinstance(node, CaseMapped):
        text(f"{node.intrinsic}<string>")
    elif isinstance(node, Literal):
        text(json.dumps(node.value, ensure_ascii=False))
    elif isinstance(node, Reference):
        text(node.name if node.member is None else f"{node.name}.{node.member}")
        if node.arguments:
            text("<")
            _write_list(node.arguments, out, budget)
            text(">")
    elif isinstance(node, ArrayType):
        _write_operand(node.element, out, budget)
        text("[]")
    elif isinstance(node, TupleType):
        text("[")
        for i, element in enumerate(node.elements):
            text(", " if i else "")
            text("..." if element.rest else "")
            _write(element.type, out, budget)
            text("?" if element.optional else "")
        text("]")
    elif isinstance(node, ObjectType):
        text("{")
        for member in node.members:
            text(f"{json.dumps(member.name, ensure_ascii=False)}{'?' if member.optional else ''}: ")
            _write(member.type, out, budget)
            text("; ")
        if node.index is not None:
            text("[key: ")
            key = node.index_key
            text(key) if isinstance(key, str) else _write(key, out, budget)
            text("]: ")
            _write(node.index, out, budget)
        text("}")
    elif isinstance(node, TemplateType):
        text("`")
        for part in node.parts:
            if isinstance(part, str):
                text(json.dumps(part, ensure_ascii=False)[1:-1])
            else:
                text("${")
                _write(part, out, budget)
                text("}")
        text("`")
    elif isinstance(node, KeyOf):
        text("keyof ")
        _write_operand(node.target, out, budget)
    elif isinstance(node, IndexedAccess):
        _write_operand(node.target, out, budget)
        text("[")
        _write(node.index, out, budget)
        text("]")
    elif isinstance(node, TypeQuery):
        text(f"typeof {node.name}")
    elif isinstance(node, MappedType):
        text(f"{{[{node.parameter} in ")
        _write(node.keys, out, budget)
        if node.rename is not None:
            text(" as ")
            _write(node.rename, out, budget)
        text({None: "]: ", True: "]?: ", False: "]-?: "}[node.optional])
        _write(node.value, out, budget)
        text("}")
    elif isinstance(node, Infer):
        text(f"infer {node.name}")
    elif isinstance(node, ProgramType):
        text(f"({node.construct} at {node.token.line}:{node.token.column}")
        if node.signature is not None:  # one written place, instantiated differently
            text(" ")
            _write(node.signature.parameters, out, budget)
            text(" => ")
            _write(node.signature.returns, out, budget)
        text(")")
    elif isinstance(node, Conditional):
        text("(")  # a conditional nests in parentheses anywhere
        if node.parameter is not None:
            text(f"{node.parameter} in ")  # distributes over the check's members
        _write_operand(node.check, out, budget)
        text(" extends ")
        _write_operand(node.pattern, out, budget)
        text(" ? ")
        _write(node.when_true, out, budget)
        text(" : ")
        _write(node.when_false, out, budget)
        text(")")
    elif isinstance(node, (Union, Intersection)):
        parts = node.options if isinstance(node, Union) else node.parts
        separator = " | " if isinstance(node, Union) else " & "
        for i, part in enumerate(parts):
            text(separator if i else "")
            _write_operand(part, out, budget)


def _write_operand(node: Any, out: list[str], budget: list[int]) -> None:
    """``node`` as the operand of ``[]``, ``keyof``, ``|`` or ``&``: a union,
    intersection or ``keyof`` in parentheses, so the text reads back as the same type."""
    grouped = isinstance(node, (Union, Intersection, KeyOf))
    if grouped:
        out.append("(")
        budget[0] -= 1
    _write(node, out, budget)
    if grouped:
        out.append(")")
        budget[0] -= 1


def _write_list(nodes: tuple[Any, ...], out: list[str], budget: list[int]) -> None:
    for i, node in enumerate(nodes):
        if i:
            out.append(", ")
            budget[0] -= 2
        _write(node, out, budget)


def _nesting(node: Any) -> int:
    """How deep ``node`` nests, counted as the parser counts written types."""
    children = _children(node)
    if not children:
        return 0
    return 1 + max(_nesting(c) for c in children)


def _children(node: Any) -> tuple[Any, ...]:
    """The types written inside ``node``."""
    if isinstance(node, Reference):
        return node.arguments
    if isinstance(node, ArrayType):
        return (node.element,)
    if isinstance(node, TupleType):
        return tuple(e.type for e in node.elements)
    if isinstance(node, ObjectType):
        return tuple(m.type for m in node.members) + ((node.index,) if node.index else ())
    if isinstance(node, KeyOf):
        return (node.target,)
    if isinstance(node, IndexedAccess):
        return (node.target, node.index)
    if isinstance(node, MappedType):
        return (node.keys, node.value) + (() if node.rename is None else (node.rename,))
    if isinstance(node, TemplateType):
        return tuple(p for p in node.parts if not isinstance(p, str))
    if isinstance(node, Union):
        return node.options
    if isinstance(node, Intersection):
        return node.parts
    if isinstance(node, Conditional):
        return (node.check, node.pattern, node.when_true, node.when_false)
    if isinstance(node, ProgramType) and node.signature is not None:
        signature = node.signature
        returned = () if signature.returns is None else (signature.returns,)
        return (signature.parameters, *returned)
    return ()


_NAME_PIECES = (("[]", "_array"), ("|", "_or_"), ("&", "_and_"), ("?", "_opt"))


def _mangled(key: str) -> str:
    """``Page<Result<User>>`` -> ``Page_Result_User``: a ``$defs`` name that needs no escaping."""
    for piece, word in _NAME_PIECES:
        key = key.replace(piece, word)
    return re.sub(r"[^A-Za-z0-9$]+", "_", key).strip("_")


def _endless(declaration: Declaration, why: str) -> str:
    return f"generic type {declaration.name!r} expands without end: {why}"
