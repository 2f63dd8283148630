"""grammar_compiler.typescript: TypeScript declarations -> JSON Schema -> xgrammar.

The JSON Schemas below are written by hand from the TypeScript meaning of
each declaration, so they judge the translation rather than restate it.
Compiled constraints are then driven through real xgrammar as the decoder
runs it, and the TypeScript corpus is checked like the JSON Schema one.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from integration.typescript_judge import typescript_errors
from json_instances import Decoder, instance_texts, samples

from grammar_compiler import ConstraintError, compile_typescript, typescript_to_json_schema

CORPUS = Path(__file__).parent / "corpus" / "typescript"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _schema_of(source: str, type_name: str) -> dict:
    schema = typescript_to_json_schema(source, type_name)
    assert schema.pop("$schema") == DRAFT
    return schema


def _root(name: str, definitions: dict) -> dict:
    return {"$ref": f"#/$defs/{name}", "$defs": definitions}


def _object(properties: dict, required: list[str] | None = None, **extra: object) -> dict:
    schema: dict = {"type": "object", "properties": properties}
    if required is None:
        required = list(properties)
    if required:
        schema["required"] = required
    return {**schema, "additionalProperties": False, **extra}


STRING, NUMBER, BOOLEAN = {"type": "string"}, {"type": "number"}, {"type": "boolean"}

# ---------------------------------------------------------------------------
# Declarations and the JSON Schemas they mean

TRANSLATIONS = [
    pytest.param(
        "export type BasicSentence {\n  text: string;\n}",
        "BasicSentence",
        _root("BasicSentence", {"BasicSentence": _object({"text": STRING})}),
        id="documented-form",
    ),
    pytest.param(
        "export interface P { a: string; b?: number, c: boolean\n d: null }",
        "P",
        _root(
            "P",
            {
                "P": _object(
                    {"a": STRING, "b": NUMBER, "c": BOOLEAN, "d": {"type": "null"}}, ["a", "c", "d"]
                )
            },
        ),
        id="primitives-separators-optional",
    ),
    pytest.param(
        "export type T = { x: any; y: unknown; z: object }",
        "T",
        _root("T", {"T": _object({"x": {}, "y": {}, "z": {"type": ["object", "array"]}})}),
        id="any-unknown-object",
    ),
    pytest.param(
        "export type Mood = 'happy' | \"sad\" | 3 | -1.5 | true | null",
        "Mood",
        _root("Mood", {"Mood": {"enum": ["happy", "sad", 3, -1.5, True, None]}}),
        id="literal-union",
    ),
    pytest.param(
        "export type T = | string | number | null",
        "T",
        _root("T", {"T": {"type": ["string", "number", "null"]}}),
        id="leading-pipe-primitive-union",
    ),
    pytest.param(
        "export type T = { a: string[]; b: Array<number>; c: readonly boolean[]; "
        "d: ReadonlyArray<string>[] }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {
                        "a": {"type": "array", "items": STRING},
                        "b": {"type": "array", "items": NUMBER},
                        "c": {"type": "array", "items": BOOLEAN},
                        "d": {"type": "array", "items": {"type": "array", "items": STRING}},
                    }
                )
            },
        ),
        id="arrays",
    ),
    pytest.param(
        "export type T = [string, number?]",
        "T",
        _root(
            "T",
            {
                "T": {
                    "type": "array",
                    "prefixItems": [STRING, NUMBER],
                    "minItems": 1,
                    "items": False,
                }
            },
        ),
        id="tuple-optional",
    ),
    pytest.param(
        "export type T = [x: number, y: number, ...rest: string[]]",
        "T",
        _root(
            "T",
            {
                "T": {
                    "type": "array",
                    "prefixItems": [NUMBER, NUMBER],
                    "minItems": 2,
                    "items": STRING,
                }
            },
        ),
        id="tuple-named-rest",
    ),
    pytest.param(
        "export type T = { when: Date; meta: Record<string, number>; "
        "pair: Record<'a' | 'b', boolean> }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {
                        "when": {"type": "string", "format": "date-time"},
                        "meta": {"type": "object", "additionalProperties": NUMBER},
                        "pair": _object({"a": BOOLEAN, "b": BOOLEAN}),
                    }
                )
            },
        ),
        id="date-record",
    ),
    pytest.param(
        "export type T = { [key: string]: number; fixed: number }",
        "T",
        _root("T", {"T": {**_object({"fixed": NUMBER}), "additionalProperties": NUMBER}}),
        id="index-signature",
    ),
    pytest.param(
        "export type T = { a?: string | undefined; b: (string | number)[] }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {"a": STRING, "b": {"type": "array", "items": {"type": ["string", "number"]}}},
                    ["b"],
                )
            },
        ),
        id="optional-undefined-parentheses",
    ),
    pytest.param(
        "export type T = { a: string | void; b?: void; c: (number | void)[] }",
        "T",
        _root(
            "T",
            {"T": _object({"a": STRING, "c": {"type": "array", "items": NUMBER}}, ["a", "c"])},
        ),
        id="void-beside-other-types",
    ),
    pytest.param(
        "export type T = { 'content-type': string; 42: boolean; readonly id: string; "
        "readonly: number }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {"content-type": STRING, "42": BOOLEAN, "id": STRING, "readonly": NUMBER}
                )
            },
        ),
        id="member-names",
    ),
    pytest.param(
        "interface A { a: string; shared?: number }\ninterface B { b: number; shared: number }\n"
        "export type C = A & B & { c: boolean }",
        "C",
        _root(
            "C",
            {"C": _object({"a": STRING, "shared": NUMBER, "b": NUMBER, "c": BOOLEAN})},
        ),
        id="intersection-merged",
    ),
    pytest.param(
        "interface Base { id: string }\ninterface Stamp { at: Date }\n"
        "export interface Doc extends Base, Stamp { title: string }",
        "Doc",
        _root(
            "Doc",
            {
                "Doc": _object(
                    {"id": STRING, "at": {"type": "string", "format": "date-time"}, "title": STRING}
                )
            },
        ),
        id="interface-extends",
    ),
    pytest.param(
        "type U = { a: string; b: number; c: boolean }\n"
        "export type T = { p: Partial<U>; q: Pick<U, 'a' | 'c'>; r: Omit<U, 'a'>; "
        "s: Required<Partial<U>> }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {
                        "p": _object({"a": STRING, "b": NUMBER, "c": BOOLEAN}, []),
                        "q": _object({"a": STRING, "c": BOOLEAN}),
                        "r": _object({"b": NUMBER, "c": BOOLEAN}),
                        "s": _object({"a": STRING, "b": NUMBER, "c": BOOLEAN}),
                    }
                )
            },
        ),
        id="utility-types",
    ),
    pytest.param(
        "enum Color { Red = 'red', Green = 'green', Blue = 'blue' }\n"
        "interface A { x: number }\n"
        "type Kind = 'a' | 'b' | 1 | true\n"
        "type Maybe<X> = X | null\n"
        "type B = { y: 1; z: 2 } & { [key: string]: number }\n"
        "export type T = { e: Exclude<Kind, 'a' | number>; x: Extract<Kind, string>; "
        "c: Exclude<Color, Color.Red>; n: NonNullable<Maybe<A> | undefined>; "
        "k: keyof A; b: keyof B; t: Exclude<keyof (A & { w: 1 }), 'x'> }",
        "T",
        _root(
            "T",
            {
                "T": _object(
                    {
                        "e": {"enum": ["b", True]},
                        "x": {"enum": ["a", "b"]},
                        "c": {"enum": ["green", "blue"]},
                        "n": {"$ref": "#/$defs/A"},
                        "k": {"const": "x"},
                        "b": STRING,
                        "t": {"const": "w"},
                    }
                ),
                "A": _object({"x": NUMBER}),
            },
        ),
        id="union-filters-and-keyof",
    ),
    pytest.param(
        "export enum Color { Red = 'red', Green = 'green' }\n"
        "export enum Level { Low, Mid = 5, High }\n"
        "export type T = { color: Color; level: Level; only: Color.Green }",
        "T",
        _root(
            "T",
            {
                "Color": {"enum": ["red", "green"]},
                "Level": {"enum": [0, 5, 6]},
                "T": _object(
                    {
                        "color": {"$ref": "#/$defs/Color"},
                        "level": {"$ref": "#/$defs/Level"},
                        "only": {"const": "green"},
                    }
                ),
            },
        ),
        id="enums",
    ),
    pytest.param(
        "export interface Node { value: number; children: Node[]; parent?: Node }",
        "Node",
        _root(
            "Node",
            {
                "Node": _object(
                    {
                        "value": NUMBER,
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        "parent": {"$ref": "#/$defs/Node"},
                    },
                    ["value", "children"],
                )
            },
        ),
        id="recursive-interface",
    ),
    pytest.param(
        "export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }",
        "Json",
        _root(
            "Json",
            {
                "Json": {
                    "anyOf": [
                        STRING,
                        NUMBER,
                        BOOLEAN,
                        {"type": "null"},
                        {"type": "array", "items": {"$ref": "#/$defs/Json"}},
                        {"type": "object", "additionalProperties": {"$ref": "#/$defs/Json"}},
                    ]
                }
            },
        ),
        id="recursive-json",
    ),
    pytest.param(
        "/** A point. */\nexport interface Point {\n  /** Horizontal */\n  x: number;\n"
        "  y: number; // vertical\n"
        "  // depth,\n  // if any\n  z?: number\n}",
        "Point",
        _root(
            "Point",
            {
                "Point": {
                    **_object(
                        {
                            "x": {**NUMBER, "description": "Horizontal"},
                            "y": {**NUMBER, "description": "vertical"},
                            "z": {**NUMBER, "description": "depth,\nif any"},
                        },
                        ["x", "y"],
                    ),
                    "description": "A point.",
                }
            },
        ),
        id="comments-become-descriptions",
    ),
    pytest.param(
        "// header comment, not a description\n\ntype Hidden = { h: string }\n"
        "export type T = { hidden: Hidden };\n"
        "export { Hidden }",
        "Hidden",
        _root("Hidden", {"Hidden": _object({"h": STRING})}),
        id="export-list",
    ),
]


@pytest.mark.parametrize(("source", "type_name", "expected"), TRANSLATIONS)
def test_translation(source: str, type_name: str, expected: dict) -> None:
    assert _schema_of(source, type_name) == expected


@pytest.mark.parametrize(("source", "type_name", "expected"), TRANSLATIONS)
def test_translation_compiles_for_xgrammar(source: str, type_name: str, expected: dict) -> None:
    constraint = compile_typescript(source, type_name)
    assert constraint.source_language == "typescript"
    decoder = Decoder(constraint.value)
    for text in samples(decoder, 15, seed=len(source)):
        assert constraint.judge(text) is None, (text, constraint.judge(text))


def test_compiled_constraint_accepts_and_rejects() -> None:
    source = "export interface Item { name: string; qty: number; size?: 'S' | 'M' }"
    constraint = compile_typescript(source, "Item")
    decoder = Decoder(constraint.value)
    for good in ['{"name": "a", "qty": 1}', '{"name": "a", "qty": 2.5, "size": "M"}']:
        assert decoder.accepts(good) and constraint.judge(good) is None
    for bad in [
        '{"name": "a"}',
        '{"name": "a", "qty": 1, "size": "L"}',
        '{"name": "a", "qty": 1, "x": 1}',
    ]:
        assert not decoder.accepts(bad) and constraint.judge(bad) is not None


# ---------------------------------------------------------------------------
# Mistakes and unsupported constructs, located


@pytest.mark.parametrize(
    ("source", "message", "line", "column"),
    [
        (
            "export type T = {\n  a: string\n  b: number c: string\n}",
            "expected ';', ',' or a line break, found 'c'",
            3,
            13,
        ),
        ("export type T = { a string }", "expected ':', found 'string'", 1, 21),
        ("export type T = { a: }", "expected a type, found '}'", 1, 22),
        ("export type T = {\n  a: string;", "expected '}'", 2, 13),
        ("export type T = 'abc", "unterminated string literal", 1, 17),
        ("export type T = /* never closed", "unterminated comment", 1, 17),
        ("export type T = string \\", "unexpected character '\\\\'", 1, 24),
        (
            "type B<X> = X\nexport type T = Promise<string>",
            "unknown type 'Promise' (Promise is not JSON data)",
            2,
            17,
        ),
        (
            "export type T = Foo<string>\ntype Foo = {}",
            "'Foo' is not generic: it takes no type arguments",
            1,
            17,
        ),
        ("export type T = keyof string[]", "keyof applies only to object types here", 1, 17),
        ("export type T = keyof {}", "keyof an object type without members is never", 1, 17),
        ("export type T = typeof x", "typeof x: 'x' is not declared", 1, 24),
        ("export type T = typeof T", "typeof T: 'T' is a type, not a variable", 1, 24),
        ("export type T = typeof", "expected a variable name after typeof", 1, 23),
        ("export type T = typeof a.c\nconst a = {b: 1}", 'has no member "c"', 1, 25),
        (
            "export type T = x\nconst x = 1",
            "'x' is a variable: its type is written typeof x",
            1,
            17,
        ),
        (
            "export type T = `a${string}` extends `${string}b` ? 1 : 2",
            "a conditional type compares two template literal types",
            1,
            30,
        ),
        (
            "export type T = [1] extends [infer U extends number] ? U : 0",
            "unsupported construct 'infer with a constraint",
            1,
            38,
        ),
        ("export type T = 1 extends 1 ? 2", "expected ':' of a conditional type", 1, 32),
        ("export type T = infer U", "infer outside a conditional type's 'extends'", 1, 17),
        (
            "export type T = { [K in 'a' as K | true]: K }",
            "a mapped type's keys must be string or",
            1,
            17,
        ),
        ("export type T = { [K in 'a']: 1; b: 2 }", "(a mapped type has no other members)", 1, 34),
        ("export type T = { b: 2; [K in 'a']: 1 }", "a mapped type has no other members", 1, 25),
        ("export type T = { [K in true]: 1 }", "a mapped type's keys must be string or", 1, 17),
        ("export type T = U['b']\ntype U = { a: string }", 'has no member "b"', 1, 18),
        ("export type T = [1, 2][2]", "the indexed type has no member 2", 1, 23),
        ("export type T = { a: 1 }[number]", "the indexed type has no member number", 1, 25),
        ("export type T = string['size']", "applies to object, array and tuple types", 1, 23),
        ("export type T = U['a']\nenum U { A }", "'U' is not an object type", 1, 18),
        ("export type T = U['a']\ntype U = U", "'U' is an alias of itself", 1, 18),
        ("export type T = `id-${{ a: 1 }}`", "a template literal type's placeholders take", 1, 17),
        ("export type T = `id-${string", "unterminated '${' in a template literal type", 1, 21),
        ("export type T = `id", "unterminated template literal type", 1, 17),
        ("export type T = bigint", "unsupported construct 'bigint' (not JSON-serializable)", 1, 17),
        ("export type T = { a: void }", "'void' (a function's result of nothing) is not", 1, 22),
        ("export type T = { a: never }", "'never' has no value", 1, 22),
        ("export type T = Uppercase<`a${string}`>", "Uppercase takes string and string", 1, 17),
        ("export type T = never", "'never' has no value", 1, 17),
        ("export type T = undefined", "'undefined' is not JSON", 1, 17),
        (
            "import { Y as X } from './x'\ntype T = X",
            "'X' is imported from './x': this service reads one source text",
            1,
            15,
        ),
        ("import T = require('x')", "'T' is imported from 'x'", 1, 8),
        ("export type T = Missing", "unknown type 'Missing'", 1, 17),
        (
            "export type T = Map<string, number>",
            "unknown type 'Map' (Map is not JSON-serializable",
            1,
            17,
        ),
        ("export type T = { a: integer }", "TypeScript has no integer type", 1, 22),
        ("export type T = { a: string; a: number }", "duplicate member 'a'", 1, 30),
        ("export type T = string\nexport type T = number", "duplicate declaration of 'T'", 2, 13),
        (
            "export enum E { A = 'a', B }",
            "an enum member after a string member needs a value",
            1,
            26,
        ),
        (
            "export enum E { A = f(2) }\ntype T = E",
            "unsupported construct 'computed enum member",
            1,
            21,
        ),
        (
            "enum E { A = 1, B = C | 2 }\ntype T = E",
            "unsupported construct 'computed enum member",
            1,
            21,
        ),
        (
            "type T = E\nenum E { A = 'a' + b }",
            "unsupported construct 'computed enum member",
            2,
            14,
        ),
        (
            "export type T = [string?, number]",
            "a required tuple element cannot follow an optional one",
            1,
            27,
        ),
        (
            "export interface I extends Record<string, number>, J {}\ninterface J { j: string }",
            None,
            None,
            None,
        ),
        (
            "export type T = { a: string } & any",
            "only object types can be combined with '&'",
            1,
            33,
        ),
        ("export type T = T & { a: string }", "'T' refers to itself through '&' or extends", 1, 17),
        ("export type T = 1e999", "number 1e999 is out of range", 1, 17),
        ("export type T = Exclude<'a', string>", "'never' has no value", 1, 17),
        (
            "export type T = Record<boolean, string>",
            "Record's keys must be string or number literals, string, number or template",
            1,
            17,
        ),
    ],
)
def test_errors_are_located(
    source: str, message: str | None, line: int | None, column: int | None
) -> None:
    if message is None:  # accepted
        typescript_to_json_schema(source, "I")
        return
    with pytest.raises(ConstraintError) as caught:
        typescript_to_json_schema(source, "T")
    error = caught.value
    assert message in error.message, error.message
    assert (error.line, error.column) == (line, column), str(error)


PROGRAM = "(it describes a program, not data)"


@pytest.mark.parametrize(
    ("source", "construct", "line", "column"),
    [
        ("export type T = (x: number) => string", "function type", 1, 17),
        ("type T = { onClick: (event: MouseEvent) => void }", "function type", 1, 21),
        ("type T = { f: <X>(x: X) => X }", "function type", 1, 15),
        ("type T = { make: new () => Date }", "constructor type", 1, 18),
        ("export type T = { f(): void }", "method signature", 1, 19),
        (
            "interface T {\n  name: string\n  greet(who: string): string\n}",
            "method signature",
            3,
            3,
        ),
        ("interface T { map<X>(f: X): X }", "method signature", 1, 15),
        ("interface T { (): void }", "call signature", 1, 15),
        ("interface T { new (): T }", "construct signature", 1, 15),
        ("interface T { set size(v: number) }", "set accessor", 1, 19),
        ("export class C { run() {} }\ntype T = C", "method", 1, 18),
        ("abstract class C { abstract area(): number }\ntype T = { c: C[] }", "method", 1, 29),
        ("class C { private a = 1 }\ntype T = C", "private member", 1, 11),
        ("type T = typeof f\nfunction f(): T { return 1 }", "function", 2, 1),
        ("type T = typeof f\nexport async function f() {}", "function", 2, 8),
        ("declare function f(): void\ntype T = typeof f", "function", 1, 9),
        ("type T = keyof C\nclass C { #a = 1 }", "#private member", 2, 11),
    ],
)
def test_programs_are_refused_as_not_data(
    source: str, construct: str, line: int, column: int
) -> None:
    with pytest.raises(ConstraintError) as caught:
        compile_typescript(source, "T")
    error = caught.value
    assert error.message == f"unsupported construct '{construct}' {PROGRAM}"
    assert (error.line, error.column) == (line, column), str(error)


SET_ASIDE_SOURCE = """\
import { z } from "zod";
@Component({ selector: "app" })
class Widget { render() {} }
type Handler = (event: Event) => void
type IsText<T> = T extends string ? true : never
interface Api { get(path: string): Promise<Order> }
declare global { interface Window { app: Widget } }
export default { name: "restaurant" }
import type { Money as Price, Currency } from './money'
import * as api from "./api"

