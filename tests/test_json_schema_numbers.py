"""Numbers: the default runaway guard, OpenAPI range formats, non-integer multipleOf.

As in the other JSON Schema tests, xgrammar compiles each canonical value as
the decoder does (``json_instances.Decoder``) and the judge is jsonschema on
the original schema. The guard and the formats restrict generation to a
subset of what the judge accepts, so texts beyond them pass the judge and
are still refused by the grammar.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_instances import Decoder, samples

from grammar_compiler import ConstraintError, compile_json_schema
from grammar_compiler.json_schema.numbers import (
    FORMAT_RANGES,
    FRACTION_LIMIT,
    SAFE_INTEGER,
    DecimalStep,
)

LIFTED = {"x-unbounded-numbers": True}


def _compiled(schema: dict, strict: bool = True):
    constraint = compile_json_schema(schema, strict=strict)
    return constraint, Decoder(constraint.value)


def _assert_agrees(schema: dict, good: list[str], bad: list[str]) -> None:
    """Good texts pass the judge and xgrammar; bad ones xgrammar refuses (and the judge too)."""
    constraint, decoder = _compiled(schema)
    for text in good:
        assert constraint.judge(text) is None, (text, constraint.judge(text))
        assert decoder.accepts(text), (text, constraint.value)
    for text in bad:
        assert constraint.judge(text) is not None, text
        assert not decoder.accepts(text), (text, constraint.value)


def _assert_guarded(schema: dict, beyond: list[str]) -> None:
    """Texts the schema allows but the guard leaves out; lifting it lets them in."""
    constraint, decoder = _compiled(schema)
    lifted_constraint, lifted = _compiled(schema | LIFTED)
    for text in beyond:
        assert constraint.judge(text) is None, text
        assert not decoder.accepts(text), (text, constraint.value)
        assert lifted.accepts(text), (text, lifted_constraint.value)


def _assert_sound(schema: dict, walks: int = 60) -> list[str]:
    constraint, decoder = _compiled(schema)
    texts = samples(decoder, walks)
    for text in texts:
        assert constraint.judge(text) is None, (text, constraint.judge(text), constraint.value)
    return texts


# ---------------------------------------------------------------------------
# The guard


def test_integers_stay_within_what_a_double_holds_by_default() -> None:
    _assert_agrees(
        {"type": "integer"},
        [str(SAFE_INTEGER), str(-SAFE_INTEGER), "0", "-7"],
        ["1.5", '"1"'],
    )
    _assert_guarded({"type": "integer"}, [str(SAFE_INTEGER + 1), "12345678901234567890"])
    _assert_guarded({"type": "integer", "minimum": 0}, [str(2**60)])


def test_numbers_have_at_most_17_significant_digits_by_default() -> None:
    _assert_agrees(
        {"type": "number"},
        ["12345678901.123456", "-99999999999.999999", "0.000001", str(SAFE_INTEGER), "2.5"],
        ['"2"', "null"],
    )
    _assert_guarded(
        {"type": "number"},
        ["1e5", "6.02e23", "1.1234567", "123456789012.5", str(SAFE_INTEGER + 1)],
    )


def test_guarded_outputs_are_short_and_valid() -> None:
    for schema in ({"type": "integer"}, {"type": "number"}, {"type": "number", "maximum": -3}):
        for text in _assert_sound(schema):
            digits = text.lstrip("-").replace(".", "").lstrip("0")
            assert len(digits) <= 17, text


def test_a_users_range_inside_the_guard_is_kept_as_written() -> None:
    _assert_agrees({"type": "number", "minimum": -5, "maximum": 5}, ["-5", "4.75"], ["5.5"])
    _assert_agrees({"type": "number", "minimum": 0}, ["1.5", str(SAFE_INTEGER)], ["-0.5"])
    _assert_guarded({"type": "number", "minimum": 0}, [f"{FRACTION_LIMIT:.0f}.5"])


def test_a_range_beyond_the_guard_is_the_users() -> None:
    _assert_agrees({"type": "integer", "minimum": 10**17}, [str(10**17 + 3)], [str(10**17 - 1)])


def test_one_range_definition_serves_every_field_of_its_kind() -> None:
    fields = {f"f{i}": {"type": "integer"} for i in range(10)}
    fields |= {f"g{i}": {"type": "number"} for i in range(10)}
    schema = {"type": "object", "properties": fields, "required": list(fields)}
    value = json.loads(compile_json_schema(schema).value)
    assert len(value["$defs"]) == 2
    assert {prop["$ref"] for prop in value["properties"].values()} == {
        f"#/$defs/{name}" for name in value["$defs"]
    }
    _assert_sound(schema, walks=10)


def test_the_guard_is_lifted_only_by_a_boolean_at_the_root() -> None:
    with pytest.raises(ConstraintError, match="x-unbounded-numbers at the root must be true"):
        compile_json_schema({"type": "integer", "x-unbounded-numbers": "yes"})
    nested = {"type": "object", "properties": {"n": {"type": "integer", **LIFTED}}}
    assert not Decoder(compile_json_schema(nested).value).accepts('{"n": 12345678901234567890}')
    assert json.loads(compile_json_schema({"type": "number"} | LIFTED).value) == {"type": "number"}


@pytest.mark.parametrize(
    ("bounds", "low", "high"),
    [
        ({"minimum": 0}, 0, 9999),
        ({"exclusiveMinimum": 0}, 1, 10_000),
        ({"maximum": -3}, -10_002, -3),
    ],
)
def test_an_integer_step_beside_one_bound_is_kept_near_that_bound(
    bounds: dict, low: int, high: int
) -> None:
    """xgrammar keeps a step only within 10000 of a bound (or with none): beside
    one bound, the multiples that near it are generated, a reported subset."""
    schema = {"type": "integer", "multipleOf": 5, **bounds}
    constraint = compile_json_schema(schema)
    decoder = Decoder(constraint.value)
    texts = samples(decoder, 20, seed=4)
    assert texts and all(low <= int(t) <= high and int(t) % 5 == 0 for t in texts)
    assert all(constraint.judge(t) is None for t in texts)
    assert decoder.accepts(str(-(-low // 5) * 5)) and decoder.accepts(str(high // 5 * 5))
    assert not decoder.accepts(str(low // 5 * 5 - 5)) and not decoder.accepts(
        str(high // 5 * 5 + 5)
    )


def test_unbounded_integer_steps_keep_xgrammars_own_multiple_grammar() -> None:
    """The one exception to the guard: xgrammar cannot combine a step with a wide range."""
    _assert_agrees(
        {"type": "integer", "multipleOf": 5}, ["10", "-5", "12345678901234567890"], ["7"]
    )


def test_a_step_over_a_closed_range_too_wide_for_xgrammar_is_cut_into_ranges() -> None:
    """xgrammar steps only over fewer than 10000 integers: ``0`` to ``150000``
    by 7 becomes 16 such ranges, exactly the same numbers."""
    schema = {"type": "integer", "multipleOf": 7, "minimum": -5, "maximum": 150_000}
    constraint, decoder = _compiled(schema)
    assert len(json.loads(constraint.value)["anyOf"]) == 16 and not constraint.report.subsets
    edges = [edge for start in range(-5, 150_000, 9999) for edge in range(start - 30, start + 30)]
    for number in [*range(-20, 1_000), *edges, *range(149_900, 150_020)]:
        assert decoder.accepts(str(number)) == (constraint.judge(str(number)) is None), number
    _assert_sound(schema)


@pytest.mark.parametrize(
    ("bounds", "kept", "far"),
    [
        ((0, 100_000_000), (0, 159_983), 100_000_000),
        ((-10_000_000, 10_000_000), (-79_992, 79_991), -10_000_000),
        ((-10_000_000, -1_000), (-160_982, -1_000), -10_000_000),
    ],
)
def test_a_step_over_a_closed_range_too_wide_to_cut_keeps_the_part_nearest_zero(
    bounds: tuple[int, int], kept: tuple[int, int], far: int
) -> None:
    """Past 16 pieces (amounts in cents up to 10**8 by 100), the 16 pieces
    nearest zero: every multiple there, nothing beyond, a reported subset."""
    low, high = bounds
    schema = {"type": "integer", "multipleOf": 100, "minimum": low, "maximum": high}
    constraint, decoder = _compiled(schema)
    assert len(json.loads(constraint.value)["anyOf"]) == 16
    assert [subset.keyword for subset in constraint.report.subsets] == ["multipleOf"]
    first, last = -(-kept[0] // 100) * 100, kept[1] // 100 * 100
    for number in [first, last, *range(first, last + 1, 9_900)]:
        assert decoder.accepts(str(number)), number
    for number in (first - 100, last + 100, first + 1, far):
        assert not decoder.accepts(str(number)), number
    _assert_sound(schema)


@pytest.mark.parametrize(
    ("schema", "good", "beyond"),
    [
        ({"type": "integer", "multipleOf": 86400}, ["0", "86400", "-43200000"], "43200000"),
        ({"type": "integer", "multipleOf": 5000, "minimum": 10}, ["5000", "5000000"], "5005000"),
        ({"type": "integer", "multipleOf": 5000, "maximum": -3}, ["-5000"], "-5005000"),
        ({"type": "integer", "multipleOf": 0.123456789}, ["0", "-61728394500"], "61728394500"),
        (
            {"type": "integer", "multipleOf": 5000, "minimum": -(10**9), "maximum": 10**12},
            ["-2500000", "0", "2495000"],
            "2500000",
        ),
    ],
)
def test_a_step_beyond_xgrammar_lists_the_multiples_nearest_the_bound(
    schema: dict, good: list[str], beyond: str
) -> None:
    """xgrammar enforces steps up to 1024: a larger one over an open range is
    the 1000 multiples nearest the bound given (around zero with none), a
    subset, each one the judge's division accepts."""
    _assert_agrees(schema, good, ["1", str(2 * schema["multipleOf"] + 1)])
    constraint, decoder = _compiled(schema)
    assert constraint.report.subsets and len(json.loads(constraint.value)["enum"]) == 1000
    assert constraint.judge(beyond) is None and not decoder.accepts(beyond)
    _assert_sound(schema)


