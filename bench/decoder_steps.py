"""The served decoder's own account of its steps, from Triton's metrics port.

The decoder counts its steps and splits their time into the model's forward
calls and everything else (``ct_decoder_steps_total``,
``ct_decoder_step_seconds_total{part=...}``). Read before and after a load
phase, the difference is the served step against the model's part of it at
that load: the issue's "served step / forward" taken inside the running
service, with Triton's IPC, the response thread and the frontend sharing the
machine, rather than in a separate process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from engine.metric_buffer import DEFAULT_INTERVAL_S

# The decoder sends its metrics every DEFAULT_INTERVAL_S: wait a little longer.
METRIC_DELAY_S = DEFAULT_INTERVAL_S + 0.1


@dataclass(frozen=True)
class StepCounters:
    steps: float
    model_s: float
    engine_s: float


def parse_step_counters(exposition: str) -> StepCounters:
    """The decoder's step counters in a Prometheus exposition (zeros before
    its first step: Triton lists a counter only once it has a value)."""
    values = {"steps": 0.0, "model": 0.0, "engine": 0.0}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "ct_decoder_steps_total":
                values["steps"] = sample.value
            elif sample.name == "ct_decoder_step_seconds_total":
                values[sample.labels.get("part", "")] = sample.value
    return StepCounters(values["steps"], values["model"], values["engine"])


def read_step_counters(metrics_url: str) -> StepCounters:
    """The counters once everything sent before this call has arrived."""
    time.sleep(METRIC_DELAY_S)
    return parse_step_counters(httpx.get(metrics_url, timeout=10).text)


def step_share(before: StepCounters, after: StepCounters) -> dict:
    """Mean step and model time over the steps between two readings, and
    their ratio (None where no step ran)."""
    steps = after.steps - before.steps
    model_s = after.model_s - before.model_s
    step_s = model_s + after.engine_s - before.engine_s
    if steps <= 0 or model_s <= 0:
        return {"steps": steps, "step_ms": None, "model_ms": None, "step_over_model": None}
    return {
        "steps": steps,
        "step_ms": step_s * 1000 / steps,
        "model_ms": model_s * 1000 / steps,
        "step_over_model": step_s / model_s,
    }
