"""Rows whose masks are slow to fill go to the slow lane (``engine/slow_lane.py``):
on the real tiny model with real xgrammar, they give the outputs they give
in the batch, and the batch does not wait for them."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import jsonschema
import pytest
from engine_sinks import ListSink

from engine import slow_lane
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.metrics import EngineMetrics
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType, SamplingParams
from engine.request import GenerationRequest
from grammar_compiler import compile_json_schema, compile_regex

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["a", "bc"]}},
    },
    "required": ["id", "name", "tags"],
    "additionalProperties": False,
}


class SlowLaneCount(EngineMetrics):
    """Counts the tokens sampled after a slow-lane fill, as the metric does."""

    def __init__(self) -> None:
        self.tokens = 0

    def slow_lane_tokens(self, tokens: int) -> None:
        self.tokens += tokens


@pytest.fixture(scope="module")
def runner(tiny_model_dir: Path) -> ModelRunner:
    return ModelRunner.load(tiny_model_dir)


def _submit(
    engine: Engine,
    runner: ModelRunner,
    name: str,
    params: SamplingParams,
    constraint: Constraint | None = None,
) -> ListSink:
    sink = ListSink()
    engine.submit(
        GenerationRequest(
            request_id=name,
            prompt_ids=runner.tokenizer.encode(f"{name}: "),
            params=params,
            constraint=constraint or Constraint(),
            sink=sink,
        )
    )
    return sink


def _mixed_requests(engine: Engine, runner: ModelRunner) -> list[ListSink]:
    """Seeded and greedy, several choices, logprobs, jump-forward, a free row."""
    schema = Constraint(type=ConstraintType.JSON_SCHEMA, value=compile_json_schema(SCHEMA).value)
    regex = Constraint(type=ConstraintType.REGEX, value=compile_regex(r"([a-z]+ ?){3,6}\."))
    return [
        *(
            _submit(
                engine,
                runner,
                f"record {seed}",
                SamplingParams(max_tokens=48, seed=seed, temperature=1.0),
                schema,
            )
            for seed in range(3)
        ),
        _submit(engine, runner, "greedy", SamplingParams(max_tokens=48, temperature=0.0), schema),
        _submit(engine, runner, "choices", SamplingParams(max_tokens=24, n=2, seed=7), regex),
        _submit(
            engine,
            runner,
            "logprobs",
            SamplingParams(max_tokens=24, logprobs=2, seed=3, temperature=0.8),
            regex,
        ),
        _submit(engine, runner, "free", SamplingParams(max_tokens=24, seed=5)),
    ]


def test_rows_filled_in_the_slow_lane_give_the_outputs_they_give_in_the_batch(
    runner: ModelRunner,
) -> None:
    """Every constrained row counts as slow (a bar of 0, never fast again):
    each samples from kept logits once its own mask is ready, and the texts,
    logprobs and finish reasons equal those of the batch's fill."""
    results = {}
    for every_row_slow in (False, True):
        metrics = SlowLaneCount()
        engine = Engine(
            runner,
            GrammarCache(runner.tokenizer_info),
            max_batch_size=8,
            slow_mask_fill_s=0.0 if every_row_slow else slow_lane.SLOW_ROW_FILL_S,
            metrics=metrics,
        )
        engine.start()
        try:
            sinks = _mixed_requests(engine, runner)
            assert all(sink.done.wait(60) for sink in sinks)
        finally:
            engine.shutdown()
        assert all(sink.error is None for sink in sinks)
        results[every_row_slow] = [sink.choices(runner.tokenizer) for sink in sinks]
        if every_row_slow:
            assert metrics.tokens > 50  # the constrained rows did go through the lane
        else:
            assert metrics.tokens == 0
    assert results[True] == results[False]
    assert len(results[False][4]) == 2 and results[False][5][0][2]  # two choices; logprobs
    complete = [choices[0][0] for choices in results[False][:4] if choices[0][1] == "stop"]
    assert complete  # at least one JSON output ended by its schema, not the token limit
    for text in complete:
        jsonschema.validate(json.loads(text), SCHEMA)


def test_the_batch_goes_on_while_a_slow_rows_mask_fills(
    runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow row's mask held back (its fill blocked): the other requests
    finish meanwhile, the engine does not step while only the held row is
    left, and once released the row ends as it would have."""
    released = threading.Event()
    fill = slow_lane.SlowLane._fill

    def held_fill(self, matcher, mask, lead):
        assert released.wait(30)
        return fill(self, matcher, mask, lead)

    monkeypatch.setattr(slow_lane.SlowLane, "_fill", held_fill)
    steps: list[float] = []
    engine = Engine(
        runner, GrammarCache(runner.tokenizer_info), max_batch_size=8, slow_mask_fill_s=0.0
    )
    engine._metrics.step_finished = lambda seconds, model_seconds: steps.append(seconds)  # type: ignore[method-assign]
    engine.start()
    try:
        pattern = r"[a-z]{4,8}( [a-z]{2,5}){2}"
        slow = _submit(
            engine,
            runner,
            "slow",
            SamplingParams(max_tokens=30, temperature=0.0),
            Constraint(type=ConstraintType.REGEX, value=compile_regex(pattern)),
        )
        others = [
            _submit(engine, runner, f"free {i}", SamplingParams(max_tokens=20, seed=i))
            for i in range(3)
        ]
        assert all(sink.done.wait(60) for sink in others)
        assert not slow.done.is_set()
        time.sleep(0.1)  # the step that ended them is recorded after their last output
        steps_while_held = len(steps)
        time.sleep(0.3)
        assert len(steps) == steps_while_held  # waiting on the mask is not a step
        released.set()
        assert slow.done.wait(60)
    finally:
        released.set()
        engine.shutdown()
    assert slow.error is None
    assert all(sink.error is None for sink in others)
    assert re.fullmatch(pattern, slow.choice_texts(runner.tokenizer)[0])
