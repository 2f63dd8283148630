"""The limits and time bounds that keep hostile constraints and bodies cheap (no server).

``tests/integration/test_grammar_bombs.py`` sends the same kinds of bombs to
the live stack; here each mechanism is checked on its own: the shortest-output
limit in every language, the ``{m,}`` rewrite, the judges' time budget, the
Lark judge's rule count, the enum filter, the union branch limit, the body limit
and ``off_loop``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import xgrammar as xgr
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from frontend.body_limit import BodyLimitMiddleware
from frontend.errors import install_error_handlers
from frontend.offload import off_loop
from grammar_compiler import (
    ConstraintError,
    compile_grammar,
    compile_json_schema,
    compile_typescript,
    json_judge,
    lark_writer,
)
from grammar_compiler import json_schema as json_schema_compiler
from grammar_compiler.canonical import out_of_time
from grammar_compiler.json_schema import MAX_BRANCHES
from grammar_compiler.regex import compile_regex, matches, matches_within, regex_constraint
from grammar_compiler.shortest import MAX_SHORTEST_OUTPUT

_XGRAMMAR = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def _xgrammar_accepts(regex: str, text: str) -> bool:
    matcher = xgr.GrammarMatcher(_XGRAMMAR.compile_regex(regex), terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_terminated()


def _doubling(define: str, use: str, start: str, levels: int = 30) -> str:
    """``a1`` is two ``a0``, ``a2`` two ``a1``, ...: 2**(levels-1) characters from a few lines."""
    rules = [f'{define.format(0)} "x"']
    for i in range(1, levels):
        rules.append(f"{define.format(i)} {use.format(i - 1)} {use.format(i - 1)}")
    return "\n".join([f"{start} {use.format(levels - 1)}", *rules])


# ---------------------------------------------------------------------------
# Shortest output


@pytest.mark.parametrize(
    "pattern",
    [
        "(x{1000}){1000}",
        "a|b(x{1000}){1000}",
        "x{10000}x{10000}x{10000}x{10000}",
        ["a", "(y{200}){200}"],
    ],
)
def test_regex_needing_too_long_an_output_is_refused(pattern: str | list[str]) -> None:
    with pytest.raises(ConstraintError, match="MAX_SHORTEST_OUTPUT"):
        compile_regex(pattern)


def test_regex_up_to_the_limit_is_accepted() -> None:
    assert compile_regex("x{10000}x{10000}x{10000}")
    assert MAX_SHORTEST_OUTPUT >= 30_000


def test_count_limit_is_reported_before_the_output_limit() -> None:
    with pytest.raises(ConstraintError, match="repetition count above 10000"):
        compile_regex("a{1000000}")


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("gbnf", _doubling("a{} ::=", "a{}", "root ::=")),
        ("bnf", _doubling("<a{}> ::=", "<a{}>", "<start> ::=")),
        ("lark", _doubling("a{}:", "a{}", "start:")),
        ("gbnf", 'root ::= ("x"{1000}){1000}'),
        ("gbnf", 'root ::= "a" | "b" big\nbig ::= ("x"{1000}){40}'),
    ],
)
def test_grammar_needing_too_long_an_output_is_refused(language: str, text: str) -> None:
    with pytest.raises(ConstraintError, match="MAX_SHORTEST_OUTPUT"):
        compile_grammar(text, language)


def test_recursive_grammars_are_not_too_long() -> None:
    assert compile_grammar('root ::= "(" root ")" | "x"', "gbnf")
    assert compile_grammar('root ::= item+\nitem ::= "a" item | "b"', "gbnf")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"const": "xxxxxxxxxx"}, "minItems": 10_000},
        {"type": "array", "minItems": 300, "items": {"type": "array", "minItems": 300}},
        {"type": "object", "properties": {"big": {"type": "string", "minLength": 100_000}}},
        {"anyOf": [{"type": "null"}, {"type": "string", "pattern": "^(x{1000}){100}$"}]},
        {"type": "string", "pattern": "^x*$", "minLength": 100_000},
    ],
)
def test_schema_needing_too_long_an_output_is_refused(schema: dict) -> None:
    with pytest.raises(ConstraintError, match="MAX_SHORTEST_OUTPUT"):
        compile_json_schema(schema)


def test_schema_doubling_through_refs_is_refused() -> None:
    definitions: dict = {"d0": {"type": "integer"}}
    for i in range(1, 30):
        below = {"$ref": f"#/$defs/d{i - 1}"}
        definitions[f"d{i}"] = {
            "type": "array",
            "prefixItems": [below, below],
            "minItems": 2,
            "items": False,
        }
    with pytest.raises(ConstraintError, match="MAX_SHORTEST_OUTPUT"):
        compile_json_schema({"$defs": definitions, "$ref": "#/$defs/d29"})


def test_recursive_schema_is_not_too_long() -> None:
    tree = {
        "$defs": {
            "t": {
                "type": "object",
                "properties": {"l": {"anyOf": [{"$ref": "#/$defs/t"}, {"type": "null"}]}},
                "required": ["l"],
            }
        },
        "$ref": "#/$defs/t",
    }
    assert compile_json_schema(tree)


# ---------------------------------------------------------------------------
# x{m,} is written x{m}x*, which xgrammar forces in linear time


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        ("x{20,}", "(?:x{20}x*)"),
        ("(ab){200,}", "(?:(?:ab){200}(?:ab)*)"),
        ("(a?){20,}", "(?:(?:a?)*)"),
        ("x{16,}", "(?:x{16,})"),
    ],
)
def test_open_repeats_are_split(pattern: str, written: str) -> None:
    assert compile_regex(pattern) == written
    for count in (0, 15, 16, 17, 20, 40):
        text = ("ab" if "ab" in pattern else "x" if "x" in pattern else "a") * count
        assert _xgrammar_accepts(written, text) == bool(re.fullmatch(pattern, text)), count


def test_open_repeats_from_json_lengths_are_split() -> None:
    value = compile_json_schema({"type": "string", "pattern": "^x*$", "minLength": 1000}).value
    assert json.loads(value)["pattern"] == "x{1000}x*"


# ---------------------------------------------------------------------------
# Judges in bounded time


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    atoms = ["a", "b", r"\d", r"\w", r"\s", ".", "[a-c]", "[^a]", r"\.", "é"]
    parts = []
    for _ in range(rng.randint(1, 4)):
        if depth < 2 and rng.random() < 0.25:
            atom = rng.choice(["(", "(?:", "(?s:"]) + _random_pattern(rng, depth + 1) + ")"
        else:
            atom = rng.choice(atoms)
        parts.append(atom + rng.choice(["", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?"]))
    pattern = "".join(parts)
    return pattern + ("|" + _random_pattern(rng, depth + 1) if rng.random() < 0.3 else "")


def test_bounded_regex_judge_agrees_with_re() -> None:
    """The judge matches with the ``regex`` package (it can be stopped); it must say what
    ``re`` says on every pattern ``re`` reads as written (``matches`` reads with ``regex``
    too, without the time bound)."""
    rng = random.Random(6)
    for _ in range(300):
        pattern = rng.choice(["", "^", "(?s)"]) + _random_pattern(rng) + rng.choice(["", "$"])
        for _ in range(20):
            text = "".join(rng.choices("ab1_ .\né-", k=rng.randint(0, 6)))
            expected = bool(re.fullmatch(pattern, text, re.ASCII))
            assert matches_within(pattern, text) == expected, (pattern, text)
            assert matches(pattern, text) == expected, (pattern, text)


def test_regex_judge_stops_at_its_budget() -> None:
    # Exponential backtracking: only the timeout can end this call.
    with pytest.raises(TimeoutError):
        matches_within("(a|a)*a{30}b", "a" * 30 + "b", timeout=0.5)


def test_catastrophic_backtracking_is_not_called_a_match() -> None:
    judge = regex_constraint("(a|a)*a{30}b").judge
    assert judge("a" * 30 + "b") == out_of_time()  # it matches, after ~2**30 steps


def test_earley_judge_stops_at_its_budget() -> None:
    """An ambiguous grammar costs Earley parsing time cubic in the text."""
    judge = compile_grammar('root ::= s\ns ::= s s | "a"', "gbnf").judge
    assert judge("a" * 20) is None
    assert judge("a" * 2000) == out_of_time()


# A JSON Schema's patterns: ``(a|a)*c`` tries 2**n ways through n a's before
# the X ends each attempt, then matches the final c; ``re`` would hold the GIL
# for days at forty. ``grammar_compiler/bounded_regex.py`` bounds every search.
CATASTROPHIC = "(a|a)*c"
SLOW_TEXT = "a" * 40 + "Xc"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": CATASTROPHIC}}},
        {"type": "object", "patternProperties": {CATASTROPHIC: {}}},
        {"type": "object", "patternProperties": {CATASTROPHIC: {}}, "additionalProperties": False},
        {"type": "object", "patternProperties": {CATASTROPHIC: {}}, "unevaluatedProperties": False},
        {"type": "object", "propertyNames": {"pattern": CATASTROPHIC}},
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "unevaluated", "propertyNames"],
)
def test_json_judge_stops_at_its_budget_without_holding_the_gil(
    schema: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every place jsonschema searches a user pattern (a value, a property
    name) is bounded: the output is called out of time, and a thread beside
    the judge runs meanwhile."""
    monkeypatch.setattr(json_judge, "JUDGE_BUDGET_S", 0.5)
    judge = compile_json_schema(schema, strict=False).judge
    output = json.dumps({"s": SLOW_TEXT} if "properties" in schema else {SLOW_TEXT: 1})
    verdict, beats = _judged_beside_a_thread(judge, output)
    assert verdict == out_of_time()
    assert beats >= 20  # the event loop's thread would have been stopped for days