// TypeChat's restaurant schema keeps values beside its types.
export const saladSize = ['half', 'whole'];

export class Cart {
    #items: Order[] = [];
    total(): number { return this.#items.length % 2 / 1 ^ 3 }
}

export function describe(order: Order): string {
    return `${order.items.length} items`;
}
const handlers = { pizza: (x: number) => x * 2 }
export const schema = z.object({ name: z.string() });

export interface Order {
    items: { itemType: 'salad'; portion?: string; size: typeof saladSize[number] }[];
}
"""


def test_program_statements_are_set_aside_until_used() -> None:
    """Classes, functions, imports, computed values, decorators, ambient scopes and
    declarations outside the subset beside the data types are passed over; a
    type that uses one is refused where the statement is."""
    constraint = compile_typescript(SET_ASIDE_SOURCE, "Order")
    decoder = Decoder(constraint.value)
    good = '{"items": [{"itemType": "salad", "size": "half"}]}'
    assert decoder.accepts(good) and constraint.judge(good) is None
    bad = '{"items": [{"itemType": "salad", "size": 1}]}'
    assert not decoder.accepts(bad) and constraint.judge(bad) is not None
    uses = {
        "Handler": ("'function type' (it describes a program, not data)", 4, 16),
        "IsText<1>": ("'never' has no value", 5, 44),
        "Api": ("'method signature'", 6, 17),
        "Widget": ("'method'", 3, 16),
        "Cart": ("unsupported construct '#private member' (it describes a program, not", 16, 5),
        "typeof describe": ("unsupported construct 'function'", 20, 8),
        "Price": ("'Price' is imported from './money'", 9, 24),
        "Currency": ("'Currency' is imported from './money'", 9, 31),
        "api": ("'api' is imported from './api'", 10, 13),
        "typeof z": ("'z' is imported from 'zod'", 1, 10),
        "typeof handlers": ("typeof takes variables whose value is written out", 23, 27),
        "typeof schema": ("this one is computed, from 'z'", 24, 23),
    }
    for used, (message, line, column) in uses.items():
        with pytest.raises(ConstraintError) as caught:
            compile_typescript(f"{SET_ASIDE_SOURCE}type T = {{ x: {used} }}", "T")
        assert message in caught.value.message, caught.value.message
        assert (caught.value.line, caught.value.column) == (line, column), str(caught.value)
    with pytest.raises(ConstraintError, match=r"'#private member'.* at line 16, column 5"):
        compile_typescript(SET_ASIDE_SOURCE, "Cart")
    with pytest.raises(
        ConstraintError, match=r"declared types: Api, Handler, IsText, Order, Window$"
    ):
        compile_typescript(SET_ASIDE_SOURCE, "Missing")  # Window: declare global's


def test_a_body_set_aside_ends_at_its_brace_when_a_statement_follows_on_its_line() -> None:
    """Minified or one-line sources put the next declaration after the ``}``."""
    one_line = "function f() { return { a: 1 } } class C { x = 1 } interface A { n: number }"
    decoder = Decoder(compile_typescript(one_line, "A").value)
    assert decoder.accepts('{"n": 1}')
    namespaced = "namespace NS { export interface A { x: number } } type T = NS.A;"
    assert Decoder(compile_typescript(namespaced, "T").value).accepts('{"x": 1}')
    typed = "function f(): { a: number } { return { a: 1 } } interface A { n: string }"
    assert Decoder(compile_typescript(typed, "A").value).accepts('{"n": "x"}')


def test_ambient_module_and_global_declarations_are_read() -> None:
    """A ``.d.ts`` file declares its types inside ``declare module "m" { ... }``."""
    source = """\
