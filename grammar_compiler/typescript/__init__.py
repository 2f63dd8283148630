"""TypeScript type definitions in, a JSON Schema (and xgrammar's form of it) out.

``/v1/completion/typed`` takes TypeScript declarations and the name of one
of them; the output must be JSON of that type. Two stages, one module each:

* the reader: ``tokens`` (a hand-written tokenizer that keeps comments for
  descriptions) and ``parser`` (recursive descent over the part of
  TypeScript that describes JSON data) build the declarations AST of
  ``syntax``;
* the schema builder: ``schema_builder`` turns the AST into a JSON Schema
  (2020-12, one ``$defs`` entry per declaration and per instantiation of a
  generic one, made by ``generics``, so recursive types work).

The schema is compiled by :func:`compile_json_schema` in strict mode.
Anything outside the subset is refused with its line and column, naming the
construct.

The subset:

* ``type X = T;``, ``interface X extends A, B { ... }`` (interfaces of one
  name merge), the ``type X { ... }`` form of the API documentation,
  ``enum`` and ``const enum`` (string and numeric literal members,
  auto-incremented, or constant expressions: ``Read = 1 << 0``, ``All =
  Read | Write``), each with or without ``export``, ``export { X, Y as Z
  }`` and ``export type { X }`` (re-exports from other files and ``import
  = require`` are kept as imports are), ``import Y = NS.X``; namespaces (``namespace API { ...
  }``, nested or dotted, their types named ``API.User``, names inside
  looked up innermost first). Any declared type may be ``type_name``.
* generic type aliases and interfaces: ``type Pair<T> = [T, T]``,
  ``interface Box<T, U = string> { ... }`` used as ``Pair<string>`` or
  ``Box<number>`` (defaults filled in, constraints ``T extends C`` passed
  over: they limit the arguments, not the values), nested
  (``Page<Result<User>>``) and recursive (``Tree<T>``). A generic may be
  ``type_name`` when all its type parameters have defaults.
* ``string``, ``number``, ``boolean`` (and their wrappers ``String``, ...),
  ``null``, ``any``/``unknown`` (any JSON), ``object`` (object or array),
  ``this`` in an interface or class, ``Date`` (an ISO 8601 date-time
  string, as ``JSON.stringify`` writes it); string, number and boolean
  literal types; ``Enum.Member``.
* unions (a leading ``|`` allowed; unions of literals become ``enum``, other
  unions a flat ``anyOf`` of their members), intersections of object types
  (merged; distributed over unions: ``(A | B) & C``), parentheses. A
  branded primitive (``string & { readonly __brand: "UserId" }``, through
  aliases and generics) is the primitive: no value has a brand's members.
  ``keyof``, ``Pick`` and ``Omit`` of a union see its common members;
  ``Partial``, ``Required`` and ``Readonly`` map each member.
* ``T[]``, ``readonly T[]``, ``Array<T>``, ``ReadonlyArray<T>``; tuples with
  optional (``T?``), named (``x: T``) and rest (``...T[]``) elements.
* object types: members separated by ``;``, ``,`` or line breaks, optional
  members (``x?: T``), ``readonly``, quoted names, index signatures
  ``[key: string]: T`` (keys also ``number`` or template literal types).
  Objects are closed (``additionalProperties: false``) unless they have an
  index signature. ``undefined`` (and ``void``, which holds only undefined)
  beside other types in a union is dropped (JSON has none), so
  ``x: T | undefined`` is a ``T`` whose key is present.
* ``Record<string, T>`` and ``Record<"a" | "b", T>``; ``Partial``,
  ``Required``, ``Readonly``, ``Pick`` and ``Omit`` of object types;
  ``Exclude``, ``Extract`` and ``NonNullable``; ``keyof`` of
  object types; template literal types (a string ``pattern``); indexed
  access (``T["k"]``, ``T[keyof T]``, ``T[number]``); mapped types
  (``{ [K in keyof T]?: T[K] }``, over arrays and tuples too, key
  remapping with ``as``); ``typeof`` of variables whose value is written
  out (``typeof SIZES[number]`` after ``const SIZES = [...] as const``).
* conditional types (``T extends U ? X : Y``, distributive over unions,
  ``infer``), decided by TypeScript's assignability rules
  (``relations``), which also let ``Extract``/``Exclude`` compare object
  types: ``DeepPartial<T>``, ``ElementOf<T>``, ``Extract<Event, { type:
  "click" }>``.
* classes of public fields (``classes``): the interface of their
  instances, with constructor parameter properties, ``extends``, generics,
  index signatures, optional methods left out; static members, decorators
  and bodies passed over.
* types read from signatures (``signatures``): ``ReturnType``,
  ``Parameters``, ``InstanceType``, ``ConstructorParameters`` of functions
  (``typeof f``, overloads), function and constructor types and methods;
  conditional types that match function types; ``Tuple["length"]``.
* ``/** JSDoc */`` and ``//`` comments before a declaration or member, or
  after a member on its line, become ``description``; the JSDoc tags of the
  TypeScript-to-JSON-Schema tools (``@minimum``, ``@pattern``, ``@format``,
  ``@TJS-type integer``, ...) become the keywords they name (``jsdoc``).

Refused as describing programs, not data: function and constructor types,
methods and setters (each where a value would need it: ``Pick``/``Omit``
may leave them out, an optional one is never in JSON, a union leaves them
out; a getter is a member), call and construct signatures, classes with
required methods or private members, functions and variables whose value is
computed. Refused by name where a value needs one (and left out like a
method elsewhere): ``bigint``, ``symbol``. Refused: ``undefined`` and
``void`` alone outside optional members, ``never`` where a value is
required, computed enum members, imports, and
generics that expand without end (``type T<X> = T<X[]>``). Statements and
declarations refused for their content are set aside: the refusal is
raised only when the named type uses them, so a file's functions, classes
and imports do not stop its data types.
"""

from __future__ import annotations

import dataclasses

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.typescript.parser import MAX_NESTING, parse_declarations
from grammar_compiler.typescript.schema_builder import document_schema

MAX_SOURCE_LENGTH = 256 * 1024

__all__ = [
    "MAX_NESTING",
    "MAX_SOURCE_LENGTH",
    "compile_typescript",
    "typescript_to_json_schema",
]


def compile_typescript(source: str, type_name: str, *, strict: bool = True) -> CanonicalConstraint:
    """Compile the declarations to the JSON Schema of ``type_name``, then for xgrammar.

    Raises:
        ConstraintError: a syntax error or unsupported construct (with line and
            column), an unknown ``type_name`` (listing the declared ones), or a
            type no JSON value has.
    """
    schema = typescript_to_json_schema(source, type_name)
    # the decoder gets the schema whole (a JSON_SCHEMA constraint), so its guard
    # keeps names and unique items apart
    constraint = compile_json_schema(schema, strict=strict, decoder_guard=True)
    return dataclasses.replace(constraint, source_language="typescript")


def typescript_to_json_schema(source: str, type_name: str) -> dict:
    """The JSON Schema (2020-12) of ``type_name``, for tests and debugging."""
    if not isinstance(source, str) or not isinstance(type_name, str):
        raise ConstraintError("TypeScript source and type_name must be strings")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ConstraintError(
            f"TypeScript source too long: {len(source)} characters (at most {MAX_SOURCE_LENGTH})"
        )
    declarations = parse_declarations(source)
    try:
        return document_schema(declarations, type_name)
    except RecursionError:  # a long chain of '&', extends or utility types
        raise ConstraintError("types refer to each other too deeply") from None
