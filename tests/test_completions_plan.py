"""The completions request -> plan step, and legacy logprobs formatting:
what is refused, with which field named, and how defaults fill in."""

from __future__ import annotations

import json

import pytest
import xgrammar as xgr

from bench.json_grammar import raw_compiler
from frontend.completions.logprobs import LogprobsBuilder, token_text
from frontend.completions.plan import plan_completion, translates_constraint
from frontend.completions.schemas import CompletionRequest
from frontend.errors import APIError
from frontend.metrics import CONSTRAINT_CACHE_LOOKUPS


def _plan(**fields):
    fields.setdefault("prompt", "x")
    return plan_completion(CompletionRequest(model="m", **fields), "m")


def _refused(**fields) -> APIError:
    with pytest.raises(APIError) as caught:
        _plan(**fields)
    return caught.value


def test_defaults_follow_the_documents() -> None:
    plan = _plan()
    params = plan.params
    assert params.max_tokens == 16 and params.temperature == 1.0 and params.top_p == 1.0
    assert params.n == 1 and params.logprobs is None and params.mirostat_target is None
    assert params.dry_multiplier == 0.0 and params.context_overflow == "truncate"
    assert not params.stop_after_match, "the model ends a complete output, not the server"
    assert plan.constraint is None and plan.prompts == ["x"]


def test_explicit_nulls_mean_defaults() -> None:
    params = _plan(temperature=None, max_tokens=None, n=None, top_p=None).params
    assert (params.temperature, params.max_tokens, params.n, params.top_p) == (1.0, 16, 1, 1.0)


def test_either_mirostat_field_enables_it_with_the_other_defaulted() -> None:
    assert _plan(mirostat_lr=0.3).params.mirostat_target == 1.5
    params = _plan(mirostat_target=4.0).params
    assert (params.mirostat_target, params.mirostat_lr) == (4.0, 0.1)


def test_best_of_generates_more_and_needs_their_logprobs() -> None:
    plan = _plan(n=2, best_of=5)
    assert plan.params.n == 5 and plan.choices_per_prompt == 2 and plan.ranks_choices
    assert plan.params.logprobs == 0 and plan.logprobs is None


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("a", ["a"]),
        (["a", "b"], ["a", "b"]),
        ([1, 2], [[1, 2]]),
        ([[1], [2, 3]], [[1], [2, 3]]),
    ],
)
def test_prompt_forms(prompt, expected) -> None:
    assert plan_completion(CompletionRequest(model="m", prompt=prompt), "m").prompts == expected


@pytest.mark.parametrize("prompt", [[], [[]], ["a", 1], [1.5], [-1], True])
def test_malformed_prompts_fail_validation(prompt) -> None:
    with pytest.raises(ValueError):
        CompletionRequest(model="m", prompt=prompt)


@pytest.mark.parametrize(
    ("fields", "status", "param"),
    [
        ({"images": ["data:image/png;base64,AA"]}, 400, "images"),
        ({"n": 3, "best_of": 2}, 400, "best_of"),
        ({"best_of": 2, "stream": True}, 400, "best_of"),
        ({"stop": ["1", "2", "3", "4", "5"]}, 400, "stop"),
        ({"stop": [""]}, 400, "stop"),
        ({"logit_bias": {"ten": 1.0}}, 400, "logit_bias"),
        ({"logit_bias": {"10": 101.0}}, 400, "logit_bias"),
        ({"tool_choice": "required"}, 400, "tool_choice"),
        ({"tool_choice": "required", "tools": []}, 400, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, 400, "tool_choice"),
        ({"grammar": {"type": "regex", "value": "(a"}}, 400, "grammar.value"),
        (
            {
                "grammar": {"type": "regex", "value": "a"},
                "response_format": {"type": "json_object"},
            },
            400,
            "response_format",
        ),
    ],
)
def test_refusals_name_the_field(fields: dict, status: int, param: str) -> None:
    error = _refused(**fields)
    assert (error.status, error.param) == (status, param), error.message


@pytest.mark.parametrize("tool_choice", ["auto", "none"])
@pytest.mark.parametrize("tools", [{}, {"tools": None}, {"tools": []}])
def test_auto_or_none_tool_choice_without_tools_is_no_constraint(tools, tool_choice) -> None:
    plan = _plan(tool_choice=tool_choice, **tools)
    assert plan.constraint is None and not plan.calls_tools and plan.constraint_field is None


def test_more_logit_biases_than_the_decoder_takes_fail_validation_naming_the_field() -> None:
    with pytest.raises(ValueError, match="logit_bias"):
        CompletionRequest(prompt="x", logit_bias={str(token): 1.0 for token in range(1025)})
    assert (
        len(_plan(logit_bias={str(token): 1.0 for token in range(1024)}).params.logit_bias) == 1024
    )