def test_lark_judge_bounds_its_terminals_without_holding_the_gil(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Earley judge's dynamic lexer tries every terminal at each position:
    ``A`` at the start of an output that ``B`` matches."""
    monkeypatch.setattr(lark_writer, "JUDGE_BUDGET_S", 0.5)
    judge = compile_grammar(f"start: A | B\nA: /{CATASTROPHIC}/\nB: /a*Xc/\n", "lark").judge
    assert judge("aac") is None and judge("aaXc") is None and judge("aaX") is not None
    verdict, beats = _judged_beside_a_thread(judge, SLOW_TEXT)
    assert verdict == out_of_time()
    assert beats >= 20


def _judged_beside_a_thread(
    judge: Callable[[str], str | None], text: str
) -> tuple[str | None, int]:
    """The judge's verdict, and how often another thread woke meanwhile (every 5 ms)."""
    verdict: list[str | None] = []
    worker = threading.Thread(target=lambda: verdict.append(judge(text)))
    worker.start()
    beats = 0
    while worker.is_alive():
        time.sleep(0.005)
        beats += 1
    return verdict[0], beats


def test_json_judge_still_checks_patterns() -> None:
    judge = compile_json_schema(
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}, strict=False
    ).judge
    assert judge('{"x1": 1, "y": "z"}') is None
    assert judge('{"x1": "one"}') == "/x1: 'one' is not of type 'integer'"


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (
            {
                "type": "object",
                "properties": {SLOW_TEXT: {"type": "integer"}},
                "patternProperties": {CATASTROPHIC: {"type": "integer"}},
            },
            "keyword 'patternProperties' at the root: the pattern '(a|a)*c' took too long",
        ),
        (
            {"type": "string", "enum": [SLOW_TEXT, "ac"], "pattern": CATASTROPHIC},
            "a pattern of the schema took over 0.5 s to test against the values it lists",
        ),
    ],
    ids=["declared name", "listed value"],
)
def test_schema_whose_pattern_backtracks_catastrophically_is_refused(
    schema: dict, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_schema_compiler, "PATTERN_TESTS_BUDGET_S", 0.5)
    with pytest.raises(ConstraintError, match=re.escape(named)):
        compile_json_schema(schema)


