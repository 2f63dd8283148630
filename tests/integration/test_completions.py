"""``/v1/completions`` with the official ``openai`` SDK against the live stack
(real tritonserver, real decoder on the tiny model, real frontend).

Every constrained output is re-checked here with an independent judge
(``re``, ``lark``, ``jsonschema``), and every sampling parameter is shown to
change what the real decoder produces, not merely to be accepted.
"""

from __future__ import annotations

import json
import re
import socket
from collections import Counter

import jsonschema
import lark
import openai
import pytest
from transformers import AutoTokenizer

from grammar_compiler.tool_calls import ToolCall, parse_tool_calls

from .conftest import API_KEY, MODEL_ALIAS, MODEL_NAME, Service

GREEDY = {"temperature": 0}


def _create(service: Service, **kwargs):
    extra = {key: kwargs.pop(key) for key in list(kwargs) if key not in _SDK_FIELDS}
    return service.sdk().completions.create(
        model=kwargs.pop("model", MODEL_NAME), extra_body=extra or None, **kwargs
    )


_SDK_FIELDS = {
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs",
    "max_tokens", "n", "presence_penalty", "seed", "stop", "stream", "suffix", "temperature",
    "top_p", "user",
}  # fmt: skip


def _tokens(choice) -> list[str]:
    return choice.logprobs.tokens


# -- the basics -------------------------------------------------------------


def test_models_lists_the_served_model_and_its_alias(service: Service) -> None:
    models = service.sdk().models.list()
    assert [model.id for model in models.data] == [MODEL_NAME, MODEL_ALIAS]


def test_plain_completion_has_the_documented_shape(service: Service) -> None:
    result = _create(service, prompt="Hello", max_tokens=5, seed=1)
    assert result.object == "text_completion" and result.id.startswith("cmpl-")
    assert result.model == MODEL_NAME and result.created > 1_700_000_000
    (choice,) = result.choices
    assert choice.index == 0 and choice.finish_reason in ("stop", "length")
    usage = result.usage
    assert usage.prompt_tokens > 0 and 1 <= usage.completion_tokens <= 5
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    with service.client() as client:  # the other documented path
        same = client.post(
            "/completions", json={"model": "default", "prompt": "Hello", "max_tokens": 5, "seed": 1}
        )
    assert same.status_code == 200 and same.json()["choices"][0]["text"] == choice.text


def test_max_tokens_defaults_to_16_and_ignore_eos_fills_it(service: Service) -> None:
    result = _create(service, prompt="Once", ignore_eos=True, seed=2)
    assert result.usage.completion_tokens == 16 and result.choices[0].finish_reason == "length"


def test_streamed_text_concatenates_to_the_collected_text(service: Service) -> None:
    kwargs = {"prompt": "Streams: ", "max_tokens": 24, "seed": 7, "n": 2, "logprobs": 1}
    collected = _create(service, **kwargs)
    chunks = list(_create(service, stream=True, **kwargs))
    texts: dict[int, str] = {}
    reasons: dict[int, str] = {}
    for chunk in chunks[:-1]:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            if choice.finish_reason:
                reasons[choice.index] = choice.finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage == collected.usage
    for choice in collected.choices:
        assert texts[choice.index] == choice.text
        assert reasons[choice.index] == choice.finish_reason


def test_several_prompts_and_n_index_choices_prompt_by_prompt(service: Service) -> None:
    result = _create(service, prompt=["A: ", "B: "], n=3, max_tokens=4, seed=5)
    assert [choice.index for choice in result.choices] == list(range(6))
    first_prompt = [c.text for c in result.choices[:3]]
    alone = _create(service, prompt="A: ", n=3, max_tokens=4, seed=5)
    assert [c.text for c in alone.choices] == first_prompt


def test_token_id_prompts(service: Service, tiny_model_dir) -> None:
    ids = AutoTokenizer.from_pretrained(str(tiny_model_dir)).encode("Hello there")
    as_text = _create(service, prompt="Hello there", max_tokens=6, **GREEDY)
    single = _create(service, prompt=ids, max_tokens=6, echo=True, **GREEDY)
    assert single.usage.prompt_tokens == len(ids)
    assert single.choices[0].text == "Hello there" + as_text.choices[0].text
    several = _create(service, prompt=[ids, ids[:1]], max_tokens=6, **GREEDY)
    assert [c.index for c in several.choices] == [0, 1]
    assert several.choices[0].text == as_text.choices[0].text