def test_unknown_model_is_404_model_not_found() -> None:
    with pytest.raises(APIError) as caught:
        plan_completion(CompletionRequest(model="other", prompt="x"), "m", ["mistral"])
    assert (caught.value.status, caught.value.code) == (404, "model_not_found")
    assert "`m`, `mistral`" in caught.value.message
    assert plan_completion(CompletionRequest(model="default", prompt="x"), "m").model == "m"


@pytest.mark.parametrize("fields", [{}, {"model": None}, {"model": "mistral"}, {"model": "m"}])
def test_no_model_or_an_alias_serves_the_one_model_under_its_own_name(fields) -> None:
    plan = plan_completion(CompletionRequest(prompt="x", **fields), "m", ["mistral"])
    assert plan.model == "m"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tokens", "3"),
        ("echo", "yes"),
        ("n", "2"),
        ("logprobs", "1"),
        ("stream", "true"),
        ("seed", "1"),
        ("temperature", "0.5"),
        ("max_tokens", 3.0),
        ("echo", 1),
    ],
)
def test_strings_are_not_coerced_to_numbers_or_booleans(field: str, value) -> None:
    with pytest.raises(ValueError, match=field):
        CompletionRequest.model_validate_json(json.dumps({"prompt": "x", field: value}))


def test_integers_are_numbers_and_nulls_are_defaults() -> None:
    body = {"prompt": "x", "temperature": 1, "top_p": 1, "presence_penalty": 0, "echo": None}
    body |= {"max_tokens": None, "stream": None, "logit_bias": {"3": 2}}
    request = CompletionRequest.model_validate_json(json.dumps(body))
    plan = plan_completion(request, "m")
    assert plan.params.temperature == 1.0 and plan.params.max_tokens == 16 and not plan.echo
    assert plan.params.logit_bias == {3: 2.0}


def test_too_many_sequences_are_refused() -> None:
    assert _refused(prompt=["a"] * 3, n=100).param == "n"


@pytest.mark.parametrize("as_text", [False, True], ids=["object", "text"])
def test_a_schema_keeps_its_property_order(as_text: bool) -> None:
    """Properties are written in the schema's order (a reasoning field before its
    answer), however the schema is given: as an object it was sorted once."""
    schema = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "answer": {"type": "integer"}},
        "required": ["reasoning", "answer"],
    }
    value = json.dumps(schema) if as_text else schema
    grammar = _plan(grammar={"type": "json_schema", "value": value}).constraint
    assert list(json.loads(grammar.value)["properties"]) == ["reasoning", "answer"]
    response_format = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    constraint = _plan(response_format=response_format).constraint
    assert list(json.loads(constraint.value)["properties"]) == ["reasoning", "answer"]


def test_constraint_sources() -> None:
    assert _plan(response_format={"type": "text"}).constraint is None
    json_mode = _plan(response_format={"type": "json_object"}).constraint
    assert json_mode.judge('{"a": 1}') is None and json_mode.judge("[1]") is not None
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert _plan(tools=tools).calls_tools
    none = _plan(tools=tools, tool_choice="none")
    assert none.constraint is None and not none.calls_tools
    bad_tools = [{"type": "function", "function": {"name": "bad name"}}]
    assert _refused(tools=bad_tools, tool_choice="none").param == "tools[0].function.name"


