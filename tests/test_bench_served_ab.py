"""The served A/B bench's arithmetic and the environment that points a stack at a tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.served_ab import compare
from bench.servers import _code_from


def test_paired_ratios_see_a_change_through_the_machines_drift() -> None:
    # The machine slows down 3x over the run; the candidate is 10% faster in every pair.
    baseline = [1000.0 / (1 + i / 10) for i in range(21)]
    candidate = [b * 1.1 for b in baseline]
    result = compare(baseline, candidate)
    assert result["paired_ratio"] == {"p25": 1.1, "p50": 1.1, "p75": 1.1}
    assert result["candidate_over_baseline"] == pytest.approx(1.1, abs=1e-3)
    assert result["baseline_tokens_per_s"] == round(1000.0 / 2)


def test_pairs_must_match() -> None:
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0])


def test_a_stack_runs_its_trees_code_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert _code_from(tmp_path)["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "/elsewhere"]
    monkeypatch.delenv("PYTHONPATH")
    assert _code_from(tmp_path)["PYTHONPATH"] == str(tmp_path)
