"""Batched logits processing and sampling, one row per request.

Every row keeps its own settings and random generator, so requests with
different temperatures, filters and seeds share one batched step, and a
seeded request draws the same numbers whatever else is in the batch.
Sampling inverts each row's cumulative distribution at one uniform number:
one draw per row and a few batched passes over the vocabulary, where the
Gumbel-max trick needs a random number and two logarithms per token (most of
a step's sampling time with a 128k vocabulary).

Work for a feature is skipped entirely when no row in the batch uses it; the
per-row Python loops (DRY's repeat search, mirostat's mu update) only visit
the rows that enable them.

On a CPU, torch's ``argmax`` and ``cumsum`` walk a row one element at a time
while ``amax`` and ``sum`` are vectorised (a 128k row: argmax 70 µs against
6 µs, cumsum 90 µs against 6 µs), and ``exp`` slows down threefold on the
``-inf`` a constraint leaves where ``softmax`` does not. So the greedy pick
is numpy's ``argmax``, which is vectorised and exact alike (8 rows of 4k:
4 µs against torch's 30; 32 rows of 128k: 340 µs against 3,500), and with a
large vocabulary the draw first finds the block of ``VOCAB_BLOCK`` tokens
that holds the answer with vectorised reductions, then searches inside that
one block; weights come from an in-place softmax. The draw goes by blocks
by vocabulary alone, as its rounding must not depend on what else is in the
batch (a seeded row draws the same token in any batch).
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.params import SamplingParams

# DRY scans at most this many of the latest context tokens (prompt + output),
# so its cost per step does not grow with the context.
DRY_MAX_HISTORY = 1024
# A repeat is followed at most this many tokens past ``dry_allowed_length``; a
# longer one is penalised as if it were that long. At the default base the
# penalty there is already 1.75**32 (~6e7) times the multiplier, so the cap
# only bounds the work (at most this many vectorised passes per step).
DRY_MAX_EXTRA_LENGTH = 32
# DRY penalties are clamped here: large enough to rule a token out, small enough
# to stay finite after temperature scaling, so a row whose every allowed token
# repeats still samples one of them rather than a masked token.
DRY_MAX_PENALTY = 1e4
# Temperatures below this act as this: dividing by a tinier one overflows
# logits to inf and turns the softmax (top_p, mirostat) into NaN.
MIN_TEMPERATURE = 1e-6
# Distinct (breakers, vocabulary) pairs whose breaker tokens are remembered.
BREAKER_CACHE_SIZE = 32

# Tokens per block for the two-level draw (see the module docstring), on a
# CPU for vocabularies of at least BLOCKED_MIN_VOCAB tokens. A 128k
# vocabulary, 32 rows: 256 µs by blocks of 256 against 312 by blocks of 1024.
VOCAB_BLOCK = 256
BLOCKED_MIN_VOCAB = 16 * 1024

_NUMPY_DTYPES = frozenset({torch.float32, torch.float64, torch.float16})
"""Logits numpy reads as they are (it has no bfloat16)."""
_LN2 = math.log(2.0)
UNIFORM_STEP = 2.0**-24
_BreakerKey = tuple[tuple[str, ...], int, int]
_BREAKER_CACHE: dict[_BreakerKey, tuple[Sequence[bytes], frozenset[int]]] = {}


@dataclass
class DryState:
    """What DRY needs to find repeats: the recent context and the tokens that
    end a repeat match."""

    breakers: frozenset[int]
    history: list[int]

    def push(self, token: int) -> None:
        """Appends a token, trimming in batches so the list stays bounded
        without copying it every step."""
        self.history.append(token)
        if len(self.history) > 2 * DRY_MAX_HISTORY:
            del self.history[:-DRY_MAX_HISTORY]


@dataclass
class SamplingRow:
    """The per-request state sampling needs."""

    params: SamplingParams
    # Python's Mersenne Twister, not a torch.Generator: one draw a row a step
    # costs 0.05 µs against ~1.1 µs for a one-element torch.rand (37 µs a
    # step at 32 rows); the uniforms then go to the device as one tensor.
    generator: random.Random | None  # None: a greedy row, which never draws
    seen: torch.Tensor  # bool [vocab]: tokens in prompt or output, for repetition_penalty
    output_counts: torch.Tensor  # int [vocab]: output tokens only, for presence/frequency
    # logit_bias as tensors, built once; ids outside the vocabulary are left out.
    bias_ids: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    bias_values: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    dry: DryState | None = None  # None: DRY is off for this row
    mirostat_mu: float | None = None  # None: mirostat is off for this row
    # Whether any of apply_penalties' steps changes this row: most rows are
    # changed by none, and a batch of them skips its four per-row scans.
    adjusts_logits: bool = field(init=False)

    def __post_init__(self) -> None:
        self.adjusts_logits = self.penalized or self.bias_ids.numel() > 0 or self.dry is not None

    @property
    def penalized(self) -> bool:
        """Whether this row's own penalties read ``seen``/``output_counts``."""
        return _penalized(self.params)

    def record(self, token: int) -> None:
        # Two tensor writes cost ~5 µs a row a step; a row without penalties
        # never reads them (its own factors are neutral in a mixed batch).
        if self.penalized:
            self.seen[token] = True
            self.output_counts[token] += 1
        if self.dry is not None:
            self.dry.push(token)