def test_seed_reproducibility(service: Service) -> None:
    runs = [_create(service, prompt="Seeds", max_tokens=20, seed=s).choices[0].text for s in (3, 3)]
    assert runs[0] == runs[1]
    others = {
        _create(service, prompt="Seeds", max_tokens=20, seed=s).choices[0].text for s in range(4)
    }
    assert len(others) > 1


def test_echo_and_suffix(service: Service) -> None:
    result = _create(
        service, prompt="Echo me", max_tokens=3, echo=True, suffix=" [end]", logprobs=1, seed=1
    )
    choice = result.choices[0]
    assert choice.text.startswith("Echo me") and choice.text.endswith(" [end]")
    logprobs = choice.logprobs
    assert logprobs.token_logprobs[0] is None and logprobs.top_logprobs[0] is None
    assert "".join(logprobs.tokens).startswith("Echo me")
    assert logprobs.text_offset[0] == 0


def test_logprobs_legacy_format(service: Service) -> None:
    result = _create(service, prompt="Numbers", max_tokens=8, logprobs=3, ignore_eos=True, seed=9)
    choice = result.choices[0]
    logprobs = choice.logprobs
    assert len(logprobs.tokens) == 8 == result.usage.completion_tokens
    offsets = logprobs.text_offset
    assert offsets == sorted(offsets) and offsets[0] == 0
    for token, offset in zip(logprobs.tokens, offsets, strict=True):
        if not token.startswith("bytes:"):  # a token holding part of a character
            assert choice.text[offset : offset + len(token)] == token
    for token, value, top in zip(
        logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs, strict=True
    ):
        assert value <= 0 and 3 <= len(top) <= 4 and top[token] == pytest.approx(value)
        assert max(top.values()) <= 0


def test_stop_sequences_end_generation_and_are_kept(service: Service) -> None:
    free = _create(service, prompt="The", max_tokens=60, ignore_eos=True, **GREEDY)
    text = free.choices[0].text
    stop = text[10:12]
    result = _create(service, prompt="The", max_tokens=60, stop=[stop, "@@@"], **GREEDY)
    choice = result.choices[0]
    assert choice.finish_reason == "stop" and stop in choice.text
    assert text.startswith(choice.text) and len(choice.text) < len(text)


# -- constraints --------------------------------------------------------------


def test_regex_grammar_in_extra_body(service: Service) -> None:
    pattern = r"\d{3}-[a-z]{2,5}"
    for seed in range(3):
        result = _create(
            service,
            prompt="Code: ",
            max_tokens=20,
            seed=seed,
            grammar={"type": "regex", "value": pattern},
        )
        choice = result.choices[0]
        assert choice.finish_reason == "stop" and re.fullmatch(pattern, choice.text), choice.text


_CATEGORIES = [f"category {number} (catalogue)" for number in range(700)]


@pytest.mark.parametrize(
    ("extra", "check"),
    [
        ({"guided_regex": r"\d{3}-[a-z]{2,5}"}, lambda t: re.fullmatch(r"\d{3}-[a-z]{2,5}", t)),
        ({"guided_choice": ["red", "green (go)"]}, lambda t: t in ("red", "green (go)")),
        ({"guided_choice": _CATEGORIES}, lambda t: t in _CATEGORIES),  # past a regex: EBNF
        (
            {
                "structured_outputs": {
                    "json": {
                        "type": "object",
                        "properties": {"n": {"type": "integer"}},
                        "required": ["n"],
                        "additionalProperties": False,
                    }
                }
            },
            lambda t: set(json.loads(t)) == {"n"} and isinstance(json.loads(t)["n"], int),
        ),
        (
            {"structured_outputs": {"grammar": 'root ::= "x" [0-9]{1,3}'}},
            lambda t: re.fullmatch(r"x\d{1,3}", t),
        ),
    ],
)
def test_vllm_constraint_fields_in_extra_body(service: Service, extra: dict, check) -> None:
    """Clients written for vLLM send structured_outputs or guided_* as they are."""
    result = service.sdk().completions.create(
        model=MODEL_NAME, prompt="Answer: ", max_tokens=30, seed=2, extra_body=extra
    )
    choice = result.choices[0]
    assert choice.finish_reason == "stop" and check(choice.text), choice.text


