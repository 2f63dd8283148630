"""grammar_compiler.typescript: the declaration forms real source files use.

Declaration merging, namespaces, directives, enum members named by
earlier ones, index signatures keyed by template literal types,
``undefined`` beside other types. Each compiled type's sampled outputs are judged by the
real TypeScript compiler (``tests/integration/typescript_judge``), which
knows nothing of the translation.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from integration.typescript_judge import typescript_errors
from json_instances import Decoder

from grammar_compiler import ConstraintError, compile_typescript, typescript_to_json_schema


def _judged(source: str, type_name: str, texts: list[str]) -> dict[int, list[str]]:
    """``tsc``'s errors for ``texts``, after checking the compiled grammar takes each."""
    decoder = Decoder(compile_typescript(source, type_name).value)
    for text in texts:
        assert decoder.accepts(text), text
    return typescript_errors(source, type_name, texts)


def _sampled(source: str, type_name: str, count: int = 20) -> list[str]:
    decoder = Decoder(compile_typescript(source, type_name).value)
    rng = random.Random(11)
    found = [decoder.sample(rng) for _ in range(count)]
    return [text for text in found if text is not None]


def test_interfaces_of_one_name_merge() -> None:
    source = """
interface Base { id: string }
export interface Box { a: string }
export interface Box extends Base { b?: number; a: string }
"""
    schema = typescript_to_json_schema(source, "Box")["$defs"]["Box"]
    assert schema["required"] == ["id", "a"] and set(schema["properties"]) == {"id", "a", "b"}
    assert not Decoder(compile_typescript(source, "Box").value).accepts('{"a": "x"}')
    assert _judged(source, "Box", ['{"id": "1", "a": "x"}', '{"id": "1", "a": "x", "b": 2}']) == {}
    assert typescript_errors(source, "Box", ['{"a": "x"}'])  # the judge sees the merge too


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("interface A { a: string }\ninterface A { a: number }", "member 'a' of interface 'A'"),
        ("interface A<T> { a: T }\ninterface A { b: string }", "other type parameters"),
        ("type A = { a: string }\ninterface A { b: string }", "duplicate declaration of 'A'"),
    ],
)
def test_declarations_that_do_not_merge_are_refused(source: str, message: str) -> None:
    with pytest.raises(ConstraintError, match=message):
        compile_typescript(source, "A")


def test_directives_are_passed_over() -> None:
    source = "'use strict';\n\"use client\"\nexport interface A { a: boolean }"
    assert _judged(source, "A", ['{"a": true}']) == {}


def test_an_enum_member_may_be_an_earlier_member() -> None:
    source = 'export enum Level { Low = "low", Minimum = Low, High = Level.Low }\ntype T = Level'
    assert typescript_to_json_schema(source, "Level")["$defs"]["Level"] == {"enum": ["low"]}
    with pytest.raises(ConstraintError, match="computed enum member"):
        compile_typescript("enum E { A = B, B = 1 }", "E")  # only earlier members


def test_index_signatures_keyed_by_template_literal_types() -> None:
    source = """
export interface Attributes {
  id: string;
  [name: `data-${string}`]: string;
  [name: `aria-${"label" | "hidden"}` | `on${string}`]: string;
}
"""
    with pytest.raises(ConstraintError, match="duplicate index signature"):
        compile_typescript(source, "Attributes")
    source = source.replace('[name: `aria-${"label" | "hidden"}` | `on${string}`]: string;\n', "")
    decoder = Decoder(compile_typescript(source, "Attributes").value)
    good = ['{"id": "a", "data-x": "1"}', '{"id": "a", "data-": ""}']
    assert _judged(source, "Attributes", good) == {}
    assert not decoder.accepts('{"id": "a", "other": "1"}')
    assert typescript_errors(source, "Attributes", ['{"id": "a", "other": "1"}'])


def test_declared_members_stand_beside_a_number_index_signature() -> None:
    """The index signature's names need not admit the declared members'."""
    source = "export interface Row { length: number; [i: number]: string }"
    assert _judged(source, "Row", ['{"length": 2, "0": "a", "1": "b"}', '{"length": 0}']) == {}
    assert not Decoder(compile_typescript(source, "Row").value).accepts('{"length": 1, "x": "a"}')


