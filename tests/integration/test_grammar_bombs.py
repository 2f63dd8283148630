"""Hostile constraints and bodies on the live stack: each is refused with a 4xx that
names the problem, within a bounded time, while cheap requests keep being served.

The bounds are generous (the test machines are small and shared); the times
are printed, and are typically a small fraction of them. Constraints that
are valid but pathological for the independent judge (catastrophic
backtracking, an ambiguous grammar) are served, and the judge gives up at
its budget instead of blocking the frontend.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from frontend.settings import Settings
from grammar_compiler.canonical import JUDGE_BUDGET_S

from .conftest import Service

REFUSAL_BOUND_S = 10.0
"""A refusal must come within this (typically well under a second)."""
CHEAP_BOUND_S = 5.0
"""A cheap request must be answered within this while bombs are in flight."""
BODY_LIMIT = Settings.max_body_bytes


@dataclass(frozen=True)
class Bomb:
    """A hostile constraint in one route's request, and how it must be refused."""

    name: str
    path: str
    body: dict
    names: str  # a piece of the error message that names the problem

    @property
    def id(self) -> str:
        return f"{self.name}@{self.path.rsplit('/', 1)[-1]}{self._field()}"

    def _field(self) -> str:
        if self.path != "/v1/completions":
            return ""
        fields = ("grammar", "response_format", "tools")
        return "." + next(key for key in fields if key in self.body)