# ---------------------------------------------------------------------------
# The Lark judge's size


def test_counted_repeats_take_few_judge_rules() -> None:
    constraint = compile_grammar(
        "root ::= " + " | ".join(f'"{i}" "x"{{10,1000}}' for i in range(300)), "gbnf"
    )
    assert constraint.judge("7" + "x" * 1000) is None
    assert constraint.judge("7" + "x" * 1001) is not None
    assert constraint.judge("7" + "x" * 9) is not None
    exact = compile_grammar('root ::= "x"{1000}', "gbnf").judge
    assert exact("x" * 1000) is None
    assert exact("x" * 999) is not None and exact("x" * 1001) is not None


def test_grammar_whose_judge_is_too_large_is_refused() -> None:
    many = "root ::= " + " | ".join(f'("a{i}" | "b") ("c" | "d{i}")' for i in range(600))
    with pytest.raises(ConstraintError, match="MAX_JUDGE_RULES"):
        compile_grammar(many, "gbnf")
    groups = "\n".join(
        ["start: r0"]
        + [f'r{i}: ("a" | r{i + 1}) ("b"? r{i + 1})* ("c" | "d")+' for i in range(400)]
        + ['r400: "end"']
    )
    with pytest.raises(ConstraintError, match="MAX_JUDGE_RULES"):
        compile_grammar(groups, "lark")


