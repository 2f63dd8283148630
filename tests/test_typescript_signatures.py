"""grammar_compiler.typescript: data types read from function and class signatures.

``ReturnType<typeof f>``, ``Parameters<F>``, conditional types that match
functions, optional methods and index signatures of classes, a tuple's
``length``. Each compiled type's sampled outputs are judged by the real
TypeScript compiler (``tests/integration/typescript_judge``), and texts the
grammar refuses are refused by ``tsc`` too.
"""

from __future__ import annotations

import pytest
from integration.typescript_judge import judged_samples, typescript_errors
from json_instances import Decoder

from grammar_compiler import ConstraintError, compile_typescript, typescript_to_json_schema


def _refused_by_both(source: str, type_name: str, texts: list[str]) -> None:
    decoder = Decoder(compile_typescript(source, type_name).value)
    assert not any(decoder.accepts(text) for text in texts)
    assert set(typescript_errors(source, type_name, texts)) == set(range(len(texts)))


FUNCTIONS = """
declare function getUser(id: string): { id: string; age: number; tags?: string[] };
export function save(user: { name: string }, force?: boolean, ...notes: number[]): boolean {
  return force ?? false;
}
export function parse(text: string): number;
export function parse(text: string, strict: boolean): { value: number; exact: boolean };
export function parse(text: string, strict?: boolean): unknown { return text; }
async function load(): Promise<{ rows: number[] }> { return { rows: [] }; }
type Handler = (event: { kind: "click" | "key"; at: number }) => void;
interface Api { fetch(path: string, retries?: number): { status: 200 | 404 } }
export interface Calls {
  user: ReturnType<typeof getUser>;
  saveArgs: Parameters<typeof save>;
  parsed: ReturnType<typeof parse>;
  loaded: Awaited<ReturnType<typeof load>>;
  event: Parameters<Handler>[0];
  fetched: ReturnType<Api["fetch"]>;
  fetchArgs: Parameters<Api["fetch"]>;
}
"""


def test_return_and_parameter_types_are_read_from_signatures() -> None:
    """A declared function, one with a body, overloads (the last before the
    body, as ``tsc`` reads ``typeof f``), an async one under ``Awaited``, a
    function type alias and an interface's method: as ``tsc`` types them."""
    calls = typescript_to_json_schema(FUNCTIONS, "Calls")["$defs"]["Calls"]["properties"]
    assert calls["saveArgs"]["minItems"] == 1 and calls["saveArgs"]["items"] == {"type": "number"}
    assert set(calls["parsed"]["properties"]) == {"value", "exact"}
    judged_samples(FUNCTIONS, "Calls")
    valid = (
        '{"user": {"id": "u", "age": 3}, "saveArgs": [{"name": "n"}, true, 1, 2],'
        ' "parsed": {"value": 1, "exact": false}, "loaded": {"rows": []},'
        ' "event": {"kind": "key", "at": 0}, "fetched": {"status": 404}, "fetchArgs": ["/"]}'
    )
    assert Decoder(compile_typescript(FUNCTIONS, "Calls").value).accepts(valid)
    wrong = [
        valid.replace('"parsed": {"value": 1, "exact": false}', '"parsed": 1'),  # first overload
        valid.replace('[{"name": "n"}, true, 1, 2]', '[{"name": "n"}, 1]'),
        valid.replace('"fetchArgs": ["/"]', '"fetchArgs": []'),
    ]
    _refused_by_both(FUNCTIONS, "Calls", wrong)


def test_conditional_types_match_function_types() -> None:
    """Hand-written ``ReturnType``-like conditionals: ``infer`` in a result or a
    parameter binds what the function has there; data is no function."""
    source = """
type Result<T> = T extends (...args: any[]) => infer R ? R : never;
type First<T> = T extends (first: infer A, ...rest: any[]) => any ? A : never;
type Kind<T> = T extends (...args: any) => any ? "function" : "data";
declare function make(spec: { size: number }, name: string): { made: true; size: number };
export interface Made {
  result: Result<typeof make>;
  spec: First<typeof make>;
  kinds: [Kind<typeof make>, Kind<string>];
}
"""
    kinds = typescript_to_json_schema(source, "Made")["$defs"]
    assert {"const": "function"} in kinds.values() and {"const": "data"} in kinds.values()
    judged_samples(source, "Made")
    _refused_by_both(
        source,
        "Made",
        ['{"result": {"made": true, "size": 1}, "spec": {"size": 1}, "kinds": ["data", "data"]}'],
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "function f(x = 1) { return x }\ntype T = ReturnType<typeof f>",
            "this function has no return type written",
        ),
        ("type T = ReturnType<<X>(x: X) => X>", "of a generic function"),
        ("type T = ReturnType<string>", "ReturnType takes a function type"),
        ("declare function f(): void\ntype T = ReturnType<typeof f>", "'void'"),
        ("type C = new () => { a: 1 }\ntype T = ReturnType<C>", "takes a function type"),
        ("declare function f(): string\ntype T = { f: typeof f }", "construct 'function'"),
    ],
)
def test_what_signatures_cannot_give_is_refused_with_why(source: str, message: str) -> None:
    with pytest.raises(ConstraintError, match=message):
        compile_typescript(source, "T")