def _deep_schema(levels: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def _doubling_refs(levels: int) -> dict:
    """Each definition is an object of two of the previous one: 2**levels integers."""
    definitions: dict = {"d0": {"type": "integer"}}
    for i in range(1, levels):
        below = {"$ref": f"#/$defs/d{i - 1}"}
        definitions[f"d{i}"] = {
            "type": "object",
            "properties": {"x": below, "y": below},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    return {"$defs": definitions, "$ref": f"#/$defs/d{levels - 1}"}


def _doubling_rules(levels: int) -> str:
    rules = ['a0 ::= "x"'] + [f"a{i} ::= a{i - 1} a{i - 1}" for i in range(1, levels)]
    return "\n".join([f"root ::= a{levels - 1}", *rules])


REGEXES = {
    "repeat_1e6": ("a{1000000}", "repetition count above 10000"),
    "nested_repeat": ("(x{1000}){1000}", "MAX_SHORTEST_OUTPUT"),
    "nested_repeat_3": ("((a{100}){100}){100}", "MAX_SHORTEST_OUTPUT"),
    "forced_branch": ("a|b(x{1000}){1000}", "MAX_SHORTEST_OUTPUT"),
    "pattern_too_long": ("|".join(f"w{i:05d}" for i in range(1700)), "too long"),
}
SCHEMAS = {
    "self_ref": (
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        "the reference at /$defs/a/$ref leads back to /$defs/a",
    ),
    "doubling_refs": (_doubling_refs(30), "MAX_SHORTEST_OUTPUT"),
    "deep_nesting": (_deep_schema(200), "nests deeper than 64 levels"),
    "enum_100k": ({"enum": [f"v{i}" for i in range(100_000)]}, "holds 100000 values"),
    "text_3mb": ({"type": "string", "description": "x" * 3_000_000}, "schema too large"),
    "enum_20k": ({"enum": list(range(20_000))}, "holds 20000 values (at most 10000)"),
    "min_items_1e6": (
        {"type": "array", "items": {"const": "x"}, "minItems": 1_000_000},
        "MAX_SHORTEST_OUTPUT",
    ),
    "min_length_1e6": ({"type": "string", "minLength": 1_000_000}, "MAX_SHORTEST_OUTPUT"),
    "pattern_repeat": ({"type": "string", "pattern": "^(x{1000}){1000}$"}, "MAX_SHORTEST_OUTPUT"),
    # Python's re would hold the GIL for days on these (grammar_compiler/bounded_regex.py)
    "backtracking_name": (
        {
            "type": "object",
            "properties": {"a" * 40 + "Xc": {"type": "integer"}},
            "patternProperties": {"(a|a)*c": {"type": "integer"}},
        },
        "took too long to test against the property name",
    ),
    "backtracking_enum": (
        {"type": "string", "enum": ["a" * 40 + "Xc", "ac"], "pattern": "(a|a)*c"},
        "to test against the values it lists",
    ),
}
GRAMMARS = {
    "gbnf_doubling": (_doubling_rules(30), "MAX_SHORTEST_OUTPUT", "gbnf"),
    "gbnf_nested_repeat": ('root ::= ("x"{1000}){1000}', "MAX_SHORTEST_OUTPUT", "gbnf"),
    "gbnf_2000_rules": (
        "root ::= r0\n"
        + "\n".join(f'r{i} ::= "t{i}" | r{i + 1}' for i in range(1999))
        + '\nr1999 ::= "end"',
        "MAX_RULES",
        "gbnf",
    ),
    "gbnf_many_groups": (
        "root ::= " + " | ".join(f'("a{i}" | "b") ("c" | "d{i}")' for i in range(600)),
        "MAX_JUDGE_RULES",
        "gbnf",
    ),
    "lark_2000_rules": (
        "start: r0\n"
        + "\n".join(f'r{i}: "t{i}" | r{i + 1}' for i in range(1999))
        + '\nr1999: "end"',
        "MAX_RULES",
        "lark",
    ),
    "lark_exponential_groups": (
        "start: " + " ".join(["(A|B)"] * 30) + '\nA: "a"\nB: "b"',
        "MAX_ALTERNATIVES",
        "lark",
    ),
    "lark_regex_repeat": ("start: X\nX: /(x{1000}){1000}/", "MAX_SHORTEST_OUTPUT", "lark"),
    # xgrammar 0.2.8 dies of a segmentation fault compiling this (in the decoder)
    "gbnf_self_repeat": ('root ::= "x" r\nr ::= r{0,3}', "only itself", "gbnf"),
}
TYPESCRIPT = {
    "ts_deep": (
        "export type T = " + "{ a: " * 200 + "number" + " }" * 200 + ";",
        "nest deeper than 64",
    ),
    "ts_doubling": (
        "\n".join(
            ["export type A0 = number;"]
            + [f"export interface A{i} {{ x: A{i - 1}; y: A{i - 1} }}" for i in range(1, 30)]
            + ["export type T = A29;"]
        ),
        "MAX_SHORTEST_OUTPUT",
    ),
    "ts_union_20k": (
        "export type T = " + " | ".join(f'"v{i}"' for i in range(20_000)) + ";",
        "(at most 10000)",
    ),
    "ts_generic_doubling": (
        "type D<X> = { a?: D<[X, X]>; b: X };\ntype T = D<number>;",
        "expands without end",
    ),
    "ts_generic_instantiations": (
        "type B<X> = { b: X };\ntype T = [" + ", ".join(f"B<{i}>" for i in range(1000)) + "];",
        "more than 256 instantiations",
    ),
}
TOKENS = {"max_new_tokens": 2}
COMPLETION = {"model": "default", "prompt": "x", "max_tokens": 2}


def _tool_parameters(schema: dict) -> dict:
    """A strict tool needs an object: the bomb becomes its one property ($defs stay on top)."""
    inner = {key: value for key, value in schema.items() if key != "$defs"}
    wrapped = {
        "type": "object",
        "properties": {"p": inner},
        "required": ["p"],
        "additionalProperties": False,
    }
    return wrapped | ({"$defs": schema["$defs"]} if "$defs" in schema else {})


def _bombs() -> Iterator[Bomb]:
    for name, (pattern, names) in REGEXES.items():
        body = {"prompt": "x", "pattern": pattern, **TOKENS}
        yield Bomb(name, "/v1/completion/regex", body, names)
        grammar = {"type": "regex", "value": pattern}
        yield Bomb(name, "/v1/completions", {**COMPLETION, "grammar": grammar}, names)
    for name, (schema, names) in SCHEMAS.items():
        grammar = {"type": "json_schema", "value": schema}
        yield Bomb(name, "/v1/completions", {**COMPLETION, "grammar": grammar}, names)
        response_format = {"type": "json_schema", "json_schema": {"name": "b", "schema": schema}}
        body = {**COMPLETION, "response_format": response_format}
        yield Bomb(name, "/v1/completions", body, names)
        function = {"name": "f", "parameters": _tool_parameters(schema), "strict": True}
        tools = {"tools": [{"type": "function", "function": function}], "tool_choice": "required"}
        yield Bomb(name, "/v1/completions", {**COMPLETION, **tools}, names)
    for name, (text, names, kind) in GRAMMARS.items():
        yield Bomb(name, "/v1/completion/cfg", {"prompt": "x", "grammar": text, **TOKENS}, names)
        grammar = {"type": kind, "value": text}
        yield Bomb(name, "/v1/completions", {**COMPLETION, "grammar": grammar}, names)
    for name, (source, names) in TYPESCRIPT.items():
        body = {"prompt": "x", "schema": source, "type_name": "T", "max_tokens": 2}
        yield Bomb(name, "/v1/completion/typed", body, names)


BOMBS = list(_bombs())


def _message(response: httpx.Response) -> str:
    error = response.json()["error"]
    return error["message"] if isinstance(error, dict) else error


@pytest.mark.parametrize("bomb", BOMBS, ids=[bomb.id for bomb in BOMBS])
def test_bomb_is_refused_in_bounded_time(service: Service, bomb: Bomb) -> None:
    content = json.dumps(bomb.body).encode()
    with service.client(timeout=120) as client:
        started = time.perf_counter()
        response = client.post(
            bomb.path, content=content, headers={"Content-Type": "application/json"}
        )
        elapsed = time.perf_counter() - started
    print(f"{bomb.id}: {response.status_code} in {elapsed:.2f} s")
    assert response.status_code == 400, response.text[:500]
    assert bomb.names in _message(response), _message(response)
    assert elapsed < REFUSAL_BOUND_S


@pytest.mark.parametrize(
    ("field", "value", "names"),
    [
        ("pattern", "(x{1000}){1000}", "MAX_SHORTEST_OUTPUT"),
        ("grammar", _doubling_rules(30), "MAX_SHORTEST_OUTPUT"),
        ("json_schema", SCHEMAS["enum_20k"][0], "holds 20000 values"),
    ],
)
def test_validate_reports_the_limit(
    service: Service, field: str, value: object, names: str
) -> None:
    """The validation route answers 200 with the problem, as for any invalid constraint."""
    with service.client(timeout=120) as client:
        started = time.perf_counter()
        response = client.post("/v1/grammars/validate", json={field: value})
        elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text[:500]
    answer = response.json()
    assert answer["valid"] is False and names in answer["errors"][0]["message"]
    assert elapsed < REFUSAL_BOUND_S


@pytest.mark.parametrize(
    ("path", "shape"),
    [("/v1/completions", "openai"), ("/v1/completion/regex", "plain")],
)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_ten_megabyte_body_is_413(service: Service, path: str, shape: str, chunked: bool) -> None:
    body = json.dumps({"model": "default", "prompt": "x" * 10_000_000}).encode()
    assert len(body) > BODY_LIMIT

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 64 * 1024):
            yield body[start : start + 64 * 1024]

    with service.client(timeout=120) as client:
        started = time.perf_counter()
        response = client.post(
            path,
            content=pieces() if chunked else body,
            headers={"Content-Type": "application/json"},
        )
        elapsed = time.perf_counter() - started
    print(f"10 MB to {path} ({'chunked' if chunked else 'with Content-Length'}): {elapsed:.2f} s")
    assert response.status_code == 413, response.text[:300]
    assert str(BODY_LIMIT) in _message(response) and "CT_MAX_BODY_BYTES" in _message(response)
    error = response.json()["error"]
    assert isinstance(error, dict) is (shape == "openai")
    assert response.headers.get("X-Request-ID")


def test_body_under_the_limit_is_served(service: Service) -> None:
    body = {"prompt": "x" * 100_000, "pattern": r"\d", "max_new_tokens": 1}
    with service.client(timeout=120) as client:
        response = client.post("/v1/completion/regex", json=body)
    assert response.status_code in (200, 400), response.text[:300]  # 400: the context window
    assert response.status_code != 413


def test_judge_gives_up_on_catastrophic_backtracking(service: Service) -> None:
    """``(a|a)*a{30}b`` is a fine constraint for the decoder but takes ``re``-style
    backtracking minutes on its own output: the judge stops at its budget."""
    body = {"prompt": "x", "pattern": "(a|a)*a{30}b", "max_new_tokens": 60}
    with service.client(timeout=300) as client:
        started = time.perf_counter()
        response = client.post("/v1/completion/regex", json=body)
        elapsed = time.perf_counter() - started
    print(f"(a|a)*a{{30}}b: {response.json()} in {elapsed:.2f} s")
    assert response.status_code == 200, response.text[:300]
    assert response.json()["stop_reason"] in ("verification_failed", "pattern_match", "token_limit")
    assert elapsed < JUDGE_BUDGET_S + 60  # the generation of up to 60 tokens included


def test_cheap_requests_are_served_while_bombs_are_in_flight(service: Service) -> None:
    """Bombs (refused, or slow to translate or judge) from several threads at once;
    meanwhile /health and a small completion keep answering promptly."""
    slow = [
        ("/v1/completion/regex", {"prompt": "x", "pattern": "(a|a)*a{30}b", "max_new_tokens": 60}),
        (
            "/v1/completion/cfg",
            {
                "prompt": "x",
                "grammar": "start: r0\n"
                + "\n".join(f'r{i}: "t{i}" | r{i + 1}' for i in range(498))
                + '\nr498: "end"',
                "max_new_tokens": 2,
            },
        ),
    ]
    bombs = [(bomb.path, bomb.body) for bomb in BOMBS[::3]] + slow * 2
    done = threading.Event()
    answers: list[tuple[str, int, float]] = []

    def cheap() -> None:
        small = {"prompt": "Year:", "pattern": r"\d{4}", "max_new_tokens": 4}
        with service.client(timeout=60) as client:
            while not done.is_set():
                for method, path, body in (
                    ("GET", "/health", None),
                    ("POST", "/v1/completion/regex", small),
                ):
                    started = time.perf_counter()
                    try:
                        status = client.request(method, path, json=body).status_code
                    except httpx.HTTPError:
                        status = 0
                    answers.append((path, status, time.perf_counter() - started))
                time.sleep(0.05)

    def send(path: str, body: dict) -> int:
        with service.client(timeout=300) as client:
            return client.post(path, json=body).status_code

    watcher = threading.Thread(target=cheap)
    watcher.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda bomb: send(*bomb), bombs))
    finally:
        done.set()
        watcher.join()
    slowest = max(seconds for _, _, seconds in answers)
    print(
        f"{len(bombs)} bombs answered {sorted(set(statuses))}; {len(answers)} cheap requests "
        f"meanwhile, the slowest in {slowest:.2f} s"
    )
    assert all(status in (200, 400) for status in statuses), statuses
    assert len(answers) >= 10
    assert all(status == 200 for _, status, _ in answers), answers
    assert slowest < CHEAP_BOUND_S