def test_too_many_rules_are_refused() -> None:
    chain = "\n".join(
        ["start: r0"] + [f'r{i}: "t{i}" | r{i + 1}' for i in range(600)] + ['r600: "end"']
    )
    with pytest.raises(ConstraintError, match="MAX_RULES"):
        compile_grammar(chain, "lark")


# ---------------------------------------------------------------------------
# JSON Schema: the enum filter and optional properties


def test_large_enum_is_filtered_in_linear_time() -> None:
    started = time.monotonic()
    constraint = compile_json_schema({"enum": [f"value-{i:06d}" for i in range(10_000)]})
    assert time.monotonic() - started < 10  # a minute before the filter used a set
    assert len(json.loads(constraint.value)["enum"]) == 10_000


@pytest.mark.parametrize(
    ("schema", "kept"),
    [
        ({"enum": [1, 1.0, True, "1", 2], "type": "integer"}, [1, 2]),
        ({"enum": [1, 2, 3], "minimum": 2}, [2, 3]),
        ({"enum": [1, 2, [1], {"a": 1}], "const": 2}, [2]),
        ({"enum": [[1, True], [1, 1], {"a": 1.0}], "type": ["array", "object"]}, None),
    ],
)
def test_enum_filter_keeps_what_jsonschema_keeps(schema: dict, kept: list | None) -> None:
    expected = kept if kept is not None else schema["enum"]
    assert json.loads(compile_json_schema(schema).value)["enum"] == expected


def test_optional_properties_past_the_limits_are_left_out() -> None:
    def optional(count: int) -> dict:
        properties = {f"p{i}": {"type": "integer"} for i in range(count)}
        return {"type": "object", "properties": properties}

    written = json.loads(compile_json_schema(optional(100)).value)["properties"]
    assert len(written) == 100
    # Past 100, the first 100 optional ones are written (a subset), the required ones too;
    # undeclared names stay out, so a left-out name never comes back as an extra key.
    many = optional(300) | {"required": ["p250"], "additionalProperties": {"type": "string"}}
    constraint = compile_json_schema(many)
    value = json.loads(constraint.value)
    assert list(value["properties"]) == [*(f"p{i}" for i in range(100)), "p250"]
    assert value["additionalProperties"] is False and value["required"] == ["p250"]
    assert constraint.judge('{"p250": 1, "p3": 2}') is None

    def nested(objects: int, count: int) -> dict:
        names = [f"o{j}" for j in range(objects)]
        return {
            "type": "object",
            "properties": {name: optional(count) for name in names},
            "required": names,
        }

    assert not compile_json_schema(nested(3, 100)).report.subsets  # 3 * 100**2: the most
    # Four objects of 90 would square to 32,400: each writes its first 86 (29,584).
    constraint = compile_json_schema(nested(4, 90))
    written = json.loads(constraint.value)["properties"]
    assert [len(written[f"o{j}"]["properties"]) for j in range(4)] == [86] * 4
    notes = [item.note for item in constraint.report.subsets]
    assert notes == ["only the first 86 of its 90 optional properties are written"] * 4
    assert not compile_json_schema(nested(1000, 3)).report.subsets  # small objects cost little
    required = optional(400) | {"required": [f"p{i}" for i in range(400)]}
    assert compile_json_schema(required)


