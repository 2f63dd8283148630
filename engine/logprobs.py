"""Log probabilities for the legacy completions ``logprobs`` field.

They describe the model's own distribution (a log-softmax of its raw logits),
before temperature, penalties or the constraint's mask: a caller can see how
much the constraint overrode the model, and the figures do not change with
sampling settings. The chosen token is always reported, even when it is not
among the ``k`` most likely.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.request import TokenLogprob


def chosen_logprobs(
    logits: torch.Tensor, tokens: Sequence[int], top_counts: Sequence[int]
) -> list[TokenLogprob]:
    """One entry per row of ``logits [rows, vocab]`` for the token chosen there."""
    if not tokens:
        return []
    logprobs = logits.float().log_softmax(dim=-1)
    chosen = logprobs.gather(1, torch.tensor(list(tokens), device=logits.device).unsqueeze(1))
    most = max(top_counts)
    top_values, top_ids = logprobs.topk(most, dim=-1) if most else (None, None)
    entries = []
    for row, (token, count) in enumerate(zip(tokens, top_counts, strict=True)):
        top: tuple[tuple[int, float], ...] = ()
        if count:
            top = tuple(
                zip(top_ids[row, :count].tolist(), top_values[row, :count].tolist(), strict=True)
            )
        entries.append(TokenLogprob(int(token), float(chosen[row, 0]), top))
    return entries


def prompt_logprobs(
    prompt_logits: torch.Tensor, prompt_ids: Sequence[int], top_count: int
) -> list[TokenLogprob | None]:
    """Entries for every prompt token; ``prompt_logits[i]`` predicts token ``i + 1``.

    The first token has nothing to be predicted from, so its entry is None.
    """
    following = list(prompt_ids[1:])
    entries = chosen_logprobs(
        prompt_logits[: len(following)], following, [top_count] * len(following)
    )
    return [None, *entries]