def test_lark_grammar_in_extra_body(service: Service) -> None:
    grammar = 'start: item ("," item)*\nitem: WORD\nWORD: /[a-z]{1,6}/'
    parser = lark.Lark(grammar)
    result = _create(
        service,
        prompt="List: ",
        max_tokens=30,
        seed=4,
        n=3,
        grammar={"type": "lark", "value": grammar},
    )
    for choice in result.choices:
        if choice.finish_reason == "stop":
            parser.parse(choice.text)
        else:
            assert choice.finish_reason == "length"


def test_response_format_with_a_schema(service: Service) -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    result = _create(
        service,
        prompt="Person: ",
        max_tokens=60,
        n=3,
        seed=2,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "p", "schema": schema, "strict": True},
        },
    )
    for choice in result.choices:
        assert choice.finish_reason == "stop", choice.text
        jsonschema.validate(json.loads(choice.text), schema)
    also = _create(
        service,
        prompt="Person: ",
        max_tokens=60,
        seed=2,
        response_format={"type": "json_object", "schema": schema},
    )
    jsonschema.validate(json.loads(also.choices[0].text), schema)


def test_response_format_keeps_names_and_unique_items_apart(
    service: Service, tiny_model_dir
) -> None:
    """The served decoder keeps a map's names and a unique array's items apart:
    with the quote token pushed up, greedy decoding would otherwise repeat the
    empty name and the empty string (as the engine tests show without the guard)."""
    (quote,) = AutoTokenizer.from_pretrained(str(tiny_model_dir)).encode(
        '"', add_special_tokens=False
    )
    schema = {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"enum": ["", "a", "b"]},
                "uniqueItems": True,
                "minItems": 3,
                "maxItems": 3,
            },
            "counts": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9},
                "minProperties": 0,
                "maxProperties": 3,
            },
        },
        "required": ["tags", "counts"],
        "additionalProperties": False,
    }
    result = _create(
        service,
        prompt="JSON: ",
        max_tokens=80,
        logit_bias={str(quote): 30},
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "t", "schema": schema, "strict": True},
        },
        **GREEDY,
    )
    (choice,) = result.choices
    assert choice.finish_reason == "stop", choice.text
    value = json.loads(choice.text, object_pairs_hook=lambda pairs: pairs)
    fields = dict(value)
    assert sorted(fields["tags"]) == ["", "a", "b"], choice.text
    names = [name for name, _ in fields["counts"]]
    assert len(names) == len(set(names)) >= 2, choice.text
    jsonschema.validate(json.loads(choice.text), schema)


