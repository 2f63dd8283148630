"""Generic TypeScript aliases and interfaces: each instantiation its own ``$defs`` entry.

The expected schemas are written by hand from what the instantiated types
mean in TypeScript; compiled constraints are driven through real xgrammar.
"""

from __future__ import annotations

import pytest
from json_instances import Decoder

from grammar_compiler import ConstraintError, compile_typescript, typescript_to_json_schema
from grammar_compiler.typescript.generics import MAX_INSTANTIATIONS

STRING, NUMBER = {"type": "string"}, {"type": "number"}


def _defs(source: str, type_name: str) -> tuple[str, dict]:
    """The root's ``$defs`` name and the ``$defs``."""
    schema = typescript_to_json_schema(source, type_name)
    return schema["$ref"].removeprefix("#/$defs/"), schema["$defs"]


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


def _object(properties: dict, required: list[str] | None = None) -> dict:
    required = list(properties) if required is None else required
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {**schema, "additionalProperties": False}


def _pair(item: dict) -> dict:
    return {"type": "array", "prefixItems": [item, item], "minItems": 2, "items": False}


def test_generic_alias_instantiated_per_argument() -> None:
    source = (
        "type Pair<T> = [T, T]\n"
        "export interface Line { from: Pair<number>; to: Pair<number>; name: Pair<string> }"
    )
    root, defs = _defs(source, "Line")
    assert root == "Line"
    assert defs == {
        "Line": _object(
            {"from": _ref("Pair_number"), "to": _ref("Pair_number"), "name": _ref("Pair_string")}
        ),
        "Pair_number": _pair(NUMBER),
        "Pair_string": _pair(STRING),
    }


def test_defaults_fill_missing_arguments_and_may_use_earlier_parameters() -> None:
    source = (
        "interface Box<T, U = string, V = T[]> { value: T; label: U; all: V }\n"
        "type Boxes = [Box<number>, Box<number, string>, Box<boolean, 1>]"
    )
    _, defs = _defs(source, "Boxes")
    numbers = {"type": "array", "items": NUMBER}
    assert defs["Box_number_string_number_array"] == _object(
        {"value": NUMBER, "label": STRING, "all": numbers}
    )
    assert defs["Box_boolean_1_boolean_array"] == _object(
        {
            "value": {"type": "boolean"},
            "label": {"const": 1},
            "all": {"type": "array", "items": {"type": "boolean"}},
        }
    )
    # Box<number> and Box<number, string> are one instantiation
    assert defs["Boxes"]["prefixItems"][0] == defs["Boxes"]["prefixItems"][1]
    assert len(defs) == 3


def test_generic_with_defaults_for_every_parameter_may_be_the_type_name() -> None:
    root, defs = _defs("interface Box<T = number> { value: T }", "Box")
    assert defs == {root: _object({"value": NUMBER})}


def test_nested_generics_and_generic_references_inside_declarations() -> None:
    source = (
        "interface User { id: number }\n"
        "type Result<T> = { ok: true; value: T } | { ok: false; error: string }\n"
        "interface Page<T> { items: T[]; next?: Page<T> }\n"
        "export type Answer = Page<Result<User>>"
    )
    root, defs = _defs(source, "Answer")
    assert defs[root] == _ref("Page_Result_User")
    assert defs["Page_Result_User"] == _object(
        {
            "items": {"type": "array", "items": _ref("Result_User")},
            "next": _ref("Page_Result_User"),
        },
        ["items"],
    )
    assert defs["Result_User"] == {
        "anyOf": [
            _object({"ok": {"const": True}, "value": _ref("User")}),
            _object({"ok": {"const": False}, "error": STRING}),
        ]
    }
    assert set(defs) == {"Answer", "Page_Result_User", "Result_User", "User"}
    decoder = Decoder(compile_typescript(source, "Answer").value)
    assert decoder.accepts('{"items": [{"ok": true, "value": {"id": 1}}], "next": {"items": []}}')
    assert not decoder.accepts('{"items": [{"ok": true, "error": "x"}]}')


def test_recursive_generic_refers_to_its_own_instantiation() -> None:
    source = "type Tree<T> = { value: T; children: Tree<T>[] }\ntype Doc = Tree<'a' | 'b'>"
    _, defs = _defs(source, "Doc")
    tree = "Tree_a_or_b"
    assert defs[tree] == _object(
        {"value": {"enum": ["a", "b"]}, "children": {"type": "array", "items": _ref(tree)}}
    )
    decoder = Decoder(compile_typescript(source, "Doc").value)
    assert decoder.accepts('{"value": "a", "children": [{"value": "b", "children": []}]}')
    assert not decoder.accepts('{"value": "c", "children": []}')


def test_generic_interfaces_extend_and_intersect_instantiated() -> None:
    source = (
        "interface Base<T> { base: T }\n"
        "interface Named<T> extends Base<T[]> { name: T }\n"
        "type Both = Named<string> & Partial<Base<number>> & { extra: Base<1> }"
    )
    _, defs = _defs(source, "Both")
    strings = {"type": "array", "items": STRING}
    # Partial<Base<number>> makes "base" optional with the other schema; both must hold.
    assert defs["Both"] == _object(
        {"base": {"allOf": [strings, NUMBER]}, "name": STRING, "extra": _ref("Base_1")},
        ["base", "name", "extra"],
    )
    assert defs["Base_1"] == _object({"base": {"const": 1}})


