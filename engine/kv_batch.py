"""The running batch's key/value cache, with requests joining and leaving.

Rows are left-padded to a common length and the padding is masked out, so any
Hugging Face decoder that accepts ``attention_mask`` and ``position_ids`` (all
current causal LMs) decodes the whole batch in one forward call. A joining
request brings the cache of its own prefill; a finished request's row is
dropped at once, and padding columns no row needs any more are trimmed.

Each full-attention layer keeps spare room along the sequence (``GrowableLayer``),
so a decode step writes its one new column in place instead of copying the
whole cache as ``DynamicLayer``'s concatenation does (a copy that grows with
batch and context: ~4 ms a step at 16 x 1000 tokens on the demo model).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

# Sequence positions reserved beyond the current length when a layer's
# storage is (re)allocated; growth beyond that doubles the room.
SPARE_POSITIONS = 64


def _pad_left(tensor: torch.Tensor, amount: int, dim: int) -> torch.Tensor:
    if amount == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = amount
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


class GrowableLayer(DynamicLayer):
    """A dynamic cache layer whose storage has room to grow in place.

    ``keys``/``values`` are views of the filled part of the storage, so the
    model sees exactly what a ``DynamicLayer`` would hold.
    """

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.lazy_initialization(keys, values)
        self.hold(keys, values)

    def hold(self, keys: torch.Tensor, values: torch.Tensor, spare: int = SPARE_POSITIONS) -> None:
        """Replaces the contents, with ``spare`` free positions after them."""
        length = keys.shape[-2]
        self._key_store = self._with_room(keys, length + spare)
        self._value_store = self._with_room(values, length + spare)
        self.keys = self._key_store[..., :length, :]
        self.values = self._value_store[..., :length, :]

    @staticmethod
    def _with_room(tensor: torch.Tensor, capacity: int) -> torch.Tensor:
        shape = list(tensor.shape)
        shape[-2] = capacity
        store = tensor.new_empty(shape)
        store[..., : tensor.shape[-2], :] = tensor
        return store

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        start = self.keys.shape[-2]
        end = start + key_states.shape[-2]
        if end > self._key_store.shape[-2]:
            self.hold(self.keys, self.values, spare=max(end - start, self._key_store.shape[-2]))
        self._key_store[..., start:end, :] = key_states
        self._value_store[..., start:end, :] = value_states
        self.keys = self._key_store[..., :end, :]
        self.values = self._value_store[..., :end, :]
        return self.keys, self.values


def _make_growable(cache: DynamicCache) -> None:
    """Swaps full-attention layers for growable ones; other kinds (sliding
    windows, ...) keep their own update rules."""
    for index, layer in enumerate(cache.layers):
        if type(layer) is DynamicLayer and layer.is_initialized:
            cache.layers[index] = GrowableLayer(layer.keys, layer.values)


def _set_contents(layer, keys: torch.Tensor, values: torch.Tensor) -> None:
    if isinstance(layer, GrowableLayer):
        layer.hold(keys, values)
    else:
        layer.keys, layer.values = keys, values


class RunningBatch:
    """Batched decode state: one row per active request."""

    def __init__(self) -> None:
        self._cache: DynamicCache | None = None
        self._mask = torch.zeros(0, 0, dtype=torch.long)
        self._positions = torch.zeros(0, dtype=torch.long)

    def __len__(self) -> int:
        return int(self._positions.shape[0])

    @property
    def padded_length(self) -> int:
        return int(self._mask.shape[1])

    def append(self, cache: DynamicCache, length: int, copies: int = 1) -> None:
        """Adds ``copies`` rows whose prompt (``length`` tokens) is in ``cache``.

        Several copies are a request's choices sharing one prefill; the batch
        takes ownership of ``cache``.
        """
        self.append_rows(cache, torch.ones(1, length, dtype=torch.long), [copies])

    def append_rows(self, cache: DynamicCache, mask: torch.Tensor, copies: list[int]) -> None:
        """Adds the rows of a (left-padded) prefill batch, row ``i`` ``copies[i]`` times.

        ``mask [rows, length]`` marks each row's real positions; the batch
        takes ownership of ``cache``.
        """
        if any(count != 1 for count in copies):
            repeats = torch.tensor(copies)
            for layer in cache.layers:
                layer.keys = layer.keys.repeat_interleave(repeats, dim=0)
                layer.values = layer.values.repeat_interleave(repeats, dim=0)
            mask = mask.repeat_interleave(repeats, dim=0)
        positions = mask.sum(dim=1)
        length = int(mask.shape[1])
        if self._cache is None or len(self) == 0:
            _make_growable(cache)
            self._cache, self._mask, self._positions = cache, mask, positions
            return
        grow_batch = max(0, length - self.padded_length)
        grow_new = max(0, self.padded_length - length)
        for ours, theirs in zip(self._cache.layers, cache.layers, strict=True):
            _set_contents(
                ours,
                torch.cat(
                    [_pad_left(ours.keys, grow_batch, 2), _pad_left(theirs.keys, grow_new, 2)]
                ),
                torch.cat(
                    [_pad_left(ours.values, grow_batch, 2), _pad_left(theirs.values, grow_new, 2)]
                ),
            )
        self._mask = torch.cat([_pad_left(self._mask, grow_batch, 1), _pad_left(mask, grow_new, 1)])
        self._positions = torch.cat([self._positions, positions])

    def keep(self, rows: list[int]) -> None:
        """Drops every row not listed, then trims padding no row needs."""
        if len(rows) == len(self):
            return
        if not rows:
            self.__init__()
            return
        index = torch.tensor(rows, dtype=torch.long)
        unused = int((self._mask[index].cumsum(dim=1) == 0).sum(dim=1).min())
        assert self._cache is not None
        for layer in self._cache.layers:
            _set_contents(layer, layer.keys[index, :, unused:], layer.values[index, :, unused:])
        self._mask = self._mask[index, unused:]
        self._positions = self._positions[index]

    @torch.inference_mode()
    def forward(self, model: PreTrainedModel, next_tokens: list[list[int]]) -> torch.Tensor:
        """Feeds each row its new tokens; returns next-token logits ``[rows, vocab]``.

        A row usually brings one token (the last sampled); after a jump-forward
        it brings several. Shorter rows are left-padded within the step with
        masked positions, so every row's last position is real.
        """
        device = model.device
        lengths = torch.tensor([len(tokens) for tokens in next_tokens], dtype=torch.long)
        width = int(lengths.max())
        if width == 1:
            ids = torch.tensor(next_tokens, dtype=torch.long)
            new_mask = torch.ones(len(self), 1, dtype=torch.long)
            positions = self._positions.unsqueeze(1)
        else:
            ids = torch.zeros(len(self), width, dtype=torch.long)
            offsets = torch.arange(width).unsqueeze(0) - (width - lengths).unsqueeze(1)
            new_mask = (offsets >= 0).long()
            positions = self._positions.unsqueeze(1) + offsets.clamp(min=0)
            for row, tokens in enumerate(next_tokens):
                ids[row, width - len(tokens) :] = torch.tensor(tokens, dtype=torch.long)
        self._mask = torch.cat([self._mask, new_mask], dim=1)
        output = model(
            input_ids=ids.to(device),
            attention_mask=self._mask.to(device),
            position_ids=positions.to(device),
            past_key_values=self._cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self._cache = output.past_key_values
        self._positions = self._positions + lengths
        return output.logits[:, -1, :].float()