def test_unique_dates_and_short_strings_are_kept_apart_when_served(
    service: Service, tiny_model_dir
) -> None:
    """Dates (counted on their pattern's automaton), strings of maxLength 1
    (their longest taken ones kept out before the quote) and objects kept
    apart by an optional date (written in each), with "0" and the quote
    pushed up: greedy decoding would repeat "0001-01-01" and "" forever."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    pushed = [t for text in ('"', "0") for t in tokenizer.encode(text, add_special_tokens=False)]
    unique = {"type": "array", "uniqueItems": True, "minItems": 12, "maxItems": 12}
    schema = {
        "type": "object",
        "properties": {
            "days": {**unique, "items": {"type": "string", "format": "date"}},
            "marks": {**unique, "items": {"type": "string", "maxLength": 1}},
            "visits": {
                **unique,
                "minItems": 6,
                "maxItems": 6,
                "items": {
                    "type": "object",
                    "properties": {"on": {"format": "date", "type": "string"}},
                },
            },
        },
        "required": ["days", "marks", "visits"],
        "additionalProperties": False,
    }
    result = _create(
        service,
        prompt="JSON: ",
        max_tokens=800,
        logit_bias={str(token): 30 for token in pushed},
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "t", "schema": schema, "strict": True},
        },
        **GREEDY,
    )
    (choice,) = result.choices
    assert choice.finish_reason == "stop", choice.text
    value = json.loads(choice.text)
    for name in ("days", "marks"):
        assert len(set(value[name])) == 12, choice.text
    # The model kept to one start ("0002-02-0") until none of its nine days was left.
    starts = {day[:9] for day in value["days"]}
    assert any(sum(d.startswith(s) for d in value["days"]) == 9 for s in starts), choice.text
    assert "" in value["marks"], choice.text
    assert len({visit["on"] for visit in value["visits"]}) == 6, choice.text
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


def _whitespace_outside_strings(text: str) -> list[int]:
    """Positions of whitespace between JSON tokens, other than the one space
    after a ',' or ':' separator."""
    found, in_string, escaped = [], False, False
    for position, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char.isspace() and not (char == " " and text[position - 1] in ",:"):
            found.append(position)
    return found


def test_json_mode_without_a_schema_cannot_run_into_whitespace(service: Service) -> None:
    result = _create(
        service, prompt="JSON: ", max_tokens=48, n=4, seed=1, ignore_eos=True,
        response_format={"type": "json_object"},
    )  # fmt: skip
    for choice in result.choices:
        text = choice.text
        assert text.startswith("{") and not _whitespace_outside_strings(text), text
        assert "\n" not in text, "raw newlines are not allowed, even inside strings"
        if choice.finish_reason == "stop":
            assert isinstance(json.loads(text), dict)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
                "unit": {"enum": ["c", "f"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


def _check_call(call: ToolCall) -> None:
    assert call.name == "get_weather"
    jsonschema.validate(call.arguments, WEATHER["function"]["parameters"])


def test_tools_with_strict_arguments(service: Service) -> None:
    # The tiny test model seldom chooses to stop after a call (the grammar
    # also allows another); a bias on its end-of-sequence token (id 1), which
    # the grammar masks inside a call, makes ending there likely.
    result = _create(
        service,
        prompt="Call: ",
        max_tokens=200,
        n=4,
        seed=3,
        tools=[WEATHER],
        tool_choice="required",
        logit_bias={"1": 8},
    )
    finished = [choice for choice in result.choices if choice.finish_reason == "tool_calls"]
    assert len(finished) >= 2, [choice.text for choice in result.choices]
    for choice in finished:
        reported = choice.model_extra["tool_calls"]
        parsed = parse_tool_calls(choice.text)
        assert [call["function"]["name"] for call in reported] == [call.name for call in parsed]
        for call in parsed:
            _check_call(call)
    for choice in result.choices:  # cut by max_tokens while calling again: the first call is whole
        assert choice.text.startswith('<tool_call>{"name": "get_weather", "arguments": ')
        first = choice.text.split("\n")[0]
        (call,) = parse_tool_calls(first)
        _check_call(call)


def test_unique_tool_arguments_are_kept_apart_when_served(service: Service, tiny_model_dir) -> None:
    """A strict tool whose tags are unique one-character strings, with the
    quote pushed up and greedy decoding: "" again and again, unless the
    decoder keeps each call's taken tags out (``engine.tool_outline``)."""
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    pushed = tokenizer.encode('"', add_special_tokens=False)
    tag = {
        "type": "function",
        "function": {
            "name": "tag",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 1},
                        "uniqueItems": True,
                        "minItems": 6,
                        "maxItems": 6,
                    }
                },
                "required": ["tags"],
                "additionalProperties": False,
            },
        },
    }
    result = _create(
        service,
        prompt="Tags: ",
        max_tokens=120,
        tools=[tag],
        tool_choice={"type": "function", "function": {"name": "tag"}},
        logit_bias={str(token): 30 for token in pushed},
        **GREEDY,
    )
    (choice,) = result.choices
    calls = choice.text.split("\n")  # the last may be cut by max_tokens
    assert len(calls) >= 2 or choice.finish_reason == "tool_calls", choice.text
    for text in calls[:-1] if choice.finish_reason == "length" else calls:
        (call,) = parse_tool_calls(text)
        assert len(set(call.arguments["tags"])) == 6 and "" in call.arguments["tags"], text


def test_tool_choice_none_leaves_text_free(service: Service) -> None:
    free = _create(
        service, prompt="Hi", max_tokens=8, tools=[WEATHER], tool_choice="none", **GREEDY
    )
    plain = _create(service, prompt="Hi", max_tokens=8, **GREEDY)
    assert free.choices[0].text == plain.choices[0].text
    assert free.choices[0].finish_reason != "tool_calls"


# -- sampling parameters, each shown to change the real decoder's output -------------


def test_temperature_zero_is_greedy_and_top_k_one_equals_it(service: Service) -> None:
    greedy = {
        _create(service, prompt="Top", max_tokens=12, **GREEDY).choices[0].text for _ in range(2)
    }
    assert len(greedy) == 1
    top1 = {
        _create(service, prompt="Top", max_tokens=12, temperature=1.5, top_k=1, seed=s)
        .choices[0]
        .text
        for s in range(3)
    }
    assert top1 == greedy
    free = {
        _create(service, prompt="Top", max_tokens=12, temperature=1.5, seed=s).choices[0].text
        for s in range(3)
    }
    assert free != greedy