def test_undefined_through_an_alias_leaves_the_member_as_written() -> None:
    """JSON has no undefined: a required member still needs its key (as tsc asks),
    an optional one may be left out."""
    source = """
type Maybe<T> = T | null | undefined;
export interface Q { a: Maybe<string>; b?: Maybe<number>; c: string | undefined }
"""
    schema = typescript_to_json_schema(source, "Q")["$defs"]["Q"]
    assert schema["required"] == ["a", "c"]
    assert _judged(source, "Q", ['{"a": null, "c": "x"}', '{"a": "s", "b": 1, "c": ""}']) == {}
    assert typescript_errors(source, "Q", ['{"c": "x"}'])
    assert typescript_errors(source, "Q", _sampled(source, "Q")) == {}


def test_undefined_alone_is_refused_unless_a_member_is_optional() -> None:
    source = "export interface A { a?: undefined; b: string; c: (number | undefined)[] }"
    assert _judged(source, "A", ['{"b": "x", "c": [1]}']) == {}
    for refused in ("interface A { a: undefined }", "type U = undefined\ninterface A { a: U }"):
        with pytest.raises(ConstraintError, match="'undefined' is not JSON"):
            compile_typescript(refused, "A")


NAMESPACED = """
export namespace API {
  export interface User { id: number; role: Role; home: Models.Address }
  export type Role = "admin" | "user";
  export namespace Models {
    export interface Address { city: string; kind: Kind.Home }
    export enum Kind { Home = 1, Work = 2 }
  }
}
declare namespace Store.Models {
  interface Item { sku: string; owner: API.User }
}
interface Address { street: string }
export interface Member {
  user: API.User;
  item: Store.Models.Item;
  kind: API.Models.Kind.Work;
  address: Address;
}
module.exports = {};
"""


def test_namespaces_qualify_names_inside_and_out() -> None:
    """Inside ``API``, ``Role`` is ``API.Role``; outside it is written qualified;
    the innermost namespace is looked in first, and a name no namespace
    declares is the file's own (``Address`` outside, ``Models.Address`` inside)."""
    judged = NAMESPACED.replace("module.exports = {};", "")
    texts = _sampled(NAMESPACED, "Member")
    assert texts and typescript_errors(judged, "Member", texts) == {}
    good = (
        '{"user": {"id": 1, "role": "user", "home": {"city": "c", "kind": 1}}, '
        '"item": {"sku": "s", "owner": {"id": 2, "role": "admin", "home": {"city": "d", '
        '"kind": 1}}}, "kind": 2, "address": {"street": "s"}}'
    )
    assert _judged(judged, "Member", [good]) == {}
    decoder = Decoder(compile_typescript(NAMESPACED, "Member").value)
    assert not decoder.accepts(good.replace('"role": "user"', '"role": "guest"'))
    assert not decoder.accepts(good.replace('"street": "s"', '"city": "s"'))
    schema = typescript_to_json_schema(NAMESPACED, "API.User")
    assert schema["$ref"] == "#/$defs/API.User"
    with pytest.raises(ConstraintError, match=r"declared types: API\.Models\.Address, "):
        compile_typescript(NAMESPACED, "User")


PROGRAM_PARTS = """
export interface Service {
  name: string;
  port?: number;
  start(): Promise<void>;
  stop?(force: boolean): void;
  onError: (error: Error) => void;
  isUp(): this is Service;
  get url(): string;
  set url(value: string);
}
export class Endpoint {
  @IsString() path!: string;
  method: "GET" | "POST" = "GET";
  retries = 3;
  static registry = new Map();
  static create(path: string): Endpoint { return new Endpoint(path); }
  constructor(public readonly owner: string, note?: string) {}
}
export class Controller extends Endpoint implements Named { handle(): void {} }
interface Named { owner: string }
export type Config = Pick<Service, "name" | "port" | "url"> & { endpoints: Endpoint[] };
"""


