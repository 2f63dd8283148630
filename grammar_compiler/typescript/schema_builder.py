"""The declarations AST to a JSON Schema (2020-12) of one declared type.

Every declaration the type reaches, and every instantiation of a generic
one, becomes a ``$defs`` entry, so recursive types are references to
themselves. Object types combined with ``&``, ``extends`` and the utility
types (``Partial``, ``Pick``, ...) are merged here into one object schema,
because ``allOf`` of closed objects (``additionalProperties: false``) would
admit nothing. A union is a flat ``anyOf`` of its members (one ``enum`` or
``type`` list when all of them are literals or plain primitives): merging
branches, and the limits on that, belong to ``compile_json_schema``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.case_mappings import unchanged_pattern
from grammar_compiler.typescript.generics import Instance, Instantiator, substitute
from grammar_compiler.typescript.jsdoc import jsdoc_keywords
from grammar_compiler.typescript.relations import Relations, program_refusal
from grammar_compiler.typescript.signatures import SIGNATURE_UTILITIES, read_from_signatures
from grammar_compiler.typescript.syntax import (
    ArrayType,
    CaseMapped,
    Conditional,
    Declaration,
    Declarations,
    IndexedAccess,
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

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def document_schema(declarations: Declarations, type_name: str) -> dict:
    """The JSON Schema of the declaration named ``type_name`` (exported or not).

    Raises:
        ConstraintError: ``type_name`` is not declared, or is generic with a
            type parameter that has no default; or a mistake in a type it reaches.
    """
    return _SchemaBuilder(declarations).document(type_name)


@dataclass(frozen=True)
class _Property:
    schema: dict
    optional: bool
    refusal: ConstraintError | None = None  # a method's: raised if the member is kept


@dataclass(frozen=True)
class _Shape:
    """An object type with its members resolved, for intersections and utility types."""

    properties: dict[str, _Property]
    additional: Any = False  # False, or the schema of an index signature
    names: dict | None = None  # what the index signature's names must be, when not any


NUMERIC_NAMES = {"pattern": "^(?:0|-?[1-9][0-9]{0,14})$"}
"""The names a ``[key: number]`` index signature takes here: the integers that
TypeScript reads back as the same number ("1", not "01" or "1.50"), a subset
of its numeric names."""
MAX_DISTRIBUTED = 64
"""Object types an intersection of unions may distribute into."""
MAX_TEMPLATE_TEXTS = 256
"""Strings a template literal type is spelled out as (beyond: a pattern)."""
_UTILITIES = frozenset({"Partial", "Required", "Readonly", "Pick", "Omit"})
_MEMBERWISE = frozenset({"Exclude", "Extract", "NonNullable", "Awaited"})
"""Built-ins that take a union member by member."""
_BUILT_IN_ALIASES = _MEMBERWISE | frozenset(SIGNATURE_UTILITIES)
"""Built-ins that stand for another type, found by ``_built_in_alias``."""
_HOMOMORPHIC = frozenset({"Partial", "Required", "Readonly"})
"""Utilities that map an object type member by member, so distribute over a union."""
_STRING_INTRINSICS = {
    "Uppercase": str.upper,
    "Lowercase": str.lower,
    "Capitalize": lambda text: text[:1].upper() + text[1:],
    "Uncapitalize": lambda text: text[:1].lower() + text[1:],
}
_PRIMITIVE_OF = {bool: "boolean", str: "string", int: "number", float: "number"}
_UNMAPPED_KEYWORDS = frozenset({"string", "number", "boolean", "null", "undefined", "never"})
"""Types a homomorphic mapped type leaves as they are (``Partial<string>``)."""
_ANY = Keyword("any")
_NOTHING = (Keyword("undefined"), Keyword("void"))
"""What a union member may be that JSON leaves out (``T | void``: a function's result)."""
_NOT_NULL = Union((Keyword("string"), Keyword("number"), Keyword("boolean"), Keyword("object")))
"""TypeScript's ``{}`` as a type of values: every JSON value but null."""
_PROPERTY_KEY = Union((Keyword("string"), Keyword("number")))
"""``PropertyKey`` and ``keyof any`` without ``symbol``, which no JSON value holds."""
_DERIVED = (IndexedAccess, TypeQuery, Conditional)
"""Types that stand for another, found by ``_resolved``."""


class _SchemaBuilder:
    def __init__(self, declarations: Declarations) -> None:
        self.declarations: Mapping[str, Declaration] = declarations.types
        self.values = declarations.values
        self.instances = Instantiator(self.declarations)
        self.definitions: dict[str, dict] = {}
        self._pending: list[Instance] = []
        self._shaping: list[str] = []
        self.relations = Relations(self)

    def document(self, type_name: str) -> dict:
        declaration = self.declarations.get(type_name)
        if declaration is None:
            data = (name for name, d in self.declarations.items() if d.refusal is None)
            listing = ", ".join(sorted(data)) or "none"
            raise ConstraintError(f"type {type_name!r} is not declared; declared types: {listing}")
        if declaration.refusal is not None:
            raise declaration.refusal
        needing = next((p for p in declaration.parameters if p.default is None), None)
        if needing is not None:
            raise error_at(
                needing.token,
                f"type {type_name!r} is generic and its type parameter {needing.name!r} has no "
                "default, so type_name cannot name it alone: declare an instance "
                f"(type My{type_name} = {type_name}<...>) and name that",
            )
        root = self._reference_to(self.instances.instance(declaration, (), None))
        while self._pending:
            instance = self._pending.pop()
            self.definitions[instance.name] = self._declaration_schema(instance)
        return {"$schema": DRAFT, **root, "$defs": dict(sorted(self.definitions.items()))}

    def _reference_to(self, instance: Instance) -> dict:
        if instance.name not in self.definitions:
            self._pending.append(instance)
            self.definitions[instance.name] = {}  # placeholder, so recursion stops here
        return {"$ref": f"#/$defs/{instance.name}"}

    def _declaration_schema(self, instance: Instance) -> dict:
        declaration = instance.declaration
        array = self._array_interface(instance)
        if declaration.kind == "enum":
            schema: dict = {"enum": list(dict.fromkeys(declaration.members.values()))}
        elif array is not None:
            schema = self.schema(array)
        elif declaration.kind == "interface":
            schema = self._shape_schema(self._interface_shape(instance))
        else:
            schema = self.schema(instance.body)
        return _annotated(schema, declaration.description, declaration.token)

    def _array_interface(self, instance: Instance) -> ArrayType | None:
        """``interface JSONArray extends Array<JSONValue> {}``, the way to name a
        recursive array type before TypeScript 3.7: the array itself (members of
        its own would be properties an array cannot carry in JSON: refused)."""
        bases = instance.extends
        arrays = ("Array", "ReadonlyArray")
        if not any(b.name in arrays and b.name not in self.declarations for b in bases):
            return None
        if len(bases) > 1 or instance.body.members or instance.body.index is not None:
            message = (
                f"interface {instance.declaration.name!r} extends an array: "
                "it can add no members and extend nothing else in JSON"
            )
            raise error_at(instance.declaration.token, message)
        (element,) = self._arguments(bases[0], 1)
        return ArrayType(element)

    def schema(self, node: Any) -> dict:
        if isinstance(node, Keyword):
            return self._keyword(node)
        if isinstance(node, ProgramType):
            raise program_refusal(node)
        if isinstance(node, Literal):
            return {"const": node.value} if node.value is not None else {"type": "null"}
        if isinstance(node, ArrayType):
            if node.element == _NEVER:
                return {"type": "array", "maxItems": 0}
            return {"type": "array", "items": self.schema(node.element)}
        if isinstance(node, TupleType):
            return self._tuple(node)
        if isinstance(node, ObjectType):
            return self._shape_schema(self._object_shape(node))
        if isinstance(node, Union):
            return self._union(node)
        if isinstance(node, Intersection):
            return self._intersection(node)
        if isinstance(node, MappedType):
            image = self._mapped_image(node)
            if image is not None:
                return self.schema(image)
            return self._shape_schema(self.shape(node))
        if isinstance(node, KeyOf):
            return self._key_of(node)
        if isinstance(node, TemplateType):
            return {"type": "string", "pattern": f"^{self._template_regex(node)}$"}
        if isinstance(node, _DERIVED):
            return self.schema(self._resolved(node))
        return self._reference(node)

    def _template_regex(self, node: TemplateType) -> str:
        """The strings of a template literal type, as an ECMA-262 regex: its text
        as it is, each placeholder as the strings its type can print as."""
        pieces = []
        for part in node.parts:
            if isinstance(part, str):
                pieces.append(_escaped(part))
                continue
            printed = [self._printed(member, node) for member in self._members(part, ())]
            pieces.append(f"(?:{'|'.join(dict.fromkeys(printed))})")
        return "".join(pieces)

    def _intersection(self, node: Intersection) -> dict:
        """Object types merged; ``T & {}`` (how a union of literals keeps any other
        string open while an editor still offers the literals: ``"a" | (string & {})``)
        is ``T``, since ``{}`` takes every value but null and undefined."""
        parts = [part for part in node.parts if part != ObjectType(())]
        if len(parts) == 1 and len(node.parts) > 1:
            return self.schema(parts[0])
        distributed = self._distributed(parts, node.token)
        if distributed is not None:
            return self.schema(distributed)
        branded = self._branded(parts)
        if branded is not None:
            return self.schema(branded)
        return self._shape_schema(self.shape(node))

    def _branded(self, parts: list[Any]) -> Any | None:
        """The primitive of a branded type (``string & { readonly __brand: "UserId" }``).

        A brand's members exist only for the type checker (no string or
        number has them), so every value a program holds of such a type is
        the primitive; that is the JSON such a field carries. None unless one
        part is a primitive or literal (through aliases) and the others are
        object types.
        """
        primitives = []
        for index, part in enumerate(parts):
            members = list(self._members(part, ()))
            if len(members) == 1 and _is_primitive(members[0]):
                primitives.append((index, members[0]))
        if len(primitives) != 1 or len(parts) == 1:
            return None
        ((kept, primitive),) = primitives
        for index, part in enumerate(parts):
            if index != kept:
                self.shape(part)  # refuses a part that is not an object type
        return primitive

    def _distributed(self, parts: list[Any], token: Token) -> Union | None:
        """``(A | B) & C`` as ``(A & C) | (B & C)``, as TypeScript reads it (a tagged
        union with members added to each, or literals kept where both sides have
        them); None when no part is a union."""
        choices = [list(dict.fromkeys(self._members(part, ()))) for part in parts]
        if all(len(options) == 1 for options in choices):
            return None
        combinations = [()]
        for options in choices:
            combinations = [(*c, o) for c in combinations for o in options]
            if len(combinations) > MAX_DISTRIBUTED:
                raise error_at(
                    token,
                    f"an intersection of unions makes more than {MAX_DISTRIBUTED} object types",
                )
        reduced = [_reduced(Intersection(c, token)) for c in combinations]
        kept = [option for option in dict.fromkeys(reduced) if option != _NEVER]
        return Union(tuple(kept)) if kept else Union((_NEVER,))

    def _recased(self, node: Reference) -> Any:
        """``Uppercase<T>``, ``Lowercase<T>``, ``Capitalize<T>``, ``Uncapitalize<T>``
        of string literals (through aliases, enums, finite templates): their
        literals recased; of ``string``: the strings it leaves alone
        (``case_mappings``), a template of one placeholder as TypeScript
        reads it; of a pattern, refused (a pattern of cased text is not
        written here)."""
        (target,) = self._arguments(node, 1)
        recase = _STRING_INTRINSICS[node.name]
        literals = []
        for member in self._members(target, ()):
            if member == Keyword("string"):
                literals.append(TemplateType((CaseMapped(node.name),), node.token))
                continue
            if not (isinstance(member, Literal) and isinstance(member.value, str)):
                raise error_at(
                    node.token, f"{node.name} takes string and string literal types here"
                )
            literals.append(Literal(recase(member.value)))
        unique = list(dict.fromkeys(literals))
        return unique[0] if len(unique) == 1 else Union(tuple(unique))

    def _template_texts(self, node: TemplateType) -> list[str] | None:
        """The strings of a template whose placeholders are all literals (at most
        ``MAX_TEMPLATE_TEXTS``), which TypeScript reads as their union; else None."""
        texts = [""]
        for part in node.parts:
            if isinstance(part, str):
                texts = [text + part for text in texts]
                continue
            pieces: list[str] = []
            for member in self._members(part, ()):
                if not isinstance(member, Literal):
                    return None
                pieces.append(_template_text(member.value))
            texts = [text + piece for text in texts for piece in dict.fromkeys(pieces)]
            if len(texts) > MAX_TEMPLATE_TEXTS:
                return None
        return texts

    def _printed(self, member: Any, node: TemplateType) -> str:
        if isinstance(member, Literal):
            return _escaped(_template_text(member.value))
        if isinstance(member, TemplateType):
            return self._template_regex(member)
        if isinstance(member, Keyword) and member.name in _PRINTED_KEYWORDS:
            return _PRINTED_KEYWORDS[member.name]
        if isinstance(member, CaseMapped):
            return unchanged_pattern(member.intrinsic)
        raise error_at(
            node.token,
            "a template literal type's placeholders take string, number, boolean, null "
            "and literal types (and unions of them)",
        )

    def _key_of(self, node: KeyOf) -> dict:
        keys = self._keys(node)
        return self.schema(keys[0]) if len(keys) == 1 else self._union(Union(keys))

    def _keys(self, node: KeyOf) -> tuple[Any, ...]:
        """The member names of an object type as literal types; ``string``
        beside an index signature (JSON's keys are strings)."""
        target = node.target
        if isinstance(target, _DERIVED):
            target = self._resolved(target)
        if target == _ANY:  # string | number | symbol; JSON's keys are strings
            return _PROPERTY_KEY.options
        if not isinstance(target, (ObjectType, Intersection, Reference, MappedType)):
            raise error_at(node.token, "keyof applies only to object types here")
        return self._shape_keys(self.shape(target), node.token)

    def _shape_keys(self, shape: _Shape, token: Token) -> tuple[Any, ...]:
        """``keyof`` an object type already resolved to its shape."""
        if shape.additional is not False and shape.names not in (None, NUMERIC_NAMES):
            raise error_at(
                token,
                "keyof a type whose index signature is keyed by a template literal type "
                "is not read here (its names would be lost)",
            )
        if shape.additional is not False:
            return (Keyword("number" if shape.names == NUMERIC_NAMES else "string"),)
        if not shape.properties:
            raise error_at(token, "keyof an object type without members is never")
        return tuple(Literal(name) for name in shape.properties)

    def _keyword(self, node: Keyword) -> dict:
        if node.name == "never":
            raise error_at(
                node.token,
                "'never' has no value; it is allowed as a union member, an optional "
                "member's type, an index signature's and an array's element type",
            )
        if node.name == "void":
            raise error_at(
                node.token,
                "'void' (a function's result of nothing) is not JSON; it is allowed beside "
                "other types in a union and as an optional member's type",
            )
        if node.name == "undefined":
            raise error_at(
                node.token,
                "'undefined' is not JSON; it is allowed beside other types in a union and as an "
                "optional member's type",
            )
        return {
            "string": {"type": "string"},
            "number": {"type": "number"},
            "boolean": {"type": "boolean"},
            "object": {"type": ["object", "array"]},
        }.get(node.name, {})

    def _spread(self, node: TupleType, token: Token | None) -> TupleType:
        """A tuple with each spread of a tuple type (``[...Head, string]``) replaced
        by that tuple's elements; an array spread stays its rest, which must end it."""
        if not any(e.rest and not isinstance(e.type, ArrayType) for e in node.elements):
            return node
        elements: list[TupleElement] = []
        for element in node.elements:
            if not element.rest or isinstance(element.type, ArrayType):
                elements.append(element)
                continue
            at = getattr(element.type, "token", None) or token
            spread = self._unaliased(element.type, at)
            if isinstance(spread, TupleType):
                elements += self._spread(spread, at).elements
            elif isinstance(spread, ArrayType):
                elements.append(TupleElement(spread, rest=True))
            else:
                raise error_at(at, "a spread in a tuple takes a tuple or array type")
        rests = [i for i, e in enumerate(elements) if e.rest]
        if rests and rests[0] != len(elements) - 1:
            raise error_at(
                token, "a tuple whose array spread is not last (JSON Schema cannot say it)"
            )
        return TupleType(tuple(elements))

    def _tuple(self, node: TupleType) -> dict:
        node = self._spread(node, None)
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

    def _union(self, node: Union) -> dict:
        options = [option for option in _flatten_union(node) if not self._is_never(option)]
        if any(option not in _NOTHING for option in options):
            # JSON has no undefined: a value of T | undefined written out is a T
            # (a member whose value is undefined is left out, an array's is null)
            options = [option for option in options if option not in _NOTHING]
        if not all(isinstance(option, ProgramType) for option in options):
            # nor functions or bigints: a value of string | (() => void) in JSON is a string
            options = [option for option in options if not isinstance(option, ProgramType)]
        if len(options) <= 1:
            return self.schema(options[0] if options else _NEVER)
        primitive = {"string", "number", "boolean"}
        if all(
            o == Literal(None) or (isinstance(o, Keyword) and o.name in primitive) for o in options
        ):
            names = dict.fromkeys("null" if isinstance(o, Literal) else o.name for o in options)
            return {"type": list(names)}
        if all(isinstance(o, Literal) for o in options):
            return {"enum": [o.value for o in dict.fromkeys(options)]}  # true and 1 stay apart
        schemas: dict[str, dict] = {}
        for option in options:
            schema = self.schema(option)
            schemas.setdefault(json.dumps(schema, sort_keys=True), schema)
        if len(schemas) == 1:
            return next(iter(schemas.values()))
        return {"anyOf": list(schemas.values())}

    def _reference(self, node: Reference) -> dict:
        sequence = self._utility_of_sequence(node)
        if sequence is not None:
            return self.schema(sequence)
        if node.name in _HOMOMORPHIC and node.name not in self.declarations:
            (target,) = self._arguments(node, 1)
            options = list(dict.fromkeys(self._members(target, ())))
            if len(options) > 1:  # Partial<A | B> is Partial<A> | Partial<B>
                return self.schema(
                    Union(tuple(Reference(node.name, (o,), node.token) for o in options))
                )
            kept = self._unmapped(options[0]) if options else None
            if kept is not None:  # Partial<string> is string
                return self.schema(kept)
        if node.name in _UTILITIES or node.name == "Record":
            return self._shape_schema(self.shape(node))
        if node.name in ("Array", "ReadonlyArray"):
            (element,) = self._arguments(node, 1)
            return {"type": "array", "items": self.schema(element)}
        if node.name == "Date" and node.name not in self.declarations:
            self._arguments(node, 0)
            return {"type": "string", "format": "date-time"}
        if node.name in _BUILT_IN_ALIASES and node.name not in self.declarations:
            return self.schema(self._built_in_alias(node))
        if node.name == "PropertyKey" and node.name not in self.declarations:
            return self.schema(_PROPERTY_KEY)
        if node.name in _STRING_INTRINSICS and node.name not in self.declarations:
            return self.schema(self._recased(node))
        declaration = self._declaration(node)
        if node.member is not None:
            if declaration.kind != "enum" or node.member not in declaration.members:
                raise error_at(node.token, f"{node.name}.{node.member} is not an enum member")
            return {"const": declaration.members[node.member]}
        return self._reference_to(self.instances.instance(declaration, node.arguments, node.token))

    def _built_in_alias(self, node: Reference) -> Any:
        """The type a built-in such as ``Exclude<T, U>`` or ``ReturnType<F>`` stands for."""
        if node.name in _MEMBERWISE:
            return self._memberwise(node)
        (target,) = self._arguments(node, 1)
        return read_from_signatures(node.name, list(self._members(target, ())), node.token)

    def _memberwise(self, node: Reference) -> Any:
        """``Exclude<T, U>`` (the members of the union ``T`` not assignable to
        ``U``), ``Extract<T, U>`` (those assignable) and ``NonNullable<T>``
        (``Exclude<T, null | undefined>``), member by member as TypeScript does;
        and ``Awaited<T>``: each member, or what a ``Promise`` of it resolves to."""
        if node.name == "Awaited":
            (target,) = self._arguments(node, 1)
            awaited = [self._awaited(member) for member in self._members(target, ())]
            return awaited[0] if len(awaited) == 1 else Union(tuple(awaited))
        if node.name == "NonNullable":
            (target,) = self._arguments(node, 1)
            against: Any = Union((Literal(None), Keyword("undefined")))
        else:
            target, against = self._arguments(node, 2)
        kept_when = node.name == "Extract"
        kept = [
            member
            for member in self._members(target, ())
            if self.relations.assignable(member, against, node.token) == kept_when
        ]
        if not kept:
            return Keyword("never", node.token)  # refused where a value is needed
        return kept[0] if len(kept) == 1 else Union(tuple(kept))

    def _never_intersection(self, option: Any, token: Token) -> bool:
        return isinstance(option, Intersection) and self.relations.reduced_to_never(option, token)

    def _is_never(self, option: Any) -> bool:
        """Whether a union member has no value: ``never``, or an alias or derived
        type that comes to it (``Kind<"a">`` with ``Kind<T> = T extends string ?
        never : T``), which a union leaves out as TypeScript does."""
        if isinstance(option, Intersection):
            distributed = self._distributed(list(option.parts), option.token)
            return _reduced(option) == _NEVER or (
                distributed is not None and all(o == _NEVER for o in distributed.options)
            )
        if not isinstance(option, (Reference, *_DERIVED)):
            return option == _NEVER
        return all(
            member == _NEVER
            or (isinstance(member, MappedType) and self._mapped_image(member) == _NEVER)
            for member in self._members(option, ())
        )

    def _awaited(self, member: Any) -> Any:
        """What awaiting a value of ``member`` gives: a ``Promise``'s value, unwrapped
        again while it is one (``Promise`` itself is not JSON, so only here)."""
        promised = isinstance(member, Reference) and member.name in ("Promise", "PromiseLike")
        if not promised or member.name in self.declarations:
            return member
        (value,) = self._arguments(member, 1)
        return self._memberwise(Reference("Awaited", (value,), member.token))

    def _members(self, node: Any, through: tuple[str, ...]) -> Iterator[Any]:
        """A union's members, looking through type aliases (``through`` them
        already) and enums (their members' literals)."""
        for option in _flatten_union(node):
            if isinstance(option, KeyOf):
                yield from self._keys(option)
                continue
            if isinstance(option, Intersection) and _primitive_parts(option):
                yield from self._members(_primitive_intersection(option), through)
                continue
            if isinstance(option, _DERIVED):
                yield from self._members(self._resolved(option), through)
                continue
            built_in = isinstance(option, Reference) and option.name not in self.declarations
            if built_in and option.name in _STRING_INTRINSICS:
                yield from self._members(self._recased(option), through)
                continue
            if built_in and option.name == "PropertyKey":
                yield from _PROPERTY_KEY.options
                continue
            if built_in and option.name in _BUILT_IN_ALIASES:
                yield from self._members(self._built_in_alias(option), through)
                continue
            if isinstance(option, TemplateType):
                texts = self._template_texts(option)
                yield from (option,) if texts is None else (Literal(text) for text in texts)
                continue
            declaration = (
                self.declarations.get(option.name) if isinstance(option, Reference) else None
            )
            if declaration is not None and declaration.refusal is not None:
                raise declaration.refusal
            if declaration is None or declaration.kind == "interface":
                yield option
            elif declaration.kind == "enum":
                members = declaration.members
                if option.member is not None:
                    yield Literal(members[option.member]) if option.member in members else option
                else:
                    yield from (Literal(value) for value in members.values())
            else:
                instance = self.instances.instance(declaration, option.arguments, option.token)
                if instance.key in through:
                    raise error_at(option.token, f"{option.name!r} is a union of itself")
                yield from self._members(instance.body, (*through, instance.key))

    # -- what relations.py asks -----------------------------------------

    def members(self, node: Any) -> list[Any]:
        """A union's members through aliases, enums and derived types."""
        return list(self._members(node, ()))

    def unaliased(self, node: Any, token: Token) -> Any:
        return self._unaliased(node, token)

    def member_type(self, target: Any, name: str | None, token: Token) -> Any:
        """The type of an object type's member (``None``: its index signature's)."""
        return self._property(target, name, token)

    def template_pattern(self, node: TemplateType) -> str:
        return self._template_regex(node)

    @staticmethod
    def template_text_of(literal: Literal) -> str:
        return _template_text(literal.value)

    def _declaration(self, node: Reference) -> Declaration:
        declaration = self.declarations.get(node.name)
        if declaration is None:
            hint = _KNOWN_GLOBALS.get(node.name, "")
            if node.name in self.values:
                hint = f" ({node.name!r} is a variable: its type is written typeof {node.name})"
            raise error_at(node.token, f"unknown type {node.name!r}{hint}")
        if declaration.refusal is not None:
            raise declaration.refusal
        return declaration

    # -- typeof and indexed access ---------------------------------------

    def _resolved(self, node: IndexedAccess | TypeQuery | Conditional) -> Any:
        """The type that ``typeof x``, ``T[K]`` or a conditional type stands for."""
        if isinstance(node, IndexedAccess):
            qualified = self._namespace_value(node)
            return self._indexed(node) if qualified is None else self._resolved(qualified)
        if isinstance(node, Conditional):
            return self.relations.conditional(node)
        value = self.values.get(node.name)
        declaration = self.declarations.get(node.name)
        if value is None and declaration is not None and declaration.kind == "enum":
            # an enum is also an object of its members: keyof typeof Status is their names
            members = (
                Member(name, Literal(literal), False, None, node.token)
                for name, literal in declaration.members.items()
            )
            return ObjectType(tuple(members))
        if value is None:
            what = "a type, not a variable" if declaration is not None else "not declared"
            raise error_at(node.token, f"typeof {node.name}: {node.name!r} is {what}")
        if value.refusal is not None:
            raise value.refusal
        return value.type

    def _namespace_value(self, node: IndexedAccess) -> IndexedAccess | TypeQuery | None:
        """``typeof Api.LIMIT`` where ``Api`` is a namespace: the variable named by
        the longest such path, then the members after it; None otherwise."""
        path: list[str] = []
        target: Any = node
        while isinstance(target, IndexedAccess) and isinstance(target.index, Literal):
            if not isinstance(target.index.value, str):
                return None
            path.insert(0, target.index.value)
            target = target.target
        if not isinstance(target, TypeQuery) or target.name in self.values:
            return None
        for cut in range(len(path), 0, -1):
            name = ".".join([target.name, *path[:cut]])
            if name in self.values:
                found: IndexedAccess | TypeQuery = TypeQuery(name, target.token)
                for key in path[cut:]:
                    found = IndexedAccess(found, Literal(key), node.token)
                return found
        return None

    def _indexed(self, node: IndexedAccess) -> Any:
        """``T[K]``, key by key of the union ``K`` (``T[keyof T]``: all member types)."""
        found = [self._indexed_by(node.target, key, node) for key in self._members(node.index, ())]
        unique = list(dict.fromkeys(found))
        return unique[0] if len(unique) == 1 else Union(tuple(unique))

    def _indexed_by(self, target: Any, key: Any, node: IndexedAccess) -> Any:
        target = self._unaliased(target, node.token)
        if target == _ANY:
            return _ANY
        if isinstance(target, Union):
            options = [self._indexed_by(option, key, node) for option in target.options]
            unique = list(dict.fromkeys(options))
            return unique[0] if len(unique) == 1 else Union(tuple(unique))
        numeric = key == Keyword("number") or (isinstance(key, Literal) and type(key.value) is int)
        found = None
        if key == Literal("length") and _has_length(target):
            found = _length(target)
        elif isinstance(target, ArrayType) and numeric:
            found = target.element
        elif isinstance(target, TupleType) and numeric:
            found = _tuple_element(target, key)
        elif isinstance(key, Literal) and isinstance(key.value, (str, int)):
            found = self._property(target, str(key.value), node.token)
        elif key in (Keyword("string"), Keyword("number")):
            found = self._property(target, None, node.token)
        if found is None:
            written = json.dumps(key.value) if isinstance(key, Literal) else key.name
            raise error_at(node.token, f"the indexed type has no member {written}")
        return found

    def _unaliased(self, node: Any, token: Token | None) -> Any:
        """``node`` with type aliases, ``typeof``, ``T[K]`` and ``Array<T>`` looked through."""
        seen: set[str] = set()
        while True:
            if isinstance(node, _DERIVED):
                node = self._resolved(node)
                continue
            if isinstance(node, TupleType):
                return self._spread(node, token)
            if not isinstance(node, Reference) or node.member is not None:
                return node
            if node.name in ("Array", "ReadonlyArray") and node.name not in self.declarations:
                return ArrayType(self._arguments(node, 1)[0])
            if node.name in _BUILT_IN_ALIASES and node.name not in self.declarations:
                node = self._built_in_alias(node)
                continue
            declaration = self.declarations.get(node.name)
            if declaration is None or declaration.kind != "type":
                return node
            instance = self.instances.instance(declaration, node.arguments, node.token)
            if instance.key in seen:
                raise error_at(token, f"{node.name!r} is an alias of itself")
            seen.add(instance.key)
            node = instance.body

    def _property(self, target: Any, name: str | None, token: Token) -> Any:
        """The type of member ``name`` of an object type (``None``: its index
        signature's), or None when it has no such member."""
        target = self._unaliased(target, token)
        if isinstance(target, ObjectType):
            for member in target.members:
                if member.name == name and member.optional:
                    return Union((member.type, Keyword("undefined")))  # as TypeScript reads it
                if member.name == name:
                    return member.type
            return target.index
        if isinstance(target, MappedType):
            key = Keyword("string") if name is None else Literal(name)
            if target.rename is not None:
                original = self._renamed_keys(target).get(key)
                return (
                    None
                    if original is None
                    else substitute(target.value, {target.parameter: original})
                )
            keys = list(self._members(target.keys, ()))
            if key not in keys and Keyword("string") not in keys:
                return None
            return substitute(target.value, {target.parameter: key})
        if isinstance(target, Intersection):
            found = [self._property(part, name, token) for part in target.parts]
            unique = list(dict.fromkeys(f for f in found if f is not None))
            if len(unique) > 1:
                return Intersection(tuple(unique), token)
            return unique[0] if unique else None
        if not isinstance(target, Reference):
            raise error_at(token, "indexed access applies to object, array and tuple types")
        if target.name == "Record" and "Record" not in self.declarations:
            keys, value = self._arguments(target, 2)
            members = list(self._members(keys, ()))
            names = {str(m.value) for m in members if isinstance(m, Literal)}
            signatures = [m for m in members if not isinstance(m, Literal)]
            if name is None:  # its index signature's type, if it has one
                return value if signatures else None
            taken = name in names or any(self._signature_takes(k, name) for k in signatures)
            return value if taken else None
        if target.name in _UTILITIES and target.name not in self.declarations:
            return self._utility_property(target, name, token)
        declaration = self._declaration(target)
        if declaration.kind != "interface" or target.member is not None:
            raise error_at(token, f"{target.name!r} is not an object type")
        instance = self.instances.instance(declaration, target.arguments, target.token)
        own = next((m for m in instance.body.members if m.name == name), None)
        if own is not None:
            return self._property(ObjectType((own,)), name, token)
        for base in reversed(instance.extends):
            found = self._property(base, name, token)
            if found is not None:
                return found
        return instance.body.index

    def _signature_takes(self, key: Any, name: str) -> bool:
        """Whether an index signature's key type (``string``, ``number``, a
        template literal type) takes the member name ``name``."""
        if key == Keyword("number"):
            return _takes_name(NUMERIC_NAMES, name)
        if isinstance(key, TemplateType):
            return re.fullmatch(self._template_regex(key), name) is not None
        return key == Keyword("string")

    def _utility_property(self, target: Reference, name: str | None, token: Token) -> Any:
        if target.name in ("Pick", "Omit"):
            inner, keys = self._arguments(target, 2)
            names = {m.value for m in self._members(keys, ()) if isinstance(m, Literal)}
            if (name in names) != (target.name == "Pick"):
                return None
            return self._property(inner, name, token)
        (inner,) = self._arguments(target, 1)
        return self._property(inner, name, token)

    def _arguments(self, node: Reference, count: int) -> tuple[Any, ...]:
        """The arguments of a built-in generic (``Array``, ``Record``, ``Partial``, ...)."""
        if len(node.arguments) != count:
            plural = "" if count == 1 else "s"
            raise error_at(
                node.token,
                f"{node.name} takes {count} type argument{plural}, got {len(node.arguments)}",
            )
        return node.arguments

    # -- object shapes ---------------------------------------------------

    def shape(self, node: Any) -> _Shape:
        """The members of an object type, resolving references, intersections and utilities."""
        if isinstance(node, ObjectType):
            return self._object_shape(node)
        if isinstance(node, Intersection):
            result = _Shape({})
            for part in node.parts:
                result = self._merge_shapes(result, self.shape(part), node.token)
            return result
        if isinstance(node, Reference):
            return self._reference_shape(node)
        if isinstance(node, _DERIVED):
            return self.shape(self._resolved(node))
        if isinstance(node, MappedType):
            return self._mapped_shape(node)
        if isinstance(node, Union):
            return self._common_shape(node)
        token = getattr(node, "token", None)
        message = "only object types can be combined with '&' or utility types"
        raise error_at(token, message) if token else ConstraintError(message)

    def _common_shape(self, node: Union) -> _Shape:
        """The members every object type of a union has, each the union of its types
        there (optional where it is in any): what ``keyof``, ``Pick`` and ``Omit``
        see of a union, as in TypeScript."""
        shapes = [self.shape(option) for option in dict.fromkeys(self._members(node, ()))]
        if len(shapes) == 1:
            return shapes[0]
        common: dict[str, _Property] = {}
        for name in shapes[0].properties:
            found = [shape.properties.get(name) for shape in shapes]
            if any(prop is None for prop in found):
                continue
            kept = [prop for prop in found if prop is not None]
            schemas = list({json.dumps(p.schema, sort_keys=True): p.schema for p in kept}.values())
            common[name] = _Property(
                schemas[0] if len(schemas) == 1 else {"anyOf": schemas},
                any(p.optional for p in kept),
                next((p.refusal for p in kept if p.refusal), None),
            )
        return _Shape(common)

    def _reference_shape(self, node: Reference) -> _Shape:
        if node.name == "Record":
            return self._record(node)
        if node.name in _UTILITIES:
            return self._utility(node)
        if node.name in _BUILT_IN_ALIASES and node.name not in self.declarations:
            return self.shape(self._built_in_alias(node))
        declaration = self._declaration(node)
        if declaration.kind == "enum" or node.member is not None:
            raise error_at(node.token, f"{node.name!r} is not an object type")
        instance = self.instances.instance(declaration, node.arguments, node.token)
        if instance.key in self._shaping:
            raise error_at(node.token, f"{node.name!r} refers to itself through '&' or extends")
        self._shaping.append(instance.key)
        try:
            if declaration.kind == "interface":
                return self._interface_shape(instance)
            return self.shape(instance.body)
        finally:
            self._shaping.pop()

    def _interface_shape(self, instance: Instance) -> _Shape:
        result = _Shape({})
        for base in instance.extends:
            result = self._merge_shapes(result, self._reference_shape(base), base.token)
        body_shape = self._object_shape(instance.body)
        return self._merge_shapes(result, body_shape, instance.declaration.token)

    def _object_shape(self, node: ObjectType) -> _Shape:
        properties = {}
        for member in node.members:
            member_type = member.type
            if member.optional:
                member_type = _without_undefined(member_type)
                if member_type in (_NEVER, Keyword("undefined")):
                    continue  # { x?: never }: x is never there
            if isinstance(member_type, ProgramType):
                # never in JSON; refused if required (unless Omit/Pick leave it out)
                refusal = program_refusal(member_type)
                properties[member.name] = _Property({}, member.optional, refusal)
                continue
            schema = _annotated(self.schema(member_type), member.description, member.token)
            properties[member.name] = _Property(schema, member.optional)
        if node.index is None or node.index == _NEVER:  # [key: string]: never: no other names
            return _Shape(properties)
        return _Shape(properties, self.schema(node.index), self._index_names(node.index_key))

    def _index_names(self, key: Any) -> dict | None:
        """The names an index signature takes: any (``string``), the integers
        (``number``), or a template literal type's strings (several: any of them)."""
        if key == "string":
            return None
        if key == "number":
            return NUMERIC_NAMES
        keys = key.options if isinstance(key, Union) else (key,)
        names = [
            self._index_names(k.name)
            if isinstance(k, Keyword)
            else {"pattern": f"^{self._template_regex(k)}$"}
            for k in keys
        ]
        if None in names:
            return None
        return names[0] if len(names) == 1 else {"anyOf": names}

    def _mapped_shape(self, node: MappedType) -> _Shape:
        """A member per key, each optional as written (``?``, ``-?``) or, over
        ``keyof T`` with nothing written, as in ``T`` (TypeScript's homomorphic
        mapped types, so ``{ [K in keyof T]: T[K] }`` is ``T``)."""
        homomorphic = (
            isinstance(node.keys, KeyOf) and self._unaliased(node.keys.target, node.token) != _ANY
        )
        source = self.shape(node.keys.target) if homomorphic else None
        keys = node.keys
        if source is not None and source.additional is not False:
            # over keyof T, T's members stay beside its index signature, as in TypeScript
            names = (Literal(name) for name in source.properties)
            keys = Union((*names, *self._shape_keys(source, node.token)))

        def optional(name: str) -> bool:
            if node.optional is not None:
                return node.optional
            kept = source.properties.get(name) if source else None
            return kept.optional if kept else False

        def value(key: Any) -> dict:
            return self.schema(substitute(node.value, {node.parameter: key}))

        if node.rename is None:
            shape = self._keyed_shape(keys, value, optional, node.token, "a mapped type")
            # each member must also take the type mapped from the index signature,
            # which TypeScript checks against every property of a value
            properties = _indexed_too(shape.properties, _Shape({}, shape.additional, shape.names))
            return _Shape(properties, shape.additional, shape.names)
        renamed = self._renamed_keys(node)
        by_name = {str(new.value): key for new, key in renamed.items() if isinstance(new, Literal)}
        keys = Union(tuple(renamed)) if renamed else _NEVER
        return self._keyed_shape(
            keys,
            lambda new: value(renamed[new]),
            lambda name: optional(str(by_name[name].value)),
            node.token,
            "a mapped type",
        )

    def _mapped_image(self, node: MappedType) -> Any | None:
        """What a mapped type over ``keyof T``, ``T`` a type parameter, gives when
        its argument is not an object type: each member of a union mapped apart
        (``DeepPartial<A | null>`` is ``DeepPartial<A> | null``), a primitive left
        as it is (``DeepPartial<string>`` is ``string``), an array or tuple mapped
        element by element; else None (a member per key)."""
        if node.template is not None and node.rename is None:
            opened, template = node.template
            images = [
                self._unmapped(option) or substitute(template, {opened: option})
                for option in dict.fromkeys(self._members(node.keys.target, ()))
                if not self._never_intersection(option, node.token)
            ]
            if len(images) != 1:
                return Union(tuple(images)) if images else _NEVER
            if images and images[0] != node:  # the argument resolved (T[K]: its type)
                return images[0]
        return self._mapped_sequence(node)

    def _unmapped(self, target: Any) -> Any | None:
        """``target`` itself when a homomorphic mapping leaves it as it is: a
        primitive, literal or template literal type (and ``Date``, whose JSON
        text is a string; TypeScript would map its methods); for ``unknown``,
        the ``{}`` TypeScript makes of it (every value but null); else None."""
        target = self._unaliased(target, None)
        if isinstance(target, (Literal, TemplateType)):
            return target
        if target == Keyword("unknown"):  # mapped over keyof unknown (never): {}, not null
            return _NOT_NULL
        if isinstance(target, Keyword) and target.name in _UNMAPPED_KEYWORDS:
            return target
        built_in_date = isinstance(target, Reference) and target.name == "Date"
        return target if built_in_date and "Date" not in self.declarations else None

    def _mapped_sequence(self, node: MappedType) -> ArrayType | TupleType | None:
        """``{ [K in keyof T]: ... }`` over an array or tuple type ``T`` is an array
        or tuple again, its elements mapped (TypeScript's homomorphic mapped types:
        ``Partial<string[]>``, a ``DeepPartial`` reaching an array); else None."""
        if not isinstance(node.keys, KeyOf) or node.rename is not None:
            return None
        target = self._unaliased(node.keys.target, node.token)
        if isinstance(target, ArrayType):
            return ArrayType(substitute(node.value, {node.parameter: Keyword("number")}))
        if not isinstance(target, TupleType):
            return None
        elements = []
        for position, element in enumerate(target.elements):
            # a rest element's key is its position too: T[K] is then its elements' type
            mapped = substitute(node.value, {node.parameter: Literal(position)})
            optional = element.optional if node.optional is None else node.optional
            elements.append(
                TupleElement(ArrayType(mapped) if element.rest else mapped, optional, element.rest)
            )
        return TupleType(tuple(elements))

    def _utility_of_sequence(self, node: Reference) -> ArrayType | TupleType | None:
        """``Partial``, ``Required`` and ``Readonly`` of an array or tuple type: the
        same sequence, its tuple elements made optional or required; else None."""
        if node.name not in _HOMOMORPHIC or node.name in self.declarations:
            return None
        (target,) = self._arguments(node, 1)
        target = self._unaliased(target, node.token)
        if isinstance(target, ArrayType) or (
            isinstance(target, TupleType) and node.name == "Readonly"
        ):
            return target
        if not isinstance(target, TupleType):
            return None
        optional = node.name == "Partial"
        return TupleType(
            tuple(TupleElement(e.type, optional and not e.rest, e.rest) for e in target.elements)
        )

    def _renamed_keys(self, node: MappedType) -> dict[Any, Any]:
        """Each new key of a mapped type with ``as``, and the key it was made from
        (a key renamed to ``never`` is left out, as ``as Exclude<K, "id">`` does)."""
        renamed: dict[Any, Any] = {}
        for key in self._members(node.keys, ()):
            for new in self._members(substitute(node.rename, {node.parameter: key}), ()):
                if new != _NEVER:
                    renamed.setdefault(new, key)
        return renamed

    def _record(self, node: Reference) -> _Shape:
        keys, value = self._arguments(node, 2)
        if value == _NEVER:  # Record<string, never>: the empty object
            return _Shape({})
        schema = self.schema(value)
        return self._keyed_shape(keys, lambda _: schema, lambda _: False, node.token, "Record")

    def _keyed_shape(
        self,
        keys: Any,
        value: Callable[[Any], dict],
        optional: Callable[[str], bool],
        token: Token,
        what: str,
    ) -> _Shape:
        """A member per key of the union ``keys`` that is a string or number
        literal; ``string``, ``number`` and template literal types give an index
        signature over the names they allow."""
        properties: dict[str, _Property] = {}
        additional: Any = False
        name_schemas: list[dict | None] = []
        for key in self._members(keys, ()):
            if isinstance(key, Literal) and type(key.value) in (str, int):
                name = str(key.value)
                properties[name] = _Property(value(key), optional(name))
                continue
            if key == _NEVER:
                continue
            if key == Keyword("string"):
                name_schemas.append(None)
            elif key == Keyword("number"):
                name_schemas.append(NUMERIC_NAMES)
            elif isinstance(key, TemplateType):
                name_schemas.append({"pattern": f"^{self._template_regex(key)}$"})
            else:
                raise error_at(
                    token,
                    f"{what}'s keys must be string or number literals, string, number "
                    "or template literal types",
                )
            schema = value(key)
            additional = (
                schema
                if additional is False or _same(additional, schema)
                else {"anyOf": [additional, schema]}
            )
        if None in name_schemas or not name_schemas:
            return _Shape(properties, additional)
        names = name_schemas[0] if len(name_schemas) == 1 else {"anyOf": name_schemas}
        return _Shape(properties, additional, names)

    def _utility(self, node: Reference) -> _Shape:
        if node.name in ("Pick", "Omit"):
            target, keys = self._arguments(node, 2)
            names = {str(m.value) for m in self._members(keys, ()) if isinstance(m, Literal)}
            shape = self.shape(target)
            keep = (lambda n: n in names) if node.name == "Pick" else (lambda n: n not in names)
            kept = {n: p for n, p in shape.properties.items() if keep(n)}
            return _Shape(kept, shape.additional, shape.names)
        (target,) = self._arguments(node, 1)
        if self._unaliased(target, node.token) == _ANY:  # Partial<any>: { [x: string]: any }
            return _Shape({}, {})
        shape = self.shape(target)
        if node.name == "Readonly":
            return shape
        optional = node.name == "Partial"
        properties = {
            n: _Property(p.schema, optional, p.refusal) for n, p in shape.properties.items()
        }
        return _Shape(properties, shape.additional, shape.names)

    def _merge_shapes(self, a: _Shape, b: _Shape, token: Token) -> _Shape:
        """``A & B``: a member of both has both types; a member of one whose name
        the other's index signature takes has that signature's type too (in
        ``{ id: string } & { [k: string]: number }``, ``id`` is ``string & number``)."""
        a = _Shape(_indexed_too(a.properties, b), a.additional, a.names)
        b = _Shape(_indexed_too(b.properties, a), b.additional, b.names)
        properties = dict(a.properties)
        for name, prop in b.properties.items():
            if name in properties:
                both = properties[name]
                schema = (
                    both.schema
                    if _same(both.schema, prop.schema)
                    else {"allOf": [both.schema, prop.schema]}
                )
                prop = _Property(
                    schema, both.optional and prop.optional, both.refusal or prop.refusal
                )
            properties[name] = prop
        if b.additional is False:
            return _Shape(properties, a.additional, a.names)
        if a.additional is False or _same((a.additional, a.names), (b.additional, b.names)):
            return _Shape(properties, b.additional, b.names)
        names = None
        if a.names is not None or b.names is not None:
            names = {"allOf": [a.names or {}, b.names or {}]}
        return _Shape(properties, {"allOf": [a.additional, b.additional]}, names)

    def _shape_schema(self, shape: _Shape) -> dict:
        for prop in shape.properties.values():
            if prop.refusal is not None and not prop.optional:
                raise prop.refusal
        kept = {n: p for n, p in shape.properties.items() if p.refusal is None}
        shape = _Shape(kept, shape.additional, shape.names)
        schema: dict = {"type": "object"}
        if shape.properties:
            schema["properties"] = {n: p.schema for n, p in shape.properties.items()}
        required = [n for n, p in shape.properties.items() if not p.optional]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = shape.additional
        if shape.names is None:
            return schema
        patterns = _patterns(shape.names)
        if patterns and shape.properties:
            # beside declared members, whose names need not fit the index
            # signature's ({ length: number; [i: number]: string }), its names are
            # patterns (xgrammar's propertyNames would not keep the declared out)
            schema["patternProperties"] = dict.fromkeys(patterns, shape.additional)
            schema["additionalProperties"] = False
        else:
            schema["propertyNames"] = shape.names
        return schema


_NEVER = Keyword("never")

_PRINTED_KEYWORDS = {
    "string": ".*",
    "number": r"-?(?:0|[1-9][0-9]{0,99})(?:\.[0-9]+)?(?:[eE](?:-[0-9]+|\+?[0-9]{1,2}))?",
    "boolean": "true|false",
    "undefined": "undefined",
}
"""What a placeholder of these types prints as: any text, a number as JSON
writes one, ... TypeScript takes a numeric string whose value is finite
(``"1e400"`` is not a `${number}`: it reads as Infinity), so the number is
kept below 1e200: at most 100 digits before the point and an exponent of at
most 99 (any negative one: a tiny number is finite). A subset either way."""
_REGEX_SPECIAL = re.compile(r"[\\^$.|?*+()\[\]{}]")


def _annotated(schema: dict, description: str | None, token: Token) -> dict:
    """``schema`` with the comment's description and the limits its JSDoc tags give."""
    try:
        text, keywords = jsdoc_keywords(description)
    except ConstraintError as error:
        raise error_at(token, error.message) from None
    if keywords.get("type") == "integer" and schema.get("type") == "number":
        schema = {key: value for key, value in schema.items() if key != "type"}
    schema = {**schema, **keywords}
    return {**schema, "description": text} if text else schema


def _patterns(names: dict) -> list[str] | None:
    """The regexes of a ``propertyNames`` schema that is a pattern or ``anyOf`` of
    patterns (an index signature's names), else None."""
    options = names.get("anyOf", [names])
    if all(option.keys() == {"pattern"} for option in options):
        return [option["pattern"] for option in options]
    return None


def _escaped(text: str) -> str:
    return _REGEX_SPECIAL.sub(lambda found: "\\" + found.group(), text)


def _template_text(value: Any) -> str:
    """How a literal prints inside a template (``${1}``, ``${true}``, ``${null}``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_KNOWN_GLOBALS = {
    "Map": " (Map is not JSON-serializable; use Record<string, T>)",
    "Set": " (Set is not JSON-serializable; use T[])",
    "Promise": " (Promise is not JSON data)",
    "Error": (
        " (JSON.stringify writes an Error as {}; declare the members the data carries, "
        "such as { name: string; message: string })"
    ),
    "integer": " (TypeScript has no integer type; use number)",
    "int": " (TypeScript has no integer type; use number)",
    "float": " (use number)",
}


def _flatten_union(node: Any) -> Iterator[Any]:
    if isinstance(node, Union):
        for option in node.options:
            yield from _flatten_union(option)
    else:
        yield node


def _is_primitive(node: Any) -> bool:
    """Whether a type is a non-null literal or ``string``, ``number`` or ``boolean``."""
    return (isinstance(node, Literal) and node.value is not None) or (
        isinstance(node, Keyword) and node.name in ("string", "number", "boolean")
    )


def _primitive_parts(node: Intersection) -> bool:
    """Whether an intersection is of literals and primitives only (``K & string``)."""
    parts = [part for part in node.parts if part != ObjectType(())]
    return all(_is_primitive(part) for part in parts) and bool(parts)


def _reduced(node: Intersection) -> Any:
    """An intersection of literals and primitives as the one type it is
    (``("a" | "b") & ("b" | "c")`` distributes to ``"b"``); others as they are."""
    return _primitive_intersection(node) if _primitive_parts(node) else node


def _primitive_intersection(node: Intersection) -> Any:
    """The one type an intersection of literals and primitives is: ``"a" & string``
    is ``"a"``, ``string & number`` is never (``& {}`` changes neither)."""
    parts = [part for part in node.parts if part != ObjectType(())]
    literals = {part for part in parts if isinstance(part, Literal)}
    keywords = {part.name for part in parts if isinstance(part, Keyword)}
    if literals:
        (literal, *others) = literals
        fits = all(_PRIMITIVE_OF.get(type(literal.value)) == name for name in keywords)
        return literal if not others and fits else _NEVER
    return Keyword(keywords.pop()) if len(keywords) == 1 else _NEVER


def _same(a: Any, b: Any) -> bool:
    """Whether two schemas are the same JSON: ``==`` would take ``{"const": true}``
    for ``{"const": 1}`` (Python's ``True == 1``)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _indexed_too(properties: dict[str, _Property], other: _Shape) -> dict[str, _Property]:
    """``properties`` each with ``other``'s index signature type added where
    ``other`` has no member of that name and its signature takes the name."""
    if other.additional is False or other.additional == {}:
        return properties
    return {
        name: _Property({"allOf": [prop.schema, other.additional]}, prop.optional, prop.refusal)
        if name not in other.properties
        and not _same(prop.schema, other.additional)
        and _takes_name(other.names, name)
        else prop
        for name, prop in properties.items()
    }


def _takes_name(names: dict | None, name: str) -> bool:
    """Whether an index signature's name schema (None: any name) takes ``name``."""
    if not names:
        return True
    if "anyOf" in names:
        return any(_takes_name(option, name) for option in names["anyOf"])
    if "allOf" in names:
        return all(_takes_name(option, name) for option in names["allOf"])
    return re.search(names["pattern"], name) is not None


def _has_length(node: Any) -> bool:
    """Whether ``T["length"]`` is a number: of arrays, tuples and strings."""
    is_string = isinstance(node, Literal) and isinstance(node.value, str)
    return is_string or isinstance(node, (ArrayType, TupleType)) or node == Keyword("string")


def _length(node: Any) -> Any:
    """``T["length"]``: a tuple's counts of elements as literals (``[A, B?]``:
    ``1 | 2``), ``number`` for an array, a string or a tuple with a rest element."""
    if not isinstance(node, TupleType) or any(e.rest for e in node.elements):
        return Keyword("number")
    required = sum(1 for e in node.elements if not e.optional)
    counts = tuple(Literal(n) for n in range(required, len(node.elements) + 1))
    return counts[0] if len(counts) == 1 else Union(counts)


def _tuple_element(node: TupleType, key: Any) -> Any:
    """A tuple's element at a numeric literal (past the fixed ones, its rest's
    elements), or the union of all of them at ``number``."""
    types = [e.type.element if e.rest else e.type for e in node.elements]
    if isinstance(key, Literal):
        fixed = [e for e in node.elements if not e.rest]
        rest = [e.type.element for e in node.elements if e.rest]
        if key.value >= len(fixed) and rest:
            return rest[0]
        if not 0 <= key.value < len(fixed):
            return None
        element = fixed[key.value]
        return _without_undefined(element.type) if element.optional else element.type
    unique = list(dict.fromkeys(types))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else Union(tuple(unique))


def _without_undefined(node: Any) -> Any:
    """An optional member's or element's type without ``undefined`` or ``void``
    (which holds only undefined); ``undefined`` where nothing else is left."""
    if node == Keyword("void"):
        return Keyword("undefined")
    if not isinstance(node, Union):
        return node
    options = tuple(o for o in _flatten_union(node) if o not in _NOTHING)
    if not options:
        return Keyword("undefined")
    return options[0] if len(options) == 1 else Union(options)