def test_min_p_trims_unlikely_tokens(service: Service) -> None:
    greedy = _create(service, prompt="Min", max_tokens=12, **GREEDY).choices[0].text
    trimmed = {
        _create(service, prompt="Min", max_tokens=12, temperature=1.5, min_p=1.0, seed=s)
        .choices[0]
        .text
        for s in range(3)
    }
    assert trimmed == {greedy}
    loose = {
        _create(service, prompt="Min", max_tokens=12, temperature=1.5, min_p=0.0, seed=s)
        .choices[0]
        .text
        for s in range(3)
    }
    assert loose != {greedy}


def test_top_p_small_is_greedy(service: Service) -> None:
    greedy = _create(service, prompt="Nucleus", max_tokens=12, **GREEDY).choices[0].text
    nucleus = {
        _create(service, prompt="Nucleus", max_tokens=12, temperature=1.5, top_p=0.01, seed=s)
        .choices[0]
        .text
        for s in range(3)
    }
    assert nucleus == {greedy}


def _token_ids(service: Service, text_prompt: str, **kwargs) -> list[str]:
    result = _create(service, prompt=text_prompt, logprobs=0, ignore_eos=True, **kwargs)
    return _tokens(result.choices[0])


def _token_text(service: Service, token_id: int) -> str:
    echoed = _create(service, prompt=[token_id], max_tokens=1, echo=True, logprobs=0)
    return _tokens(echoed.choices[0])[0]


def test_logit_bias_forces_and_bans_tokens(service: Service) -> None:
    first, second = _token_text(service, 300), _token_text(service, 301)
    greedy = _token_ids(service, "Bias", max_tokens=6, **GREEDY)
    forced = _token_ids(service, "Bias", max_tokens=6, logit_bias={"300": 100, "301": 90}, **GREEDY)
    assert forced == [first] * 6 != greedy
    banned = _token_ids(
        service, "Bias", max_tokens=6, logit_bias={"300": -100, "301": 90}, temperature=1.0, seed=2
    )
    assert banned == [second] * 6, "a -100 bias beats even a strongly pushed rival"


def _repeats(tokens: list[str]) -> int:
    """How many tokens repeat an earlier one."""
    return len(tokens) - len(set(tokens))


def test_presence_frequency_and_repetition_penalties_lower_repeats(service: Service) -> None:
    base = _token_ids(service, "Again and again", max_tokens=40, **GREEDY)
    for penalty in (
        {"presence_penalty": 2.0},
        {"frequency_penalty": 2.0},
        {"repetition_penalty": 2.0},
    ):
        penalized = _token_ids(service, "Again and again", max_tokens=40, **GREEDY, **penalty)
        assert _repeats(penalized) < _repeats(base), penalty


def _longest_repeat(tokens: list[str]) -> int:
    """The longest token sequence that occurs twice (overlaps allowed)."""
    best = 0
    for length in range(1, len(tokens)):
        seen = Counter(tuple(tokens[i : i + length]) for i in range(len(tokens) - length + 1))
        if max(seen.values()) < 2:
            break
        best = length
    return best


def test_dry_breaks_a_repetition_loop(service: Service) -> None:
    prompt = "ab ab ab ab ab ab ab ab"
    base = _token_ids(service, prompt, max_tokens=40, **GREEDY)
    dry = _token_ids(
        service,
        prompt,
        max_tokens=40,
        dry_multiplier=2.0,
        dry_base=2.0,
        dry_allowed_length=2,
        **GREEDY,
    )
    assert _longest_repeat(base) > 6, "the tiny model loops greedily (the premise of this test)"
    assert _longest_repeat(dry) < _longest_repeat(base)


def test_mirostat_with_a_tiny_target_is_greedy_and_a_large_one_is_not(service: Service) -> None:
    greedy = _create(service, prompt="Miro", max_tokens=12, **GREEDY).choices[0].text
    tight = {
        _create(service, prompt="Miro", max_tokens=12, mirostat_target=0.01, seed=s).choices[0].text
        for s in range(3)
    }
    assert tight == {greedy}
    loose = {
        _create(
            service, prompt="Miro", max_tokens=12, mirostat_target=10.0, mirostat_lr=0.5, seed=s
        )
        .choices[0]
        .text
        for s in range(3)
    }
    assert loose != {greedy}