# ---------------------------------------------------------------------------
# OpenAPI formats


@pytest.mark.parametrize("name", sorted(FORMAT_RANGES))
def test_integer_formats_are_enforced_as_their_ranges(name: str) -> None:
    low, high = FORMAT_RANGES[name]
    guarded_low, guarded_high = max(low, -SAFE_INTEGER), min(high, SAFE_INTEGER)
    good = [str(guarded_low), str(guarded_high)]
    beyond = [str(low - 1), str(high + 1)]
    constraint, decoder = _compiled({"type": "integer", "format": name})
    for text in good:
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in beyond:
        assert not decoder.accepts(text), text  # format is an annotation to the judge
    if (low, high) != (guarded_low, guarded_high):  # the guard keeps a 64-bit range shorter
        _, lifted = _compiled({"type": "integer", "format": name} | LIFTED)
        assert lifted.accepts(str(2**62 if high > 2**62 else high))
        assert not lifted.accepts(str(high + 1))


def test_a_range_format_bounds_a_number_and_leaves_a_string_alone() -> None:
    _assert_agrees({"type": "number", "format": "int8", "minimum": -1}, ["126.5", "-1"], [])
    _, decoder = _compiled({"type": "number", "format": "int8"})
    assert not decoder.accepts("127.5") and not decoder.accepts("-129")
    _assert_agrees({"type": "string", "format": "int64"}, ['"12x"'], ["12"])
    _assert_agrees({"type": "number", "format": "double"}, ["1.5"], ['"1"'])
    _assert_sound({"type": "integer", "format": "uint8"})


