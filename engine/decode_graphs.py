"""CUDA graphs of the decode step, one per bucket of rows and of new tokens per row.

Why: on a GPU, a small model's decode step is bound by kernel launches, not
arithmetic: every operation of every layer is queued from Python, where a
replayed graph queues them all at once. Bare decode forward of a
Llama-3.2-1B shape on an H200: 5.3 -> 1.6 ms at one row, 4.9 -> 2.4 ms at 64.

What a graph needs is a step in which every shape and every address is fixed,
which the eager step is not (the live window of the cache grows every step
and moves as rows leave). :meth:`LeanCausalLM.decode_static` is that step:

- rows are padded up to a bucket (1, 2, 4, 8, 16, 24, 32, ...); a padding
  row feeds token 0 at position 0 into a free slot of the cache and attends
  only to what it wrote there;
- a step's width (new tokens per row: one, or more after a jump-forward) is
  padded up to a bucket (1, 2, 4, 8, 16) by left-padding every row further,
  as the eager step pads its shorter rows: a constrained request alone is
  wide on most steps (JSON keys and punctuation are forced), so a graph for
  one token alone would rarely replay for it. Wide steps are graphed while
  their padded positions stay few (``MAX_WIDE_GRAPH_POSITIONS``, measured);
- each layer's new keys and values go into columns (a tensor whose values
  change, not its address) of the running batch's whole storage
  (``SlotLayer``), and attention reads all of the storage's columns, with a
  mask over every column outside a row's real positions.

A graph is only good for the storage and rotary tables it was captured
against: when ``RunningBatch`` reallocates (a new peak of rows, a window
that no longer fits its storage) or the tables grow, every graph is dropped
and buckets are captured again as they come up. Off CUDA (and where capture
fails, which is logged) the same static step runs eagerly, which is what the
CPU tests check against the eager forward.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.lean_llama import LeanCausalLM

# Batch sizes a graph is captured for: rows are padded up to the next one.
ROW_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256)
# New tokens per row a graph is captured for; wider steps run eagerly.
WIDTH_BUCKETS = (1, 2, 4, 8, 16)
# A step wider than one token is graphed only while its padded rows x width
# stay within this many positions: each padded position is computed, and
# attention reads every storage column, where an eager step pads to the
# batch's real width and attends over its window only. Measured on an H200
# (Llama-3.2-1B shape, 128k vocabulary, JSON-constrained steps, median step
# of ``python -m bench.gpu``): graphing wide steps at any batch took c=16
# from 11.3 to 5.8 ms (16 rows x widths up to 16) but c=64 from 19.0 to
# 24.7 ms (up to 1024 positions a step); c=1 gains either way (6.2 -> 5.2 ms
# mean in bench/results/gpu-h200). Recaptures are not the cost: with the
# window moved within its storage (``RunningBatch``), graphs were dropped at
# most twice a run.
MAX_WIDE_GRAPH_POSITIONS = 256
CUDA_GRAPHS_ENV = "CT_CUDA_GRAPHS"

log = logging.getLogger(__name__)


@dataclass
class BucketStep:
    """One bucket's fixed input buffers, its graph once captured, and the
    graph's output."""

    ids: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    columns: torch.Tensor
    graph: torch.cuda.CUDAGraph | None = None
    logits: torch.Tensor | None = None


