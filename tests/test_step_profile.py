"""The step profiler's accounting, one short profile on the tiny model, and
the untimed step / model ratio."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.step_profile import ExclusiveTimer, profile
from bench.step_ratio import measure
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType


def test_a_nested_part_counts_once() -> None:
    timer = ExclusiveTimer()
    inner = timer.wrap(lambda: time.sleep(0.02), "inner")
    outer = timer.wrap(lambda: (time.sleep(0.02), inner()), "outer")
    outer()
    assert 0.015 < timer.totals["inner"] < 0.2
    assert 0.015 < timer.totals["outer"] < timer.totals["outer"] + timer.totals["inner"]
    # The outer part's own time excludes the inner sleep: both are ~20 ms.
    assert timer.totals["outer"] < 2.5 * timer.totals["inner"]


def test_a_constrained_profile_accounts_for_the_whole_step(tiny_model_dir: Path) -> None:
    runner = ModelRunner.load(tiny_model_dir)
    digits = Constraint(type=ConstraintType.REGEX, value="[0-9]{40}")
    result = profile(runner, digits, concurrency=4, steps=10, max_tokens=8)
    parts = result["parts_ms_mean"]
    assert parts["forward"] > 0 and parts["sample"] > 0 and "mask_wait" in parts
    assert abs(sum(parts.values()) - result["step_ms_mean"]) < 1e-3
    assert parts["prompt_forward"] > 0  # every request's prompt ran while measuring
    assert 1.0 < result["step_over_model"] < result["step_over_forward"]
    assert result["mask_fill_ms_mean_overlapped"] > 0


def test_the_untimed_step_ratio_reads_the_engines_own_step_figures(tiny_model_dir: Path) -> None:
    """The peers workload on the tiny model: every measured step reported,
    the model a part of each, tokens flowing."""
    runner = ModelRunner.load(tiny_model_dir)
    result = measure(runner, concurrency=4, steps=12)
    assert result["steps"] == 12
    assert 0 < result["model_ms_mean"] < result["step_ms_mean"]
    assert result["step_over_model"] == pytest.approx(
        result["step_ms_mean"] / result["model_ms_mean"]
    )
    assert result["tokens_per_s"] > 0