def test_methods_and_function_types_are_refused_only_where_a_value_needs_them() -> None:
    """``Pick``/``Omit`` may leave a method out; an optional one is never in JSON;
    a getter is a member; a class of public fields is the interface of its
    instances (static members, decorators and bodies passed over)."""
    source = PROGRAM_PARTS.replace("@IsString() ", "")  # tsc here has no decorators' types
    good = (
        '{"name": "api", "url": "u", "endpoints": '
        '[{"path": "/", "method": "GET", "retries": 1, "owner": "o"}]}'
    )
    assert _judged(source, "Config", [good]) == {}
    assert Decoder(compile_typescript(PROGRAM_PARTS, "Config").value).accepts(good)
    texts = _sampled(PROGRAM_PARTS, "Config")
    assert typescript_errors(source, "Config", texts) == {}
    refusals = {
        "Service": "'method signature' (it describes a program, not data) at line 5, column 3",
        "Controller": "'method' (it describes a program, not data) at line 20, column 61",
    }
    for name, message in refusals.items():
        with pytest.raises(ConstraintError, match=re.escape(message)):
            compile_typescript(PROGRAM_PARTS, name)
    with pytest.raises(ConstraintError, match="'function type'"):
        compile_typescript(PROGRAM_PARTS + "type T = Omit<Service, 'start'>", "T")


MODULE_FORMS = """
'use client';
export * from "./shared";
export { Remote } from "./remote";
import fs = require("fs");
namespace Shapes { export interface Circle { r: number } }
import Circle = Shapes.Circle;
interface Local { a: string }
export type { Local };
export { Local as Renamed };
export interface Doc {
  readonly [key: `x-${string}`]: string;
  circle: Circle;
  renamed: Renamed;
  text: String;
  count: Number;
  flag: Boolean;
  anything: Object;
  next?: this;
  other?: import("./other").Other;
}
"""


def test_module_forms_beside_the_types() -> None:
    """Re-exports, ``import = require``, ``export type { }``, renamed exports,
    namespace aliases, ``readonly`` index signatures, wrapper types and ``this``
    read; another file's types refused where used."""
    judged = MODULE_FORMS.split("export interface Doc", 1)[1].replace(
        '  other?: import("./other").Other;\n', ""
    )
    judged = (
        "namespace Shapes { export interface Circle { r: number } }\n"
        "import Circle = Shapes.Circle;\ninterface Local { a: string }\n"
        "type Renamed = Local;\nexport interface Doc" + judged
    )
    good = (
        '{"circle": {"r": 1}, "renamed": {"a": "x"}, "text": "t", "count": 1, "flag": true, '
        '"anything": {}, "next": {"circle": {"r": 2}, "renamed": {"a": "y"}, "text": "", '
        '"count": 0, "flag": false, "anything": {}}, "x-id": "7"}'
    )
    assert Decoder(compile_typescript(MODULE_FORMS, "Doc").value).accepts(good)
    assert typescript_errors(judged, "Doc", [good]) == {}
    assert typescript_errors(judged, "Doc", _sampled(MODULE_FORMS, "Doc")) == {}
    with pytest.raises(ConstraintError, match=r"'Remote' is imported from '\./remote'"):
        compile_typescript(MODULE_FORMS, "Remote")
    with pytest.raises(ConstraintError, match=r"'import type' \(this service reads one source"):
        compile_typescript(MODULE_FORMS + "type T = Required<Doc>", "T")


def test_enum_members_may_be_constant_expressions() -> None:
    source = """
enum Base { One = 1 }
export enum Flags {
  None = 0,
  Read = 1 << 0,
  Write = 1 << 1,
  All = Read | Write,
  Big = 1 << 31,
  Shifted = -1 >>> 28,
  Power = 2 ** 3 ** 2,
  Mixed = (Base.One + 2) * 3 - 4 / 8,
  Label = "v" + 1,
}
type T = { f: Flags[] }
"""
    schema = typescript_to_json_schema(source, "Flags")["$defs"]["Flags"]
    assert schema == {"enum": [0, 1, 2, 3, -2147483648, 15, 512, 8.5, "v1"]}
    assert typescript_errors(source, "T", ['{"f": [3, -2147483648, 15, 512, 8.5]}']) == {}
    for computed in ("A = f()", "A = B", "A = 1 +", "A = 1 / 0"):
        with pytest.raises(ConstraintError, match="enum member"):
            compile_typescript(f"enum E {{ {computed} }}", "E")


