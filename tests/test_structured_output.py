"""The CPU mask application agrees with xgrammar's own kernel."""

from __future__ import annotations

import threading
import time

import pytest
import torch
import xgrammar as xgr

from engine.shared_fill import SharedFill
from engine.slow_lane import SLOW_ROW_FILL_S
from engine.structured_output import (
    FILL_TIME_SMOOTHING,
    INLINE_FILL_LIMIT,
    POOLED_FILLS_BETWEEN_MEASURES,
    SHARED_FILL_ABOVE_S,
    StructuredOutputs,
)

VOCAB = 32 * 40 + 13  # the last bitmask word is partly used


class _Row:
    """Stands for a matcher where the fill is faked (a slow one is referred to weakly)."""


def _outputs(rows: int) -> StructuredOutputs:
    return StructuredOutputs(
        None,  # type: ignore[arg-type]  # no grammar is compiled here
        vocab_size=VOCAB,
        eos_token_ids=[0],
        token_bytes=[b"x"] * VOCAB,
        encode=lambda text: [],
        max_batch_size=rows,
        mask_threads=0,
    )


@pytest.mark.parametrize("constrained_rows", [[0, 1, 2, 3], [1, 3], [2]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_masks_equal_xgrammars_kernel(constrained_rows: list[int], dtype: torch.dtype) -> None:
    outputs = _outputs(4)
    generator = torch.Generator().manual_seed(len(constrained_rows))
    outputs._bitmask.copy_(
        torch.randint(-(2**31), 2**31 - 1, outputs._bitmask.shape, generator=generator)
    )
    outputs._bitmask[2, :] = 0  # nothing allowed
    outputs._bitmask[3, :] = -1  # everything allowed
    logits = torch.randn(4, VOCAB, generator=generator).to(dtype)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, outputs._bitmask, indices=constrained_rows)
    outputs.apply_masks(logits, constrained_rows)
    assert torch.equal(logits, expected)
    assert torch.isinf(logits[constrained_rows]).any()


@pytest.mark.parametrize("constrained_rows", [[0, 1], [1]])
def test_a_later_group_of_rows_is_masked_by_its_own_bitmask_rows(
    constrained_rows: list[int],
) -> None:
    """The joining prompts' logits are masked apart from the decode rows',
    starting at their first bitmask row."""
    outputs = _outputs(5)
    generator = torch.Generator().manual_seed(11)
    outputs._bitmask.copy_(
        torch.randint(-(2**31), 2**31 - 1, outputs._bitmask.shape, generator=generator)
    )
    logits = torch.randn(2, VOCAB, generator=generator)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, outputs._bitmask[3:5], indices=constrained_rows)
    outputs.apply_masks(logits, constrained_rows, first_row=3)
    assert torch.equal(logits, expected)


