"""CUDA graphs of the one-token decode step, one per batch-size bucket.

Why: on a GPU, a small model's decode step is bound by kernel launches, not
arithmetic. A Llama-3.2-1B-shaped step launches ~20 kernels per layer, each
queued from Python; replaying a captured graph queues them all at once.

What a graph needs is a step in which every shape and every address is fixed,
which the eager step is not (the live window of the cache grows every step
and moves as rows leave). :meth:`LeanCausalLM.decode_static` is that step:

- rows are padded up to a bucket (1, 2, 4, 8, 16, 24, 32, ...); a padding
  row feeds token 0 at position 0 into a free slot of the cache and attends
  only to what it wrote there;
- each layer's new keys and values go into one column (a one-element tensor
  whose value changes, not its address) of the running batch's whole storage
  (``SlotLayer``), and attention reads all of the storage's columns, with a
  mask over every column outside a row's real positions.

A graph is only good for the storage and rotary tables it was captured
against: when ``RunningBatch`` reallocates (a new peak of rows, columns run
out) or the tables grow, every graph is dropped and buckets are captured
again as they come up. Off CUDA (and where capture fails, which is logged)
the same static step runs eagerly, which is what the CPU tests check against
the eager forward.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from engine.lean_llama import LeanCausalLM

# Batch sizes a graph is captured for: rows are padded up to the next one.
BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256)
CUDA_GRAPHS_ENV = "CT_CUDA_GRAPHS"

log = logging.getLogger(__name__)


@dataclass
class _BucketStep:
    """One bucket's fixed input buffers, its graph once captured, and the
    graph's output."""

    ids: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    column: torch.Tensor
    graph: torch.cuda.CUDAGraph | None = None
    logits: torch.Tensor | None = None


class DecodeGraphs:
    """Runs the static decode step, replaying a captured graph per bucket on CUDA."""

    def __init__(self, model: LeanCausalLM, *, capture: bool = True) -> None:
        self._model = model
        self._capture = capture and model.device.type == "cuda"
        self._steps: dict[int, _BucketStep] = {}
        self._captured_against: tuple[int, ...] = ()
        self._pool = None
        self.steps = 0
        self.captures = 0
        self.replays = 0

    @property
    def capturing(self) -> bool:
        return self._capture

    @staticmethod
    def bucket(rows: int) -> int | None:
        """The padded row count for ``rows``; None past the largest bucket
        (such a batch runs the eager step)."""
        return next((bucket for bucket in BUCKETS if bucket >= rows), None)

    @torch.inference_mode()
    def run(
        self,
        stores: list[tuple[torch.Tensor, torch.Tensor]],
        ids: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor,
        column: int,
    ) -> torch.Tensor:
        """One step for a bucket's padded rows: ``ids``, ``positions``
        ``[bucket]`` and ``mask [bucket, columns]`` on the CPU, ``column`` the
        storage column the new keys and values go to. Returns float32 logits
        ``[bucket, vocab]``, valid until the next call."""
        self._model.ensure_rotary(int(positions.max()) + 1)
        self._forget_stale_graphs(stores)
        step = self._steps.get(ids.shape[0])
        if step is None:
            step = self._steps[ids.shape[0]] = self._new_step(ids.shape[0], mask.shape[1])
        step.ids.copy_(ids, non_blocking=True)
        step.positions.copy_(positions, non_blocking=True)
        step.mask.copy_(mask.view(step.mask.shape), non_blocking=True)
        step.column.fill_(column)
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
                return self.run(stores, ids, positions, mask, column)
        assert step.graph is not None and step.logits is not None
        step.graph.replay()
        self.replays += 1
        return step.logits

    def _eager(self, step: _BucketStep, stores: list[tuple[torch.Tensor, torch.Tensor]]):
        return self._model.decode_static(step.ids, step.positions, step.mask, step.column, stores)

    def _forget_stale_graphs(self, stores: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Drops every graph (and buffer) if the storage or the rotary tables
        are not the ones the graphs were captured against."""
        addresses = tuple(tensor.data_ptr() for pair in stores for tensor in pair)
        current = (*addresses, stores[0][0].shape[2], self._model.rotary_address)
        if current != self._captured_against:
            self._steps.clear()
            self._pool = None  # the old graphs' memory goes back with them
            self._captured_against = current

    def _new_step(self, bucket: int, columns: int) -> _BucketStep:
        device = self._model.device
        return _BucketStep(
            ids=torch.zeros(bucket, dtype=torch.long, device=device),
            positions=torch.zeros(bucket, dtype=torch.long, device=device),
            mask=torch.zeros(bucket, 1, 1, columns, dtype=torch.bool, device=device),
            column=torch.zeros(1, dtype=torch.long, device=device),
        )

    def _capture_step(
        self, step: _BucketStep, stores: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> None:
        """Captures the bucket's step. A warm-up run on a side stream first
        (libraries set up their workspaces outside a capture); it computes
        this step's real keys and values, which the replay then rewrites."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._eager(step, stores)
        torch.cuda.current_stream().wait_stream(side)
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            logits = self._eager(step, stores)
        step.graph, step.logits = graph, logits
        self.captures += 1
