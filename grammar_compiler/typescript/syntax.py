"""The declarations AST: what the parser reads and the schema builder turns into JSON Schema.

Type nodes are frozen, and their tokens take no part in equality, so two
spellings of one type at different places compare equal (``undefined`` is
found in a union by equality, and a union's duplicate members fold).
Generic instantiation substitutes argument nodes into a body
(``grammar_compiler.typescript.generics``); the tokens kept inside a body
still point at the body, where a mistake in it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.tokens import Token

PROGRAM_NOT_DATA = "it describes a program, not data"


@dataclass(frozen=True)
class Keyword:
    name: str  # string, number, boolean, any, unknown, object, undefined
    token: Token | None = field(default=None, compare=False)


@dataclass(frozen=True, eq=False)
class Literal:
    value: Any  # str, int, float, bool, or None for null

    def _identity(self) -> tuple[str, Any]:
        """The value with its JavaScript type: Python has ``True == 1`` and
        ``False == 0``, TypeScript's ``true`` and ``1`` are different types
        (``1`` and ``1.0`` are one number in both)."""
        value = self.value
        kind = "boolean" if isinstance(value, bool) else type(value).__name__
        return ("number" if kind in ("int", "float") else kind), value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Literal) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


@dataclass(frozen=True)
class Reference:
    """A named type: a declaration, a type parameter, ``Array``, ``Record``, ``Date``, ..."""

    name: str
    arguments: tuple[Any, ...]
    token: Token = field(compare=False)
    member: str | None = None  # Enum.Member


@dataclass(frozen=True)
class ArrayType:
    element: Any


@dataclass(frozen=True)
class TupleElement:
    type: Any
    optional: bool = False
    rest: bool = False


@dataclass(frozen=True)
class TupleType:
    elements: tuple[TupleElement, ...]


@dataclass(frozen=True)
class Member:
    name: str
    type: Any
    optional: bool
    description: str | None
    token: Token = field(compare=False)


@dataclass(frozen=True)
class ObjectType:
    members: tuple[Member, ...]
    index: Any = None  # the value type of [key: string]: T
    index_key: Any = "string"  # "number" for [key: number]: T; or a template literal type


@dataclass(frozen=True)
class TemplateType:
    """A template literal type: text and its ``${}`` placeholders' types, in order."""

    parts: tuple[Any, ...]  # str, or a type
    token: Token = field(compare=False)


@dataclass(frozen=True)
class CaseMapped:
    """``Lowercase<string>`` (``Uppercase``, ``Capitalize``, ``Uncapitalize``): the
    strings the intrinsic leaves as they are; a template literal type's placeholder."""

    intrinsic: str


@dataclass(frozen=True)
class KeyOf:
    """``keyof T``: the names of an object type's members."""

    target: Any
    token: Token = field(compare=False)


@dataclass(frozen=True)
class IndexedAccess:
    """``T[K]``: the types of ``T``'s members named by ``K`` (``T[number]``: array elements)."""

    target: Any
    index: Any
    token: Token = field(compare=False)


@dataclass(frozen=True)
class MappedType:
    """``{ [K in Keys]?: T }``: a member per key of ``Keys``, ``T`` with that key for ``K``."""

    parameter: str
    keys: Any
    value: Any
    optional: bool | None  # ? or +? (True), -? (False), none written (None)
    token: Token = field(compare=False)
    rename: Any = None  # the type after 'as': each key's new name (never: left out)
    template: tuple[str, Any] | None = field(default=None, compare=False)
    """Set when ``keys`` was ``keyof T`` with ``T`` a type parameter, now bound:
    a name, and this mapped type with that name in place of ``T``. TypeScript
    applies such a mapped type to each member of a union argument apart and
    leaves a primitive argument as it is, which needs ``T`` open again."""


@dataclass(frozen=True)
class Conditional:
    """``Check extends Pattern ? WhenTrue : WhenFalse``.

    Written with a type parameter alone as ``Check`` (``T extends string ?
    ...``), it distributes over a union argument: once its argument is known,
    ``parameter`` names it and the other three types still hold it, to be
    replaced by each member of ``check`` in turn."""

    check: Any
    pattern: Any
    when_true: Any
    when_false: Any
    token: Token = field(compare=False)
    parameter: str | None = None


@dataclass(frozen=True)
class Infer:
    """``infer U`` in a conditional type's pattern: the type found there, named."""

    name: str
    token: Token = field(compare=False)


@dataclass(frozen=True)
class TypeQuery:
    """``typeof x``: the type of a variable whose value is written out in the source."""

    name: str
    token: Token = field(compare=False)


@dataclass(frozen=True)
class Signature:
    """What a function takes and gives, for ``Parameters<F>``, ``ReturnType<F>``
    and conditional types that match functions (``F extends (...a: any) => infer R``)."""

    parameters: TupleType  # as Parameters<F> reads them: names gone, optional and rest kept
    returns: Any  # None where not written (TypeScript infers it from a body not read here)
    own_parameters: frozenset[str] = frozenset()  # a generic one's: unknown where used


@dataclass(frozen=True)
class ProgramType:
    """A function type, method or accessor: part of a program, which no JSON value
    has (or an ``import("m").T``, a type of another file). Kept in its place so
    that a type leaving it out (``Omit<Api, "run">``) is still data; refused
    where a value of it is asked for. A function's or constructor's signature
    is kept for the types read from it."""

    construct: str  # "function type", "method signature", ...
    token: Token = field(compare=False)
    why: str = PROGRAM_NOT_DATA
    signature: Signature | None = None


@dataclass(frozen=True)
class Union:
    options: tuple[Any, ...]


@dataclass(frozen=True)
class Intersection:
    parts: tuple[Any, ...]
    token: Token = field(compare=False)


@dataclass(frozen=True)
class TypeParameter:
    """``T`` or ``U = string`` of ``interface Box<T, U = string>`` (a constraint is not kept:
    it limits the arguments a program may pass, not the values of the type)."""

    name: str
    token: Token
    default: Any = None


@dataclass
class Declaration:
    name: str
    kind: str  # "type", "interface", "enum", "program" (a class or an import: see refusal)
    token: Token
    body: Any = None  # a type (an ObjectType for interfaces)
    extends: tuple[Reference, ...] = ()
    description: str | None = None
    members: dict[str, Any] = field(default_factory=dict)  # enum member values
    parameters: tuple[TypeParameter, ...] = ()
    refusal: ConstraintError | None = None  # raised where a "program" declaration is used
    scope: str = ""  # the namespace it is declared in ("A.B"), where its names are looked up

    @property
    def required_parameters(self) -> int:
        """How many type arguments a reference must give (those after have defaults)."""
        return sum(1 for parameter in self.parameters if parameter.default is None)


@dataclass
class Value:
    """A variable (``const``, ``let``, ``var``), for ``typeof``: the type of its
    value, or why it has none here (a function, a class, a computed value)."""

    name: str
    token: Token
    type: Any = None
    refusal: ConstraintError | None = None


@dataclass
class Declarations:
    """A source's type declarations and its variables: two name spaces, as in
    TypeScript (``const Status = {...}; type Status = ...`` is one of each)."""

    types: dict[str, Declaration]
    values: dict[str, Value]


def own_reference(name: Token, parameters: tuple[TypeParameter, ...]) -> Reference:
    """``this`` inside an interface or class: the type itself, with its own parameters."""
    arguments = tuple(Reference(p.name, (), p.token) for p in parameters)
    return Reference(name.text, arguments, name)