def test_best_of_returns_the_most_likely_choice(service: Service) -> None:
    kwargs = {"prompt": "Best", "max_tokens": 6, "seed": 11, "ignore_eos": True, "temperature": 1.2}
    many = _create(service, n=4, logprobs=0, **kwargs)
    totals = [sum(choice.logprobs.token_logprobs) for choice in many.choices]
    best = _create(service, n=1, best_of=4, **kwargs)
    (choice,) = best.choices
    assert choice.text == many.choices[totals.index(max(totals))].text
    assert choice.logprobs is None, "logprobs were not asked for"
    assert best.usage.completion_tokens == 24, "every generated choice counts"


def test_context_length_behaviors(service: Service) -> None:
    too_long = [300] * 2100  # token ids: beyond the tiny model's 2048-token window
    with pytest.raises(openai.BadRequestError, match="context window"):
        _create(service, prompt=too_long, max_tokens=4)
    cut = _create(service, prompt=too_long, max_tokens=4, truncate_sequence=True)
    assert cut.usage.prompt_tokens == 2047 and cut.usage.completion_tokens == 1
    near = [300] * 2000
    fitted = _create(service, prompt=near, max_tokens=500, ignore_eos=True, seed=1)
    assert fitted.choices[0].finish_reason == "length"
    assert fitted.usage.prompt_tokens + fitted.usage.completion_tokens == 2048
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        _create(service, prompt=near, max_tokens=500, context_length_exceeded_behavior="error")
    kept = _create(
        service,
        prompt=near,
        max_tokens=500,
        context_length_exceeded_behavior="error",
        truncate_sequence=True,
    )
    assert kept.usage.prompt_tokens == 2048 - 500


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"temperature": 3}, "temperature"),
        ({"n": 0}, "n"),
        ({"logprobs": 6}, "logprobs"),
        ({"top_k": 0}, "top_k"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"images": ["data:image/png;base64,AAAA"]}, "images"),
        ({"best_of": 2, "n": 3}, "best_of"),
        ({"best_of": 3, "stream": True}, "best_of"),
        ({"grammar": {"type": "regex", "value": "(unclosed"}}, "grammar.value"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"logit_bias": {"x": 1}}, "logit_bias"),
        ({"unknown_field": 1}, "unknown_field"),
        (
            {
                "grammar": {"type": "regex", "value": "a"},
                "response_format": {"type": "json_object"},
            },
            "response_format",
        ),
    ],
)
def test_bad_requests_are_400_naming_the_field(service: Service, kwargs: dict, param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        _create(service, prompt="x", **kwargs)
    error = caught.value.body
    assert caught.value.status_code == 400 and error["type"] == "invalid_request_error"
    assert error["param"] == param, error


def test_sdk_exception_types_for_401_and_404(service: Service) -> None:
    with pytest.raises(openai.AuthenticationError):
        service.sdk(api_key="wrong").completions.create(model=MODEL_NAME, prompt="x")
    with pytest.raises(openai.NotFoundError) as caught:
        _create(service, model="no-such-model", prompt="x")
    assert caught.value.body["code"] == "model_not_found"


def test_streaming_client_disconnect_cancels_the_generation(service: Service) -> None:
    from .test_ensemble_direct import CANCELLED, _metric, _wait_for_metric_above

    before = _metric(service.triton, CANCELLED)
    body = {
        "model": "default",
        "prompt": "Long",
        "max_tokens": 2000,
        "ignore_eos": True,
        "stream": True,
    }
    with (
        service.client() as client,
        client.stream("POST", "/v1/completions", json=body) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {"):
                break  # one event arrived: now leave
    assert _wait_for_metric_above(service.triton, CANCELLED, before) > before


def test_non_streaming_client_disconnect_cancels_the_generation(service: Service) -> None:
    from .test_ensemble_direct import CANCELLED, _metric, _wait_for_metric_above

    # Triton counts a decoder request once its execute() has queued it for the
    # engine. The running gauge could not say so: a request an earlier test
    # left running already held it above zero, and the client then left
    # before its own request reached Triton at all (seen once in a full run).
    received = 'nv_inference_count{model="constrained_decoder",version="1"}'
    received_before = _metric(service.triton, received)
    before = _metric(service.triton, CANCELLED)
    body = json.dumps(
        {"model": "default", "prompt": "Long", "max_tokens": 2000, "ignore_eos": True, "n": 2}
    ).encode()
    head = (
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", service.frontend.port), timeout=60) as client:
        client.sendall(head + body)
        # Leave only once the generation is in the decoder.
        assert _wait_for_metric_above(service.triton, received, received_before) > received_before
    assert _wait_for_metric_above(service.triton, CANCELLED, before) > before