# ---------------------------------------------------------------------------
# Non-integer multipleOf


def test_an_open_fractional_step_generates_its_integer_multiples() -> None:
    _assert_agrees({"type": "number", "multipleOf": 0.01, "minimum": 0}, ["0", "19", "250"], [])
    constraint, decoder = _compiled({"type": "number", "multipleOf": 0.01})
    assert not decoder.accepts("19.5")  # a multiple, left out: a subset the report names
    (subset,) = constraint.report.subsets
    assert subset.keyword == "multipleOf" and "only its integer multiples" in subset.note
    integer, _ = _compiled({"type": "integer", "multipleOf": 0.5})
    assert integer.report.subsets == ()  # every integer is written: no subset
    _assert_agrees({"type": "number", "multipleOf": 0.3}, ["3", "-9", "0"], ["1", "2"])
    _assert_agrees({"type": "integer", "multipleOf": 0.5}, ["1", "-7"], ["1.5"])
    _assert_agrees(
        {
            "allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.3}],
            "type": "number",
            "minimum": 0,
            "maximum": 3000,
        },
        ["3", "2997"],
        ["4", "1"],
    )
    _assert_sound({"type": "number", "multipleOf": 0.25})


def test_a_bounded_fractional_step_lists_the_multiples_the_judge_accepts() -> None:
    _assert_agrees(
        {"type": "number", "multipleOf": 0.5, "minimum": 0, "maximum": 5},
        ["0", "0.5", "2.5", "5"],
        ["0.25", "5.5", "-0.5"],
    )
    # jsonschema divides in floating point: 0.07 / 0.01 is 7.000000000000001,
    # so 0.07 is no multiple of 0.01 to the judge, and xgrammar leaves it out.
    _assert_agrees(
        {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0, "maximum": 1},
        ["0.01", "0.25", "0.5", "1"],
        ["0.07", "0", "0.015"],
    )
    _assert_sound({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1})
    _assert_agrees(
        {"type": "number", "multipleOf": 0.1, "minimum": 0.1, "maximum": 0.3},
        ["0.1", "0.2"],  # 0.3 / 0.1 is 2.9999999999999996 to the judge
        ["0", "0.3", "0.4"],
    )