class _OneAtATimeMatcher:
    """Stands in for xgrammar's batch matcher (whose own thread pool aborts
    the process if two threads fill at once): records overlapping fills."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.inside = 0
        self.most_inside = 0
        self.fills: list[list[int]] = []
        self._lock = threading.Lock()

    def batch_fill_next_token_bitmask(self, rows, bitmask, indices) -> None:
        with self._lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        if not self.fills:
            self.release.wait(5)
        self.fills.append(indices)
        with self._lock:
            self.inside -= 1


def _two_row_pooling(mask_threads: int) -> StructuredOutputs:
    vocab = INLINE_FILL_LIMIT // 2  # two rows are a pooled fill, one is inline
    return StructuredOutputs(
        None,  # type: ignore[arg-type]
        vocab_size=vocab,
        eos_token_ids=[0],
        token_bytes=[b"x"] * vocab,
        encode=lambda text: [],
        max_batch_size=4,
        mask_threads=mask_threads,
    )


def test_a_small_fill_waits_behind_a_pooled_batch_fill_in_flight() -> None:
    """With several mask threads (xgrammar's batch API), a step's admitted
    rows (a small fill) come while its running rows' fill (large, on the
    pool) may still be going: never both at once."""
    outputs = _two_row_pooling(mask_threads=2)
    outputs._row_fill_s = SHARED_FILL_ABOVE_S  # rows predicted slow: pooled
    fake = outputs._batch_matcher = outputs._inline_matcher = _OneAtATimeMatcher()  # type: ignore[assignment]
    running = outputs.fill_masks_async([_Row(), _Row()], [None, None], first_row=0)  # type: ignore[list-item]
    admitted = outputs.fill_masks_async([_Row()], [None], first_row=2)  # type: ignore[list-item]
    assert not admitted.done()  # queued, not run beside the first
    fake.release.set()
    running.result(5)
    admitted.result(5)
    assert fake.most_inside == 1
    assert fake.fills == [[0, 1], [2]]
    small = outputs.fill_masks_async([_Row()], [None], first_row=0)  # type: ignore[list-item]
    assert small.done()  # nothing in flight: inline again


def test_with_one_mask_thread_a_fill_goes_beside_the_forward_only_when_it_is_slow() -> None:
    """Beside a CPU forward a fill thread contends with the forward for the
    GIL: a fill predicted to be short (its rows x the recent time of a row)
    runs inline, a long one is shared, and each fill updates the prediction."""
    outputs = _two_row_pooling(mask_threads=1)
    filled_on: list[str] = []

    class _Recording:
        def batch_fill_next_token_bitmask(self, matchers, bitmask, indices) -> None:
            filled_on.append(threading.current_thread().name)
            time.sleep(0.002)

    outputs._batch_matcher = outputs._inline_matcher = _Recording()  # type: ignore[assignment]
    fill = outputs.fill_masks_async([_Row(), _Row()], [None, None], first_row=0)  # type: ignore[list-item]
    assert fill.done() and filled_on == [threading.main_thread().name]
    assert outputs._row_fill_s >= FILL_TIME_SMOOTHING * 0.001  # 2 ms over two rows

    outputs._row_fill_s = SHARED_FILL_ABOVE_S
    outputs._fill_row = lambda matcher, bitmask, index: None
    shared = outputs.fill_masks_async([_Row(), _Row()], [None, None], first_row=0)  # type: ignore[list-item]
    assert isinstance(shared, SharedFill)
    shared.result(5)
    assert len(filled_on) == 1  # the shared fill went row by row, not through the batch


def test_with_several_mask_threads_a_fill_goes_to_the_pool_only_when_it_is_slow() -> None:
    """Beside a GPU: a fill predicted short runs on the calling thread with a
    one-thread matcher (the pool's hand-off costs more than a short fill), and
    only such fills update the prediction; a pooled one does not, and after
    POOLED_FILLS_BETWEEN_MEASURES of them one runs inline again to measure."""
    outputs = _two_row_pooling(mask_threads=2)
    outputs._slow.slow_fill_s = 1.0  # a sleep may overshoot: no row-by-row probe here
    filled_by: list[tuple[str, str]] = []

    class _Recording:
        def __init__(self, name: str) -> None:
            self.name = name

        def batch_fill_next_token_bitmask(self, matchers, bitmask, indices) -> None:
            filled_by.append((self.name, threading.current_thread().name))
            time.sleep(SLOW_ROW_FILL_S / 2)  # under the slow lane's bar: no row-by-row probe

    outputs._batch_matcher = _Recording("pool")  # type: ignore[assignment]
    outputs._inline_matcher = _Recording("one thread")  # type: ignore[assignment]
    rows = [_Row(), _Row()]
    assert outputs.fill_masks_async(rows, [None, None], first_row=0).done()  # type: ignore[arg-type]
    assert filled_by == [("one thread", threading.main_thread().name)]
    assert outputs._row_fill_s >= FILL_TIME_SMOOTHING * SLOW_ROW_FILL_S / 4  # over two rows

    outputs._row_fill_s = SHARED_FILL_ABOVE_S
    for _ in range(POOLED_FILLS_BETWEEN_MEASURES):
        outputs.fill_masks_async(rows, [None, None], first_row=0).result(5)  # type: ignore[arg-type]
    assert {name for name, _ in filled_by[1:]} == {"pool"}
    assert outputs._row_fill_s == SHARED_FILL_ABOVE_S  # pooled times are not the rows' own
    assert outputs.fill_masks_async(rows, [None, None], first_row=0).done()  # type: ignore[arg-type]
    assert filled_by[-1] == ("one thread", threading.main_thread().name)
    assert outputs._row_fill_s < SHARED_FILL_ABOVE_S


def test_with_one_mask_thread_the_waiting_thread_shares_the_rows() -> None:
    """A shared fill's rows are each filled once, some on the pool thread and
    the rest on the thread that asks for the result."""
    outputs = _two_row_pooling(mask_threads=1)
    outputs._row_fill_s = SHARED_FILL_ABOVE_S  # recent rows filled slowly: worth sharing
    first_row_started, go_on = threading.Event(), threading.Event()
    filled: list[tuple[int, str]] = []

    def slow_row(matcher, bitmask, index) -> None:
        if threading.current_thread() is not threading.main_thread():
            first_row_started.set()
            go_on.wait(5)
        filled.append((index, threading.current_thread().name))

    outputs._fill_row = slow_row
    rows = [_Row() for _ in range(6)]
    outputs.reserve_rows(7)  # as the engine does for a step's rows
    fill = outputs.fill_masks_async(rows, [None] * len(rows), first_row=1)  # type: ignore[arg-type]
    assert first_row_started.wait(5)
    assert not fill.done()
    helper = threading.Timer(0.2, go_on.set)
    helper.start()
    fill.result(5)
    helper.join()
    assert sorted(index for index, _ in filled) == [1, 2, 3, 4, 5, 6]
    on_main = [index for index, name in filled if name == threading.main_thread().name]
    assert len(on_main) == 5  # the pool thread held one row; the waiter took the rest
    assert fill.done()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_shared_fill_spreads_its_rows_into_biases_that_a_later_fill_retires(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype
) -> None:
    """Each row a shared fill fills is also spread into its 0/-inf bias
    there, so masking is one addition; a row filled again another way (a
    small fill, inline) is masked from its new bitmask row, never its old bias."""
    outputs = _two_row_pooling(mask_threads=1)
    outputs._row_fill_s = SHARED_FILL_ABOVE_S  # recent rows filled slowly: worth sharing
    vocab = outputs._vocab_size
    generator = torch.Generator().manual_seed(4)
    words = torch.randint(
        -(2**31), 2**31 - 1, outputs._bitmask.shape, generator=generator, dtype=torch.int32
    )

    def fill_row(matcher, bitmask, index) -> None:
        bitmask[index] = words[index]

    outputs._fill_row = fill_row
    with torch.inference_mode():  # as the engine's step runs; the pool thread does not
        fill = outputs.fill_masks_async([_Row(), None, _Row()], [None] * 3, first_row=1)  # type: ignore[list-item]
    fill.result(5)
    assert outputs._biased_rows == {1, 3}
    logits = torch.randn(3, vocab, generator=generator).to(dtype)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, outputs._bitmask[1:4], indices=[0, 2])
    with monkeypatch.context() as patched:
        patched.setattr(outputs, "_apply_masks_by_bytes", None)  # must not be needed
        outputs.apply_masks(logits, [0, 2], first_row=1)
    assert torch.equal(logits, expected)

    class _Inverts:
        def batch_fill_next_token_bitmask(self, matchers, bitmask, indices) -> None:
            bitmask[indices[0]] = ~words[indices[0]]

    outputs._batch_matcher = outputs._inline_matcher = _Inverts()  # type: ignore[assignment]
    assert outputs.fill_masks_async([_Row()], [None], first_row=1).done()  # type: ignore[list-item]
    assert outputs._biased_rows == {3}
    logits = torch.randn(1, vocab, generator=generator).to(dtype)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, outputs._bitmask[1:2], indices=[0])
    outputs.apply_masks(logits, [0], first_row=1)
    assert torch.equal(logits, expected)


class _SlowBatch:
    """A batch fill that takes ``SLOW_ROW_FILL_S``, whichever row is slow."""

    def batch_fill_next_token_bitmask(self, matchers, bitmask, indices) -> None:
        time.sleep(SLOW_ROW_FILL_S * 1.5)


class _LaneRow(_Row):
    """A row the slow lane can fill (all tokens allowed)."""

    def fill_next_token_bitmask(self, bitmask: torch.Tensor, index: int) -> bool:
        bitmask[index] = -1
        return True


def test_a_slow_batch_fill_is_followed_by_one_row_by_row_that_finds_the_slow_row() -> None:
    """A batch fill that took the slow lane's bar says no row's time: the
    next fill goes row by row, timed, and only the row that was slow
    there leaves for the lane, whose mask is then filled apart."""
    outputs = _outputs(3)
    outputs._batch_matcher = outputs._inline_matcher = _SlowBatch()  # type: ignore[assignment]
    slow, fast = _LaneRow(), _LaneRow()

    def fill_row(matcher, bitmask, index) -> None:
        if matcher is slow:
            time.sleep(SLOW_ROW_FILL_S * 1.5)

    outputs._fill_row = fill_row
    rows = [fast, slow]
    outputs.fill_masks_async(rows, [None, None], first_row=0).result()  # type: ignore[arg-type]
    assert not outputs.has_slow_rows
    outputs.fill_masks_async(rows, [None, None], first_row=0).result()  # type: ignore[arg-type]
    assert outputs.has_slow_rows
    outputs.fill_masks_async(rows, [None, None], first_row=0).result()  # type: ignore[arg-type]
    assert outputs.slow_fill_started(slow) and not outputs.slow_fill_started(fast)
    outputs.wait_for_slow_masks([slow], timeout_s=5)
    assert outputs.slow_mask_ready(slow)
    outputs._bitmask.zero_()
    outputs.place_slow_masks([slow], first_row=2)
    assert bool((outputs._bitmask[2] != 0).any()) and not outputs._bitmask[:2].any()
    assert not outputs.slow_fill_started(slow)  # placed: its next state fills anew
    outputs._slow.shutdown()  # (no grammar cache here to shut down)