def test_intersections_and_utilities_over_unions() -> None:
    """``(A | B) & C`` distributes; ``keyof``, ``Pick`` and ``Omit`` of a union see
    its common members; ``Partial`` maps each member."""
    source = """
type Shape =
  | { kind: "circle"; r: number; id: string }
  | { kind: "square"; side: number; id: string };
export type Tagged = Shape & { layer: number };
export type NoId = Omit<Shape, "id">;
export type Key = keyof Shape;
export type Draft = Partial<Shape>;
export type All = { tagged: Tagged; noId: NoId; key: Key[]; draft: Draft };
"""
    schema = typescript_to_json_schema(source, "All")["$defs"]
    assert schema["Key"] == {"enum": ["kind", "id"]}
    texts = _sampled(source, "All")
    assert typescript_errors(source, "All", texts) == {}
    decoder = Decoder(compile_typescript(source, "All").value)
    good = (
        '{"tagged": {"kind": "circle", "r": 1, "id": "a", "layer": 2}, '
        '"noId": {"kind": "square"}, "key": ["id"], "draft": {"side": 1}}'
    )
    assert decoder.accepts(good) and typescript_errors(source, "All", [good]) == {}
    mixed = good.replace('"kind": "circle", "r": 1', '"kind": "circle", "side": 1')
    assert not decoder.accepts(mixed) and typescript_errors(source, "All", [mixed])


TAGGED = """
/** @minimum 0 @maximum 150 */
type Age = number;
export interface Person {
  /** Whole years. @TJS-type integer @minimum 0 @maximum 120 */
  age: number;
  /** @format email */
  email: string;
  /**
   * Country code.
   * @pattern ^[A-Z]{2}$
   * @example "NO"
   */
  country: string;
  /** @minItems 1 @maxItems 3 @uniqueItems */
  tags: string[];
  /** @asType integer */
  count?: number;
  span: Age;
  /** @see https://example.com */
  note: string;
}
"""


def test_jsdoc_tags_of_the_schema_tools_narrow_the_type() -> None:
    """``typescript-json-schema``'s and ``ts-json-schema-generator``'s tags become
    the keywords they name; the outputs stay values of the type for tsc."""
    schema = typescript_to_json_schema(TAGGED, "Person")["$defs"]
    person = schema["Person"]["properties"]
    assert person["age"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 120,
        "description": "Whole years.",
    }
    assert person["email"] == {"type": "string", "format": "email"}
    assert person["country"] == {
        "type": "string",
        "pattern": "^[A-Z]{2}$",
        "description": "Country code.",
    }
    assert person["tags"]["minItems"] == 1 and person["tags"]["uniqueItems"] is True
    assert person["count"] == {"type": "integer"}
    assert person["note"]["description"] == "@see https://example.com"
    assert schema["Age"] == {"type": "number", "minimum": 0, "maximum": 150}
    constraint = compile_typescript(TAGGED, "Person")
    decoder = Decoder(constraint.value, guard=True)
    good = '{"age": 30, "email": "a@b.co", "country": "NO", "tags": ["x"], "span": 1.5, "note": ""}'
    assert decoder.accepts(good) and constraint.judge(good) is None
    for bad in ('"age": 30.5', '"age": 121', '"country": "no"', '"span": -1'):
        key = bad.split(":")[0]
        text = re.sub(rf"{key}: [^,]+", bad, good)
        assert not decoder.accepts(text), text
    assert not decoder.accepts(good.replace('["x"]', '["x", "x"]'))
    texts = [decoder.sample(random.Random(seed)) for seed in range(12)]
    texts = [text for text in texts if text is not None]
    assert texts and typescript_errors(TAGGED, "Person", texts) == {}
    assert all(constraint.judge(text) is None for text in texts)


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("@minimum zero", "JSDoc @minimum takes a number, got 'zero'"),
        ("@minLength -1", "JSDoc @minLength takes a whole number of at least 0"),
        ("@uniqueItems maybe", "JSDoc @uniqueItems takes true or false"),
        ("@pattern", "JSDoc @pattern needs a value"),
    ],
)
def test_jsdoc_tag_mistakes_are_located(comment: str, message: str) -> None:
    source = f"export interface A {{\n  /** {comment} */\n  a: string;\n}}"
    with pytest.raises(ConstraintError) as caught:
        compile_typescript(source, "A")
    assert message in caught.value.message
    assert (caught.value.line, caught.value.column) == (3, 3)


