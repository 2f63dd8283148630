"""The peers benchmark's pure parts: targets from a report, the summary, the
workload's promise of 64 tokens, and the GGUF converter's tokenizer rule.
(The servers themselves are run by ``python -m bench.peers``, never in CI:
setting the peers up takes tens of minutes.)"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bench.peers.gguf_convert import _splits_like_gpt2
from bench.peers.summary import render, step_targets, targets
from bench.peers.workload import MAX_TOKENS, SCHEMA


def _engines(ours: dict[str, float], llama: dict[str, float], vllm: dict[str, float]) -> dict:
    def run(figures: dict[str, float]) -> dict:
        return {
            "startup_s": 1.0,
            "rss_mb": 100.0,
            "by_concurrency": {c: {"tokens_per_s": v, "cycles": []} for c, v in figures.items()},
        }

    return {"this": run(ours), "llama-server": run(llama), "vllm": run(vllm)}


def test_targets_divide_ours_by_each_peer_and_apply_the_issue_floors() -> None:
    engines = _engines({"1": 600, "8": 2000}, {"1": 1000, "8": 2500}, {"1": 300, "8": 1000})
    rows = {(r["peer"], r["concurrency"]): r for r in targets(engines)}
    assert set(rows) == {("llama-server", 1), ("llama-server", 8), ("vllm", 1), ("vllm", 8)}
    assert rows["llama-server", 1]["ratio"] == pytest.approx(0.6)
    assert rows["llama-server", 1]["met"]  # floor 0.5 at c=1
    assert not rows["llama-server", 8]["met"]  # 0.8 < 1.0
    assert rows["vllm", 1]["met"] and rows["vllm", 8]["met"]  # 2.0 >= 1.5


def test_a_peer_not_run_has_no_target_rows() -> None:
    engines = _engines({"1": 600}, {"1": 1000}, {})
    del engines["vllm"]
    assert [r["peer"] for r in targets(engines)] == ["llama-server"]


def test_summary_tables_every_engine_and_marks_missed_targets() -> None:
    engines = _engines({"1": 600, "8": 2000}, {"1": 1000, "8": 2500}, {"1": 300, "8": 1000})
    report = {
        "machine": {"cpu_model": "cpu", "cpu_cores": 2, "gpus": [], "packages": {}},
        "model": {"name": "demo"},
        "workload": {"max_tokens": 64, "rounds": 5, "cycles": 2, "concurrency": [1, 8]},
        "engines": engines,
        "targets": targets(engines),
        "foreign_cpu_cores": {"this c=1": 0.1},
    }
    text = render(report)
    assert "| this | 600 | 2000 | 1.0 | 100 |" in text
    assert "| this / llama-server at c=8 | 0.80 | ≥ 1.0 | **no** |" in text
    assert "median over cycles" in text


def test_no_schema_instance_fits_in_the_token_budget() -> None:
    """Each item costs at least two tokens ('"up"' and a comma), so 40 items cannot
    fit in 64 tokens: no engine may stop early with a finished document."""
    shortest = {"id": 0, "name": "", "active": True, "tags": ["up"] * 40}
    jsonschema.validate(shortest, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(shortest | {"tags": ["up"] * 39}, SCHEMA)
    assert len(json.dumps(shortest["tags"]).split(",")) > MAX_TOKENS // 2


@pytest.mark.parametrize(
    ("pre_tokenizer", "gpt2"),
    [
        ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}, True),
        ({"type": "ByteLevel", "use_regex": False}, False),
        ({"type": "Sequence", "pretokenizers": []}, False),
        (None, False),
    ],
)
def test_only_gpt2_style_splitting_is_told_gpt2(
    tmp_path: Path, pre_tokenizer: dict | None, gpt2: bool
) -> None:
    (tmp_path / "tokenizer.json").write_text(json.dumps({"pre_tokenizer": pre_tokenizer}))
    assert _splits_like_gpt2(tmp_path) is gpt2


def test_the_served_step_over_model_time_is_judged_against_its_ceiling() -> None:
    engines = _engines({"1": 600, "8": 2000, "32": 3000}, {}, {})
    for c, ratio in (("1", 1.4), ("8", 1.12), ("32", 1.3)):
        engines["this"]["by_concurrency"][c]["step_over_model"] = ratio
    rows = {row["concurrency"]: row for row in step_targets(engines)}
    assert set(rows) == {8, 32}  # the issue's ceiling is for c=8 and c=32
    assert rows[8]["met"] and not rows[32]["met"]
    report = {
        "machine": {"cpu_model": "cpu", "cpu_cores": 2, "gpus": [], "packages": {}},
        "model": {"name": "demo"},
        "workload": {"max_tokens": 64, "rounds": 5, "cycles": 1, "concurrency": [1, 8, 32]},
        "engines": engines,
        "targets": [],
        "step_targets": step_targets(engines),
    }
    text = render(report)
    assert "| this, served step / model time at c=32 | 1.30 | ≤ 1.15 | **no** |" in text
    assert "step / model time c=1 1.40, c=8 1.12, c=32 1.30." in text