def test_a_step_whose_rounding_breaks_integers_is_refused() -> None:
    with pytest.raises(ConstraintError, match="'multipleOf' at the root"):
        compile_json_schema({"type": "number", "multipleOf": 0.07})
    loose = compile_json_schema({"type": "number", "multipleOf": 0.07}, strict=False)
    assert loose.not_enforced == ("multipleOf at the root",)


def test_no_listed_multiple_in_range_is_a_contradiction() -> None:
    with pytest.raises(ConstraintError, match="no JSON value satisfies the schema"):
        compile_json_schema({"type": "number", "multipleOf": 0.5, "minimum": 0.1, "maximum": 0.4})


_STEPS = st.builds(
    lambda digits, places: float(Decimal(digits).scaleb(-places)),
    st.integers(1, 999),
    st.integers(1, 6),
)


@given(step=_STEPS, multiple=st.integers(-(2**53) + 1000, 2**53 - 1000))
@settings(max_examples=300, deadline=None)
def test_proven_steps_divide_every_integer_multiple_as_the_judge_divides(
    step: float, multiple: int
) -> None:
    decimal = DecimalStep.of(step)
    assert decimal.value == Fraction(Decimal(repr(step)))
    if decimal.exact_for_integers():
        n = multiple - multiple % decimal.integer_step  # a multiple of the step's numerator
        quotient = n / step  # what jsonschema computes
        assert int(quotient) == quotient, (step, n)
