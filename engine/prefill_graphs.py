"""CUDA graphs of short prompts' prefill, one per bucket of prompts and of length.

Why: on a GPU a small model's prefill of a short prompt is bound by kernel
launches, as its eager decode step is: a Llama-3.2-1B shape on an H200 took
5-11 ms (from run to run) to prefill a 4-token prompt, four of them or 175
tokens alike, ~330 kernel launches each; 1.7, 1.8 and 2.4 ms graphed
(``python -m bench.gpu``, its ``parts``). Where requests finish at different
steps (constrained ones do: a JSON object ends when it ends), a prompt joins
on most steps, so this is paid on most steps, beside a graphed decode step of
~2 ms.

A prefill is :meth:`LeanCausalLM.decode_static` (the step the decode graphs
capture) over a key/value storage of its own (one for all buckets, each
using a corner of it, as the eager decode step reads a window of the batch's
storage): the prompts, left-padded to the bucket's length, are one wide step
whose new tokens fill every column of that corner, each attending to the
real tokens before it (and itself, so padding stays finite). Prompts are
padded up to a bucket of rows and of length; more or longer ones run
eagerly. The keys and values come back as a cache of the prompts' own
length, copied out of the storage (the next replay rewrites it), in one copy
for every layer.

A graph is good for the rotary tables it was captured against: if they grow,
every graph is dropped and captured again as buckets come up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from engine.decode_graphs import BucketStep, capture_graph
from engine.lean_llama import LeanCausalLM

# Prompts per prefill a graph is captured for; more run eagerly.
ROW_BUCKETS = (1, 2, 4)
# Prompt lengths (the longest of a prefill's prompts) a graph is captured
# for; longer prompts are few enough per step, and long enough, to run eagerly.
LENGTH_BUCKETS = (16, 32, 64, 128, 256, 512)

log = logging.getLogger(__name__)


@dataclass
class _PrefillStep(BucketStep):
    """A decode bucket's step, with the corner of the prefill storage it fills."""

    # [layers, 2 (keys, values), rows, kv heads, length, head dim]: a corner
    # of the storage all buckets share.
    stores: torch.Tensor = field(kw_only=True)

    def layer_stores(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer[0], layer[1]) for layer in self.stores]


class PrefillGraphs:
    """Runs short prompts' prefill through the static step, replaying a
    captured graph per bucket on CUDA (eagerly elsewhere, as the tests do)."""

    def __init__(self, model: LeanCausalLM, *, capture: bool = True) -> None:
        self._model = model
        self._capture = capture and model.device.type == "cuda"
        self._steps: dict[tuple[int, int], _PrefillStep] = {}
        self._captured_against = model.rotary_address
        self._pool = None
        self._stores: torch.Tensor | None = None
        self.captures = 0
        self.replays = 0

    @staticmethod
    def bucket(prompts: int, longest: int) -> tuple[int, int] | None:
        """The padded prompt count and length for ``prompts`` prompts of at
        most ``longest`` tokens; None past the largest buckets."""
        rows = next((bucket for bucket in ROW_BUCKETS if bucket >= prompts), None)
        length = next((bucket for bucket in LENGTH_BUCKETS if bucket >= longest), None)
        if rows is None or length is None:
            return None
        return rows, length

    @torch.inference_mode()
    def run(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, DynamicCache]:
        """The prefill of left-padded prompts ``ids``, ``mask [prompts,
        longest]`` (on the CPU; one of the buckets). Returns float32 logits
        after each prompt ``[prompts, vocab]`` and the prompts' cache, both
        the caller's own."""
        prompts, longest = ids.shape
        bucket = self.bucket(prompts, longest)
        if bucket is None:
            raise ValueError(f"no prefill bucket for {prompts} prompts of {longest} tokens")
        rows, length = bucket
        self._model.ensure_rotary(length)
        if self._model.rotary_address != self._captured_against:
            self._steps.clear()
            self._pool = None
            self._captured_against = self._model.rotary_address
        step = self._steps.get(bucket)
        if step is None:
            step = self._steps[bucket] = self._new_step(rows, length)
        self._load_inputs(step, ids, mask)
        if self._capture and step.graph is None:
            self._capture_step(step)
        if step.graph is None:
            logits = self._eager(step)
        else:
            step.graph.replay()
            self.replays += 1
            assert step.logits is not None
            logits = step.logits
        keys_values = step.stores[:, :, :prompts, :, length - longest :].clone()
        cache = DynamicCache()
        for keys, values in keys_values:
            layer = DynamicLayer()
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
            cache.layers.append(layer)
        return logits[:prompts].clone(), cache

    def _capture_step(self, step: _PrefillStep) -> None:
        """Captures the bucket's step; if that fails (logged), prefills run
        eagerly from now on, as before there were graphs."""
        try:
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            step.graph, step.logits = capture_graph(lambda: self._eager(step), self._pool)
        except RuntimeError:
            log.exception("CUDA graph capture of a prefill failed; prefilling eagerly from now on")
            self._capture = False
            return
        self.captures += 1

    def _load_inputs(self, step: _PrefillStep, ids: torch.Tensor, mask: torch.Tensor) -> None:
        """Pads the prompts further left to the bucket and copies them, their
        positions and who attends to whom into the step's fixed buffers."""
        prompts, longest = ids.shape
        rows, length = step.ids.shape
        padded_ids = torch.zeros(rows, length, dtype=torch.long)
        padded_ids[:prompts, length - longest :] = ids
        real = torch.zeros(rows, length, dtype=torch.bool)
        real[:prompts, length - longest :] = mask.bool()
        positions = (real.long().cumsum(dim=1) - 1).clamp(min=0)
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        attends = real.unsqueeze(1) & causal | torch.eye(length, dtype=torch.bool)
        step.ids.copy_(padded_ids, non_blocking=True)
        step.positions.copy_(positions, non_blocking=True)
        step.mask.copy_(attends.unsqueeze(1), non_blocking=True)

    def _eager(self, step: _PrefillStep) -> torch.Tensor:
        return self._model.decode_static(
            step.ids, step.positions, step.mask, step.columns, step.layer_stores()
        )

    def _new_step(self, rows: int, length: int) -> _PrefillStep:
        device = self._model.device
        return _PrefillStep(
            ids=torch.zeros(rows, length, dtype=torch.long, device=device),
            positions=torch.zeros(rows, length, dtype=torch.long, device=device),
            mask=torch.zeros(rows, 1, length, length, dtype=torch.bool, device=device),
            columns=torch.arange(length, device=device),
            stores=self._shared_stores()[:, :, :rows, :, :length],
        )

    def _shared_stores(self) -> torch.Tensor:
        """One storage for every bucket, each a corner of it: prefills run
        one after another on the engine thread, and a storage per bucket
        would hold 3.5x as much (a Llama-3-8B shape: ~0.9 GB against 0.27)."""
        if self._stores is None:
            model = self._model
            self._stores = torch.zeros(
                len(model.layers),
                2,
                ROW_BUCKETS[-1],
                model.kv_heads,
                LENGTH_BUCKETS[-1],
                model.head_dim,
                dtype=model.dtype,
                device=model.device,
            )
        return self._stores