def _penalized(params: SamplingParams) -> bool:
    return bool(
        params.repetition_penalty != 1.0 or params.presence_penalty or params.frequency_penalty
    )


@functools.cache
def _unused_history(vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``seen`` and ``output_counts`` for rows without penalties: a batch
    with a penalised row stacks every row's, and a neutral row's factors
    ignore them, so they need not be the row's own (with a 128k vocabulary
    building them cost ~80 µs a request)."""
    return torch.zeros(vocab_size, dtype=torch.bool), torch.zeros(vocab_size, dtype=torch.int32)


def new_sampling_row(
    params: SamplingParams,
    prompt_ids: Sequence[int],
    vocab_size: int,
    token_bytes: Sequence[bytes],
    choice_index: int = 0,
) -> SamplingRow:
    """``choice_index`` offsets the seed, so choice 0 of a seeded request with
    ``n > 1`` equals the same request with ``n = 1`` and the others differ."""
    # A greedy row draws nothing (seeding from the OS costs ~9 µs a row).
    generator = None
    if params.temperature > 0.0:
        generator = random.Random(None if params.seed is None else params.seed + choice_index)
    if _penalized(params):
        seen = torch.zeros(vocab_size, dtype=torch.bool)
        if prompt_ids:
            seen[torch.tensor(list(prompt_ids), dtype=torch.long)] = True
        counts = torch.zeros(vocab_size, dtype=torch.int32)
    else:  # never read for this row, never written: one shared pair of zeros
        seen, counts = _unused_history(vocab_size)
    bias = {token: value for token, value in params.logit_bias.items() if token < vocab_size}
    dry = None
    if params.dry_multiplier > 0:
        breakers = dry_breaker_tokens(params.dry_sequence_breakers, token_bytes)
        dry = DryState(breakers=breakers, history=list(prompt_ids[-DRY_MAX_HISTORY:]))
    target = params.mirostat_target
    return SamplingRow(
        params=params,
        generator=generator,
        seen=seen,
        output_counts=counts,
        bias_ids=torch.tensor(list(bias), dtype=torch.long),
        bias_values=torch.tensor(list(bias.values()), dtype=torch.float32),
        dry=dry,
        mirostat_mu=None if target is None else 2.0 * target,
    )


def invalid_logit_bias_tokens(params: SamplingParams, vocab_size: int) -> list[int]:
    """The logit_bias token ids this vocabulary lacks, sorted, so the engine
    can refuse the request; the sampler itself just skips them."""
    return sorted(token for token in params.logit_bias if not 0 <= token < vocab_size)


def dry_breaker_tokens(breakers: tuple[str, ...], token_bytes: Sequence[bytes]) -> frozenset[int]:
    """Ids of the tokens whose text contains a breaker string.

    Scanning a vocabulary takes a while, and nearly every request uses the
    default breakers with the one vocabulary, so results are cached by the
    breaker tuple and the vocabulary's identity and length. The cache holds a
    reference to the vocabulary, so its id cannot be reused by another list
    while the entry lives.
    """
    key = (breakers, id(token_bytes), len(token_bytes))
    cached = _BREAKER_CACHE.get(key)
    if cached is not None:
        return cached[1]
    found = _scan_breaker_tokens(breakers, token_bytes)
    if len(_BREAKER_CACHE) >= BREAKER_CACHE_SIZE:
        del _BREAKER_CACHE[next(iter(_BREAKER_CACHE))]  # oldest first
    _BREAKER_CACHE[key] = (token_bytes, found)
    return found


def _scan_breaker_tokens(breakers: tuple[str, ...], token_bytes: Sequence[bytes]) -> frozenset[int]:
    """Empty breakers are ignored: they would make every token a breaker and
    silently turn DRY off. Bytes that are not whole UTF-8 characters are
    dropped before testing, as a token's text is what breakers describe."""
    wanted = [breaker for breaker in breakers if breaker]
    if not wanted:
        return frozenset()
    pattern = re.compile("|".join(re.escape(breaker) for breaker in wanted))
    return frozenset(
        token
        for token, piece in enumerate(token_bytes)
        if pattern.search(piece.decode("utf-8", errors="ignore"))
    )