def test_computed_member_names_of_enum_members_and_strings() -> None:
    source = """
export enum Dir { Up = "UP", Down = "DOWN" }
enum Code { A = 1 }
export interface Moves { [Dir.Up]: number; [Dir.Down]?: number; ["x-y"]: boolean; [Code.A]: string }
"""
    schema = typescript_to_json_schema(source, "Moves")["$defs"]["Moves"]
    assert list(schema["properties"]) == ["UP", "DOWN", "x-y", "1"]
    assert schema["required"] == ["UP", "x-y", "1"]
    good = '{"UP": 1, "x-y": true, "1": "a"}'
    assert _judged(source, "Moves", [good]) == {}
    assert typescript_errors(source, "Moves", _sampled(source, "Moves")) == {}
    with pytest.raises(ConstraintError, match="computed member name"):
        compile_typescript("interface A { [Later.X]: string }\nenum Later { X = 'x' }", "A")


def test_computed_member_names_of_literal_constants() -> None:
    source = """
const KIND = "kind";
const Field = { Id: "id", Rank: 2 } as const;
export interface Row { [KIND]: "row"; [Field.Id]: string; [Field.Rank]?: number }
"""
    schema = typescript_to_json_schema(source, "Row")["$defs"]["Row"]
    assert list(schema["properties"]) == ["kind", "id", "2"]
    assert schema["required"] == ["kind", "id"]
    assert _judged(source, "Row", ['{"kind": "row", "id": "a", "2": 1}']) == {}
    assert typescript_errors(source, "Row", _sampled(source, "Row")) == {}
    for widened in ('let KEY = "k";', 'const KEY = String("k");'):
        with pytest.raises(ConstraintError, match="computed member name"):
            compile_typescript(f"{widened}\ninterface A {{ [KEY]: string }}", "A")


def test_regex_literals_in_code_beside_the_types() -> None:
    """A regex literal holding a brace, quote or backslash does not throw off
    the reading of the statements around it; division stays division."""
    source = r"""
export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const BRACE = /[{]/g, QUOTE = /"/;
export function isEmail(s: string): boolean {
  return EMAIL.test(s) && !BRACE.test(s) && s.split(/'/).length < 3 && s.length / 2 > 1;
}
export interface User { id: string; email: string }
"""
    assert _judged(source, "User", ['{"id": "1", "email": "a@b.c"}']) == {}
    with pytest.raises(ConstraintError, match="unterminated regular expression literal"):
        compile_typescript("const r = /abc\nexport interface A { a: 1 }", "A")


def test_augmenting_an_imported_type_keeps_its_refusal() -> None:
    """``declare module "m" { interface Request {...} }`` adds to another file's
    type: the types beside it still compile, and that one stays refused."""
    source = """
import type { Request } from "express";
declare module "express" { interface Request { user?: { id: string } } }
class Widget { render() {} }
interface Widget { size: number }
export interface Log { path: string }
"""
    assert Decoder(compile_typescript(source, "Log").value).accepts('{"path": "/"}')
    with pytest.raises(ConstraintError, match="'Request' is imported from 'express'"):
        compile_typescript(source, "Request")
    with pytest.raises(ConstraintError, match="'method'"):
        compile_typescript(source, "Widget")


def test_tuple_spreads_of_tuple_types() -> None:
    source = """
type Head = [string, number];
type Point = [x: number, y: number];
export type T = { a: [...Head, boolean]; b: [...Point, ...string[]]; d: [...Point, z?: number] };
"""
    schema = typescript_to_json_schema(source, "T")["$defs"]["T"]["properties"]
    assert [s["type"] for s in schema["a"]["prefixItems"]] == ["string", "number", "boolean"]
    assert schema["b"]["items"] == {"type": "string"} and schema["d"]["minItems"] == 2
    good = '{"a": ["x", 1, true], "b": [1, 2, "s"], "d": [1, 2, 3]}'
    assert _judged(source, "T", [good]) == {}
    assert typescript_errors(source, "T", _sampled(source, "T")) == {}
    assert not Decoder(compile_typescript(source, "T").value).accepts(good.replace("true", "1"))
    with pytest.raises(ConstraintError, match="array spread is not last"):
        compile_typescript("type S = string[]\ntype A = [...S, number]", "A")


