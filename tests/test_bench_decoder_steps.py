"""Reading the served decoder's step counters from a Prometheus exposition."""

from __future__ import annotations

import pytest

from bench.decoder_steps import StepCounters, parse_step_counters, step_share

EXPOSITION = """\
# HELP ct_decoder_steps_total Decode steps
# TYPE ct_decoder_steps_total counter
ct_decoder_steps_total 120
# HELP ct_decoder_step_seconds_total Time in decode steps, by part
# TYPE ct_decoder_step_seconds_total counter
ct_decoder_step_seconds_total{part="model"} 0.5
ct_decoder_step_seconds_total{part="engine"} 0.1
# HELP nv_inference_count Number of inferences performed
# TYPE nv_inference_count counter
nv_inference_count{model="constrained_decoder",version="1"} 7
"""


def test_the_step_counters_are_read_by_name_and_part() -> None:
    assert parse_step_counters(EXPOSITION) == StepCounters(steps=120, model_s=0.5, engine_s=0.1)


def test_a_decoder_that_has_not_stepped_reads_as_zeros() -> None:
    assert parse_step_counters("") == StepCounters(0, 0, 0)


def test_the_share_is_taken_over_the_steps_between_two_readings() -> None:
    share = step_share(StepCounters(100, 0.4, 0.05), StepCounters(300, 0.8, 0.12))
    assert share["steps"] == 200
    assert share["model_ms"] == pytest.approx(2.0)
    assert share["step_ms"] == pytest.approx(2.35)
    assert share["step_over_model"] == pytest.approx(0.47 / 0.4)


def test_no_step_between_readings_gives_no_ratio() -> None:
    same = StepCounters(5, 0.1, 0.01)
    assert step_share(same, same)["step_over_model"] is None