def test_literal_arguments_stay_distinct() -> None:
    source = "type Box<T> = { v: T }\ntype All = [Box<1>, Box<true>, Box<'1'>, Box<1.5>]"
    _, defs = _defs(source, "All")
    consts = sorted(
        (str(d["properties"]["v"]["const"]), name) for name, d in defs.items() if name != "All"
    )
    assert [value for value, _ in consts] == ["1", "1", "1.5", "True"]
    assert len({name for _, name in consts}) == 4


def test_instantiation_names_do_not_collide_with_declared_names() -> None:
    source = (
        "type Box_number = string\ntype Box<T> = { v: T }\ntype Both = [Box<number>, Box_number]"
    )
    _, defs = _defs(source, "Both")
    assert defs["Box_number"] == STRING
    assert defs["Box_number_2"] == _object({"v": NUMBER})
    assert defs["Both"]["prefixItems"] == [_ref("Box_number_2"), _ref("Box_number")]


def test_instantiations_are_limited() -> None:
    boxes = ", ".join(f"Box<{i}>" for i in range(MAX_INSTANTIATIONS + 1))
    source = f"type Box<T> = {{ v: T }}\ntype All = [{boxes}]"
    with pytest.raises(ConstraintError, match=f"more than {MAX_INSTANTIATIONS} instantiations"):
        typescript_to_json_schema(source, "All")
    within = ", ".join(f"Box<{i}>" for i in range(MAX_INSTANTIATIONS))
    _, defs = _defs(f"type Box<T> = {{ v: T }}\ntype All = [{within}]", "All")
    assert len(defs) == MAX_INSTANTIATIONS + 1


def test_type_parameter_constraints_and_modifiers_are_read() -> None:
    source = "interface Tagged<const K extends string = 'x', in out V = number> { k: K; v: V }"
    _, defs = _defs(source, "Tagged")
    assert list(defs.values()) == [_object({"k": {"const": "x"}, "v": NUMBER})]


def test_constraints_may_use_what_data_types_cannot() -> None:
    """A constraint limits the arguments, not the values: it is passed over, not translated."""
    source = (
        "interface Pick2<T extends { [k: string]: unknown }, F extends (x: T) => Array<F>,\n"
        "  K extends keyof T = 'a'> { value: T; key: K; f: F }\n"
        "type S = Pick2<{ a: 1 }, 0>"
    )
    _, defs = _defs(source, "S")
    assert defs["S"] == _ref("Pick2_a_1_0_a")
    assert defs["Pick2_a_1_0_a"] == _object(
        {"value": _object({"a": {"const": 1}}), "key": {"const": "a"}, "f": {"const": 0}}
    )


# ---------------------------------------------------------------------------
# Mistakes, located


@pytest.mark.parametrize(
    ("source", "type_name", "message", "line", "column"),
    [
        (
            "interface Box<T, U = string> { value: T; label: U }",
            "Box",
            "type 'Box' is generic and its type parameter 'T' has no default",
            1,
            15,
        ),
        (
            "type Box<T> = { v: T }\ntype B = Box<string, number>",
            "B",
            "generic type 'Box' takes 1 type argument, got 2",
            2,
            10,
        ),
        (
            "type Box<T, U = 1> = { v: T }\ntype B = { b: Box }",
            "B",
            "generic type 'Box' takes 1 to 2 type arguments, got 0",
            2,
            15,
        ),
        ("type B = { a: Array<string, number> }", "B", "Array takes 1 type argument, got 2", 1, 15),
        ("type B = Record<string>", "B", "Record takes 2 type arguments, got 1", 1, 10),
        (
            "type T<X> = T<X[]>\ntype S = T<string>",
            "S",
            "generic type 'T' expands without end",
            1,
            13,
        ),
        (
            "type T<X> = { a: T<[X, X]> }\ntype S = T<string>",
            "S",
            "generic type 'T' expands without end: its type arguments grow past 4096 characters",
            1,
            18,
        ),
        (
            "type T<X> = { a?: T<{ x: X }>; b: X }\ntype S = T<1>",
            "S",
            "grow past 64 levels of nesting",
            1,
            19,
        ),
        (
            "type W<T> = { a?: W<[T]>; b?: W<T[]> }\ntype S = W<1>",
            "S",
            "generic type 'W' expands without end",
            1,
            None,
        ),
        (
            "type W<T> = { a: T<string> }\ntype S = W<1>",
            "S",
            "type parameter 'T' takes no type arguments",
            1,
            18,
        ),
        ("type W<T> = { a: T.x }\ntype S = W<1>", "S", "type parameter 'T' has no members", 1, 18),
        ("type W<T, T> = T", "W", "duplicate type parameter 'T'", 1, 11),
        ("type W<T = 1, U> = T", "W", "type parameter 'U' needs a default", 1, 15),
        ("type W<> = 1", "W", "expected a type parameter name, found '>'", 1, 8),
    ],
)
def test_generic_mistakes_are_located(
    source: str, type_name: str, message: str, line: int, column: int | None
) -> None:
    with pytest.raises(ConstraintError) as caught:
        compile_typescript(source, type_name)
    error = caught.value
    assert message in error.message, error.message
    assert error.line == line, str(error)
    if column is not None:
        assert error.column == column, str(error)