def apply_logit_bias(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """Adds each row's logit_bias to its logits, one scatter for the batch."""
    if not any(row.bias_ids.numel() for row in rows):
        return
    row_index = torch.cat([torch.full_like(row.bias_ids, i) for i, row in enumerate(rows)])
    token_index = torch.cat([row.bias_ids for row in rows])
    values = torch.cat([row.bias_values for row in rows]).to(logits.device, logits.dtype)
    # (row, token) pairs are unique, so plain indexed addition adds each bias once.
    logits[row_index.to(logits.device), token_index.to(logits.device)] += values


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


def apply_dry_penalty(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """DRY: lowers the logit of each token that would extend a repeat of the
    context longer than ``dry_allowed_length``, growing with the repeat."""
    vocab = logits.shape[-1]
    row_index: list[int] = []
    token_index: list[int] = []
    penalties: list[float] = []
    for i, row in enumerate(rows):
        if row.dry is None:
            continue
        params = row.params
        lengths = dry_match_lengths(
            row.dry.history[-DRY_MAX_HISTORY:],
            row.dry.breakers,
            params.dry_allowed_length + DRY_MAX_EXTRA_LENGTH,
        )
        for token, length in lengths.items():
            if length >= params.dry_allowed_length and token < vocab:
                row_index.append(i)
                token_index.append(token)
                penalties.append(dry_penalty(params, length))
    if penalties:
        device = logits.device
        at_rows = torch.tensor(row_index, device=device)
        at_tokens = torch.tensor(token_index, device=device)
        logits[at_rows, at_tokens] -= torch.tensor(penalties, dtype=logits.dtype, device=device)


def dry_penalty(params: SamplingParams, length: int) -> float:
    """``multiplier * base ** (length - allowed_length)``, clamped to
    ``DRY_MAX_PENALTY`` (the base has no upper bound, so the power can overflow)."""
    try:
        penalty = params.dry_multiplier * params.dry_base ** (length - params.dry_allowed_length)
    except OverflowError:
        return DRY_MAX_PENALTY
    return min(penalty, DRY_MAX_PENALTY)


def dry_match_lengths(
    context: Sequence[int], breakers: Set[int], max_length: int
) -> dict[int, int]:
    """Maps each token ``t`` to the longest ``n`` (at most ``max_length``) such
    that the last ``n`` context tokens followed by ``t`` occur earlier in it.

    Only positions holding the last token can end an earlier occurrence, so
    those are the candidates; they are extended backwards together, one
    vectorised pass per matched token. Matches never contain a breaker: as both
    sides of a match are equal, it is enough to stop at the last breaker of the
    context. A breaker is never a penalised continuation either.
    """
    limit = _tokens_since_breaker(context, breakers, max_length)
    if limit == 0 or len(context) < 2:
        return {}
    tokens = np.asarray(context, dtype=np.int64)
    last = len(tokens) - 1
    ends = np.flatnonzero(tokens[:last] == tokens[last])
    lengths = np.ones(len(ends), dtype=np.int64)
    live = np.arange(len(ends))  # candidates whose match is still growing
    for n in range(1, limit):
        live = live[ends[live] >= n]
        live = live[tokens[ends[live] - n] == tokens[last - n]]
        if live.size == 0:
            break
        lengths[live] += 1
    longest: dict[int, int] = {}
    for token, length in zip(tokens[ends + 1].tolist(), lengths.tolist(), strict=True):
        if token not in breakers and length > longest.get(token, 0):
            longest[token] = length
    return longest


def _tokens_since_breaker(context: Sequence[int], breakers: Set[int], cap: int) -> int:
    """How many tokens end the context without a breaker among them, up to ``cap``."""
    count = 0
    for token in reversed(context):
        if count == cap or token in breakers:
            break
        count += 1
    return count


def apply_penalties(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> None:
    """Everything that adjusts logits before the constraint mask, in place.

    The bias comes first so the penalties see the logits the user asked for.
    """
    if not any(row.adjusts_logits for row in rows):
        return
    apply_logit_bias(logits, rows)
    apply_repetition_penalty(logits, rows)
    apply_presence_frequency_penalties(logits, rows)
    apply_dry_penalty(logits, rows)


def _uses_mirostat(row: SamplingRow) -> bool:
    """Greedy rows stay greedy even with mirostat on: no truncation, no mu update."""
    return row.mirostat_mu is not None and row.params.temperature > 0.0


def _filter_top_k_top_p_min_p(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> torch.Tensor:
    """Sets logits outside each row's top-k / nucleus / min-p set to -inf.

    Rows that use mirostat are left alone: its truncation replaces these.
    """
    vocab = logits.shape[-1]
    classic = [not _uses_mirostat(row) for row in rows]
    top_ks = [
        row.params.top_k if use and 0 < row.params.top_k < vocab else vocab
        for use, row in zip(classic, rows, strict=True)
    ]
    top_ps = [row.params.top_p if use else 1.0 for use, row in zip(classic, rows, strict=True)]
    min_ps = [row.params.min_p if use else 0.0 for use, row in zip(classic, rows, strict=True)]
    logits = _filter_top_k_top_p(logits, top_ks, top_ps)
    return _filter_min_p(logits, min_ps)


def _filter_top_k_top_p(
    logits: torch.Tensor, top_ks: Sequence[int], top_ps: Sequence[float]
) -> torch.Tensor:
    """Sets logits outside each row's top-k / nucleus to -inf."""
    vocab = logits.shape[-1]
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


def _filter_min_p(logits: torch.Tensor, min_ps: Sequence[float]) -> torch.Tensor:
    """Drops tokens less likely than ``min_p`` times the top token.

    ``p / p_max = exp(logit - max_logit)``, so this is a threshold on logits
    and needs no softmax; it also means the order against top-k/top-p does not
    matter, as those keep the ratios. The top token always survives.
    """
    if not any(min_ps):
        return logits
    as_column = torch.tensor(min_ps, dtype=logits.dtype, device=logits.device).unsqueeze(1)
    threshold = logits.amax(dim=-1, keepdim=True) + as_column.log()
    return logits.masked_fill(logits < threshold, float("-inf"))


def _mirostat_truncate(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> torch.Tensor:
    """Mirostat v2's truncation: drops tokens whose surprise ``-log2 p``
    exceeds the row's mu, keeping at least the most likely one."""
    indices = [i for i, row in enumerate(rows) if _uses_mirostat(row)]
    if not indices:
        return logits
    index = torch.tensor(indices, device=logits.device)
    chosen = logits[index]
    mu = torch.tensor(
        [rows[i].mirostat_mu for i in indices], dtype=logits.dtype, device=logits.device
    ).unsqueeze(1)
    drop = chosen.log_softmax(dim=-1) < -mu * _LN2  # surprise > mu, in natural-log units
    drop.scatter_(1, chosen.argmax(dim=-1, keepdim=True), False)
    truncated = logits.clone()
    truncated[index] = chosen.masked_fill(drop, float("-inf"))
    return truncated


def _mirostat_update(
    truncated: torch.Tensor, tokens: torch.Tensor, rows: Sequence[SamplingRow]
) -> None:
    """``mu -= lr * (surprise - target)``, the surprise measured on the
    renormalised truncated distribution as llama.cpp does. A row with no
    finite logit (everything masked) has no surprise and keeps its mu."""
    indices = [i for i, row in enumerate(rows) if _uses_mirostat(row)]
    if not indices:
        return
    index = torch.tensor(indices, device=truncated.device)
    log_probs = truncated[index].log_softmax(dim=-1)
    picked = log_probs.gather(1, tokens[index].unsqueeze(1)).squeeze(1)
    for i, log_prob in zip(indices, picked.tolist(), strict=True):
        surprise = -log_prob / _LN2
        if math.isfinite(surprise):
            params = rows[i].params
            rows[i].mirostat_mu -= params.mirostat_lr * (surprise - params.mirostat_target)


def sample(logits: torch.Tensor, rows: Sequence[SamplingRow]) -> list[int]:
    """Picks one token per row from already-masked logits ``[rows, vocab]``.

    Consumes ``logits``: they are scaled and turned into sampling weights in
    place, since each fresh ``[rows, vocab]`` buffer costs page faults that,
    with a 128k vocabulary, outweigh the arithmetic. Advances each mirostat
    row's mu, so call it exactly once per step.
    """
    greedy = [row.params.temperature == 0.0 for row in rows]
    if all(greedy):
        # A greedy row keeps its top token through top-k, top-p and min-p,
        # and mirostat leaves it alone: nothing to filter or update.
        return argmax(logits).tolist()
    temperatures = [
        1.0 if g else max(row.params.temperature, MIN_TEMPERATURE)
        for g, row in zip(greedy, rows, strict=True)
    ]
    if any(temperature != 1.0 for temperature in temperatures):
        logits.div_(torch.tensor(temperatures, dtype=logits.dtype, device=logits.device)[:, None])
    filtered = _filter_top_k_top_p_min_p(logits, rows)
    filtered = _mirostat_truncate(filtered, rows)
    drawn = [i for i, g in enumerate(greedy) if not g]
    if not drawn:
        tokens = argmax(filtered)
    else:
        # 24 random bits: exact in float32 and below 1, as torch.rand's are.
        uniform = (
            torch.tensor([rows[i].generator.getrandbits(24) for i in drawn], dtype=torch.float32)
            .mul_(UNIFORM_STEP)
            .to(logits.device)
        )
        if len(drawn) < len(rows):
            tokens = argmax(filtered)  # the greedy rows' picks, the drawn rows' fallback
            index = torch.tensor(drawn, device=logits.device)
            tokens[index] = _draw_in_place(filtered[index], uniform, tokens[index])
        elif any(_uses_mirostat(row) for row in rows):  # its update reads the logits after
            tokens = _draw_in_place(filtered.clone(), uniform)
        else:
            tokens = _draw_in_place(filtered, uniform)
    _mirostat_update(filtered, tokens, rows)
    return tokens.tolist()


def _per_block(rows: torch.Tensor, reduce) -> torch.Tensor:
    """``reduce`` (``torch.amax``, ``torch.sum``) over each block of
    ``VOCAB_BLOCK`` tokens, a short last block included: ``[rows, blocks]``."""
    whole = rows.shape[-1] - rows.shape[-1] % VOCAB_BLOCK
    per_block = reduce(rows[:, :whole].unflatten(-1, (-1, VOCAB_BLOCK)), dim=-1)
    if whole == rows.shape[-1]:
        return per_block
    return torch.cat([per_block, reduce(rows[:, whole:], dim=-1, keepdim=True)], dim=-1)


def _block_positions(block: torch.Tensor, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids of each row's chosen block (clamped to the vocabulary, for
    gathering) and which of them are real (the last block may be short)."""
    positions = block.unsqueeze(1) * VOCAB_BLOCK + torch.arange(VOCAB_BLOCK, device=block.device)
    return positions.clamp(max=vocab - 1), positions < vocab


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """``logits.argmax(dim=-1)`` (the first of tied maxima included), on a CPU
    by numpy's vectorised search."""
    if logits.device.type == "cpu" and logits.dtype in _NUMPY_DTYPES:
        return torch.from_numpy(np.argmax(logits.detach().numpy(), axis=-1))
    return logits.argmax(dim=-1)


def _draw_in_place(
    logits: torch.Tensor, uniform: torch.Tensor, fallback: torch.Tensor | None = None
) -> torch.Tensor:
    """The token where each row's cumulative softmax first exceeds its
    uniform number; ``logits`` may be overwritten. Masked tokens weigh exactly 0,
    so they never are the first to exceed it. A row with nothing allowed (or a
    draw rounding past the total) keeps ``fallback``: by default an allowed
    token if it has one, searched for only when such a row exists."""
    vocab = logits.shape[-1]
    if logits.device.type == "cpu":  # a fresh buffer costs page faults there
        weights = torch.ops.aten._softmax.out(logits, -1, False, out=logits)
    else:
        weights = logits.softmax(dim=-1)
    if weights.device.type == "cpu" and vocab >= BLOCKED_MIN_VOCAB:
        picked, total = _blocked_inverse_cdf(weights, uniform)
    else:
        cdf = weights.cumsum_(dim=-1)
        total = cdf[:, -1]
        picked = torch.searchsorted(cdf, (uniform * total).unsqueeze(1), right=True).squeeze(1)
    usable = (picked < vocab) & (total > 0)  # an all-masked row's softmax is NaN
    picked = picked.clamp_(max=vocab - 1)
    if fallback is None:
        if bool(usable.all()):
            return picked
        # The buffer holds the weights (by blocks) or their running sum
        # (plain): either's argmax is a token of positive weight, where a row has one.
        fallback = argmax(weights)
    return torch.where(usable, picked, fallback)


def _blocked_inverse_cdf(
    weights: torch.Tensor, uniform: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The inverse CDF at ``uniform`` over block sums, then inside the chosen
    block; also each row's total weight. A pick past the vocabulary means the
    draw rounded past the block's end."""
    vocab = weights.shape[-1]
    block_cdf = _per_block(weights, torch.sum).cumsum_(dim=-1)
    total = block_cdf[:, -1]
    target = (uniform * total).unsqueeze(1)
    block = torch.searchsorted(block_cdf, target, right=True).squeeze(1)
    block = block.clamp_(max=block_cdf.shape[1] - 1)
    before = torch.where(block > 0, block_cdf.gather(1, (block - 1).clamp(min=0)[:, None])[:, 0], 0)
    positions, real = _block_positions(block, vocab)
    inside_cdf = weights.gather(1, positions).masked_fill_(~real, 0.0).cumsum_(dim=-1)
    inside = torch.searchsorted(inside_cdf, target - before[:, None], right=True).squeeze(1)
    picked = torch.where(inside < VOCAB_BLOCK, block * VOCAB_BLOCK + inside, vocab)
    return picked, total