declare module "my-sdk" {
  export interface Config { url: string; retries?: number; mode: Mode }
  export type Mode = "fast" | "safe";
}
declare global {
  interface Settings { theme: "dark" | "light" }
}
"""
    decoder = Decoder(compile_typescript(source, "Config").value)
    assert decoder.accepts('{"url": "u", "mode": "fast"}')
    assert not decoder.accepts('{"url": "u", "mode": "slow"}')
    assert Decoder(compile_typescript(source, "Settings").value).accepts('{"theme": "dark"}')


@pytest.mark.parametrize(
    ("declaration", "schema"),
    [
        ("const x = ['s', 'm'] as const; type T = typeof x[number]", {"enum": ["s", "m"]}),
        (
            "const S = { On: 'on', Off: 'off' } as const\ntype T = typeof S[keyof typeof S]",
            {"enum": ["on", "off"]},
        ),
        ("const S = { On: 'on' } as const\ntype T = typeof S['On']", {"const": "on"}),
        (
            "const x = { n: 3, tags: ['a'], deep: { ok: true }, none: null }\ntype T = typeof x",
            _object(
                {
                    "n": NUMBER,
                    "tags": {"type": "array", "items": STRING},
                    "deep": _object({"ok": BOOLEAN}),
                    "none": {"type": "null"},
                }
            ),
        ),
        ("const x = 1; type T = typeof x", {"const": 1}),
        ("let x = 1; type T = typeof x", NUMBER),
        ("var x = `a`; type T = typeof x", STRING),
        ("const x = []; type T = typeof x", {"type": "array", "items": {}}),
        (
            "const x = [1, 'a']; type T = typeof x",
            {"type": "array", "items": {"type": ["number", "string"]}},
        ),
        (
            "const x = [1, 'a'] as const; type T = typeof x",
            {
                "type": "array",
                "prefixItems": [{"const": 1}, {"const": "a"}],
                "minItems": 2,
                "items": False,
            },
        ),
        ("const x = -2 as const; type T = typeof x", {"const": -2}),
        ("const x: string[] = ['a']; type T = typeof x", {"type": "array", "items": STRING}),
        ("declare const x: boolean; type T = typeof x", BOOLEAN),
        ("const x = 'a' as 'a' | 'b'; type T = typeof x", {"enum": ["a", "b"]}),
        ("const x = { a: 1 } satisfies object; type T = typeof x", _object({"a": NUMBER})),
        (
            "const x = { 'a-b': 1, 2: 'c', } as const; type T = typeof x",
            _object({"a-b": {"const": 1}, "2": {"const": "c"}}),
        ),
        (
            "const x = Object.freeze({ a: 'r', b: [1] }); type T = typeof x",
            _object({"a": {"const": "r"}, "b": {"type": "array", "items": NUMBER}}),
        ),
        ("const x = Object.freeze(['a']); type T = typeof x", {"type": "array", "items": STRING}),
    ],
)
def test_typeof_a_written_out_value(declaration: str, schema: dict) -> None:
    """``typeof`` takes the type TypeScript gives the value: literals kept under
    ``as const`` (and for a ``const``'s own literal), widened otherwise."""
    assert _schema_of(declaration, "T")["$defs"]["T"] == schema


@pytest.mark.parametrize(
    ("declaration", "message", "column"),
    [
        ("const x = compute(); type T = typeof x", "this one is computed, from 'compute'", 11),
        ("const x = [1, y]; type T = typeof x", "this one is computed, from 'y'", 15),
        ("const x = { y }; type T = typeof x", "expected 'name: value'", 13),
        ("const x = 1, y = 2; type T = typeof x", "several variables in one declaration", 12),
        ("let x; type T = typeof x", "expected '=' or ':'", 6),
    ],
)
def test_typeof_a_computed_value_is_refused_where_it_is_computed(
    declaration: str, message: str, column: int
) -> None:
    with pytest.raises(ConstraintError) as caught:
        compile_typescript(declaration, "T")
    assert message in caught.value.message, caught.value.message
    assert (caught.value.line, caught.value.column) == (1, column), str(caught.value)


INDEXED_SOURCE = """\
interface Base { id: number }
interface User extends Base { name: string; tags?: string[]; address: { city: 'Oslo' | 'Rome' } }
type Flags = Record<'a' | 'b', boolean>
type ValueOf<T> = T[keyof T]
type Pair = [string, number, null?]
export type T = {
  id: User['id']
  both: User['id' | 'name']
  city: User['address']['city']
  tag: NonNullable<User['tags']>[number]
  flag: Flags['a']
  partial: Partial<User>['name']
  picked: Pick<User, 'address'>['address']
  second: Pair[1]
  third: Pair[2]
  any: Pair[number]
  value: ValueOf<{ a: 1; b: 'x' }>
  meet: (Base & { extra: 'e' })['extra']
  element: Array<{ k: 'z' }>[number]['k']
}
"""


def test_indexed_access_types() -> None:
    """``T[K]`` through ``extends``, utilities, ``Record``, aliases, generics,
    intersections, arrays and tuples; a union or ``keyof`` key gives a union."""
    properties = _schema_of(INDEXED_SOURCE, "T")["$defs"]["T"]["properties"]
    assert properties == {
        "id": NUMBER,
        "both": {"type": ["number", "string"]},
        "city": {"enum": ["Oslo", "Rome"]},
        "tag": STRING,
        "flag": BOOLEAN,
        "partial": STRING,
        "picked": _object({"city": {"enum": ["Oslo", "Rome"]}}),
        "second": NUMBER,
        "third": {"type": "null"},
        "any": {"type": ["string", "number", "null"]},
        "value": {"$ref": "#/$defs/ValueOf_a_1_b_x"},
        "meet": {"const": "e"},
        "element": {"const": "z"},
    }
    constraint = compile_typescript(INDEXED_SOURCE, "T")
    decoder = Decoder(constraint.value)
    good = {
        "id": 1,
        "both": "n",
        "city": "Rome",
        "tag": "t",
        "flag": True,
        "partial": "p",
        "picked": {"city": "Oslo"},
        "second": 2,
        "third": None,
        "any": None,
        "value": "x",
        "meet": "e",
        "element": "z",
    }
    text = json.dumps(good)
    assert decoder.accepts(text) and constraint.judge(text) is None
    for change in ({"city": "Paris"}, {"value": 2}, {"both": True}, {"element": "y"}):
        text = json.dumps({**good, **change})
        assert not decoder.accepts(text) and constraint.judge(text) is not None, text


MAPPED_SOURCE = """\
interface User { id: number; name?: string }
type Optional<T> = { [K in keyof T]?: T[K] }
type Complete<T> = { -readonly [K in keyof T]-?: T[K] }
type Same<T> = { readonly [K in keyof T]: T[K] }
type Nullable<T> = { [P in keyof T]: T[P] | null }
export type T = {
  flags: { [K in 'a' | 'b']: boolean }
  counts: { [K in string]: number }
  optional: Optional<User>
  complete: Complete<User>
  same: Same<User>
  nullable: Nullable<User>
  picked: { [K in 'a' | 'b']: K }['b']
}
"""


def test_mapped_types() -> None:
    """A member per key; optional as written, or over ``keyof T`` as in ``T``."""
    definitions = _schema_of(MAPPED_SOURCE, "T")["$defs"]
    user = {"id": NUMBER, "name": STRING}
    assert definitions["T"]["properties"]["flags"] == _object({"a": BOOLEAN, "b": BOOLEAN})
    assert definitions["T"]["properties"]["counts"] == {
        "type": "object",
        "additionalProperties": NUMBER,
    }
    assert definitions["T"]["properties"]["picked"] == {"const": "b"}
    assert definitions["Optional_User"] == _object(user, required=[])
    assert definitions["Complete_User"] == _object(user, required=["id", "name"])
    assert definitions["Same_User"] == _object(user, required=["id"])
    nullable = {name: {"anyOf": [schema, {"type": "null"}]} for name, schema in user.items()}
    assert definitions["Nullable_User"] == _object(nullable, required=["id"])
    constraint = compile_typescript(MAPPED_SOURCE, "T")
    decoder = Decoder(constraint.value)
    good = {
        "flags": {"a": True, "b": False},
        "counts": {"x": 1},
        "optional": {},
        "complete": {"id": 1, "name": "n"},
        "same": {"id": 2},
        "nullable": {"id": None},
        "picked": "b",
    }
    text = json.dumps(good)
    assert decoder.accepts(text) and constraint.judge(text) is None
    for change in ({"complete": {"id": 1}}, {"flags": {"a": True}}, {"same": {}}):
        text = json.dumps({**good, **change})
        assert not decoder.accepts(text) and constraint.judge(text) is not None, text


KEYED_SOURCE = """\
type Size = 's' | 'l'
enum Color { Red = 'red', Blue = 'blue' }
interface User { id: number; name: string; email: string }
type Named = 'id' | 'name'
export type T = {
  bySize: Record<Size, number>
  byColor: Record<Color, boolean>
  byField: Record<keyof User, string>
  picked: Pick<User, Named>
  omitted: Omit<User, Named>
  byIndex: Record<number, string>
  rows: { [row: number]: 'x' | 'o' }
  spelled: Record<`size-${Size}`, 1>
  headers: Record<`x-${string}`, string>
}
"""


def test_keys_through_aliases_enums_keyof_and_templates() -> None:
    """Record, Pick and Omit read their keys as a union (through aliases, enums,
    keyof and finite templates); number keys are integer names."""
    properties = _schema_of(KEYED_SOURCE, "T")["$defs"]["T"]["properties"]
    numeric = {"pattern": "^(?:0|-?[1-9][0-9]{0,14})$"}
    assert properties == {
        "bySize": _object({"s": NUMBER, "l": NUMBER}),
        "byColor": _object({"red": BOOLEAN, "blue": BOOLEAN}),
        "byField": _object({"id": STRING, "name": STRING, "email": STRING}),
        "picked": _object({"id": NUMBER, "name": STRING}),
        "omitted": _object({"email": STRING}),
        "byIndex": {"type": "object", "additionalProperties": STRING, "propertyNames": numeric},
        "rows": {
            "type": "object",
            "additionalProperties": {"enum": ["x", "o"]},
            "propertyNames": numeric,
        },
        "spelled": _object({"size-s": {"const": 1}, "size-l": {"const": 1}}),
        "headers": {
            "type": "object",
            "additionalProperties": STRING,
            "propertyNames": {"pattern": "^x-(?:.*)$"},
        },
    }
    constraint = compile_typescript(KEYED_SOURCE, "T")
    decoder = Decoder(constraint.value)
    good = {
        "bySize": {"s": 1, "l": 2},
        "byColor": {"red": True, "blue": False},
        "byField": {"id": "1", "name": "n", "email": "e"},
        "picked": {"id": 1, "name": "n"},
        "omitted": {"email": "e"},
        "byIndex": {"0": "a", "-12": "b"},
        "rows": {"3": "x"},
        "spelled": {"size-s": 1, "size-l": 1},
        "headers": {"x-id": "1"},
    }
    text = json.dumps(good)
    assert decoder.accepts(text) and constraint.judge(text) is None
    for change in (
        {"picked": {"id": 1}},
        {"omitted": {"email": "e", "id": 1}},
        {"byIndex": {"01": "a"}},
        {"rows": {"a": "x"}},
        {"spelled": {"size-s": 1}},
        {"headers": {"id": "1"}},
    ):
        text = json.dumps({**good, **change})
        assert not decoder.accepts(text) and constraint.judge(text) is not None, text


@pytest.mark.parametrize(
    ("written", "schema"),
    [
        ("string & {}", STRING),
        ("(1 | 2) & {}", {"enum": [1, 2]}),
        ("{} & { a: 1 }", _object({"a": {"const": 1}})),
    ],
)
def test_an_intersection_with_the_empty_object_type_is_the_other_type(
    written: str, schema: dict
) -> None:
    """``"gpt-4" | (string & {})`` keeps any string open beside the literals."""
    assert _schema_of(f"type T = {written}", "T")["$defs"]["T"] == schema
    constraint = compile_typescript("type T = { model: 'gpt-4' | (string & {}) }", "T")
    for text in ('{"model": "gpt-4"}', '{"model": "other"}'):
        assert Decoder(constraint.value).accepts(text) and constraint.judge(text) is None


@pytest.mark.parametrize(
    ("written", "schema"),
    [
        ("Record<string, never>", {"type": "object", "additionalProperties": False}),
        ("{ [key: string]: never }", {"type": "object", "additionalProperties": False}),
        ("{ a: string; b?: never }", _object({"a": STRING})),
        ("never[]", {"type": "array", "maxItems": 0}),
        ("'a' | never", {"const": "a"}),
    ],
)
def test_never_is_no_value(written: str, schema: dict) -> None:
    """Dropped from unions; an optional member of type never is never there; no
    names beside an index signature of never; no elements in an array of never."""
    assert _schema_of(f"type T = {written}", "T")["$defs"]["T"] == schema


@pytest.mark.parametrize(
    ("written", "schema"),
    [
        ("Uppercase<Dir>", {"enum": ["UP", "DOWN"]}),
        ("Capitalize<Dir>", {"enum": ["Up", "Down"]}),
        ("Lowercase<'ABC'>", {"const": "abc"}),
        ("Uncapitalize<E>", {"const": "alpha"}),
        ("`on${Capitalize<Dir>}`", {"enum": ["onUp", "onDown"]}),
        ("Exclude<Uppercase<Dir>, 'UP'>", {"const": "DOWN"}),
    ],
)
def test_string_intrinsics_recase_literals(written: str, schema: dict) -> None:
    source = f"type Dir = 'up' | 'down'\nenum E {{ A = 'Alpha' }}\ntype T = {written}"
    found = _schema_of(source, "T")["$defs"]["T"]
    if "pattern" in found:  # a template: check the strings it allows instead
        pattern = re.compile(found["pattern"])
        assert [bool(pattern.search(v)) for v in schema["enum"]] == [True] * len(schema["enum"])
        assert not pattern.search("onup")
        return
    assert found == schema


def test_template_literal_types_are_patterns() -> None:
    """Text as it is, each placeholder as what its type prints as, through
    aliases, enums, unions and nested templates; without placeholders, a literal."""
    source = (
        "enum Env { Prod = 'prod', Dev = 'dev' }\n"
        "type Size = 'sm' | 'lg'\n"
        "type Id<P extends string> = `${P}-${number}`\n"
        "export type T = { id: Id<'ord'>; css: `btn.${Size}(${boolean})`; "
        "url: `https://${Env}.example.com/${string}`; v: `v${`${1 | 2}.x`}`; plain: `a.b` }"
    )
    constraint = compile_typescript(source, "T")
    decoder = Decoder(constraint.value)
    good = {
        "id": "ord-12",
        "css": "btn.sm(true)",
        "url": "https://dev.example.com/a/b",
        "v": "v2.x",
    }
    bad = [
        {"id": "ord-x"},
        {"css": "btn.md(true)"},
        {"css": "btnxsm(true)"},
        {"url": "https://test.example.com/"},
        {"v": "v3.x"},
    ]
    text = json.dumps({**good, "plain": "a.b"})
    assert decoder.accepts(text) and constraint.judge(text) is None
    for change in bad:
        text = json.dumps({**good, **change, "plain": "a.b"})
        assert not decoder.accepts(text) and constraint.judge(text) is not None, text


def test_enums_of_literals_are_data() -> None:
    source = (
        "enum Size { S = 's', M = 'm' }\n"
        "const enum Level { Low = -1, Mid, High = 10 }\n"
        "type T = [Size, Level]"
    )
    schema = typescript_to_json_schema(source, "T")
    assert schema["$defs"]["Size"] == {"enum": ["s", "m"]}
    assert schema["$defs"]["Level"] == {"enum": [-1, 0, 10]}


@pytest.mark.parametrize("count", [2, 64, 65, 200])
def test_a_union_of_object_types_is_one_flat_any_of(count: int) -> None:
    """One branch per member, in order, whatever the count: combining branches (and
    refusing what cannot be combined) is compile_json_schema's business."""
    declarations = "\n".join(
        f"interface T{i} {{ kind: 'k{i}'; v{i}: number }}" for i in range(count)
    )
    members = " | ".join(f"T{i}" for i in range(count))
    nested = f"({' | '.join(f'T{i}' for i in range(count // 2))}) | " + " | ".join(
        f"T{i}" for i in range(count // 2, count)
    )
    inline = " | ".join(f"{{ kind: 'k{i}'; v: number }}" for i in range(count))
    source = f"{declarations}\ntype U = {members}\ntype N = {nested}\ntype I = {inline}"
    refs = [{"$ref": f"#/$defs/T{i}"} for i in range(count)]
    assert typescript_to_json_schema(source, "U")["$defs"]["U"] == {"anyOf": refs}
    assert typescript_to_json_schema(source, "N")["$defs"]["N"] == {"anyOf": refs}
    assert typescript_to_json_schema(source, "I")["$defs"]["I"] == {
        "anyOf": [_object({"kind": {"const": f"k{i}"}, "v": NUMBER}) for i in range(count)]
    }


def test_unknown_type_name_lists_the_declared_types() -> None:
    source = (
        "export type A = string\nexport interface B { b: A }\ntype Hidden = number\n"
        "export enum C { X }"
    )
    with pytest.raises(
        ConstraintError, match=r"type 'Z' is not declared; declared types: A, B, C, Hidden$"
    ):
        compile_typescript(source, "Z")
    with pytest.raises(ConstraintError, match=r"declared types: none$"):
        compile_typescript("// nothing here", "A")


def test_a_type_declared_without_export_may_be_the_type_name() -> None:
    source = "interface Hidden { h: Inner }\ntype Inner = 'a' | 'b'\nexport type Shown = string"
    assert _schema_of(source, "Hidden") == _root(
        "Hidden",
        {"Hidden": _object({"h": {"$ref": "#/$defs/Inner"}}), "Inner": {"enum": ["a", "b"]}},
    )
    constraint = compile_typescript(source, "Hidden")
    decoder = Decoder(constraint.value)
    assert decoder.accepts('{"h": "b"}') and not decoder.accepts('{"h": "c"}')


def test_recursion_without_an_end_is_refused() -> None:
    with pytest.raises(ConstraintError, match="never ends"):
        compile_typescript("export interface Chain { next: Chain }", "Chain")


def test_mutual_recursion_compiles() -> None:
    source = "export type A = { b?: B; v: number }\nexport type B = { a: A[] }"
    constraint = compile_typescript(source, "A")
    decoder = Decoder(constraint.value)
    good = '{"b": {"a": [{"v": 1}, {"b": {"a": []}, "v": 2}]}, "v": 3}'
    assert decoder.accepts(good) and constraint.judge(good) is None
    assert not decoder.accepts('{"b": {"a": [{}]}, "v": 3}')


def test_source_size_limit() -> None:
    with pytest.raises(ConstraintError, match="TypeScript source too long"):
        compile_typescript("export type T = string\n" + " " * 300_000, "T")


def test_nesting_limit() -> None:
    with pytest.raises(ConstraintError, match="types nest deeper than 64 levels"):
        compile_typescript("export type T = " + "(" * 100 + "string" + ")" * 100, "T")


# ---------------------------------------------------------------------------
# Corpus: every file names its type with "// type_name: X"


def _corpus(refused: bool) -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.ts") if p.with_suffix(".refused").exists() == refused)


def _type_name(path: Path) -> str:
    found = re.search(r"//\s*type_name:\s*(\w+)", path.read_text())
    assert found, f"{path.name} lacks a '// type_name: X' line"
    return found.group(1)


@functools.cache
def _compiled(path: Path):
    constraint = compile_typescript(path.read_text(), _type_name(path))
    return constraint, Decoder(constraint.value)


def test_corpus_is_large_enough() -> None:
    assert len(_corpus(refused=False)) >= 15


@pytest.mark.parametrize("path", _corpus(refused=False), ids=lambda p: p.stem)
def test_corpus_compiles_and_generates_valid_json(path: Path) -> None:
    constraint, decoder = _compiled(path)
    for text in samples(decoder, 30, seed=7):
        assert constraint.judge(text) is None, (text, constraint.judge(text))


def _as_tsc_judges_json(source: str) -> str | None:
    """``source`` as tsc can judge JSON against it: ``Date`` is the string
    ``JSON.stringify`` writes, and the documentation's ``type X { ... }`` is
    ``type X = { ... }``. None with a string enum, whose members tsc tells
    apart from the strings that are their JSON (``"g"`` is not ``Unit.Gram``)."""
    if re.search(r"enum \w+ \{[^}]*=\s*[\"']", source):
        return None
    source = re.sub(r"\btype (\w+) \{", r"type \1 = {", source)
    return source + "\ntype Date = string;\n" if re.search(r"\bDate\b", source) else source


@pytest.mark.parametrize(
    "path",
    [p for p in _corpus(refused=False) if _as_tsc_judges_json(p.read_text()) is not None],
    ids=lambda p: p.stem,
)
def test_corpus_outputs_are_values_of_the_type_for_tsc(path: Path) -> None:
    """The real TypeScript compiler, which knows nothing of the translation,
    takes every sampled output as a value of the named type."""
    _, decoder = _compiled(path)
    texts = samples(decoder, 12, seed=3)
    judged = _as_tsc_judges_json(path.read_text())
    assert judged is not None and typescript_errors(judged, _type_name(path), texts) == {}


@pytest.mark.parametrize("path", _corpus(refused=False), ids=lambda p: p.stem)
@given(data=st.data())
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_corpus_instances_are_accepted(path: Path, data: st.DataObject) -> None:
    constraint, decoder = _compiled(path)
    text = data.draw(instance_texts(typescript_to_json_schema(path.read_text(), _type_name(path))))
    assume(constraint.judge(text) is None)
    assert decoder.accepts(text), text


@pytest.mark.parametrize("path", _corpus(refused=True), ids=lambda p: p.stem)
def test_corpus_refusals_are_precise(path: Path) -> None:
    expected = path.with_suffix(".refused").read_text().strip()
    with pytest.raises(ConstraintError) as caught:
        compile_typescript(path.read_text(), _type_name(path))
    assert str(caught.value) == expected


def test_corpus_schemas_are_valid_json_schema() -> None:
    import jsonschema

    for path in _corpus(refused=False):
        schema = typescript_to_json_schema(path.read_text(), _type_name(path))
        jsonschema.Draft202012Validator.check_schema(schema)
        json.dumps(schema)


def test_unicode_identifiers_name_types_and_members() -> None:
    source = "export interface Données { naïve: string; 名前: number; $id: boolean }"
    schema = _schema_of(source, "Données")
    properties = schema["$defs"]["Données"]["properties"]
    assert set(properties) == {"naïve", "名前", "$id"}
    assert properties["名前"] == {"type": "number"}
    compiled = compile_typescript(source, "Données")
    assert compiled.judge('{"naïve": "x", "名前": 1, "$id": true}') is None
    assert compiled.judge('{"naive": "x", "名前": 1, "$id": true}') is not None


@pytest.mark.parametrize(
    "source",
    [
        "type UserId = string & { readonly __brand: 'UserId' };",
        "type Brand<T, B> = T & { __brand: B };\ntype UserId = Brand<string, 'UserId'>;",
        "interface Tag<N> { __tag: N }\ntype Base = string;\ntype UserId = Base & Tag<'id'>;",
    ],
)
def test_a_branded_primitive_is_the_primitive(source: str) -> None:
    compiled = compile_typescript(source + "\nexport interface U { id: UserId }", "U")
    assert compiled.judge('{"id": "u-1"}') is None
    assert compiled.judge('{"id": {"__brand": "UserId"}}') is not None


@pytest.mark.parametrize(
    "written", ["string & number", "string & (number | boolean)", "string & 'a' & { b: 1 }"]
)
def test_an_intersection_of_primitives_with_more_than_a_brand_is_refused(written: str) -> None:
    with pytest.raises(ConstraintError):
        compile_typescript(f"export interface C {{ x: {written} }}", "C")


def test_keyof_typeof_an_enum_is_its_member_names() -> None:
    source = (
        'enum Status { Pending = "pending", Paid = "paid" }\n'
        "export interface Event {\n"
        "  status: keyof typeof Status;\n"
        "  value: (typeof Status)[keyof typeof Status];\n"
        "}"
    )
    properties = _schema_of(source, "Event")["$defs"]["Event"]["properties"]
    assert properties["status"] == {"enum": ["Pending", "Paid"]}
    assert properties["value"] == {"enum": ["pending", "paid"]}
