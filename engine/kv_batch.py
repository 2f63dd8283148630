"""The running batch's key/value cache, with requests joining and leaving.

Rows are left-padded to a common length and the padding is masked out, so any
Hugging Face decoder that accepts ``attention_mask`` and ``position_ids`` (all
current causal LMs) decodes the whole batch in one forward call. A joining
request brings the cache of its own prefill; a finished request's row is
dropped at once, and padding columns no row needs any more leave the window.

Each full-attention layer keeps its keys and values in storage with room to
spare (``SlotLayer``): slots for rows beyond the batch, columns before and
after the live window. So nothing routine copies the whole cache, which
otherwise happens every time a row joins or leaves (measured on the demo
model, 32 JSON rows ending at different steps: 1.5 ms of an 8.7 ms step):

- a decode step writes its new columns in place (``DynamicLayer``'s
  concatenation copies everything: ~4 ms a step at 16 x 1000 tokens);
- a leaving row's slot is taken by one of the batch's last rows (one row
  copied, so rows change order: ``keep`` says how);
- padding no row needs any more leaves by moving the window's start;
- a joining request is written into the free slots, right-aligned; a prompt
  longer than the window reopens columns before it.

When the window runs out of columns after it (every ``SPARE_POSITIONS``
steps or more) or before it (a prompt longer than the window and its
reopenable columns), it is moved within its storage if that leaves room to
spare (the start creeps right as rows leave), else the storage is
reallocated; either copies the window once. A new peak of rows always
reallocates. Unused storage is zeros or old keys and values, always finite,
so masked positions never bring NaN into attention. Layers of other kinds
(sliding windows, ...) keep their own update rules and are joined, reordered
and trimmed by copying, as a whole.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from engine.lean_llama import LeanCausalLM

if TYPE_CHECKING:
    from engine.decode_graphs import DecodeGraphs

# Columns reserved after the window when storage is (re)allocated, at least;
# a long window gets a quarter of its length, so copies stay rare.
SPARE_POSITIONS = 64
# The same under CUDA graphs, where each reallocation also drops every
# captured graph: room is cheap on a GPU, recapturing is not.
GRAPH_SPARE_POSITIONS = 256


def _pad_left(tensor: torch.Tensor, amount: int, dim: int) -> torch.Tensor:
    if amount == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = amount
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


# Up to this many rows move by one copy each; more by one gather and scatter
# (a row leaving at a time is the common case: 5 µs a copy against 15 µs for
# the indexed pair, for each of a layer's two stores).
ROW_COPY_LIMIT = 2


def _move_rows(live: torch.Tensor, sources: list[int], targets: list[int]) -> None:
    """Copies rows ``sources`` of ``live`` over rows ``targets`` (disjoint)."""
    if len(sources) <= ROW_COPY_LIMIT:
        for source, target in zip(sources, targets, strict=True):
            live[target].copy_(live[source])
        return
    on_device = {"device": live.device}
    live.index_copy_(
        0,
        torch.tensor(targets, **on_device),
        live.index_select(0, torch.tensor(sources, **on_device)),
    )


class SlotLayer(DynamicLayer):
    """One full-attention layer's keys and values for the running batch.

    Storage is ``[slots, heads, columns, head_dim]``; ``keys``/``values``
    view rows ``:rows`` and columns ``start:end`` of it, which is exactly what
    a ``DynamicLayer`` of the batch would hold.
    """

    def __init__(self, like: torch.Tensor) -> None:
        super().__init__()
        self.lazy_initialization(like, like)
        empty = like.new_zeros(0, like.shape[1], 0, like.shape[3])
        self._key_store, self._value_store = empty, empty
        self.set_window(0, 0, 0)

    @property
    def slots(self) -> int:
        return self._key_store.shape[0]

    @property
    def columns(self) -> int:
        return self._key_store.shape[2]

    @property
    def stores(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole key and value storage, for the static decode step."""
        return self._key_store, self._value_store

    def set_window(self, rows: int, start: int, end: int) -> None:
        self.rows, self.start, self.end = rows, start, end
        self.keys = self._key_store[:rows, :, start:end]
        self.values = self._value_store[:rows, :, start:end]

    def reallocate(self, slots: int, columns: int, start: int) -> None:
        """Fresh zeroed storage, the live window copied to begin at ``start``."""
        end = start + self.end - self.start
        stores = []
        for old, live in ((self._key_store, self.keys), (self._value_store, self.values)):
            store = old.new_zeros(slots, old.shape[1], columns, old.shape[3])
            store[: self.rows, :, start:end] = live
            stores.append(store)
        self._key_store, self._value_store = stores
        self.set_window(self.rows, start, end)

    def move_window(self, start: int) -> None:
        """Moves the live window to begin at column ``start`` of the same
        storage (whose addresses captured graphs hold)."""
        end = start + self.end - self.start
        overlapping = start < self.end and self.start < end
        for store in (self._key_store, self._value_store):
            live = store[: self.rows, :, self.start : self.end]
            store[: self.rows, :, start:end] = live.clone() if overlapping else live
        self.set_window(self.rows, start, end)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        end = self.end + key_states.shape[-2]
        if end > self.columns:  # RunningBatch reserves room first; any other caller still works
            self.reallocate(self.slots, end + SPARE_POSITIONS, self.start)
        self._key_store[: self.rows, :, self.end : end] = key_states
        self._value_store[: self.rows, :, self.end : end] = value_states
        self.set_window(self.rows, self.start, end)
        return self.keys, self.values

    def move_rows(self, sources: list[int], targets: list[int]) -> None:
        """Copies rows ``sources`` of the window over rows ``targets``."""
        for store in (self._key_store, self._value_store):
            _move_rows(store[:, :, self.start : self.end], sources, targets)

    def write_rows(self, first: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Writes rows from ``first`` on, right-aligned in the window."""
        rows, length = keys.shape[0], keys.shape[-2]
        self._key_store[first : first + rows, :, self.end - length : self.end] = keys
        self._value_store[first : first + rows, :, self.end - length : self.end] = values


class RunningBatch:
    """Batched decode state: one row per active request."""

    def __init__(self) -> None:
        self._cache: DynamicCache | None = None
        self._rows = 0
        self._start = self._end = 0
        # Which positions are real, in the same geometry as the layers' storage.
        self._mask_store = torch.zeros(0, 0, dtype=torch.long)
        self._positions = torch.zeros(0, dtype=torch.long)

    def __len__(self) -> int:
        return self._rows

    @property
    def padded_length(self) -> int:
        return self._end - self._start

    @property
    def _mask(self) -> torch.Tensor:
        return self._mask_store[: self._rows, self._start : self._end]

    def _slot_layers(self) -> list[SlotLayer]:
        assert self._cache is not None
        return [layer for layer in self._cache.layers if isinstance(layer, SlotLayer)]

    def _set_windows(self) -> None:
        for layer in self._slot_layers():
            layer.set_window(self._rows, self._start, self._end)

    def append(self, cache: DynamicCache, length: int, copies: int = 1) -> None:
        """Adds ``copies`` rows whose prompt (``length`` tokens) is in ``cache``.

        Several copies are a request's choices sharing one prefill; the batch
        takes ownership of ``cache``.
        """
        self.append_rows(cache, torch.ones(1, length, dtype=torch.long), [copies])

    @torch.inference_mode()
    def append_rows(self, cache: DynamicCache, mask: torch.Tensor, copies: list[int]) -> None:
        """Adds the rows of a (left-padded) prefill batch, row ``i`` ``copies[i]`` times.

        ``mask [rows, length]`` marks each row's real positions; the batch
        takes ownership of ``cache``.
        """
        if any(count != 1 for count in copies):
            repeats = torch.tensor(copies)
            for layer in cache.layers:
                on_device = repeats.to(layer.keys.device)
                layer.keys = layer.keys.repeat_interleave(on_device, dim=0)
                layer.values = layer.values.repeat_interleave(on_device, dim=0)
            mask = mask.repeat_interleave(repeats, dim=0)
        if self._cache is None:
            self._adopt(cache)
        assert self._cache is not None
        joining, length = mask.shape
        reopened = max(0, length - self.padded_length)
        self._reserve(self._rows + joining, before=reopened, after=0)
        self._mask_store[: self._rows, self._start - reopened : self._start] = 0
        self._start -= reopened
        window = self.padded_length
        for ours, theirs in zip(self._cache.layers, cache.layers, strict=True):
            if isinstance(ours, SlotLayer):
                ours.set_window(self._rows, self._start, self._end)
                ours.write_rows(self._rows, theirs.keys, theirs.values)
            else:
                ours.keys, ours.values = (
                    torch.cat([_pad_left(mine, reopened, 2), _pad_left(new, window - length, 2)])
                    for mine, new in ((ours.keys, theirs.keys), (ours.values, theirs.values))
                )
        rows = slice(self._rows, self._rows + joining)
        self._mask_store[rows, self._start : self._end] = 0
        self._mask_store[rows, self._end - length : self._end] = mask
        self._positions = torch.cat([self._positions, mask.sum(dim=1)])
        self._rows += joining
        self._set_windows()

    def _adopt(self, cache: DynamicCache) -> None:
        """The batch's own cache, shaped like ``cache`` (which is left as it
        is): full-attention layers become slot layers, others start empty."""
        layers = []
        for layer in cache.layers:
            if type(layer) is DynamicLayer and layer.is_initialized:
                layers.append(SlotLayer(layer.keys))
            else:  # joins concatenate onto it
                empty = copy.copy(layer)
                empty.keys, empty.values = layer.keys[:0, :, :0], layer.values[:0, :, :0]
                layers.append(empty)
        self._cache = copy.copy(cache)
        self._cache.layers = layers

    def _reserve(self, rows: int, *, before: int, after: int, spare: int = SPARE_POSITIONS) -> None:
        """Makes room for ``rows`` rows and ``before``/``after`` more columns
        around the window, reallocating (one copy of the window, with at least
        ``spare`` columns after it) only if short."""
        slots, columns = self._mask_store.shape
        if rows <= slots and before <= self._start and self._end + after <= columns:
            return
        window = self.padded_length
        if rows <= slots and before + window + after + spare // 2 <= columns:
            self._move_window(before)
            return
        spare = max(after, spare, window // 4)
        slots, columns = max(rows, slots), before + window + spare
        for layer in self._slot_layers():
            layer.reallocate(slots, columns, before)
        mask_store = self._mask_store.new_zeros(slots, columns)
        mask_store[: self._rows, before : before + window] = self._mask
        self._mask_store = mask_store
        self._start, self._end = before, before + window

    def _move_window(self, start: int) -> None:
        """Moves the window within the storage it has (one copy of it, as a
        reallocation makes, but no new storage): the window's start creeps
        right as rows leave, so the room after it runs out long before the
        storage is too small, and new storage would drop every CUDA graph."""
        window = self.padded_length
        for layer in self._slot_layers():
            layer.move_window(start)
        self._mask_store[: self._rows, start : start + window] = self._mask.clone()
        self._start, self._end = start, start + window

    @torch.inference_mode()
    def keep(self, rows: list[int]) -> list[int]:
        """Keeps only the listed rows (in increasing order), then drops padding
        no row needs. Returns the new order: row ``j`` is now old row ``order[j]``.

        A leaving row's slot is taken by one of the last rows, so the order
        changes; only rows that move are copied.
        """
        if len(rows) == self._rows:
            return list(range(self._rows))
        count = len(rows)
        order = list(range(count))
        kept = set(rows)
        holes = [row for row in range(count) if row not in kept]
        movers = [row for row in rows if row >= count]
        for hole, mover in zip(holes, movers, strict=True):
            order[hole] = mover
        if holes:
            for layer in self._slot_layers():
                layer.move_rows(movers, holes)
            _move_rows(self._mask_store[:, self._start : self._end], movers, holes)
        new_order = torch.tensor(order, dtype=torch.long)
        self._positions = self._positions[new_order]
        self._rows = count
        # Leading columns no row needs (all of them once the batch is empty).
        unused = (
            int((self._mask.cumsum(dim=1) == 0).sum(dim=1).min()) if count else self.padded_length
        )
        assert self._cache is not None
        for layer in self._cache.layers:
            if not isinstance(layer, SlotLayer):
                layer.keys = layer.keys[new_order, :, unused:]
                layer.values = layer.values[new_order, :, unused:]
        self._start += unused
        self._set_windows()
        return order

    @torch.inference_mode()
    def forward(
        self,
        model: PreTrainedModel,
        next_tokens: list[list[int]],
        logits_rows: list[int] | None = None,
    ) -> torch.Tensor:
        """Feeds each row its new tokens; returns next-token logits ``[rows,
        vocab]`` for the rows in ``logits_rows`` (all when None), in that order.

        A row usually brings one token (the last sampled); after a jump-forward
        it brings several, and one waiting for its token mask brings none.
        Shorter rows are left-padded within the step with masked positions, so
        every row's last position is real, or (no tokens) all of them are
        padding, attending to the row's own past.
        """
        wanted = None if logits_rows is None else torch.tensor(logits_rows, dtype=torch.long)
        counts = [len(tokens) for tokens in next_tokens]
        lengths = torch.tensor(counts, dtype=torch.long)
        width = max(counts)
        graphs = getattr(model, "decode_graphs", None)
        buckets = None
        if graphs is not None and self._all_slot_layers():
            buckets = graphs.bucket(self._rows, width)
        if buckets is not None:
            width = buckets[1]
        if width == 1 and min(counts) == 1:
            ids = torch.tensor(next_tokens, dtype=torch.long)
            new_mask: torch.Tensor | int = 1
            positions = self._positions.unsqueeze(1)
        else:
            # Padded in Python, one tensor built: a write per row cost ~3 µs each.
            ids = torch.tensor(
                [[0] * (width - len(tokens)) + tokens for tokens in next_tokens], dtype=torch.long
            )
            offsets = torch.arange(width).unsqueeze(0) - (width - lengths).unsqueeze(1)
            new_mask = (offsets >= 0).long()
            positions = self._positions.unsqueeze(1) + offsets.clamp(min=0)
        # The lean eager forward skips the LM head for unwanted rows; a graph
        # replay and HF's modeling compute every row, picked from after.
        model_selects = buckets is None and isinstance(model, LeanCausalLM)
        if buckets is not None:
            assert graphs is not None
            logits = self._forward_static(graphs, buckets[0], ids, positions, new_mask)
        else:
            selected = wanted if model_selects else None
            logits = self._forward_eager(model, ids, positions, new_mask, selected)
        if wanted is not None and not model_selects:
            logits = logits[wanted.to(logits.device)]
        self._end += width
        self._positions = self._positions + lengths
        return logits

    def _forward_eager(
        self,
        model: PreTrainedModel,
        ids: torch.Tensor,
        positions: torch.Tensor,
        new_mask: torch.Tensor | int,
        logits_rows: torch.Tensor | None,
    ) -> torch.Tensor:
        """``logits_rows`` (a lean model only): the rows whose logits it computes."""
        width = ids.shape[1]
        self._reserve(self._rows, before=0, after=width)
        self._mask_store[: self._rows, self._end : self._end + width] = new_mask
        mask = self._mask_store[: self._rows, self._start : self._end + width]
        device = model.device
        output = model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            past_key_values=self._cache,
            use_cache=True,
            logits_to_keep=1,
            **({"logits_rows": logits_rows.to(device)} if logits_rows is not None else {}),
        )
        return output.logits[:, -1, :].float()

    def _all_slot_layers(self) -> bool:
        return self._cache is not None and all(
            isinstance(layer, SlotLayer) for layer in self._cache.layers
        )

    def _forward_static(
        self,
        graphs: DecodeGraphs,
        bucket: int,
        ids: torch.Tensor,
        positions: torch.Tensor,
        new_mask: torch.Tensor | int,
    ) -> torch.Tensor:
        """The step through fixed shapes (a CUDA graph's): rows padded to
        ``bucket``, each slot layer's whole storage attended under a mask of
        every row's window plus its new columns (causally)."""
        rows, width = ids.shape
        self._reserve(bucket, before=0, after=width, spare=GRAPH_SPARE_POSITIONS)
        first = self._end
        self._mask_store[:rows, first : first + width] = new_mask
        mask = torch.zeros(bucket, width, self._mask_store.shape[1], dtype=torch.bool)
        window = self._mask_store[:rows, self._start : first + width].bool()
        mask[:rows, :, self._start : first + width] = window.unsqueeze(1)
        mask[:, :, first : first + width] &= torch.ones(width, width, dtype=torch.bool).tril()
        # Every new position sees itself: all a padding row (or a row's
        # padding position) sees, which keeps its output finite.
        diagonal = torch.arange(width)
        mask[:, diagonal, first + diagonal] = True
        padded_ids = torch.zeros(bucket, width, dtype=torch.long)
        padded_ids[:rows] = ids
        padded_positions = torch.zeros(bucket, width, dtype=torch.long)
        padded_positions[:rows] = positions
        layers = self._slot_layers()
        logits = graphs.run(
            [layer.stores for layer in layers], padded_ids, padded_positions, mask, first
        )
        for layer in layers:
            layer.set_window(self._rows, self._start, first + width)
        return logits[:rows]