def test_class_getters_are_members_and_bigint_literals_refused_where_used() -> None:
    source = """
export class Cart {
  items: { sku: string; qty: number }[] = [];
  get count(): number { return this.items.length; }
  static empty(): Cart { return new Cart(); }
}
type Big = 100n;
export interface Uses { big: Big }
"""
    judged = source.split("type Big")[0]
    assert typescript_errors(judged, "Cart", _sampled(source, "Cart")) == {}
    assert not Decoder(compile_typescript(source, "Cart").value).accepts('{"items": []}')
    with pytest.raises(ConstraintError, match=r"'bigint' \(not JSON-serializable\) at line 7"):
        compile_typescript(source, "Uses")


def test_members_json_cannot_hold_are_left_out_where_optional() -> None:
    """A bigint, a symbol or a function is no JSON value: an optional member of
    such a type is never written, and a union drops them (``string | bigint``
    written out is a string), as ``tsc`` agrees; where a value needs one, the
    refusal names it."""
    source = """
export interface Account {
  id: string;
  balance?: bigint;
  key?: symbol;
  readonly brand?: unique symbol;
  onChange?: (value: string) => void;
  amount: number | bigint;
  label: string | (() => string) | undefined;
}
export interface Ledger { total: bigint }
"""
    texts = _sampled(source, "Account")
    assert texts and all(set(json.loads(text)) <= {"id", "amount", "label"} for text in texts)
    assert typescript_errors(source, "Account", texts) == {}
    with pytest.raises(ConstraintError, match=r"'bigint' \(not JSON-serializable\) at line 11"):
        compile_typescript(source, "Ledger")


def test_intersections_of_literal_unions_keep_the_literals_both_sides_have() -> None:
    """``("a" | "b" | "c") & ("b" | "c" | "d")`` is ``"b" | "c"`` and ``("a" | 1) &
    string`` is ``"a"``, as ``tsc`` distributes them; a member that comes to
    ``never`` leaves its union."""
    source = """
export type Shared = ("a" | "b" | "c") & ("b" | "c" | "d");
export type Texts = ("a" | 1 | true) & string;
export interface Row { shared: Shared; text: Texts; v: (("x" | "y") & ("z" | "w")) | number }
"""
    schema = typescript_to_json_schema(source, "Row")["$defs"]
    assert schema["Shared"] == {"enum": ["b", "c"]}
    assert schema["Texts"] == {"const": "a"}
    texts = _sampled(source, "Row")
    assert texts and typescript_errors(source, "Row", texts) == {}
    bad = ['{"shared": "a", "text": "a", "v": 1}', '{"shared": "b", "text": "a", "v": "x"}']
    assert not any(Decoder(compile_typescript(source, "Row").value).accepts(t) for t in bad)
    assert set(typescript_errors(source, "Row", bad)) == {0, 1}
    with pytest.raises(ConstraintError, match="'never' has no value"):
        compile_typescript('type N = ("a" | "b") & ("c" | "d")', "N")


def test_the_bench_probes_compile_or_are_refused_by_name() -> None:
    """``bench/typescript_coverage``'s sources: none fails otherwise than with a
    ConstraintError, and those refused on purpose stay refused."""
    probes = json.loads((Path(__file__).parent.parent / "bench/typescript_probes.json").read_text())
    refused = set()
    for name, probe in probes.items():
        try:
            compile_typescript(probe["source"], probe["type_name"])
        except ConstraintError:
            refused.add(name)
    assert {"set_map", "bigint_literal", "function_type_prop", "spread_middle"} <= refused
    assert len(refused) <= 5, sorted(refused)


def test_statements_of_the_program_are_passed_over() -> None:
    """Calls, assignments and control flow beside the types, at the top or in a
    namespace, are the program's: passed over, as functions are."""
    source = """
console.log("starting");
app.listen(3000);
if (process.env.DEBUG) { enableDebug() } else { quiet() }
try { main() } catch (e) { report(e) }
namespace Util { export interface Point { x: number } setup() }
export interface A { a: string; p: Util.Point }
"""
    assert Decoder(compile_typescript(source, "A").value).accepts('{"a": "x", "p": {"x": 1}}')
    with pytest.raises(ConstraintError, match="unexpected '}'"):
        compile_typescript("main()\n}\ninterface A { a: string }", "A")