def _tagged(count: int) -> list[dict]:
    return [
        {"type": "object", "properties": {"kind": {"const": i}}, "required": ["kind"]}
        for i in range(count)
    ]


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_union_over_the_branch_limit_is_a_located_refusal(keyword: str) -> None:
    def schema(count: int) -> dict:
        return {"type": "object", "properties": {"x": {keyword: _tagged(count)}}}

    assert compile_json_schema(schema(MAX_BRANCHES))
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema(schema(MAX_BRANCHES + 1))
    assert caught.value.message == (
        f"{keyword} at /properties/x: it would need more than {MAX_BRANCHES} branches"
    )


def test_typescript_union_over_the_branch_limit_is_a_refusal() -> None:
    members = " | ".join(f"{{ kind: {i}; v{i}: string }}" for i in range(MAX_BRANCHES + 1))
    with pytest.raises(ConstraintError, match=f"more than {MAX_BRANCHES} branches"):
        compile_typescript(f"export type U = {members}", "U")


# ---------------------------------------------------------------------------
# The body limit, on a real FastAPI app


def _limited_app(limit: int) -> tuple[FastAPI, list[int]]:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=limit)
    seen: list[int] = []

    async def read(request: Request) -> dict:
        seen.append(len(await request.body()))
        return {"read": seen[-1]}

    app.post("/v1/completions")(read)
    app.post("/v1/completion/regex")(read)
    return app, seen


def _pieces(size: int) -> Iterator[bytes]:
    for _ in range(size // 1000):
        yield b"x" * 1000


@pytest.mark.parametrize(
    ("path", "openai"), [("/v1/completions", True), ("/v1/completion/regex", False)]
)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_body_over_the_limit_is_413(path: str, openai: bool, chunked: bool) -> None:
    app, seen = _limited_app(10_000)
    with TestClient(app) as client:
        response = client.post(path, content=_pieces(20_000) if chunked else b"x" * 20_000)
        assert response.status_code == 413
        error = response.json()["error"]
        message = error["message"] if openai else error
        assert isinstance(error, dict) is openai
        assert "10000 bytes" in message and "CT_MAX_BODY_BYTES" in message
        if not chunked:
            assert seen == []  # refused on its Content-Length, the body never read
        assert client.post(path, content=b"x" * 10_000).json() == {"read": 10_000}
        assert client.post(path, content=_pieces(10_000)).json() == {"read": 10_000}


def test_zero_means_no_body_limit() -> None:
    app, _ = _limited_app(0)
    with TestClient(app) as client:
        assert client.post("/v1/completions", content=b"x" * 100_000).json() == {"read": 100_000}


# ---------------------------------------------------------------------------
# off_loop


def test_off_loop_keeps_the_event_loop_serving() -> None:
    request_id = contextvars.ContextVar("request_id", default="")

    def busy() -> str:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            sum(range(1000))
        return request_id.get()

    async def scenario() -> tuple[str, float]:
        request_id.set("req-1")
        work = asyncio.ensure_future(off_loop(busy))
        slowest = 0.0
        while not work.done():
            started = time.monotonic()
            await asyncio.sleep(0.01)
            slowest = max(slowest, time.monotonic() - started)
        return await work, slowest

    seen, slowest = asyncio.run(scenario())
    assert seen == "req-1"  # the worker ran in the caller's context
    assert slowest < 0.5


def test_the_automata_of_a_schemas_patterns_share_its_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each lookahead is bounded in size, but a schema may hold thousands: their
    automata stop at the compile's pattern deadline, refused with the reason."""
    monkeypatch.setattr(json_schema_compiler, "PATTERN_TESTS_BUDGET_S", 0.0)
    with pytest.raises(ConstraintError, match="the time for the schema's patterns ran out"):
        compile_json_schema({"type": "string", "pattern": "^(?=.*a).*$"})
    monkeypatch.undo()
    compile_json_schema({"type": "string", "pattern": "^(?=.*a).*$"})
