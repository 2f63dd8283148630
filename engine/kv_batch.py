"""The running batch's key/value cache, with requests joining and leaving.

Rows are left-padded to a common length and the padding is masked out, so any
Hugging Face decoder that accepts ``attention_mask`` and ``position_ids`` (all
current causal LMs) decodes the whole batch in one forward call. A joining
request brings the cache of its own prefill; a finished request's row is
dropped at once, and padding columns no row needs any more are trimmed.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel


def _pad_left(tensor: torch.Tensor, amount: int, dim: int) -> torch.Tensor:
    if amount == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = amount
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


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
        if copies > 1:
            for layer in cache.layers:
                layer.keys = layer.keys.repeat(copies, 1, 1, 1)
                layer.values = layer.values.repeat(copies, 1, 1, 1)
        mask = torch.ones(copies, length, dtype=torch.long)
        positions = torch.full((copies,), length, dtype=torch.long)
        if self._cache is None or len(self) == 0:
            self._cache, self._mask, self._positions = cache, mask, positions
            return
        grow_batch = max(0, length - self.padded_length)
        grow_new = max(0, self.padded_length - length)
        for ours, theirs in zip(self._cache.layers, cache.layers, strict=True):
            ours.keys = torch.cat(
                [_pad_left(ours.keys, grow_batch, 2), _pad_left(theirs.keys, grow_new, 2)]
            )
            ours.values = torch.cat(
                [_pad_left(ours.values, grow_batch, 2), _pad_left(theirs.values, grow_new, 2)]
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
            layer.keys = layer.keys[index, :, unused:]
            layer.values = layer.values[index, :, unused:]
        self._mask = self._mask[index, unused:]
        self._positions = self._positions[index]

    @torch.inference_mode()
    def forward(self, model: PreTrainedModel, next_tokens: list[int]) -> torch.Tensor:
        """Feeds each row its last sampled token; returns next-token logits ``[rows, vocab]``."""
        device = model.device
        self._mask = torch.cat([self._mask, torch.ones(len(self), 1, dtype=torch.long)], dim=1)
        output = model(
            input_ids=torch.tensor(next_tokens, dtype=torch.long, device=device).unsqueeze(1),
            attention_mask=self._mask.to(device),
            position_ids=self._positions.to(device).unsqueeze(1),
            past_key_values=self._cache,
            use_cache=True,
        )
        self._cache = output.past_key_values
        self._positions = self._positions + 1
        return output.logits[:, -1, :].float()
