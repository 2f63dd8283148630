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
        ("export type T = string #", "unexpected character '#'", 1, 24),
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
        ("export type T = typeof x", "unsupported construct 'typeof type query'", 1, 17),
        (
            "export type T = U extends string ? 1 : 2\ntype U = string",
            "unsupported construct 'conditional type'",
            1,
            19,
        ),
        (
            "export type T = { [K in 'a' | 'b']: number }",
            "unsupported construct 'mapped type'",
            1,
            19,
        ),
        (
            "export type T = U['a']\ntype U = { a: string }",
            "unsupported construct 'indexed access type'",
            1,
            18,
        ),
        ("export type T = `id-${{ a: 1 }}`", "a template literal type's placeholders take", 1, 17),
        ("export type T = `id-${string", "unterminated '${' in a template literal type", 1, 21),
        ("export type T = `id", "unterminated template literal type", 1, 17),
        ("export type T = bigint", "unsupported construct 'bigint (not JSON-serializable)'", 1, 17),
        ("export type T = { a: void }", "unsupported construct 'void'", 1, 22),
        ("export type T = string | undefined", "'undefined' is not JSON", 1, 26),
        ("import { X } from './x'", "unsupported construct 'import'", 1, 1),
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
        ("export enum E { A = 1 << 2 }", "unsupported construct 'computed enum member", 1, 21),
        (
            "enum E { A = 1, B = A }\ntype T = E",
            "unsupported construct 'computed enum member",
            1,
            21,
        ),
        (
            "type T = E\nenum E { A = 'a' + 'b' }",
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
            "export type T = { a: string } & string",
            "only object types can be combined with '&'",
            1,
            33,
        ),
        ("export type T = T & { a: string }", "'T' refers to itself through '&' or extends", 1, 17),
        ("export type T = 1e999", "number 1e999 is out of range", 1, 17),
        ("export type T = Exclude<'a', string>", "Exclude leaves no type (never)", 1, 17),
        (
            "interface A { a: 1 }\ninterface B { b: 1 }\nexport type T = Exclude<A | B, A>",
            "Exclude here would compare object types",
            3,
            17,
        ),
        (
            "export type T = Record<number, string>",
            "Record keys must be string or a union of string literals",
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
        ("type T = { f: <X>(x: X) => X }", "generic function type", 1, 15),
        ("type T = { make: new () => Date }", "constructor type", 1, 18),
        ("export type T = { f(): void }", "method signature", 1, 19),
        (
            "interface T {\n  name: string\n  greet?(who: string): string\n}",
            "method signature",
            3,
            3,
        ),
        ("interface T { map<X>(f: X): X }", "method signature", 1, 15),
        ("interface T { (): void }", "call signature", 1, 15),
        ("interface T { new (): T }", "construct signature", 1, 15),
        ("interface T { get size(): number }", "get accessor", 1, 15),
        ("export class C {}\ntype T = 1", "class", 1, 8),
        ("abstract class C {}\ntype T = 1", "class", 1, 1),
        ("type T = 1\nfunction f(): T { return 1 }", "function", 2, 1),
        ("type T = 1\nexport async function f() {}", "function", 2, 8),
        ("export const x = 1\ntype T = 1", "value declaration", 1, 8),
        ("let x: number\ntype T = 1", "value declaration", 1, 1),
        ("type T = 1\nvar x = { a: 1 }", "value declaration", 2, 1),
        ("declare const x: number\ntype T = 1", "value declaration", 1, 9),
        ("declare function f(): void\ntype T = 1", "function", 1, 9),
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