class DecodeGraphs:
    """Runs the static decode step, replaying a captured graph per bucket on CUDA."""

    def __init__(
        self,
        model: LeanCausalLM,
        *,
        capture: bool = True,
        max_wide_positions: int = MAX_WIDE_GRAPH_POSITIONS,
    ) -> None:
        self._model = model
        self._capture = capture and model.device.type == "cuda"
        self._max_wide_positions = max_wide_positions
        self._steps: dict[tuple[int, int], BucketStep] = {}
        self._captured_against: tuple[int, ...] = ()
        self._pool = None
        self.steps = 0
        self.captures = 0
        self.replays = 0
        self.drops = 0  # times every graph was dropped (new storage or rotary tables)

    @property
    def capturing(self) -> bool:
        return self._capture

    def bucket(self, rows: int, width: int) -> tuple[int, int] | None:
        """The padded row count and width for a step of ``rows`` rows and
        ``width`` new tokens per row; None past the largest buckets (such a
        step runs eagerly)."""
        padded_rows = next((bucket for bucket in ROW_BUCKETS if bucket >= rows), None)
        padded_width = next((bucket for bucket in WIDTH_BUCKETS if bucket >= width), None)
        if padded_rows is None or padded_width is None:
            return None
        if padded_width > 1 and padded_rows * padded_width > self._max_wide_positions:
            return None
        return padded_rows, padded_width

    @torch.inference_mode()
    def run(
        self,
        stores: list[tuple[torch.Tensor, torch.Tensor]],
        ids: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor,
        first_column: int,
    ) -> torch.Tensor:
        """One step for a bucket's padded rows: ``ids``, ``positions``
        ``[rows, width]`` and ``mask [rows, width, storage columns]`` on the
        CPU; the new keys and values go to storage columns ``first_column``
        on. Returns float32 logits ``[rows, vocab]``, valid until the next
        call."""
        self._model.ensure_rotary(int(positions.max()) + 1)
        self._forget_stale_graphs(stores)
        key = (ids.shape[0], ids.shape[1])
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self._new_step(*key, mask.shape[-1])
        step.ids.copy_(ids, non_blocking=True)
        step.positions.copy_(positions, non_blocking=True)
        step.mask.copy_(mask.unsqueeze(1), non_blocking=True)
        step.columns.copy_(
            torch.arange(first_column, first_column + ids.shape[1]), non_blocking=True
        )
        self.steps += 1
        if not self._capture:
            return self._eager(step, stores)
        if step.graph is None:
            try:
                self._capture_step(step, stores)
            except RuntimeError:
                log.exception("CUDA graph capture failed; decoding without graphs from now on")
                self._capture = False
                self._steps.clear()
                self.steps -= 1
                return self.run(stores, ids, positions, mask, first_column)
        assert step.graph is not None and step.logits is not None
        step.graph.replay()
        self.replays += 1
        return step.logits

    def _eager(self, step: BucketStep, stores: list[tuple[torch.Tensor, torch.Tensor]]):
        return self._model.decode_static(step.ids, step.positions, step.mask, step.columns, stores)

    def _forget_stale_graphs(self, stores: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Drops every graph (and buffer) if the storage or the rotary tables
        are not the ones the graphs were captured against."""
        addresses = tuple(tensor.data_ptr() for pair in stores for tensor in pair)
        current = (*addresses, stores[0][0].shape[2], self._model.rotary_address)
        if current != self._captured_against:
            if any(step.graph is not None for step in self._steps.values()):
                self.drops += 1
            self._steps.clear()
            self._pool = None  # the old graphs' memory goes back with them
            self._captured_against = current

    def _new_step(self, rows: int, width: int, columns: int) -> BucketStep:
        device = self._model.device
        return BucketStep(
            ids=torch.zeros(rows, width, dtype=torch.long, device=device),
            positions=torch.zeros(rows, width, dtype=torch.long, device=device),
            mask=torch.zeros(rows, 1, width, columns, dtype=torch.bool, device=device),
            columns=torch.zeros(width, dtype=torch.long, device=device),
        )

    def _capture_step(
        self, step: BucketStep, stores: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> None:
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        step.graph, step.logits = capture_graph(lambda: self._eager(step, stores), self._pool)
        self.captures += 1


def capture_graph(
    run: Callable[[], torch.Tensor], pool: tuple[int, int]
) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    """Captures ``run``; returns the graph and the tensor its replays write.
    A warm-up run on a side stream first (libraries set up their workspaces
    outside a capture); it does the step's real work, which a replay redoes."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    # thread_local: the decoder's other threads (responses, cancellation
    # checks, mask fills) may touch CUDA while the engine thread captures.
    with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        output = run()
    return graph, output
