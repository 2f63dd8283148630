"""Load test (issue 6): 64 concurrent clients for about two minutes on the live stack.

The clients send a weighted mix of every generation route — ``/v1/completions``
plain and constrained by ``grammar`` (regex, Lark, JSON Schema),
``response_format`` and ``tools``, streamed and collected, and the dedicated
``/v1/completion/regex``, ``/cfg`` (Lark, GBNF, BNF) and ``/typed`` routes —
plus a few cheap routes and deliberate bad requests. The run asserts what a
service under sustained load must keep doing:

- no 5xx and no other unexpected status (429 or 503 ``server_busy`` included:
  the fixture has no rate limit and a 1024-request queue);
- no request lost or hung: each one gets exactly one complete answer within
  its timeout (a stream ends with every choice's finish_reason, the usage
  event and ``[DONE]``) and every body parses;
- every constrained output is valid for an independent judge (``re``/``regex``,
  ``lark``, ``jsonschema``, a tool-call reader written for the test); an output
  cut by the token limit is a valid prefix where that is decidable, and the
  constraints are bounded so nearly every output finishes;
- memory stays flat: the resident memory of the frontend, tritonserver and its
  Python-backend stubs at the end of the second half is within a few percent
  of the end of the first half (a leak per request would grow it). The figure
  compared is anonymous + shared memory (VmRSS without its file-backed pages,
  which the page cache of a shared machine evicts and refaults at will), each
  process's floor over the last seconds before the mark (a busy decoder's
  allocator swings by tens of MB between steps); plain VmRSS is reported too;
- afterwards the servers hold no generation and the frontend's own verifier
  never disagreed with the decoder.

``CT_LOAD_TEST_SECONDS`` (default 120) shortens the run for development (the
memory comparison needs both halves: at least 10), ``CT_LOAD_TEST_MAX_REQUESTS``
caps the requests, and ``CT_LOAD_TEST_REPORT`` names a file for the JSON summary.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import API_KEY, MODEL_ALIAS, MODEL_NAME, Service
from .load_driver import (
    CUT,
    FAILED,
    FINISHED,
    REFUSED,
    Call,
    Judge,
    LoadResult,
    Rejected,
    Scenario,
    check_completion,
    check_openai_error,
    check_pattern_answer,
    check_route_error,
    check_tool_choices,
    check_typed_answer,
    json_schema_judge,
    lark_judge,
    read_sse,
    regex_judge,
    run_call,
    run_load,
    summarize,
    tool_calls_judge,
    words_judge,
)

DURATION_S = float(os.environ.get("CT_LOAD_TEST_SECONDS", "120"))
MAX_REQUESTS = int(os.environ.get("CT_LOAD_TEST_MAX_REQUESTS", "20000"))
CLIENTS = 64
# Far above any latency seen on two shared cores (seconds), far below the suite's timeout.
REQUEST_TIMEOUT_S = 60.0
# Allowed growth of the servers' summed memory from the end of minute 1 to the end of minute 2.
MEMORY_GROWTH = 0.05
# tritonserver alone may grow this much (or 5 %) in a minute: buffers, not per-request state.
TRITON_SLACK_KIB = 4096
# Each mark takes a process's lowest figure over this many seconds before it.
MEMORY_WINDOW_S = min(20.0, DURATION_S / 6)
# Share of judged outputs per scenario that must finish (not be cut by the token limit).
MIN_FINISHED_SHARE = 0.8

PROMPTS = ("Answer: ", "Q: what is it?\nA: ", "Data: ", "Hello", "The list", "x")

# -- constraints, each bounded so the tiny model reaches its end within max_tokens ------

REGEXES = (
    r"\d{3}-[a-z]{2,5}",
    r"(red|green|blue) (car|boat|plane)",
    r"[A-Z][a-z]{2,5} [0-9]{1,3}",
    r"\(\d{3}\) \d{3}-\d{4}",
    r"(yes|no|maybe)",
)
LARK_GRAMMARS = (
    'start: item ("," item)?\nitem: WORD | NUMBER\nWORD: /[a-z]{1,5}/\nNUMBER: /[0-9]{1,3}/',
    'start: KEY "=" VALUE\nKEY: /[a-z]{1,4}/\nVALUE: "on" | "off" | /[0-9]{1,2}/',
)
GBNF_PAIR = 'root ::= "[" item ("," item)? "]"\nitem ::= [0-9] | "\\"" [a-z] "\\""'
GBNF_PAIR_AS_LARK = 'start: "[" item ("," item)? "]"\nitem: /[0-9]/ | /"[a-z]"/'
BNF_DOCUMENTED = "<start> ::= <noun> <verb> | <verb> <noun>"
FLAGS_SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "n": {"type": "integer", "minimum": 0, "maximum": 99},
        "tag": {"enum": ["a", "b", "c"]},
    },
    "required": ["ok", "n", "tag"],
    "additionalProperties": False,
}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER_ARGUMENTS = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": WEATHER_ARGUMENTS,
        "strict": True,
    },
}
LAMP_TS = """
// A lamp's state.
export type Mode = "warm" | "cold";
export interface Lamp { on: boolean; level: 1 | 2 | 3; mode: Mode }
"""
LAMP_SCHEMA = {
    "type": "object",
    "properties": {
        "on": {"type": "boolean"},
        "level": {"enum": [1, 2, 3]},
        "mode": {"enum": ["warm", "cold"]},
    },
    "required": ["on", "level", "mode"],
    "additionalProperties": False,
}

# Judges are built once: an Earley parser or a validator per request would cost the
# client CPU that the servers need on this two-core machine.
REGEX_JUDGES = {pattern: regex_judge(pattern) for pattern in REGEXES}
LARK_JUDGES = {grammar: lark_judge(grammar) for grammar in LARK_GRAMMARS}
GBNF_JUDGE = lark_judge(GBNF_PAIR_AS_LARK)
BNF_JUDGE = words_judge(["noun verb", "verb noun"])
FLAGS_JUDGE = json_schema_judge(FLAGS_SCHEMA)
PERSON_JUDGE = json_schema_judge(PERSON_SCHEMA)
TOOL_JUDGES = {"get_weather": json_schema_judge(WEATHER_ARGUMENTS)}
TOOLS_JUDGE = tool_calls_judge(TOOL_JUDGES)
LAMP_JUDGE = json_schema_judge(LAMP_SCHEMA)
REGEX_LIST = [r"\d{3}", "yes|no"]
TOOL_LINE = (
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}</tool_call>'
)
REGEX_LIST_JUDGE = regex_judge(REGEX_LIST)

# Scenarios whose outputs may run to the token limit: free text, and tool calls that the
# tiny model may repeat forever.
UNBOUNDED = {"completions/plain", "completions/tools:repeating"}

# -- the mix --------------------------------------------------------------------------


def _completion(
    rng: random.Random,
    scenario: str,
    *,
    max_tokens: int,
    judge: Judge | None,
    finished_reasons: frozenset[str] = frozenset({"stop"}),
    **constraint: Any,
) -> Call:
    """``/v1/completions``, streamed or collected at random, sometimes with two choices."""
    stream = rng.random() < 0.5
    n = rng.choice((1, 1, 1, 2))
    body = {
        "model": rng.choice((MODEL_NAME, "default")),
        "prompt": rng.choice(PROMPTS),
        "max_tokens": max_tokens,
        "temperature": rng.choice((0.0, 0.7, 1.0)),
        "seed": rng.randrange(1 << 30),
        "n": n,
        "stream": stream,
        **constraint,
    }

    def check(answer: dict[str, Any]) -> str:
        outcome = check_completion(
            answer, n=n, max_tokens=max_tokens, judge=judge, finished_reasons=finished_reasons
        )
        if "tools" in constraint:
            check_tool_choices(answer, TOOL_JUDGES)
        return outcome

    return Call(scenario, "POST", "/v1/completions", body, stream, 200, check)


def plain(rng: random.Random) -> Call:
    return _completion(rng, "completions/plain", max_tokens=rng.randint(8, 32), judge=None)


def grammar_regex(rng: random.Random) -> Call:
    pattern = rng.choice(REGEXES)
    return _completion(
        rng,
        "completions/grammar:regex",
        max_tokens=32,
        judge=REGEX_JUDGES[pattern],
        grammar={"type": "regex", "value": pattern},
    )


def grammar_lark(rng: random.Random) -> Call:
    grammar = rng.choice(LARK_GRAMMARS)
    return _completion(
        rng,
        "completions/grammar:lark",
        max_tokens=32,
        judge=LARK_JUDGES[grammar],
        grammar={"type": "lark", "value": grammar},
    )


def grammar_json_schema(rng: random.Random) -> Call:
    return _completion(
        rng,
        "completions/grammar:json_schema",
        max_tokens=48,
        judge=FLAGS_JUDGE,
        grammar={"type": "json_schema", "value": FLAGS_SCHEMA},
    )


def response_format(rng: random.Random) -> Call:
    return _completion(
        rng,
        "completions/response_format:json_schema",
        max_tokens=48,
        judge=PERSON_JUDGE,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True},
        },
    )


def _tools(rng: random.Random, scenario: str, max_tokens: int, **extra: Any) -> Call:
    choice = rng.choice(("required", {"type": "function", "function": {"name": "get_weather"}}))
    return _completion(
        rng,
        scenario,
        max_tokens=max_tokens,
        judge=TOOLS_JUDGE,
        finished_reasons=frozenset({"tool_calls"}),
        tools=[WEATHER_TOOL],
        tool_choice=choice,
        **extra,
    )


def tools(rng: random.Random) -> Call:
    """One call: the stop string ends the output where the first call is complete (one
    call is ~55 of the tiny model's tokens, most of them forced by the grammar)."""
    return _tools(rng, "completions/tools", 96, stop=["</tool_call>"])


def tools_repeating(rng: random.Random) -> Call:
    """Calls until the model stops: the tiny model often repeats calls (greedily, forever),
    so many of these are cut; their complete lines are still judged as calls."""
    return _tools(rng, "completions/tools:repeating", 128)


def completions_bad_grammar(rng: random.Random) -> Call:
    """Deliberate: an uncompilable regex is a 400 naming the field, also under load."""
    stream = rng.random() < 0.5
    body = {
        "model": MODEL_NAME,
        "prompt": "x",
        "stream": stream,
        "grammar": {"type": "regex", "value": "(unclosed"},
    }
    return Call(
        "completions/bad-grammar (deliberate 400)",
        "POST",
        "/v1/completions",
        body,
        stream,
        400,
        lambda answer: check_openai_error(answer, param="grammar.value"),
    )


def _pattern_route(
    rng: random.Random, scenario: str, path: str, judge: Judge, max_new_tokens: int, **fields: Any
) -> Call:
    body = {
        "prompt": rng.choice(PROMPTS),
        "max_new_tokens": max_new_tokens,
        "temperature": rng.choice((0.0, 0.8, 1.2)),
        "top_k": rng.choice((0, 50)),
        "top_p": rng.choice((0.9, 1.0)),
        **fields,
    }
    return Call(
        scenario,
        "POST",
        path,
        body,
        False,
        200,
        lambda answer: check_pattern_answer(answer, max_new_tokens=max_new_tokens, judge=judge),
    )


def regex_route(rng: random.Random) -> Call:
    if rng.random() < 0.25:
        pattern: str | list[str] = REGEX_LIST
        judge = REGEX_LIST_JUDGE
    else:
        pattern = rng.choice(REGEXES)
        judge = REGEX_JUDGES[pattern]
    return _pattern_route(
        rng,
        "regex",
        "/v1/completion/regex",
        judge,
        32,
        pattern=pattern,
        stop_after_match=rng.random() < 0.5,
    )


def cfg_lark(rng: random.Random) -> Call:
    grammar = rng.choice(LARK_GRAMMARS)
    return _pattern_route(
        rng,
        "cfg:lark",
        "/v1/completion/cfg",
        LARK_JUDGES[grammar],
        32,
        grammar=grammar,
        grammar_format="lark",
        stop_after_match=rng.random() < 0.5,
    )


def cfg_gbnf(rng: random.Random) -> Call:
    return _pattern_route(rng, "cfg:gbnf", "/v1/completion/cfg", GBNF_JUDGE, 32, grammar=GBNF_PAIR)


def cfg_bnf(rng: random.Random) -> Call:
    return _pattern_route(
        rng,
        "cfg:bnf",
        "/v1/completion/cfg",
        BNF_JUDGE,
        16,
        grammar=BNF_DOCUMENTED,
        stop_after_match=rng.random() < 0.5,
    )


def typed(rng: random.Random) -> Call:
    max_tokens = 64
    body = {
        "prompt": rng.choice(PROMPTS),
        "schema": LAMP_TS,
        "type_name": "Lamp",
        "max_tokens": max_tokens,
        "temperature": rng.choice((0.0, 0.7, 1.0)),
        "include_types_in_prompt": rng.random() < 0.5,
    }
    return Call(
        "typed",
        "POST",
        "/v1/completion/typed",
        body,
        False,
        200,
        lambda answer: check_typed_answer(answer, max_tokens=max_tokens, judge=LAMP_JUDGE),
    )


def regex_route_bad(rng: random.Random) -> Call:
    """Deliberate: a lookahead inside a group repeated without bound cannot be
    applied, so it is a 400."""
    body = {"prompt": "x", "pattern": rng.choice(("(a(?=b))*b", "(unclosed"))}
    return Call(
        "regex/bad-pattern (deliberate 400)",
        "POST",
        "/v1/completion/regex",
        body,
        False,
        400,
        lambda answer: check_route_error(answer, code=400),
    )


def validate(rng: random.Random) -> Call:
    body = rng.choice(({"json_schema": PERSON_SCHEMA}, {"pattern": list(REGEXES)}))

    def check(answer: dict[str, Any]) -> str:
        if answer["valid"] is not True or answer["errors"]:
            raise Rejected(f"a valid constraint reported invalid: {answer}")
        return FINISHED

    return Call("grammars/validate", "POST", "/v1/grammars/validate", body, False, 200, check)


def models(rng: random.Random) -> Call:
    def check(answer: dict[str, Any]) -> str:
        if [model["id"] for model in answer["data"]] != [MODEL_NAME, MODEL_ALIAS]:
            raise Rejected(f"models {answer}")
        return FINISHED

    return Call("models", "GET", "/v1/models", None, False, 200, check)


SCENARIOS = [
    Scenario("completions/plain", 4, plain),
    Scenario("completions/grammar:regex", 3, grammar_regex),
    Scenario("completions/grammar:lark", 2, grammar_lark),
    Scenario("completions/grammar:json_schema", 2, grammar_json_schema),
    Scenario("completions/response_format:json_schema", 2, response_format),
    Scenario("completions/tools", 2, tools),
    Scenario("completions/tools:repeating", 1, tools_repeating),
    Scenario("completions/bad-grammar (deliberate 400)", 1, completions_bad_grammar),
    Scenario("regex", 3, regex_route),
    Scenario("cfg:lark", 2, cfg_lark),
    Scenario("cfg:gbnf", 1, cfg_gbnf),
    Scenario("cfg:bnf", 1, cfg_bnf),
    Scenario("typed", 2, typed),
    Scenario("regex/bad-pattern (deliberate 400)", 1, regex_route_bad),
    Scenario("grammars/validate", 1, validate),
    Scenario("models", 1, models),
]

# -- the instruments themselves: a judge that accepts anything would prove nothing ---------


@pytest.mark.parametrize(
    ("judge", "good", "bad", "good_prefix", "bad_prefix"),
    [
        (REGEX_JUDGES[r"\d{3}-[a-z]{2,5}"], "123-abc", "123-abcdef", "12", "12a"),
        (REGEX_LIST_JUDGE, "yes", "yesno", "4", "y4"),
        (BNF_JUDGE, "noun verb", "noun noun", "verb n", "verbs"),
        (TOOLS_JUDGE, TOOL_LINE, TOOL_LINE + "\n", TOOL_LINE + "\n<tool_c", TOOL_LINE + " "),
    ],
)
def test_judges_tell_valid_from_invalid(
    judge: Judge, good: str, bad: str, good_prefix: str, bad_prefix: str
) -> None:
    judge.full(good)
    with pytest.raises(Rejected):
        judge.full(bad)
    assert judge.prefix is not None
    judge.prefix(good_prefix)
    with pytest.raises(Rejected):
        judge.prefix(bad_prefix)


@pytest.mark.parametrize(
    ("judge", "good", "bad"),
    [
        (LARK_JUDGES[LARK_GRAMMARS[0]], "ab,12", "ab,,12"),
        (GBNF_JUDGE, '[1,"a"]', "[1,2,3]"),
        (FLAGS_JUDGE, '{"ok": true, "n": 5, "tag": "a"}', '{"ok": true, "n": 500, "tag": "a"}'),
        (PERSON_JUDGE, '{"name": "Ann", "age": 3}', '{"name": "Ann", "age": 3'),
        (LAMP_JUDGE, '{"on": false, "level": 2, "mode": "warm"}', '{"on": 0, "level": 2}'),
        (
            TOOLS_JUDGE,
            TOOL_LINE + "\n" + TOOL_LINE,
            TOOL_LINE.replace('"unit": "c"', '"unit": "k"'),
        ),
    ],
)
def test_judges_without_prefix_tell_valid_from_invalid(judge: Judge, good: str, bad: str) -> None:
    judge.full(good)
    with pytest.raises(Rejected):
        judge.full(bad)


def _sse(*payloads: str) -> list[str]:
    return [line for payload in payloads for line in (f"data: {payload}", "")]


PIECE = (
    '{"id":"c","object":"text_completion","choices":[{"index":0,"text":"%s","finish_reason":%s}]}'
)
USAGE = (
    '{"id":"c","object":"text_completion","choices":[],'
    '"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}'
)


def test_stream_reader_insists_on_a_complete_stream() -> None:
    complete = _sse(PIECE % ("a", "null"), PIECE % ("b", '"stop"'), USAGE, "[DONE]")
    answer = read_sse(complete)
    assert answer["choices"][0]["text"] == "ab" and answer["usage"]["total_tokens"] == 3
    broken = {
        "no [DONE]": complete[:-2],
        "no usage": _sse(PIECE % ("a", '"stop"'), "[DONE]"),
        "no finish_reason": _sse(PIECE % ("a", "null"), USAGE, "[DONE]"),
        "text after finishing": _sse(
            PIECE % ("a", '"stop"'), PIECE % ("b", "null"), USAGE, "[DONE]"
        ),
        "an error event": _sse(PIECE % ("a", "null"), '{"error":{"message":"x"}}', USAGE, "[DONE]"),
    }
    for name, lines in broken.items():
        with pytest.raises(Rejected):
            read_sse(lines)
            pytest.fail(name)


def test_a_request_that_never_answers_is_recorded_as_hung() -> None:
    """A real socket that accepts and then stays silent: the driver's timeout must fire."""

    async def scenario() -> str | None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.read(1 << 16):  # read the request, never answer, until closed
                pass
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            call = Call("hang", "GET", "/", None, False, 200, lambda answer: FINISHED)
            record = await run_call(client, call, timeout_s=0.5, t0=time.monotonic())
        assert record.outcome == FAILED
        return record.problem

    problem = asyncio.run(scenario())
    assert problem is not None and "hung or lost" in problem


# -- server-side state ------------------------------------------------------------------


def _samples(url: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a Prometheus endpoint as (name, labels, value)."""
    with httpx.Client(trust_env=False, timeout=10) as client:
        response = client.get(url)
    response.raise_for_status()
    return [
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    ]


def _total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    """The sum of a metric's samples with these labels (0 when absent, as a labelled
    counter is before its first increment)."""
    return sum(
        value
        for sample_name, sample_labels, value in samples
        if sample_name == name and labels.items() <= sample_labels.items()
    )


def _server_state(service: Service) -> dict[str, Any]:
    """What the servers themselves count: answers by route and status, verifier
    disagreements, and generations still held."""
    frontend = _samples(f"{service.frontend.url}/metrics")
    triton = _samples(service.triton.metrics_url)
    answered = {
        f"{labels['route']} {labels['status']}": value
        for name, labels, value in frontend
        if name == "ct_http_requests_total"
    }
    return {
        "answered": answered,
        "verification_failures": _total(frontend, "ct_verification_failures_total"),
        "generations_in_flight": _total(frontend, "ct_generations_in_flight"),
        "decoder_running": _total(triton, "ct_decoder_requests", state="running"),
        "decoder_waiting": _total(triton, "ct_decoder_requests", state="waiting"),
    }


def _settled(service: Service, within_s: float = 30.0) -> dict[str, Any]:
    """The servers' state once nothing is in flight any more (or as it is at the limit)."""
    deadline = time.monotonic() + within_s
    while True:
        state = _server_state(service)
        busy = state["generations_in_flight"] + state["decoder_running"] + state["decoder_waiting"]
        if busy == 0 or time.monotonic() >= deadline:
            return state
        time.sleep(0.5)


# -- the report -------------------------------------------------------------------------


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _print_summary(summary: dict[str, Any]) -> None:
    """A readable account on stdout (shown with ``-s`` and in a failure's report)."""
    latency = summary["latency"]
    print(
        f"\nload: {summary['clients']} clients, {summary['elapsed_s']} s, "
        f"{summary['requests']} requests ({summary['requests_per_s']}/s), "
        f"statuses {summary['statuses']}, outcomes {summary['outcomes']}"
    )
    for kind in ("all", "collected", "streamed", "stream_ttft"):
        figures = latency[kind]
        print(
            f"  latency {kind:<11} n={figures['count']:<6} p50 {_fmt(figures['p50_s']):>8}"
            f"  p99 {_fmt(figures['p99_s']):>8}  max {_fmt(figures['max_s']):>8}"
        )
    for name, scenario in summary["scenarios"].items():
        figures = scenario["latency"]
        print(
            f"  {name:<44} {scenario['requests']:>5} req ({scenario['streamed']:>4} streamed)"
            f"  {scenario['outcomes']}  p50 {_fmt(figures['p50_s'])}  p99 {_fmt(figures['p99_s'])}"
        )
    for name, mark in summary["memory"].items():
        print(
            f"  memory {name} (t={mark['at_s']} s): held {mark['held_total_kib'] / 1024:.1f} MiB"
            f" (floor of the last {mark['window_s']:.0f} s), VmRSS"
            f" {mark['vm_rss_total_kib'] / 1024:.1f} MiB"
        )
        for label, held in mark["held_kib"].items():
            print(
                f"    {label:<26} held {held / 1024:7.1f} MiB"
                f" (peak {mark['held_peak_kib'][label] / 1024:7.1f})"
                f"  VmRSS {mark['vm_rss_kib'][label] / 1024:7.1f} MiB"
            )
    for failure in summary["failure_examples"]:
        print(f"  FAILED {failure['scenario']} [{failure['status']}]: {failure['problem']}")


# -- the test -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(DURATION_S + 300)
def test_sixty_four_clients_mixed_load_for_two_minutes(service: Service) -> None:
    assert DURATION_S >= 10, "CT_LOAD_TEST_SECONDS: both halves need a few seconds of load"
    before = _server_state(service)
    result: LoadResult = asyncio.run(
        run_load(
            service.frontend.url,
            API_KEY,
            SCENARIOS,
            clients=CLIENTS,
            duration_s=DURATION_S,
            max_requests=MAX_REQUESTS,
            timeout_s=REQUEST_TIMEOUT_S,
            group_leaders=[service.frontend.pid, service.triton.pid],
        )
    )
    after = _settled(service)
    with httpx.Client(trust_env=False, timeout=10) as client:
        health = client.get(f"{service.frontend.url}/health").status_code
    marks = result.marks(MEMORY_WINDOW_S)
    summary = summarize(result, marks)
    answered = {
        key: count - before["answered"].get(key, 0)
        for key, count in after["answered"].items()
        if count != before["answered"].get(key, 0) and not key.startswith(("/metrics", "/health"))
    }
    sent = dict(Counter(f"{r.path} {r.status}" for r in result.records if r.status is not None))
    summary["server"] = {
        "health_after": health,
        "answered_during_run": answered,
        "before": {key: value for key, value in before.items() if key != "answered"},
        "after": {key: value for key, value in after.items() if key != "answered"},
    }
    _print_summary(summary)
    report = os.environ.get("CT_LOAD_TEST_REPORT")
    if report:
        Path(report).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")

    records = result.records
    assert len(records) >= CLIENTS, "the run made fewer requests than it has clients"
    ran = {record.scenario for record in records}
    assert ran == {scenario.name for scenario in SCENARIOS}, "every kind of request ran"

    # No 5xx, no other unexpected status, nothing lost, hung, malformed or invalid.
    server_errors = [r for r in records if r.status is not None and r.status >= 500]
    assert not server_errors, f"{len(server_errors)} answers were 5xx"
    failures = [record for record in records if record.outcome == FAILED]
    assert not failures, f"{len(failures)} of {len(records)} requests failed (see the report)"
    # The frontend counted exactly the answers the clients received, route by route.
    assert answered == sent, f"the frontend counted {answered}, the clients received {sent}"

    # Bounded constraints: nearly every judged output must finish, not just be a valid prefix.
    for name, scenario in summary["scenarios"].items():
        outcomes = scenario["outcomes"]
        judged = outcomes.get(FINISHED, 0) + outcomes.get(CUT, 0)
        if name in UNBOUNDED or outcomes.get(REFUSED) or judged < 10:
            continue
        assert outcomes.get(FINISHED, 0) >= MIN_FINISHED_SHARE * judged, (name, outcomes)

    # The servers are left idle and healthy, their own verifier never disagreed.
    assert health == 200
    assert after["verification_failures"] == before["verification_failures"]
    assert after["generations_in_flight"] == 0, "the frontend still holds generations"
    assert after["decoder_running"] == after["decoder_waiting"] == 0, "the decoder is still busy"

    # Memory: the same processes at both marks, their sum not growing past a few percent.
    first, second = marks["minute_1"], marks["minute_2"]
    assert first.pids == second.pids, "a server process ended or was replaced during the run"
    assert {"frontend", "tritonserver", "stub:constrained_decoder"} <= set(first.held_kib)
    assert second.held_total_kib <= first.held_total_kib * (1 + MEMORY_GROWTH), (
        f"memory grew from {first.held_total_kib} KiB to {second.held_total_kib} KiB: "
        f"{first.held_kib} -> {second.held_kib}"
    )
    # tritonserver itself holds no model state, so any growth there is per request (a
    # cancelled finished gRPC stream once leaked ~10 KB each); small, so checked apart.
    triton_growth = second.held_kib["tritonserver"] - first.held_kib["tritonserver"]
    assert triton_growth <= max(TRITON_SLACK_KIB, 0.05 * first.held_kib["tritonserver"]), (
        f"tritonserver grew by {triton_growth} KiB in a minute"
    )