@pytest.mark.parametrize(
    "constraint",
    [
        {"response_format": {"type": "json_object"}},
        {"grammar": {"type": "regex", "value": "[ab]+"}},
        {"structured_outputs": {"choice": ["a", "b"]}},
    ],
)
def test_tools_beside_another_constraint_are_checked_under_tool_choice_none(
    constraint: dict,
) -> None:
    """The other field constrains the output; a tool the request could never call
    is still a mistake the client hears about, not something passed over."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    planned = _plan(tools=tools, tool_choice="none", **constraint)
    assert planned.constraint is not None and not planned.calls_tools
    bad_tools = [{"type": "function", "function": {"name": "bad name"}}]
    refused = _refused(tools=bad_tools, tool_choice="none", **constraint)
    assert refused.param == "tools[0].function.name"


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("fields", "field", "good", "bad"),
    [
        ({"guided_json": SCHEMA}, "guided_json", '{"a": 1}', '{"a": "1"}'),
        (
            {"structured_outputs": {"json": json.dumps(SCHEMA)}},
            "structured_outputs.json",
            '{"a": 1}',
            "{}",
        ),
        ({"guided_regex": "[a-z]+"}, "guided_regex", "abc", "ab1"),
        ({"structured_outputs": {"regex": "[a-z]+"}}, "structured_outputs.regex", "abc", ""),
        ({"guided_choice": ["yes", "no (a.b)"]}, "guided_choice", "no (a.b)", "no (axb)"),
        ({"structured_outputs": {"choice": ["x", "y"]}}, "structured_outputs.choice", "y", "xy"),
        ({"guided_grammar": 'root ::= "a" [0-9]+'}, "guided_grammar", "a12", "a"),
        (
            {"structured_outputs": {"grammar": 'start: "b"+'}},
            "structured_outputs.grammar",
            "bb",
            "ba",
        ),
        (
            {"structured_outputs": {"json_object": True}},
            "structured_outputs.json_object",
            "{}",
            "[]",
        ),
    ],
)
def test_vllm_constraint_fields_mean_the_same_constraint(
    fields: dict, field: str, good: str, bad: str
) -> None:
    """vLLM clients send structured_outputs (or the older guided_* fields) in extra_body."""
    plan = _plan(**fields)
    assert plan.constraint_field == field
    assert plan.constraint.judge(good) is None
    assert plan.constraint.judge(bad) is not None


def test_a_long_choice_list_is_a_grammar_of_its_strings() -> None:
    """Past what a regex holds (thousands of category names), the choices are
    alternatives of an EBNF grammar xgrammar compiles, judged by membership."""
    choices = [f'category "{number}" \\ é\n' for number in range(2000)]
    constraint = _plan(guided_choice=choices).constraint
    assert constraint.kind == "ebnf"
    assert constraint.judge(choices[1234]) is None and constraint.judge("category") is not None
    matcher = xgr.GrammarMatcher(
        raw_compiler().compile_grammar(constraint.value), terminate_without_stop_token=True
    )
    assert matcher.accept_string(choices[1234]) and matcher.is_terminated()
    matcher.reset()
    assert not (matcher.accept_string(choices[1234][:-1]) and matcher.is_terminated())


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"structured_outputs": {}}, "structured_outputs", "give exactly one of"),
        (
            {"structured_outputs": {"regex": "a", "choice": ["a"]}},
            "structured_outputs",
            "got regex",
        ),
        ({"guided_regex": "a", "response_format": {"type": "json_object"}}, "guided_regex", "both"),
        ({"guided_json": SCHEMA, "guided_regex": "a"}, "guided_regex", "give only one"),
        ({"guided_choice": []}, "guided_choice", "at least one string"),
        ({"guided_regex": "(a"}, "guided_regex", "invalid regex"),
        ({"guided_json": {"type": "strin"}}, "guided_json", "invalid JSON Schema"),
        ({"structured_outputs": {"json_object": False}}, "structured_outputs.json_object", "true"),
    ],
)
def test_vllm_constraint_fields_are_refused_naming_the_field(
    fields: dict, param: str, message: str
) -> None:
    error = _refused(**fields)
    assert error.status == 400 and error.param == param and message in error.message


def test_token_text_marks_partial_characters() -> None:
    assert token_text("é".encode()) == "é"
    assert token_text(b"\xc3") == "bytes:\\xc3"


def test_text_offsets_count_characters_and_split_characters_start_where_they_begin() -> None:
    builder = LogprobsBuilder()
    entries = [
        {"bytes": b"a".hex(), "logprob": -0.5, "top": [[b"b".hex(), -1.0]]},
        {"bytes": b"\xe6\x97".hex(), "logprob": -1.0, "top": []},
        {"bytes": b"\xa5x".hex(), "logprob": -2.0, "top": []},
        {"bytes": b"y".hex(), "logprob": -0.1, "top": []},
    ]
    first = builder.add(entries[:2])
    second = builder.add(entries[2:])  # offsets carry on across streamed chunks
    assert first.text_offset + second.text_offset == [0, 1, 1, 3]  # text "a日xy"
    assert first.top_logprobs[0] == {"b": -1.0, "a": -0.5}, "the chosen token is always there"
    assert first.tokens == ["a", "bytes:\\xe6\\x97"]


_TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"response_format": {"type": "text"}},
        {"response_format": {"type": "json_object"}},
        {"grammar": {"type": "regex", "value": "[ab]+"}},
        {"tools": [_TOOL]},
        {"tools": [_TOOL], "tool_choice": "none"},
        {"tools": []},
    ],
)
def test_a_plan_translates_a_constraint_exactly_when_the_route_sends_it_off_the_loop(
    fields: dict,
) -> None:
    """The routes plan on the event loop only what translates nothing: a plan that
    looks a translation up (hit or miss) must have been sent to the threads."""

    def lookups() -> float:
        return sum(
            sample.value
            for metric in CONSTRAINT_CACHE_LOOKUPS.collect()
            for sample in metric.samples
            if sample.name.endswith("_total")
        )

    body = CompletionRequest(model="m", prompt="x", **fields)
    before = lookups()
    plan_completion(body, "m")
    assert translates_constraint(body) == (lookups() > before)
