"""Large unions: tagged unions of hundreds of object types, oneOf decided by a discriminator.

Every compiled schema is driven with xgrammar exactly as the decoder
compiles it (``json_instances.Decoder``) and judged by the constraint's own
judge (jsonschema on the original schema): each branch's instance passes
both, an instance mixing two branches fails both, and random walks through
xgrammar's grammar always satisfy the judge.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_instances import Decoder, layout, samples

from grammar_compiler import ConstraintError, compile_json_schema, compile_typescript
from grammar_compiler.json_schema import (
    MAX_BRANCHES,
    MAX_DISTRIBUTED_SUBSCHEMAS,
    MAX_PRODUCT_BRANCHES,
)

MEMBERS = 200


def _member(i: int, *, typed: bool = True) -> dict:
    """One action of a function-calling union: a literal ``kind`` and fields of its own."""
    schema = {
        "properties": {
            "kind": {"const": f"action_{i}"},
            f"target_{i}": {"type": "string", "maxLength": 8},
            f"count_{i}": {"type": "integer", "minimum": 0, "maximum": 99},
        },
        "required": ["kind", f"target_{i}", f"count_{i}"],
        "additionalProperties": False,
    }
    return {"type": "object", **schema} if typed else schema


def _instance(i: int, kind: int | None = None) -> str:
    kind = i if kind is None else kind
    return layout({"kind": f"action_{kind}", f"target_{i}": "x", f"count_{i}": 7})


def _assert_tagged_union(constraint, decoder: Decoder, members: int) -> None:
    for i in range(members):
        text = _instance(i)
        assert constraint.judge(text) is None, (text, constraint.judge(text))
        assert decoder.accepts(text), text
    for text in (_instance(0, kind=1), _instance(members - 1, kind=0)):  # A's kind, B's fields
        assert constraint.judge(text) is not None, text
        assert not decoder.accepts(text), text
    for text in samples(decoder, 40):
        assert constraint.judge(text) is None, (text, constraint.judge(text))


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
@pytest.mark.parametrize("typed", [True, False], ids=["typed", "untyped"])
def test_a_200_member_tagged_union_compiles_and_keeps_its_members_apart(
    keyword: str, typed: bool
) -> None:
    schema = {keyword: [_member(i, typed=typed) for i in range(MEMBERS)]}
    constraint = compile_json_schema(schema)
    assert len(json.loads(constraint.value)["anyOf"]) == MEMBERS
    _assert_tagged_union(constraint, Decoder(constraint.value), MEMBERS)


def test_keywords_beside_a_large_union_go_into_every_branch() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "maxLength": 4}},
        "required": ["id"],
        "oneOf": [_member(i) | {"additionalProperties": True} for i in range(MEMBERS)],
    }
    constraint = compile_json_schema(schema)
    branches = json.loads(constraint.value)["anyOf"]
    assert all(branch["required"][0] == "id" for branch in branches)
    decoder = Decoder(constraint.value)
    text = layout({"id": "a", "kind": "action_5", "target_5": "x", "count_5": 1})
    assert constraint.judge(text) is None and decoder.accepts(text)
    missing_id = layout({"kind": "action_5", "target_5": "x", "count_5": 1})
    assert constraint.judge(missing_id) is not None and not decoder.accepts(missing_id)
    for text in samples(decoder, 20):
        assert constraint.judge(text) is None, text


def test_a_union_of_the_largest_size_compiles() -> None:
    schema = {"oneOf": [_member(i) for i in range(MAX_BRANCHES)]}
    constraint = compile_json_schema(schema)
    assert len(json.loads(constraint.value)["anyOf"]) == MAX_BRANCHES


def test_a_oneof_of_many_constants_is_exclusive_unless_one_repeats() -> None:
    values = [{"const": f"v{i}", "title": f"value {i}"} for i in range(MAX_BRANCHES)]
    constraint = compile_json_schema({"oneOf": values})
    decoder = Decoder(constraint.value)
    assert decoder.accepts('"v999"') and not decoder.accepts('"v1000"')
    with pytest.raises(ConstraintError, match="branches 3 and 1000 may both match"):
        compile_json_schema({"oneOf": [*values, {"enum": ["x", "v3"]}]})


def test_a_repeated_discriminator_value_is_an_overlap_unless_another_property_decides() -> None:
    members = [_member(i) for i in range(50)]
    twin = _member(7)
    with pytest.raises(ConstraintError, match=r"'oneOf' at the root .* branches 7 and 50 may both"):
        compile_json_schema({"oneOf": [*members, twin]})
    # Same kind, but a second required discriminator tells the two apart.
    versioned = [
        {**_member(7), "properties": {**_member(7)["properties"], "v": {"const": v}}}
        | {"required": [*_member(7)["required"], "v"]}
        for v in (1, 2)
    ]
    constraint = compile_json_schema({"oneOf": [*members[:7], *versioned]})
    decoder = Decoder(constraint.value)
    text = layout({"kind": "action_7", "target_7": "x", "count_7": 1, "v": 2})
    assert constraint.judge(text) is None and decoder.accepts(text)


def test_branches_that_generate_strings_must_not_match_untyped_objects() -> None:
    # Untyped branch 0 matches every string, so "a" from branch 1 would match both:
    # the overlap rewrite leaves branch 1 nothing, and strings are never generated.
    schema = {"oneOf": [_member(0, typed=False), {"type": "string"}]}
    assert not Decoder(compile_json_schema(schema).value).accepts('"a"')
    typed = {"oneOf": [_member(0), {"type": "string"}]}
    assert Decoder(compile_json_schema(typed).value).accepts('"a"')


def test_kinds_two_untyped_branches_match_whole_are_left_out_of_a_oneof() -> None:
    """Every string matches both branches, so none satisfies the oneOf (exact); a number
    below 5 and an object without "a" ({}: strict writes no undeclared member) stay."""
    schema = {"oneOf": [{"minimum": 5}, {"required": ["a"]}]}
    constraint = compile_json_schema(schema)
    decoder = Decoder(constraint.value)
    for text in ("3", "-1", "{}"):
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in ('"x"', "null", "true", "[]", "7", '{"a": 1}'):
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    for text in samples(decoder, 30):
        assert constraint.judge(text) is None, text


@pytest.mark.parametrize(
    "branches",
    [
        [{"type": "number", "not": {"multipleOf": 3, "minLength": 2}}, {"type": "integer"}],
        [{"type": "number", "not": {"multipleOf": 3, "minLength": 2}}, {"required": ["a"]}],
    ],
    ids=["typed", "untyped"],
)
def test_a_branch_expressed_in_part_is_compared_by_the_kinds_its_schema_allows(
    branches: list[dict],
) -> None:
    """Branch 0's node holds only part of its schema (its ``not`` is a subset), so its node
    cannot show that 4, which the other branch generates, misses it: 4 matches both."""
    constraint = compile_json_schema({"oneOf": branches})
    decoder = Decoder(constraint.value)
    assert constraint.judge("4") is not None and not decoder.accepts("4")
    assert constraint.judge("3") is None and decoder.accepts("3")
    for text in samples(decoder, 30):
        assert constraint.judge(text) is None, text


def test_without_a_discriminator_large_unions_are_compared_only_so_far() -> None:
    # Disjoint by number ranges: provable pair by pair, but 100 branches are
    # more pairs than one oneOf may cost.
    ranges = [{"type": "integer", "minimum": 10 * i, "maximum": 10 * i + 9} for i in range(100)]
    assert compile_json_schema({"oneOf": ranges[:60]})
    with pytest.raises(ConstraintError, match="may both match"):
        compile_json_schema({"oneOf": ranges})
    loose = compile_json_schema({"oneOf": ranges}, strict=False)
    assert loose.not_enforced == ("oneOf at the root",)


def test_a_union_distributed_into_a_union_keeps_the_product_bound() -> None:
    def union(count: int, name: str) -> dict:
        return {"anyOf": [{"properties": {name: {"const": i}}} for i in range(count)]}

    side = int(MAX_PRODUCT_BRANCHES**0.5)
    assert compile_json_schema({"type": "object", "allOf": [union(side, "a"), union(side, "b")]})
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema({"type": "object", "allOf": [union(side + 1, "a"), union(side, "b")]})
    assert caught.value.message == (
        f"keyword 'anyOf' at the root cannot be enforced during generation: combining it "
        f"with another union needs {(side + 1) * side} branches (at most {MAX_PRODUCT_BRANCHES})"
    )


def test_keywords_copied_into_many_branches_are_bounded_by_subschemas() -> None:
    beside = {f"p{i}": {"type": "string"} for i in range(20)}
    branches = [{"properties": {"n": {"const": i}}, "required": ["n"]} for i in range(600)]
    schema = {"type": "object", "properties": beside, "required": list(beside), "anyOf": branches}
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema(schema)
    assert "copying the keywords beside it into its 600 branches makes" in caught.value.message
    assert f"(at most {MAX_DISTRIBUTED_SUBSCHEMAS})" in caught.value.message
    assert compile_json_schema(schema | {"anyOf": branches[:200]})


def test_a_typescript_union_of_200_object_types_is_a_flat_tagged_union() -> None:
    declarations = "\n".join(
        f'interface A{i} {{ kind: "action_{i}"; target_{i}: string; count_{i}: number }}'
        for i in range(MEMBERS)
    )
    union = " | ".join(f"A{i}" for i in range(MEMBERS))
    constraint = compile_typescript(f"{declarations}\nexport type Action = {union};", "Action")
    value = json.loads(constraint.value)
    assert len(value["$defs"]["Action"]["anyOf"]) == MEMBERS
    decoder = Decoder(constraint.value)
    for i in range(MEMBERS):
        text = _instance(i)
        assert constraint.judge(text) is None and decoder.accepts(text), text
    mixed = _instance(3, kind=4)
    assert constraint.judge(mixed) is not None and not decoder.accepts(mixed)


def test_a_union_that_contains_itself_through_a_ref_is_refused() -> None:
    # Whether the root matches null depends on itself: no rewrite can decide it.
    schema = {"oneOf": [{"$ref": "#"}, {"type": "null"}]}
    for strict in (True, False):
        with pytest.raises(ConstraintError):
            compile_json_schema(schema, strict=strict)


_TAGS = st.sampled_from(["a", "b", "c", 1, None])
_BRANCHES = st.one_of(
    st.builds(lambda tag: {"const": tag}, _TAGS),
    st.sampled_from([{"type": "string"}, {"type": "null"}, {"type": "boolean"}, {}]),
    st.builds(
        lambda low, width: {"type": "integer", "minimum": low, "maximum": low + width},
        st.integers(-5, 5),
        st.integers(0, 3),
    ),
    st.builds(
        lambda tags, typed, extra: (
            ({"type": "object"} if typed else {})
            | {
                "properties": {"kind": {"enum": tags}, "x": {"type": "integer", "maximum": 3}},
                "required": ["kind", "x"] if extra else ["kind"],
            }
        ),
        st.lists(_TAGS, min_size=1, max_size=2, unique=True),
        st.booleans(),
        st.booleans(),
    ),
)


@given(branches=st.lists(_BRANCHES, min_size=2, max_size=6))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_oneof_taken_as_exclusive_never_generates_a_value_two_branches_match(
    branches: list[dict],
) -> None:
    try:
        constraint = compile_json_schema({"oneOf": branches})
    except ConstraintError:
        return  # refused: overlapping, or no value at all
    decoder = Decoder(constraint.value)
    for text in samples(decoder, 15):
        assert constraint.judge(text) is None, (text, branches, constraint.value)