def test_constructor_types_give_instances_and_their_arguments() -> None:
    source = """
type Maker = new (name: string, size?: number) => { name: string; size: number };
export interface Built { made: InstanceType<Maker>; args: ConstructorParameters<Maker> }
"""
    judged_samples(source, "Built")


def test_a_class_is_also_its_constructor() -> None:
    """``typeof Order`` is the constructor: its parameters (a default makes one
    optional, parameter properties too, a rest) and its instances (tsc agrees)."""
    source = """
export class Order {
  total!: number;
  constructor(public readonly id: number, note?: string, priority = 1, ...tags: string[]) {}
}
class Empty { n = 0 }
namespace Shop { export class Item { sku = "" } }
export interface Made {
  order: InstanceType<typeof Order>;
  args: ConstructorParameters<typeof Order>;
  none: ConstructorParameters<typeof Empty>;
  item: InstanceType<typeof Shop.Item>;
}
"""
    good = (
        '{"order": {"total": 1, "id": 2}, "args": [2, "n", 3, "a"], "none": [], '
        '"item": {"sku": "x"}}'
    )
    decoder = Decoder(compile_typescript(source, "Made").value)
    assert decoder.accepts(good) and decoder.accepts(good.replace('"n", 3, "a"', '"n"'))
    assert not decoder.accepts(good.replace("[2, ", '["2", '))
    assert not decoder.accepts(good.replace('"none": []', '"none": [1]'))
    assert typescript_errors(source, "Made", [good]) == {}
    judged_samples(source, "Made")
    derived = "class A { constructor(public id: number) {} }\nclass B extends A {}\n"
    with pytest.raises(ConstraintError, match="parameter list is not read here"):
        compile_typescript(derived + "type T = InstanceType<typeof B>", "T")


def test_classes_with_optional_methods_and_index_signatures_hold_data() -> None:
    """An optional method is left out (a JSON value has none); an index
    signature of a class is its instances', as in an interface; a required
    method still makes the class no data type."""
    source = """
export class Settings {
  [key: string]: string | number | (() => string) | undefined;
  name: string = "";
  retries?: number;
  describe?(): string;
}
export class Job {
  id!: string;
  run(): void {}
}
export interface Uses { job: Job }
"""
    judged_samples(source, "Settings")
    assert Decoder(compile_typescript(source, "Settings").value).accepts(
        '{"name": "a", "extra": 1}'
    )
    _refused_by_both(source, "Settings", ['{"name": "a", "extra": true}'])
    with pytest.raises(ConstraintError, match="construct 'method'"):
        compile_typescript(source, "Uses")


def test_the_length_of_a_tuple_is_its_counts() -> None:
    source = """
type Pair = [string, number, boolean?];
type Length<T extends unknown[]> = T["length"];
export interface Sizes { pair: Pair["length"]; three: Length<[1, 2, 3]>; many: Length<string[]> }
"""
    sizes = typescript_to_json_schema(source, "Sizes")["$defs"]
    assert sizes["Sizes"]["properties"]["pair"] == {"enum": [2, 3]}
    judged_samples(source, "Sizes")
    _refused_by_both(source, "Sizes", ['{"pair": 1, "three": 3, "many": 0}'])


def test_overloaded_methods_are_one_member_read_by_their_last_signature() -> None:
    """An interface's overloads name one member (``Omit`` removes it at once);
    ``Parameters`` and ``ReturnType`` read the last, as ``tsc`` does. An
    optional ``Function`` is left out like any function-typed member."""
    source = """
export interface Emitter {
  name: string;
  on(event: "open"): void;
  on(event: "data", size: number): { accepted: boolean };
  onError?: Function;
}
export interface Uses {
  plain: Omit<Emitter, "on">;
  args: Parameters<Emitter["on"]>;
  result: ReturnType<Emitter["on"]>;
}
"""
    judged_samples(source, "Uses")
    _refused_by_both(
        source,
        "Uses",
        ['{"plain": {"name": "a"}, "args": ["open"], "result": {"accepted": true}}'],
    )
    with pytest.raises(ConstraintError, match="construct 'Function'"):
        compile_typescript("export interface T { run: Function }", "T")


def test_arrow_functions_namespaced_and_generic_functions_give_their_signatures() -> None:
    """``const f = (x: T): R => ...`` is read as its signature, a function in a
    namespace by its path, and a generic function where the part asked for
    does not use its type parameters."""
    source = """
export const toRow = (id: number, label?: string): { id: number; label: string | null } => ({
  id,
  label: label ?? null,
});
namespace Store { export declare function load(key: string): { key: string; hits: number }; }
export const fetchOne = async <T,>(url: string, retries: number): Promise<{ url: string }> => {
  return { url };
};
export interface Read {
  row: ReturnType<typeof toRow>;
  args: Parameters<typeof toRow>;
  loaded: ReturnType<typeof Store.load>;
  fetched: Awaited<ReturnType<typeof fetchOne>>;
  fetchArgs: Parameters<typeof fetchOne>;
}
"""
    judged_samples(source, "Read")
    with pytest.raises(ConstraintError, match="whose result uses its type parameters"):
        compile_typescript(
            "declare function first<T>(xs: T[]): T\ntype T = ReturnType<typeof first>", "T"
        )
