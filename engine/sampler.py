"""Batched logits processing and sampling, one row per request.

Every row keeps its own settings and random generator, so requests with
different temperatures, filters and seeds share one batched step, and a
seeded request draws the same numbers whatever else is in the batch.
Sampling uses the Gumbel-max trick (argmax of logits plus Gumbel noise), which
draws from the softmax distribution with one noise vector per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from engine.params import SamplingParams


@dataclass
class SamplingRow:
    """The per-request state sampling needs."""

    params: SamplingParams
    generator: torch.Generator
    seen: torch.Tensor  # bool [vocab]: tokens in prompt or output, for repetition_penalty
    output_counts: torch.Tensor  # int [vocab]: output tokens only, for presence/frequency

    def record(self, token: int) -> None:
        self.seen[token] = True
        self.output_counts[token] += 1


def new_sampling_row(
    params: SamplingParams,
    prompt_ids: Sequence[int],
    vocab_size: int,
    token_bytes: Sequence[bytes],
    choice_index: int = 0,
) -> SamplingRow:
    """``choice_index`` offsets the seed, so choice 0 of a seeded request with
    ``n > 1`` equals the same request with ``n = 1`` and the others differ."""
    generator = torch.Generator()
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed + choice_index)
    seen = torch.zeros(vocab_size, dtype=torch.bool)
    if prompt_ids:
        seen[torch.tensor(list(prompt_ids), dtype=torch.long)] = True
    counts = torch.zeros(vocab_size, dtype=torch.int32)
    return SamplingRow(params=params, generator=generator, seen=seen, output_counts=counts)


def apply_repetition_penalty(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """CTRL-style penalty: divide positive logits of seen tokens, multiply negative ones."""
    penalties = [row.params.repetition_penalty for row in rows]
    if all(p == 1.0 for p in penalties):
        return
    seen = torch.stack([row.seen for row in rows])
    penalty = torch.tensor(penalties, dtype=logits.dtype, device=logits.device).unsqueeze(1)
    penalized = torch.where(logits > 0, logits / penalty, logits * penalty)
    logits.copy_(torch.where(seen.to(logits.device), penalized, logits))


def apply_presence_frequency_penalties(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """OpenAI's penalties: subtract ``presence`` once and ``frequency`` per use
    from the logits of tokens the output already contains."""
    presence = [row.params.presence_penalty for row in rows]
    frequency = [row.params.frequency_penalty for row in rows]
    if not any(presence) and not any(frequency):
        return
    counts = torch.stack([row.output_counts for row in rows]).to(logits.device, logits.dtype)
    as_column = {"dtype": logits.dtype, "device": logits.device}
    logits -= torch.tensor(presence, **as_column).unsqueeze(1) * (counts > 0).to(logits.dtype)
    logits -= torch.tensor(frequency, **as_column).unsqueeze(1) * counts


def apply_penalties(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """Everything that adjusts logits before the constraint mask."""
    apply_repetition_penalty(logits, rows)
    apply_presence_frequency_penalties(logits, rows)


def _filter_top_k_top_p(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> torch.Tensor:
    """Sets logits outside each row's top-k / nucleus to -inf."""
    vocab = logits.shape[-1]
    top_ks = [row.params.top_k if 0 < row.params.top_k < vocab else vocab for row in rows]
    top_ps = [row.params.top_p for row in rows]
    if all(k == vocab for k in top_ks) and all(p >= 1.0 for p in top_ps):
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    ranks = torch.arange(vocab, device=logits.device).unsqueeze(0)
    drop = ranks >= torch.tensor(top_ks, device=logits.device).unsqueeze(1)
    probs = sorted_logits.masked_fill(drop, float("-inf")).softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs
    drop |= mass_before >= torch.tensor(top_ps, dtype=probs.dtype, device=logits.device).unsqueeze(
        1
    )
    drop[:, 0] = False  # the most likely token always survives
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)


def sample(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> list[int]:
    """Picks one token per row from already-masked logits ``[rows, vocab]``."""
    greedy = [row.params.temperature == 0.0 for row in rows]
    temperatures = torch.tensor(
        [1.0 if g else row.params.temperature for g, row in zip(greedy, rows, strict=True)],
        dtype=logits.dtype,
        device=logits.device,
    ).unsqueeze(1)
    scaled = _filter_top_k_top_p(logits / temperatures, rows)
    noise = torch.stack(
        [
            _gumbel_noise(logits.shape[-1], None if g else row.generator)
            for g, row in zip(greedy, rows, strict=True)
        ]
    ).to(logits.device, logits.dtype)
    return (scaled + noise).argmax(dim=-1).tolist()


def _gumbel_noise(size: int, generator: torch.Generator | None) -> torch.Tensor:
    """Gumbel(0, 1) noise from the row's own generator; zeros for greedy rows."""
    if generator is None:
        return torch.zeros(size)
    uniform = torch.rand(size, generator=generator).clamp_(1e-10, 1.0 - 1e-7)
    return -torch.log(-torch.log(uniform))
