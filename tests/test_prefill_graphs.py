"""Short prompts' prefill through the static step (a CUDA graph's, run eagerly
on the CPU here) gives the eager prefill's logits and a cache the running
batch decodes from exactly as from the eager one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import prefill_graphs
from engine.kv_batch import RunningBatch
from engine.model_runner import ModelRunner
from engine.prefill_graphs import LENGTH_BUCKETS, ROW_BUCKETS, PrefillGraphs

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def runners(tiny_model_dir: Path) -> tuple[ModelRunner, ModelRunner]:
    """An eager runner and one whose prefills go through the static step."""
    eager, static = ModelRunner.load(tiny_model_dir), ModelRunner.load(tiny_model_dir)
    static.model.prefill_graphs = PrefillGraphs(static.model, capture=False)
    return eager, static


def _prompts(runner: ModelRunner, *lengths: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(sum(lengths))
    return [
        torch.randint(3, runner.vocab_size, (length,), generator=generator).tolist()
        for length in lengths
    ]


@pytest.mark.parametrize("lengths", [(5,), (3, 17), (1, 30, 12), (40, 2, 7, 64)])
def test_logits_and_decoding_after_match_the_eager_prefill(
    runners: tuple[ModelRunner, ModelRunner], lengths: tuple[int, ...]
) -> None:
    eager, static = runners
    prompts = _prompts(eager, *lengths)
    graphs = static.model.prefill_graphs
    graphs._steps.clear()
    results = [runner.prefill_many(prompts) for runner in (eager, static)]
    assert list(graphs._steps) == [PrefillGraphs.bucket(len(lengths), max(lengths))]
    (eager_logits, _, eager_mask), (static_logits, static_cache, static_mask) = results
    torch.testing.assert_close(static_logits, eager_logits, atol=TOLERANCE, rtol=TOLERANCE)
    assert torch.equal(static_mask, eager_mask)
    assert static_cache.get_seq_length() == max(lengths)
    feeds = [[5], [6, 7], [8], [9]][: len(prompts)]
    decoded = []
    for runner, (_, cache, mask) in zip((eager, static), results, strict=True):
        batch = RunningBatch()
        batch.append_rows(cache, mask, [1] * len(prompts))
        decoded.append(runner.decode(batch, feeds))
    torch.testing.assert_close(decoded[1], decoded[0], atol=TOLERANCE, rtol=TOLERANCE)


def test_the_cache_is_the_callers_own(runners: tuple[ModelRunner, ModelRunner]) -> None:
    """The next prefill of the same bucket rewrites the step's storage, not
    an earlier prefill's cache or logits."""
    _, static = runners
    first, second = _prompts(static, 6), _prompts(static, 7)
    logits, cache, _ = static.prefill_many(first)
    kept = (logits.clone(), cache.layers[0].keys.clone())
    static.prefill_many(second)
    assert torch.equal(logits, kept[0]) and torch.equal(cache.layers[0].keys, kept[1])


def test_more_or_longer_prompts_than_the_buckets_run_eagerly(
    runners: tuple[ModelRunner, ModelRunner],
) -> None:
    assert PrefillGraphs.bucket(3, 17) == (4, 32)
    assert PrefillGraphs.bucket(ROW_BUCKETS[-1] + 1, 4) is None
    assert PrefillGraphs.bucket(1, LENGTH_BUCKETS[-1] + 1) is None
    eager, static = runners
    graphs = static.model.prefill_graphs
    graphs._steps.clear()
    prompts = _prompts(static, *([3] * (ROW_BUCKETS[-1] + 1)))
    static_logits = static.prefill_many(prompts)[0]
    assert not graphs._steps
    torch.testing.assert_close(static_logits, eager.prefill_many(prompts)[0])
    with pytest.raises(ValueError, match="no prefill bucket"):
        graphs.run(torch.zeros(1, LENGTH_BUCKETS[-1] + 1, dtype=torch.long), torch.ones(1, 1))


def test_a_failed_capture_leaves_prefills_eager(
    runners: tuple[ModelRunner, ModelRunner],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A capture that fails (out of GPU memory, say) is logged, and this and
    every later prefill runs eagerly instead of failing the requests."""
    eager, _ = runners
    graphs = PrefillGraphs(eager.model, capture=False)
    graphs._capture = True  # as on CUDA
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: None)

    def fail(run, pool):
        raise RuntimeError("CUDA error: out of memory")

    monkeypatch.setattr(prefill_graphs, "capture_graph", fail)
    prompts = _prompts(eager, 4, 9)
    longest = max(map(len, prompts))
    ids = torch.tensor([[0] * (longest - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts])
    logits, _ = graphs.run(ids, mask)
    torch.testing.assert_close(
        logits, eager.prefill_many(prompts)[0], atol=TOLERANCE, rtol=TOLERANCE
    )
    assert "prefilling eagerly from now on" in caplog.text
    assert not graphs._capture and graphs.captures == 0
