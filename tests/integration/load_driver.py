"""A bounded, self-stopping load driver for the live stack, and its judges (issue 6).

Many concurrent asyncio clients send a weighted mix of requests (every
generation route, each constraint kind, streamed and collected) until a
deadline or a request cap, whichever comes first. Every call runs under its
own timeout, so a hung request is recorded as a failure instead of hanging the
suite. Each answer is checked for its documented shape and every constrained
output is re-judged here with tools that share no code with the service:
``re`` / ``regex`` for regular expressions, ``lark`` for grammars,
``jsonschema`` for JSON Schemas and tool arguments, and a tool-call reader
written for this module.

Separately, the resident memory of the servers' processes is sampled from
``/proc`` while the load runs, so a leak shows up as growth between the end
of the first and the second half of the run.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import lark
import regex

# -- judges -------------------------------------------------------------------


class Rejected(Exception):
    """An answer that breaks its documented shape or its constraint."""


@dataclass(frozen=True)
class Judge:
    """Whether a text satisfies one constraint, decided without the service's code.

    ``full`` raises :class:`Rejected` unless the text is a complete match.
    ``prefix`` (when the language makes it cheap to decide) raises unless the
    text can still be completed into a match: what an output cut by the token
    limit must be. Where it is None a cut output is counted but not judged.
    """

    full: Callable[[str], None]
    prefix: Callable[[str], None] | None = None


def regex_judge(patterns: str | list[str]) -> Judge:
    """Whole-text match of any of the patterns, read with ``re.ASCII`` as the service documents."""
    options = [patterns] if isinstance(patterns, str) else list(patterns)
    compiled = [re.compile(pattern, re.ASCII) for pattern in options]
    partial = [regex.compile(pattern, regex.ASCII | regex.VERSION0) for pattern in options]

    def full(text: str) -> None:
        if not any(pattern.fullmatch(text) for pattern in compiled):
            raise Rejected(f"{text!r} does not fully match {options!r}")

    def prefix(text: str) -> None:
        if not any(pattern.fullmatch(text, partial=True) for pattern in partial):
            raise Rejected(f"{text!r} is not a prefix of a match of {options!r}")

    return Judge(full, prefix)


def lark_judge(grammar: str) -> Judge:
    """A complete parse by an Earley parser built from a grammar written for the test."""
    parser = lark.Lark(grammar, parser="earley")

    def full(text: str) -> None:
        try:
            parser.parse(text)
        except lark.exceptions.LarkError as error:
            raise Rejected(f"{text!r} does not parse: {error}") from None

    return Judge(full)


def json_schema_judge(schema: Mapping[str, Any]) -> Judge:
    """JSON text whose value ``jsonschema`` (draft 2020-12, formats checked) accepts."""
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )

    def full(text: str) -> None:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise Rejected(f"{text!r} is not JSON: {error}") from None
        problems = [problem.message for problem in validator.iter_errors(value)]
        if problems:
            raise Rejected(f"{text!r} breaks its schema: {problems[:3]}")

    return Judge(full)


def words_judge(options: Iterable[str]) -> Judge:
    """One of a finite set of texts (a BNF grammar's whole language)."""
    allowed = frozenset(options)

    def full(text: str) -> None:
        if text not in allowed:
            raise Rejected(f"{text!r} is not one of {sorted(allowed)}")

    def prefix(text: str) -> None:
        if not any(option.startswith(text) for option in allowed):
            raise Rejected(f"{text!r} is not a prefix of any of {sorted(allowed)}")

    return Judge(full, prefix)


_CALL_LINE = re.compile(r"<tool_call>(?P<body>.*)</tool_call>", re.DOTALL)


def read_tool_calls(text: str, tools: Mapping[str, Judge]) -> list[tuple[str, dict]]:
    """The calls of a complete tool-calling output, each checked against its tool's schema.

    The documented format: one or more ``<tool_call>{"name": ..., "arguments":
    {...}}</tool_call>`` lines joined by a single newline, nothing around them.
    """
    calls = []
    for line in text.split("\n"):
        match = _CALL_LINE.fullmatch(line)
        if match is None:
            raise Rejected(f"{line!r} is not a <tool_call> line (output {text!r})")
        try:
            call = json.loads(match["body"])
        except json.JSONDecodeError as error:
            raise Rejected(f"tool call {line!r} is not JSON: {error}") from None
        if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
            raise Rejected(f"tool call {call!r} is not {{name, arguments}}")
        if call["name"] not in tools:
            raise Rejected(f"tool call names an unknown tool: {call['name']!r}")
        tools[call["name"]].full(json.dumps(call["arguments"]))
        calls.append((call["name"], call["arguments"]))
    return calls


def tool_calls_judge(tools: Mapping[str, Judge]) -> Judge:
    """Tool calls only (``tool_choice: required``); a cut output's whole lines must be calls."""

    def full(text: str) -> None:
        read_tool_calls(text, tools)

    def prefix(text: str) -> None:
        whole, _, rest = text.rpartition("\n")
        if whole:
            read_tool_calls(whole, tools)
        if "</tool_call>" in rest:  # a closed call must be whole, the cut came after it
            read_tool_calls(rest, tools)
        elif not ("<tool_call>".startswith(rest) or rest.startswith("<tool_call>{")):
            raise Rejected(f"{rest!r} does not start a tool call")

    return Judge(full, prefix)


# -- calls and their checks ---------------------------------------------------

FINISHED = "finished"  # a complete answer whose output (if constrained) passed its judge
CUT = "cut"  # the token limit cut it; a valid prefix where that is decidable
REFUSED = "refused"  # a deliberate bad request answered with the expected 4xx
FAILED = "failed"


@dataclass(frozen=True)
class Call:
    """One request to make and what its answer must be.

    ``check`` receives the parsed answer (for a stream: the choices and usage
    rebuilt from its events) and returns FINISHED, CUT or REFUSED, or raises
    :class:`Rejected`.
    """

    scenario: str
    method: str
    path: str
    body: dict[str, Any] | None
    stream: bool
    expected_status: int
    check: Callable[[dict[str, Any]], str]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise Rejected(message)


def check_completion(
    answer: dict[str, Any],
    *,
    n: int,
    max_tokens: int,
    judge: Judge | None,
    finished_reasons: frozenset[str],
) -> str:
    """An OpenAI text completion: n choices, consistent usage, every output judged."""
    _require(answer["object"] == "text_completion", f"object {answer['object']!r}")
    choices = answer["choices"]
    _require(
        [choice["index"] for choice in choices] == list(range(n)),
        f"choice indexes {[c['index'] for c in choices]}",
    )
    usage = answer["usage"]
    _require(usage["prompt_tokens"] > 0, f"usage {usage}")
    _require(0 <= usage["completion_tokens"] <= n * max_tokens, f"usage {usage}")
    _require(
        usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
        f"usage {usage}",
    )
    outcome = FINISHED
    for choice in choices:
        reason, text = choice["finish_reason"], choice["text"]
        _require(isinstance(text, str), f"choice text {text!r}")
        if reason == "length":
            outcome = CUT
            if judge is not None and judge.prefix is not None:
                judge.prefix(text)
        elif reason in finished_reasons:
            if judge is not None:
                judge.full(text)
        else:
            raise Rejected(f"finish_reason {reason!r} (text {text!r})")
    return outcome


def check_tool_choices(answer: dict[str, Any], tools: Mapping[str, Judge]) -> None:
    """The parsed ``tool_calls`` of each finished choice equal what its text says."""
    for choice in answer["choices"]:
        if choice["finish_reason"] != "tool_calls":
            continue
        written = read_tool_calls(choice["text"], tools)
        reported = [
            (call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in choice.get("tool_calls") or []
        ]
        _require(reported == written, f"tool_calls {reported} != text's calls {written}")


def check_pattern_answer(answer: dict[str, Any], *, max_new_tokens: int, judge: Judge) -> str:
    """``/v1/completion/regex`` and ``/cfg``: {completion, tokens_generated, stop_reason,
    matched}; a full match cut by the token limit is judged whole."""
    keys = {"completion", "tokens_generated", "stop_reason", "matched"}
    _require(set(answer) == keys, f"keys {sorted(answer)}")
    tokens, reason, text = answer["tokens_generated"], answer["stop_reason"], answer["completion"]
    _require(1 <= tokens <= max_new_tokens, f"tokens_generated {tokens}")
    if reason == "pattern_match":
        _require(answer["matched"] is True, "pattern_match without matched")
        judge.full(text)
        return FINISHED
    _require(reason == "token_limit", f"stop_reason {reason!r} (completion {text!r})")
    _require(tokens == max_new_tokens, f"token_limit after {tokens} of {max_new_tokens} tokens")
    if answer["matched"]:
        judge.full(text)
    elif judge.prefix is not None:
        judge.prefix(text)
    return CUT


def check_typed_answer(answer: dict[str, Any], *, max_tokens: int, judge: Judge) -> str:
    """``/v1/completion/typed``: one choice whose text has the type when it finished."""
    (choice,) = answer["choices"]
    usage = answer["usage"]
    _require(answer["object"] == "text_completion", f"object {answer['object']!r}")
    _require(
        usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
        f"usage {usage}",
    )
    if choice["finish_reason"] == "stop":
        judge.full(choice["text"])
        return FINISHED
    _require(choice["finish_reason"] == "length", f"finish_reason {choice['finish_reason']!r}")
    _require(usage["completion_tokens"] == max_tokens, f"length after {usage}")
    return CUT


def check_route_error(answer: dict[str, Any], *, code: int) -> str:
    """The dedicated routes' documented error shape, ``{"error": "...", "code": N}``."""
    _require(
        set(answer) == {"error", "code"} and answer["code"] == code and answer["error"],
        f"error body {answer}",
    )
    return REFUSED


def check_openai_error(answer: dict[str, Any], *, param: str) -> str:
    """OpenAI's error object, naming the offending field."""
    error = answer["error"]
    _require(error["type"] == "invalid_request_error", f"error {error}")
    _require(error["param"] == param, f"error names {error['param']!r}, not {param!r}")
    return REFUSED


# -- one exchange ---------------------------------------------------------------


@dataclass
class Record:
    """What happened to one request."""

    scenario: str
    path: str
    stream: bool
    started_s: float  # since the start of the run
    status: int | None = None
    latency_s: float | None = None
    ttft_s: float | None = None  # streams: to the first event
    outcome: str = FAILED
    problem: str | None = None


def read_sse(lines: list[str]) -> dict[str, Any]:
    """A completion rebuilt from its server-sent events, after checking the stream's framing.

    Every event is ``data: ...``; the pieces of each choice come first (no
    text after its finish_reason), then exactly one event with no choices and
    the usage, then ``data: [DONE]`` and nothing more. An error event fails.
    """
    payloads = []
    for line in lines:
        if not line:
            continue
        _require(line.startswith("data: "), f"not an SSE data line: {line!r}")
        payloads.append(line[len("data: ") :])
    _require(
        bool(payloads) and payloads[-1] == "[DONE]",
        f"stream does not end with [DONE]: {payloads[-2:]}",
    )
    events = [json.loads(payload) for payload in payloads[:-1]]
    _require(bool(events), "no event before [DONE]")
    for event in events:
        _require("error" not in event, f"error event {event}")
    ids = {event["id"] for event in events}
    _require(len(ids) == 1, f"events carry several ids {ids}")
    _require(all(event["object"] == "text_completion" for event in events), "object")
    *pieces, last = events
    _require(last["choices"] == [] and "usage" in last, f"last event {last}")
    texts: dict[int, list[str]] = defaultdict(list)
    reasons: dict[int, str] = {}
    tool_calls: dict[int, list] = {}
    for event in pieces:
        _require(bool(event["choices"]) and "usage" not in event, f"piece event {event}")
        for choice in event["choices"]:
            index = choice["index"]
            _require(index not in reasons, f"choice {index} continued after its finish_reason")
            texts[index].append(choice["text"])
            if choice.get("finish_reason") is not None:
                reasons[index] = choice["finish_reason"]
                tool_calls[index] = choice.get("tool_calls")
    _require(set(texts) == set(reasons), f"choices {sorted(texts)} finished {sorted(reasons)}")
    choices = [
        {
            "index": index,
            "text": "".join(texts[index]),
            "finish_reason": reasons[index],
            "tool_calls": tool_calls[index],
        }
        for index in sorted(texts)
    ]
    return {"object": last["object"], "choices": choices, "usage": last["usage"]}


async def _exchange(client: httpx.AsyncClient, call: Call, record: Record, t0: float) -> Any:
    """Send the call and return its parsed answer; the status (and a stream's time to
    its first event) go into ``record``."""
    if not call.stream:
        response = await client.request(call.method, call.path, json=call.body)
        record.status = response.status_code
        return response.json()
    async with client.stream(call.method, call.path, json=call.body) as response:
        record.status = response.status_code
        if response.status_code != 200:
            await response.aread()
            return response.json()
        _require(
            response.headers.get("content-type", "").startswith("text/event-stream"),
            f"content-type {response.headers.get('content-type')!r}",
        )
        lines = []
        async for line in response.aiter_lines():
            if record.ttft_s is None and line.startswith("data: "):
                record.ttft_s = time.monotonic() - t0 - record.started_s
            lines.append(line)
    return read_sse(lines)


async def run_call(client: httpx.AsyncClient, call: Call, *, timeout_s: float, t0: float) -> Record:
    """One request, never longer than ``timeout_s``; every way it can go wrong is recorded."""
    record = Record(call.scenario, call.path, call.stream, time.monotonic() - t0)
    try:
        answer = await asyncio.wait_for(_exchange(client, call, record, t0), timeout_s)
        record.latency_s = time.monotonic() - t0 - record.started_s
        if record.status != call.expected_status:
            raise Rejected(f"status {record.status}, expected {call.expected_status}: {answer}")
        record.outcome = call.check(answer)
    except TimeoutError:
        record.problem = f"no complete answer within {timeout_s:.0f} s (hung or lost)"
    except Rejected as error:
        record.problem = str(error)[:600]
    except httpx.HTTPError as error:
        record.problem = f"transport: {type(error).__name__}: {error}"[:600]
    except (ValueError, KeyError, TypeError, IndexError) as error:  # unparsable or malformed
        record.problem = f"malformed answer: {type(error).__name__}: {error}"[:600]
    except Exception as error:  # anything else is this request's failure, not the run's end
        record.problem = f"unexpected: {type(error).__name__}: {error}"[:600]
    if record.problem is not None:
        record.outcome = FAILED
    return record


# -- process memory -------------------------------------------------------------
#
# VmRSS counts file-backed pages (torch's shared libraries alone are hundreds of MB),
# which the kernel evicts and faults back in as the page cache comes and goes on a
# shared machine. A leak grows anonymous (and shared-memory) pages, so that is the
# figure the comparison uses: "held" = VmRSS - RssFile = RssAnon + RssShmem.


def _group_members(pgid: int) -> list[int]:
    """Live processes in a process group, found by scanning /proc (as ``pgrep -g`` does)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            members.append(int(entry.name))
    return sorted(members)


def _label(pid: int) -> str:
    """A stable name: Triton's Python-backend stubs by the model they run."""
    try:
        argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"pid {pid}"
    program = Path(argv[0].decode(errors="replace")).name
    if program == "triton_python_backend_stub" and len(argv) > 1:
        model = Path(argv[1].decode(errors="replace")).parents[1].name  # <model>/<version>/model.py
        return f"stub:{model}"
    if "uvicorn" in (arg.decode(errors="replace") for arg in argv):
        return "frontend"
    return program


_RSS_FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


def rss_kib(pid: int) -> dict[str, int] | None:
    """VmRSS and its parts from /proc/<pid>/status, in KiB (None once the process is gone)."""
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return None
    found = dict(re.findall(r"^(\w+):\s+(\d+) kB$", status, re.MULTILINE))
    if not all(name in found for name in _RSS_FIELDS):
        return None
    return {name: int(found[name]) for name in _RSS_FIELDS}


def held_kib(figures: Mapping[str, int]) -> int:
    """Anonymous plus shared-memory pages: what a leak grows, whatever the page cache does."""
    return figures["RssAnon"] + figures["RssShmem"]


@dataclass(frozen=True)
class MemorySample:
    """The RSS figures of every process of the servers' process groups at one moment."""

    at_s: float
    processes: dict[str, dict[str, int]]  # label -> {VmRSS, RssAnon, RssFile, RssShmem}
    pids: dict[str, int]  # label -> pid


def sample_memory(group_leaders: Iterable[int], at_s: float) -> MemorySample:
    """Each server's process group: the frontend, tritonserver and its stub children."""
    processes: dict[str, dict[str, int]] = {}
    pids: dict[str, int] = {}
    for leader in group_leaders:
        for pid in _group_members(leader):
            figures = rss_kib(pid)
            if figures is None:
                continue
            label = _label(pid)
            if label in processes:
                label = f"{label} ({pid})"
            processes[label], pids[label] = figures, pid
    return MemorySample(at_s, processes, pids)


@dataclass(frozen=True)
class MemoryMark:
    """The memory at the end of one half of the run.

    ``held_kib`` is each process's lowest held memory over the last ``window_s``
    seconds before the mark: the allocator of a busy decoder swings by tens of MB
    from step to step (transient batch tensors), and the floor under those swings
    is what a leak raises. ``vm_rss_kib`` is the plain VmRSS at the mark, reported.
    """

    at_s: float
    window_s: float
    held_kib: dict[str, int]
    held_peak_kib: dict[str, int]
    vm_rss_kib: dict[str, int]
    pids: dict[str, int]

    @property
    def held_total_kib(self) -> int:
        return sum(self.held_kib.values())

    @property
    def vm_rss_total_kib(self) -> int:
        return sum(self.vm_rss_kib.values())


def memory_mark(samples: list[MemorySample], at_s: float, window_s: float) -> MemoryMark:
    """The mark at ``at_s`` from the samples taken in the window before it."""
    window = [s for s in samples if at_s - window_s < s.at_s <= at_s + 0.5]
    if not window:
        raise ValueError(f"no memory sample near {at_s} s")
    last = window[-1]
    held = {label: [held_kib(s.processes[label]) for s in window] for label in last.processes}
    return MemoryMark(
        at_s=last.at_s,
        window_s=window_s,
        held_kib={label: min(values) for label, values in held.items()},
        held_peak_kib={label: max(values) for label, values in held.items()},
        vm_rss_kib={label: figures["VmRSS"] for label, figures in last.processes.items()},
        pids=dict(last.pids),
    )


# -- the run ----------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A kind of request in the mix: how often it is drawn and how one is built."""

    name: str
    weight: int
    build: Callable[[random.Random], Call]


@dataclass
class LoadResult:
    """Everything the run observed."""

    clients: int
    duration_s: float
    max_requests: int
    elapsed_s: float = 0.0
    records: list[Record] = field(default_factory=list)
    samples: list[MemorySample] = field(default_factory=list)

    @property
    def cap_reached(self) -> bool:
        return len(self.records) >= self.max_requests

    def marks(self, window_s: float) -> dict[str, MemoryMark]:
        """The memory at the end of the first and of the second half."""
        return {
            "minute_1": memory_mark(self.samples, self.duration_s / 2, window_s),
            "minute_2": memory_mark(self.samples, self.duration_s, window_s),
        }


def _draw(rng: random.Random, scenarios: list[Scenario]) -> Scenario:
    return rng.choices(scenarios, weights=[scenario.weight for scenario in scenarios])[0]


async def run_load(
    base_url: str,
    api_key: str,
    scenarios: list[Scenario],
    *,
    clients: int,
    duration_s: float,
    max_requests: int,
    timeout_s: float,
    group_leaders: list[int],
    seed: int = 0,
    sample_every_s: float = 1.0,
) -> LoadResult:
    """``clients`` loops, each sending one request at a time until the deadline or the cap.

    Memory is sampled every ``sample_every_s`` until the deadline, the last
    sample at the deadline itself, while the clients are still busy: both
    halves end under the same load.
    """
    result = LoadResult(clients, duration_s, max_requests)
    t0 = time.monotonic()
    deadline = t0 + duration_s
    issued = 0

    async def client_loop(number: int, client: httpx.AsyncClient) -> None:
        nonlocal issued
        rng = random.Random(seed * 1_000_003 + number)
        while time.monotonic() < deadline and issued < max_requests:
            issued += 1
            call = _draw(rng, scenarios).build(rng)
            result.records.append(await run_call(client, call, timeout_s=timeout_s, t0=t0))

    async def sampler() -> None:
        tick = 0
        while True:
            now = time.monotonic() - t0
            result.samples.append(sample_memory(group_leaders, now))
            if now >= duration_s:
                return
            tick += 1
            await asyncio.sleep(max(0.0, min(tick * sample_every_s, duration_s) - now))

    # httpx's own keep-alive expiry (5 s): the frontend keeps idle connections
    # longer (75 s), so it never closes one just as a request goes out on it.
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=httpx.Timeout(timeout_s, connect=10.0),
        limits=limits,
        trust_env=False,  # local servers: never through a proxy from the environment
    ) as client:
        sampling = asyncio.ensure_future(sampler())
        await asyncio.gather(*(client_loop(number, client) for number in range(clients)))
        await sampling  # still running only if the cap ended the run early
    result.elapsed_s = time.monotonic() - t0
    return result


# -- the summary --------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _latencies(records: Iterable[Record], attribute: str = "latency_s") -> dict[str, float | None]:
    values = [getattr(r, attribute) for r in records if getattr(r, attribute) is not None]
    return {
        "count": len(values),
        "p50_s": percentile(values, 0.50),
        "p99_s": percentile(values, 0.99),
        "max_s": max(values, default=None),
    }


def summarize(result: LoadResult, marks: Mapping[str, MemoryMark]) -> dict[str, Any]:
    """A JSON-ready account of the run: counts, failures, latency, memory."""
    records = result.records
    by_scenario: dict[str, dict[str, Any]] = {}
    for name in sorted({record.scenario for record in records}):
        mine = [record for record in records if record.scenario == name]
        by_scenario[name] = {
            "path": mine[0].path,
            "requests": len(mine),
            "streamed": sum(record.stream for record in mine),
            "outcomes": dict(Counter(record.outcome for record in mine)),
            "statuses": dict(Counter(str(record.status) for record in mine)),
            "latency": _latencies(mine),
        }
    failures = [record for record in records if record.outcome == FAILED]
    memory = {
        name: {
            "at_s": round(mark.at_s, 1),
            "window_s": mark.window_s,
            "held_total_kib": mark.held_total_kib,
            "held_kib": mark.held_kib,
            "held_peak_kib": mark.held_peak_kib,
            "vm_rss_total_kib": mark.vm_rss_total_kib,
            "vm_rss_kib": mark.vm_rss_kib,
            "pids": mark.pids,
        }
        for name, mark in marks.items()
    }
    return {
        "clients": result.clients,
        "duration_s": result.duration_s,
        "elapsed_s": round(result.elapsed_s, 1),
        "max_requests": result.max_requests,
        "cap_reached": result.cap_reached,
        "requests": len(records),
        "requests_per_s": round(len(records) / result.elapsed_s, 1) if result.elapsed_s else None,
        "statuses": dict(Counter(str(record.status) for record in records)),
        "outcomes": dict(Counter(record.outcome for record in records)),
        "by_route": dict(Counter(f"{record.path} stream={record.stream}" for record in records)),
        "failures": len(failures),
        "failure_examples": [
            {"scenario": r.scenario, "status": r.status, "problem": r.problem}
            for r in failures[:20]
        ],
        "latency": {
            "all": _latencies(records),
            "streamed": _latencies(r for r in records if r.stream),
            "collected": _latencies(r for r in records if not r.stream),
            "stream_ttft": _latencies((r for r in records if r.stream), "ttft_s"),
        },
        "scenarios": by_scenario,
        "memory": memory,
        "memory_timeline_kib": [
            {"at_s": round(sample.at_s, 1), **sample.processes} for sample in result.samples
        ],
    }
