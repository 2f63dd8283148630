"""The running batch's slot storage on a real (tiny) model: rows joining and
leaving in any order keep every row's logits equal to running its sequence
alone, and the routine moves copy rows, not the whole cache.

Every test runs twice: with the eager decode step, and with the fixed-shape
step that CUDA graphs capture (run eagerly here: rows padded to a bucket,
the whole storage attended under a mask)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from engine.decode_graphs import MAX_WIDE_GRAPH_POSITIONS, WIDTH_BUCKETS, DecodeGraphs
from engine.kv_batch import ROW_COPY_LIMIT, RunningBatch, SlotLayer
from engine.lean_llama import LeanCausalLM
from engine.model_runner import ModelRunner

TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=["eager", "static", "static-wide"])
def runner(request: pytest.FixtureRequest, tiny_model_dir: Path) -> ModelRunner:
    """``static-wide`` takes every jump-forward width through the static step
    too, whatever the batch (on a GPU only small batches' wide steps are)."""
    runner = ModelRunner.load(tiny_model_dir)
    assert isinstance(runner.model, LeanCausalLM)
    if request.param != "eager":
        wide = 1 << 30 if request.param == "static-wide" else MAX_WIDE_GRAPH_POSITIONS
        runner.model.decode_graphs = DecodeGraphs(
            runner.model, capture=False, max_wide_positions=wide
        )
    return runner


class Rows:
    """A batch and, beside it, each row's whole sequence so far."""

    def __init__(self, runner: ModelRunner) -> None:
        self.runner = runner
        self.batch = RunningBatch()
        self.sequences: list[list[int]] = []
        self.generator = random.Random(0)

    def join(self, *lengths: int) -> None:
        prompts = [
            [self.generator.randrange(3, self.runner.vocab_size) for _ in range(length)]
            for length in lengths
        ]
        _, cache, mask = self.runner.prefill_many(prompts)
        self.batch.append_rows(cache, mask, [1] * len(prompts))
        self.sequences += prompts

    def leave(self, *rows: int) -> list[int]:
        kept = [row for row in range(len(self.sequences)) if row not in rows]
        order = self.batch.keep(kept)
        assert sorted(order) == kept
        self.sequences = [self.sequences[row] for row in order]
        return order

    def step(self, widths: list[int] | None = None) -> None:
        """Feeds every row new tokens (``widths[row]`` of them, none for a row
        that waits this step); checks each fed row against its sequence alone."""
        widths = widths or [1] * len(self.sequences)
        feeds = [
            [self.generator.randrange(3, self.runner.vocab_size) for _ in range(width)]
            for width in widths
        ]
        logits = self.runner.decode(self.batch, feeds)
        for row, feed in enumerate(feeds):
            if not feed:
                continue
            self.sequences[row] += feed
            alone, _ = self.runner.prefill(self.sequences[row])
            torch.testing.assert_close(logits[row], alone, atol=TOLERANCE, rtol=TOLERANCE)


def _storage(batch: RunningBatch) -> list[int]:
    return [layer._key_store.data_ptr() for layer in batch._cache.layers]


def test_a_leaving_row_is_replaced_by_a_last_row_and_the_order_says_so(
    runner: ModelRunner,
) -> None:
    rows = Rows(runner)
    rows.join(4, 9, 2, 6, 5)
    rows.step()
    assert rows.leave(1) == [0, 4, 2, 3]
    rows.step()
    assert rows.leave(0, 3) == [2, 1]  # both holes below the new length: one mover
    rows.step([3, 1])


def test_rows_fed_nothing_for_some_steps_keep_every_rows_logits(runner: ModelRunner) -> None:
    """A row waiting for its slow-lane mask is fed nothing while the others
    step (``engine/slow_lane.py``): its step positions are padding, and
    neither it nor any other row sees a difference afterwards."""
    rows = Rows(runner)
    rows.join(4, 9, 2)
    rows.step([1, 0, 1])
    rows.step([0, 0, 2])
    rows.step([1, 1, 1])
    rows.step([0, 3, 0])
    rows.leave(0)
    rows.step([1, 1])


def test_more_rows_leaving_at_once_than_are_copied_one_by_one(runner: ModelRunner) -> None:
    """Up to ``ROW_COPY_LIMIT`` movers are copied row by row, more by one
    gather and scatter: both keep every row's logits."""
    rows = Rows(runner)
    rows.join(4, 9, 2, 6, 5, 3, 7, 8)
    rows.step()
    assert ROW_COPY_LIMIT < 3
    assert rows.leave(0, 1, 2) == [5, 6, 7, 3, 4]  # three movers
    rows.step()


def test_rows_leaving_from_the_end_keep_their_order(runner: ModelRunner) -> None:
    rows = Rows(runner)
    rows.join(3, 7, 5)
    rows.step()
    assert rows.leave(2) == [0, 1]
    rows.step()


def test_a_prompt_longer_than_the_window_reopens_columns(runner: ModelRunner) -> None:
    rows = Rows(runner)
    rows.join(20, 3)
    for _ in range(3):
        rows.step()
    rows.leave(0)  # the window shrinks to the short row's 6 columns, by moving its start
    assert rows.batch.padded_length == 6
    storage = _storage(rows.batch)
    rows.join(15)  # reopens columns the long row used: no reallocation
    assert rows.batch.padded_length == 15
    assert _storage(rows.batch) == storage
    rows.step()
    rows.join(60)  # longer than anything before it: the window is copied into new storage
    assert _storage(rows.batch) != storage
    rows.step([2, 1, 4])


def test_reopened_columns_hide_what_a_slots_earlier_row_left_there(runner: ModelRunner) -> None:
    """A free slot keeps its last row's keys and mask; a row placed there later
    must not see them when a longer prompt reopens those columns."""
    rows = Rows(runner)
    rows.join(3, 4, 20, 20)
    for _ in range(3):
        rows.step()
    rows.leave(2, 3)  # the long rows' slots are freed as they are; the window shrinks to 7
    rows.join(2)  # takes one of them
    storage = _storage(rows.batch)
    rows.join(15)  # reopens 8 of the long rows' columns, in place
    assert _storage(rows.batch) == storage
    rows.step()


def test_joining_leaving_and_decoding_within_room_copy_no_storage(runner: ModelRunner) -> None:
    rows = Rows(runner)
    rows.join(5, 5, 5, 5)
    storage = _storage(rows.batch)
    rows.leave(0, 2)
    rows.join(4, 3)
    rows.step()
    rows.leave(3)
    rows.step()
    assert _storage(rows.batch) == storage
    assert all(isinstance(layer, SlotLayer) for layer in rows.batch._cache.layers)


def test_a_window_out_of_room_moves_within_its_storage(runner: ModelRunner) -> None:
    """Rows leaving let the window's start creep right; when the columns after
    it run out, the window moves back within the same storage (a CUDA graph
    holds its addresses: new storage would drop every graph)."""
    rows = Rows(runner)
    rows.join(3, 300, 4, 2)  # four rows: a bucket exactly, no reallocation for slots
    rows.step()
    rows.leave(1)  # the long prompt's columns are no row's any more
    storage, crept = _storage(rows.batch), rows.batch._start
    assert crept > 250
    for _ in range(100):
        rows.step([4, 1, 2])
        if rows.batch._start < crept:
            break
    assert rows.batch._start == 0
    assert _storage(rows.batch) == storage
    rows.step([1, 2, 1])  # every row still exact after the move


def test_a_window_moves_onto_columns_it_overlaps() -> None:
    layer = SlotLayer(torch.zeros(2, 1, 0, 3))
    layer.reallocate(slots=2, columns=10, start=0)
    window = torch.arange(2 * 6 * 3, dtype=torch.float).reshape(2, 1, 6, 3)
    layer._key_store[:, :, 3:9] = window
    layer._value_store[:, :, 3:9] = -window
    layer.set_window(2, 3, 9)
    layer.move_window(1)  # columns 1..7 overlap 3..9
    assert (layer.start, layer.end) == (1, 7)
    torch.testing.assert_close(layer.keys, window)
    torch.testing.assert_close(layer.values, -window)


def test_an_emptied_batch_takes_new_rows(runner: ModelRunner) -> None:
    rows = Rows(runner)
    rows.join(6, 2)
    rows.step()
    assert rows.leave(0, 1) == []
    assert len(rows.batch) == 0
    rows.join(4)
    rows.step()
    rows.step([3])


def test_growing_past_the_spare_columns_keeps_logits_exact(runner: ModelRunner) -> None:
    rows = Rows(runner)
    rows.join(3, 8)
    for step in range(150):
        if step % 50 == 49:
            rows.step()  # checked now and then: the solo prefills dominate the test's time
        else:
            feeds = [[5]] * len(rows.sequences)
            runner.decode(rows.batch, feeds)
            for sequence in rows.sequences:
                sequence.append(5)


def test_random_churn_keeps_every_row_exact(runner: ModelRunner) -> None:
    """Joins of random lengths, leaves of random rows, jump-forward widths."""
    rows = Rows(runner)
    choose = random.Random(7)
    rows.join(*(choose.randrange(1, 12) for _ in range(4)))
    for _ in range(25):
        if rows.sequences and choose.random() < 0.4:
            count = choose.randrange(1, min(3, len(rows.sequences)) + 1)
            rows.leave(*choose.sample(range(len(rows.sequences)), count))
        if not rows.sequences or choose.random() < 0.4:
            rows.join(*(choose.randrange(1, 30) for _ in range(choose.randrange(1, 3))))
        rows.step([choose.choice([1, 1, 1, 2, 4]) for _ in rows.sequences])


def test_the_static_step_pads_rows_and_widths_to_buckets_and_leaves_wider_steps_eager(
    tiny_model_dir: Path,
) -> None:
    runner = ModelRunner.load(tiny_model_dir)
    graphs = runner.model.decode_graphs = DecodeGraphs(runner.model, capture=False)
    rows = Rows(runner)
    rows.join(4, 9, 2)
    rows.step()
    assert graphs.steps == 1
    assert rows.batch._slot_layers()[0].slots >= 4  # three rows padded to the bucket of four
    end = rows.batch._end
    rows.step([3, 1, 2])  # a jump-forward width of three, padded to four
    assert graphs.steps == 2
    assert rows.batch._end == end + 4
    rows.step([WIDTH_BUCKETS[-1] + 1, 1, 1])  # wider than any bucket: the eager step
    assert graphs.steps == 2
    rows.leave(0)
    rows.step()
    assert graphs.steps == 3
    assert graphs.captures == 0  # no capture off CUDA


def test_static_step_buffers_are_rebuilt_when_the_storage_moves(tiny_model_dir: Path) -> None:
    """A captured graph holds the storage's addresses: once the batch
    reallocates, every bucket's graph and buffers must go (on a GPU a stale
    graph would write into freed memory)."""
    runner = ModelRunner.load(tiny_model_dir)
    graphs = runner.model.decode_graphs = DecodeGraphs(runner.model, capture=False)
    rows = Rows(runner)
    rows.join(3, 5)
    rows.step()
    buffers = graphs._steps[(2, 1)]
    rows.step()
    assert graphs._steps[(2, 1)] is buffers  # same storage: reused
    storage = _storage(rows.batch)
    rows.join(40)  # longer than the window and its room: reallocated
    assert _storage(rows.batch) != storage
    rows.leave(2)
    rows.step()
    assert graphs._steps[(2, 1)] is not buffers
