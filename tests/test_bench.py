"""The benchmark's pure parts: statistics, target evaluation, report and plot
writing, and the mask-fill bench's walks over a real tokenizer.

No servers and no timing assertions: the served measurements are fakes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from bench import stats
from bench.json_grammar import JsonGrammar, raw_compiler, tokenizer_compiler
from bench.load import split_among
from bench.mask_fill import SCHEMAS, compiler_and_guard, measure
from bench.pattern_fill import CASES, fill_times, guard_cost
from bench.plots import write_plots
from bench.report import render_summary, write_json, write_summary
from bench.served_cpu import process_label
from bench.targets import TARGETS, dig, evaluate
from bench.timing import RequestTiming, request_summary
from bench.workload import (
    USER_JSON_SCHEMA,
    RequestSpec,
    constraint_kinds,
    json_schema_constraint,
    merged_schema,
    requests,
    with_nonce,
)
from grammar_compiler import compile_json_schema


@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_percentile_matches_numpy(q: float) -> None:
    values = [5.0, 1.0, 9.5, 3.25, 7.0, 2.0, 8.0]
    assert stats.percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_statistics_of_nothing_are_missing_not_errors() -> None:
    assert stats.percentile([], 50) is None
    assert stats.mean([]) is None
    assert stats.summarize([])["p99"] is None
    assert stats.ratio(None, 2.0) is None
    assert stats.ratio(1.0, 0.0) is None
    assert stats.difference(3.0, None) is None
    assert stats.tpot(0.0, 1.0, 1) is None
    assert stats.throughput(10, 0.0) is None


def test_summarize_scales_seconds_to_milliseconds() -> None:
    summary = stats.summarize([0.001, 0.003], 1e3)
    assert summary["n"] == 2
    assert summary["mean"] == pytest.approx(2.0)
    assert summary["max"] == pytest.approx(3.0)


def test_tpot_leaves_the_first_token_out() -> None:
    assert stats.tpot(first_token_s=1.0, last_token_s=1.63, tokens=64) == pytest.approx(0.01)


def test_token_intervals_divide_by_tokens_and_keep_to_the_window() -> None:
    arrivals = [0.0, 0.1, 0.3, 0.4, 0.5]
    tokens = [1, 2, 4, 5, 6]  # the third response carried two tokens
    assert stats.token_intervals(arrivals, tokens, 0.0, 0.45) == pytest.approx([0.1, 0.1, 0.1])
    assert stats.token_intervals(arrivals, tokens, 0.3, 1.0) == pytest.approx([0.1, 0.1])


def test_window_counts_tokens_that_arrived_in_it_and_the_longest_stall() -> None:
    arrivals = [0.0, 0.1, 0.2, 1.2, 1.21, 1.22]
    tokens = [1, 2, 3, 4, 5, 6]
    assert stats.tokens_in_window(arrivals, tokens, 0.05, 1.25) == 5
    assert stats.tokens_in_window(arrivals, tokens, 0.3, 1.0) == 0
    assert stats.longest_gap(arrivals, 0.05, 1.25) == pytest.approx(1.0)
    assert stats.longest_gap([], 0.0, 0.5) == pytest.approx(0.5)


def _timing(sent: float, arrivals: list[float], tokens: list[int], **kw) -> RequestTiming:
    return RequestTiming("t", sent, arrivals, tokens, finish_reason="length", **kw)


def test_request_timing_figures() -> None:
    timing = _timing(10.0, [10.2, 10.3, 10.5], [1, 2, 3])
    assert timing.ttft == pytest.approx(0.2)
    assert timing.latency == pytest.approx(0.5)
    assert timing.tpot == pytest.approx(0.15)
    assert timing.output_tokens == 3
    failed = RequestTiming("t", 0.0, error="boom")
    assert not failed.ok and failed.tpot is None and failed.ttft is None


def test_request_summary_counts_errors_and_throughput() -> None:
    timings = [
        _timing(0.0, [0.1, 0.2], [1, 2]),
        _timing(0.0, [0.1, 0.3], [1, 2]),
        RequestTiming("t", 0.0, error="refused"),
    ]
    summary = request_summary(timings, wall_s=0.5)
    assert summary["requests"] == 3 and summary["errors"] == 1
    assert summary["errors_sample"] == ["refused"]
    assert summary["output_tokens_per_s"] == pytest.approx(8.0)
    assert summary["tpot_ms"]["mean"] == pytest.approx(150.0)


def test_split_among_deals_round_robin() -> None:
    specs = [RequestSpec(str(i), {}) for i in range(5)]
    workers = split_among(specs, 2)
    assert [[s.prompt for s in w] for w in workers] == [["0", "2", "4"], ["1", "3"]]
    assert len(split_among(specs[:1], 16)) == 1


def test_every_kind_gets_the_same_prompts_and_seeds() -> None:
    kinds = constraint_kinds()
    assert {c.kind for c in kinds.values()} == {"none", "regex", "json_schema", "ebnf"}
    batches = [requests(c, 10, 64) for c in kinds.values()]
    for batch in batches[1:]:
        assert [(s.prompt, s.params) for s in batch] == [(s.prompt, s.params) for s in batches[0]]
    params = batches[0][0].params
    assert params["ignore_eos"] is True and params["stop_after_match"] is False


def test_fresh_schemas_give_fresh_grammars() -> None:
    base = json_schema_constraint(USER_JSON_SCHEMA, "base").value
    one = json_schema_constraint(with_nonce(USER_JSON_SCHEMA, "aa11"), "one").value
    two = json_schema_constraint(with_nonce(USER_JSON_SCHEMA, "bb22"), "two").value
    assert len({base, one, two}) == 3
    parts = {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}
    merged = merged_schema(parts, "cc33")
    assert merged["required"] == ["p_cc33"]
    assert "p_cc33" in json_schema_constraint(merged, "m").value


def _fake_report() -> dict:
    def level(tokens_per_s: float, tpot_ms: float) -> dict:
        return {
            "output_tokens_per_s": tokens_per_s,
            "tpot_ms": {"mean": tpot_ms, "p50": tpot_ms, "p99": tpot_ms * 2},
            "ttft_ms": {"p50": 20.0, "p99": 40.0},
            "latency_ms": {"p50": 700.0, "p99": 900.0},
            "tokens_per_request": {"min": 64},
            "requests": 16,
            "errors": 0,
        }

    kinds = {
        name: {
            "label": name,
            "constraint_type": name,
            "by_concurrency": {"1": level(100.0, 10.0), "16": level(900.0, 17.0 * factor)},
        }
        for name, factor in (("none", 1.0), ("json_schema", 1.02))
    }
    kinds["json_schema"]["by_concurrency"]["1"]["latency_ms"]["p50"] = 660.0
    return {
        "run": {"mode": "quick", "duration_s": 12.0, "load_average_at_end": [1.0, 1.0, 1.0]},
        "settings": {"max_tokens": 64},
        "machine": {"cpu_model": "Test CPU", "cpu_cores": 2, "gpus": [], "packages": {}},
        "model": {"name": "demo", "parameters": 3_950_848, "layers": 4, "hidden_size": 256},
        "errors": [],
        "llama_cpp": {"measured": False, "reason": "llama-server is not available"},
        "tpot": {
            "kinds": kinds,
            "tpot_ratio_median_of_rounds": {"json_schema": {"1": 1.2, "16": 1.02}},
            "baseline": {
                "json_schema": {"latency_ms": {"p50": 600.0}, "output_tokens_per_s": 120.0}
            },
        },
        "sweep": {
            "by_concurrency": {
                "1": level(100.0, 10.0),
                "4": level(350.0, 11.0),
                "16": level(700.0, 20.0),
                "64": level(900.0, 60.0),
            }
        },
        "compile": {
            "requests": {"cached_extra_ms": 0.4, "no_grammar_ms": {"p50": 9.0}},
            "under_load": {
                "tpot_ratio": 1.5,
                "streams": 8,
                "heavy_schema_parts": ["a"],
                "during_compile": {"tpot_ms": 30.0, "tokens": 100},
                "without_compile": {"tpot_ms": 20.0, "tokens": 150},
            },
        },
        "frontend": {"overhead_p50_ms": 3.0, "http_ms": {"p50": 12.0}},
        "perf_analyzer": {"available": False, "error": "no binary"},
    }


def test_targets_pass_fail_and_not_measured() -> None:
    rows = {row["target"]: row for row in evaluate(_fake_report())}
    assert len(rows) == len(TARGETS) == 8
    assert rows["constrained TPOT / unconstrained TPOT, JSON schema, c16"]["status"] == "pass"
    assert rows["throughput c16 / c1"]["measured"] == pytest.approx(7.0)
    assert rows["throughput c16 / c1"]["status"] == "fail"
    assert rows["single request latency server / hand-written baseline"]["measured"] == (
        pytest.approx(1.1)
    )
    assert rows["single request latency server / hand-written baseline"]["status"] == "pass"
    assert rows["throughput c16 server / baseline"]["measured"] == pytest.approx(7.5)
    assert rows["cached grammar extra latency vs no grammar"]["status"] == "pass"
    assert rows["running requests' TPOT while a heavy schema compiles / without"]["status"] == (
        "fail"
    )
    assert rows["frontend overhead per request (p50)"]["status"] == "fail"
    llama = rows["throughput c64 server / llama.cpp"]
    assert llama["status"] == "not measured" and "llama-server" in llama["reason"]


def test_a_missing_phase_is_not_measured_not_a_crash() -> None:
    report = _fake_report()
    del report["frontend"]
    row = next(r for r in evaluate(report) if r["target"].startswith("frontend"))
    assert row["status"] == "not measured" and row["measured"] is None
    assert dig(report, "frontend", "overhead_p50_ms") is None


def test_report_files_carry_tables_and_the_machine(tmp_path: Path) -> None:
    report = _fake_report()
    report["targets"] = evaluate(report)
    report["plots"] = write_plots(report, tmp_path)
    write_json(report, tmp_path / "report.json")
    write_summary(report, tmp_path / "summary.md")
    assert json.loads((tmp_path / "report.json").read_text())["model"]["layers"] == 4
    summary = (tmp_path / "summary.md").read_text()
    assert summary == render_summary(report)
    headings = ("Targets", "TPOT by constraint", "Throughput vs concurrency", "Under load")
    for heading in (*headings, "perf_analyzer"):
        assert heading in summary
    assert "Not available on this machine: no binary" in summary
    # The machine and the model's size next to every table.
    captions = summary.count("Test CPU (2 cores), no GPU")
    assert captions >= len(re.findall(r"^## ", summary, flags=re.M)) - 1
    assert "4.0M params, 4 layers x 256" in summary
    assert set(report["plots"]) == {
        "throughput_vs_concurrency.png",
        "tpot_by_constraint.png",
        "latency_percentiles.png",
    }
    for name in report["plots"]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_process_that_ends_between_readings_is_not_subtracted_whole() -> None:
    from bench.noise import _own_used

    # pid 7 (a straggler with 5000 ticks of lifetime) ended; pid 8 started.
    assert _own_used({1: 100, 7: 5000}, {1: 130, 8: 20}) == 50


def test_noise_meter_reports_every_measured_phase() -> None:
    from bench.noise import NoiseMeter

    meter = NoiseMeter()
    if not meter.available:
        pytest.skip("no /proc")
    meter.mark("a")
    meter.mark(NoiseMeter.UNMEASURED)
    meter.mark("b")
    meter.close()
    cores = meter.foreign_cores()
    assert set(cores) <= {"a", "b"}
    assert all(value >= 0 for value in cores.values())


def test_mask_fill_walks_every_bench_schema_to_its_end(tiny_model_dir: Path) -> None:
    """Each walk is a real xgrammar matcher over the tiny model's tokenizer,
    guarded as the decoder guards it; a dead end or a refused token raises."""
    compiler, guard = compiler_and_guard(tiny_model_dir)
    for schema in SCHEMAS.values():
        result = measure(compiler, guard, schema, walks=2, seed=0)
        assert result["fills"] >= 2 * 8  # every schema needs several tokens
        assert 0 < result["fill_ms_p50"] <= result["fill_ms_p99"] <= result["fill_ms_max"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_pattern_fill_walks_both_spellings_along_the_same_text(
    tiny_model_dir: Path, case: dict
) -> None:
    """Each spelling takes every character of the case's text (else it raises),
    and a fill is timed after each."""
    compiler = tokenizer_compiler(tiny_model_dir)
    written = len(case["text"]) + (case["kind"] == "pattern")
    for spelling in ("before", "after"):
        times = fill_times(compiler, case, spelling, repeat=2)
        assert len(times) == written and all(value > 0 for value in times)


def test_pattern_fill_times_the_unique_dates_guard() -> None:
    cost = guard_cost(taken=5, repeat=3)
    assert cost["taken"] == 5 and cost["first_call_us"] > 0 and cost["later_call_us"] > 0


@pytest.mark.parametrize(
    ("command", "is_client", "in_frontend_group", "label"),
    [
        (
            ["/opt/triton/backends/python/triton_python_backend_stub",
             "/srv/model_repository/constrained_decoder/1/model.py", "shm_region_1"],
            False, False, "stub: constrained_decoder",
        ),
        (
            ["/opt/tritonserver/bin/tritonserver", "--model-repository=/srv/repo"],
            False, False, "tritonserver",
        ),
        ([".venv/bin/python", "-m", "frontend"], False, True, "frontend"),
        ([".venv/bin/python", "-m", "bench.served_cpu"], True, False, "load client (this process)"),
        (["/bin/sh", "-c", "sleep 1"], False, False, "other"),
    ],
)  # fmt: skip
def test_served_cpu_names_each_process_of_the_stack(
    command: list[str], is_client: bool, in_frontend_group: bool, label: str
) -> None:
    assert process_label(command, is_client=is_client, in_frontend_group=in_frontend_group) == label


def test_stubborn_walks_come_back_to_the_lowest_token_and_stay_sound() -> None:
    """A stubborn walk mostly takes the lowest token allowed (a space, here),
    so a unique array's items start alike again and again; the decoder's
    guard must still keep them apart."""
    array = {"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True}
    array |= {"minItems": 5, "maxItems": 5}
    value = compile_json_schema(array, strict=True, decoder_guard=True).value
    texts, unfinished = JsonGrammar(raw_compiler(), value).walks(6, seed=3, stubborn=6)
    assert unfinished == 0 and len(texts) == 6
    for text in texts:
        items = json.loads(text)
        assert len(set(items)) == 5 and " " in items, text
