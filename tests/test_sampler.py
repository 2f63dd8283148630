"""The sampler's logits processing and draws, on a ten-token fake vocabulary."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
import torch

from engine.params import SamplingParams
from engine.sampler import (
    BLOCKED_MIN_VOCAB,
    DRY_MAX_PENALTY,
    VOCAB_BLOCK,
    SamplingRow,
    apply_penalties,
    argmax,
    dry_breaker_tokens,
    dry_match_lengths,
    dry_penalty,
    invalid_logit_bias_tokens,
    new_sampling_row,
    sample,
)

# 5 is "\n" and 6 contains ":" (default DRY breakers); 7 is half a UTF-8 character.
TOKEN_BYTES = [b"a", b"b", b"c", b"d", b"e", b"\n", b"x:", b"\xe2\x80", b"f", b"g"]
VOCAB = len(TOKEN_BYTES)
A, B, C, D, E, NEWLINE, COLON = range(7)
DRY = {"dry_multiplier": 0.8, "dry_base": 1.75}


def _row(prompt: Sequence[int] = (), **settings: object) -> SamplingRow:
    return new_sampling_row(SamplingParams(**settings), prompt, VOCAB, TOKEN_BYTES)


def _seeded_rows(count: int, **settings: object) -> list[SamplingRow]:
    return [_row(seed=seed, **settings) for seed in range(count)]


def _logits_from_probs(probs: Sequence[float], rows: int = 1) -> torch.Tensor:
    return torch.tensor(probs).log().repeat(rows, 1)


def _penalised(rows: Sequence[SamplingRow], logits: torch.Tensor | None = None) -> torch.Tensor:
    logits = torch.zeros(len(rows), VOCAB) if logits is None else logits.clone()
    apply_penalties(logits, rows)
    return logits


# -- logit_bias ---------------------------------------------------------------------


def test_logit_bias_plus_100_forces_the_token() -> None:
    rows = _seeded_rows(50, logit_bias={7: 100.0})
    logits = torch.randn(len(rows), VOCAB, generator=torch.Generator().manual_seed(0)) * 3
    apply_penalties(logits, rows)
    assert sample(logits, rows) == [7] * len(rows)


def test_logit_bias_minus_100_bans_the_token() -> None:
    logits = torch.zeros(101, VOCAB)
    logits[:, C] = 5.0  # by far the most likely token without the bias
    rows = [*_seeded_rows(100, logit_bias={C: -100.0}), _row(temperature=0, logit_bias={C: -100.0})]
    apply_penalties(logits, rows)
    assert C not in sample(logits, rows)


def test_logit_bias_skips_ids_outside_the_vocabulary_and_reports_them() -> None:
    params = SamplingParams(logit_bias={C: 5.0, VOCAB: 1.0, 99: -1.0})
    row = new_sampling_row(params, [], VOCAB, TOKEN_BYTES)
    expected = torch.zeros(1, VOCAB)
    expected[0, C] = 5.0
    assert torch.equal(_penalised([row]), expected)
    assert invalid_logit_bias_tokens(params, VOCAB) == [VOCAB, 99]
    assert invalid_logit_bias_tokens(SamplingParams(), VOCAB) == []


# -- existing penalties and filters -------------------------------------------------


def test_repetition_penalty_divides_positive_and_multiplies_negative_seen_logits() -> None:
    logits = torch.tensor([[2.0, -2.0, 1.0] + [0.0] * (VOCAB - 3)])
    penalised = _penalised([_row([A, B], repetition_penalty=2.0)], logits)
    assert penalised[0, :3].tolist() == [1.0, -4.0, 1.0]


def test_presence_and_frequency_penalties_count_output_tokens_only() -> None:
    row = _row([A], presence_penalty=0.5, frequency_penalty=0.25)
    row.record(D)
    row.record(D)
    penalised = _penalised([row])
    assert penalised[0, D].item() == pytest.approx(-(0.5 + 2 * 0.25))
    assert penalised[0, A].item() == 0.0


def test_a_row_without_penalties_is_unchanged_beside_a_penalised_one() -> None:
    """Rows without penalties skip recording tokens; in a mixed batch their
    logits stay as they were while their neighbour's are penalised."""
    plain, penalised_row = _row([A]), _row([A], repetition_penalty=2.0, frequency_penalty=1.0)
    for token in (B, B, C):
        plain.record(token)
        penalised_row.record(token)
    assert not plain.penalized and not plain.output_counts.any()
    assert penalised_row.output_counts[B].item() == 2
    logits = torch.full((2, VOCAB), 3.0)
    penalised = _penalised([plain, penalised_row], logits)
    assert penalised[0].tolist() == [3.0] * VOCAB
    assert penalised[1, B].item() == pytest.approx(3.0 / 2.0 - 2.0)


def test_rows_without_penalties_share_an_empty_history_and_greedy_rows_draw_nothing() -> None:
    """Their ``seen``/``output_counts`` are one shared pair of zeros (never
    written: recording skips them), and a greedy row holds no generator."""
    first, second = _row([A, B], temperature=0.0), _row([C], temperature=0.7)
    for token in (B, C):
        first.record(token)
        second.record(token)
    assert first.seen is second.seen and first.output_counts is second.output_counts
    assert not first.seen.any() and not first.output_counts.any()
    assert first.generator is None and second.generator is not None
    assert _row([A], presence_penalty=0.5).seen is not first.seen


def test_top_p_keeps_the_nucleus() -> None:
    rows = _seeded_rows(300, top_p=0.6)
    probs = [0.5, 0.3, 0.1] + [0.1 / (VOCAB - 3)] * (VOCAB - 3)
    assert set(sample(_logits_from_probs(probs, len(rows)), rows)) == {0, 1}


def test_top_k_1_equals_greedy() -> None:
    logits = torch.randn(40, VOCAB, generator=torch.Generator().manual_seed(1))
    greedy = sample(logits, [_row(temperature=0) for _ in range(40)])
    assert greedy == logits.argmax(dim=-1).tolist()
    assert sample(logits, _seeded_rows(40, top_k=1)) == greedy


# -- min_p --------------------------------------------------------------------------

MIN_P_PROBS = [0.4, 0.3, 0.1, 0.05, 0.05, 0.04, 0.03, 0.01, 0.01, 0.01]


def test_min_p_drops_tokens_below_the_threshold() -> None:
    rows = _seeded_rows(400, min_p=0.2)  # keeps p >= 0.08: tokens 0, 1 and 2
    assert set(sample(_logits_from_probs(MIN_P_PROBS, len(rows)), rows)) == {0, 1, 2}


def test_min_p_keeps_the_top_token() -> None:
    rows = _seeded_rows(50, min_p=1.0)
    assert sample(_logits_from_probs(MIN_P_PROBS, len(rows)), rows) == [0] * len(rows)


def test_min_p_composes_with_top_k() -> None:
    rows = _seeded_rows(300, min_p=0.2, top_k=2)
    assert set(sample(_logits_from_probs(MIN_P_PROBS, len(rows)), rows)) == {0, 1}


# -- DRY ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allowed", "penalty"), [(1, 0.8 * 1.75**2), (2, 0.8 * 1.75), (3, 0.8), (4, 0.0)]
)
def test_dry_penalises_only_the_token_extending_a_repeat(allowed: int, penalty: float) -> None:
    # "a b c" ends the context and was followed by "d" before: d would make a
    # repeat of length 3.
    row = _row([A, B, C, D, A, B, C], dry_allowed_length=allowed, **DRY)
    expected = torch.zeros(1, VOCAB)
    expected[0, D] = -penalty
    assert torch.allclose(_penalised([row]), expected)


def test_dry_match_stops_at_a_breaker() -> None:
    plain = _row([A, E, B, C, D, A, E, B, C], **DRY)  # repeat "a e b c" -> 4
    broken = _row([A, NEWLINE, B, C, D, A, NEWLINE, B, C], **DRY)  # only "b c" -> 2
    penalised = _penalised([plain, broken])
    assert penalised[0, D].item() == pytest.approx(-0.8 * 1.75**2)
    assert penalised[1, D].item() == pytest.approx(-0.8)


def test_dry_never_penalises_after_or_into_a_breaker() -> None:
    ends_on_breaker = _row([A, B, COLON, A, B, COLON], **DRY)
    continues_into_breaker = _row([A, B, NEWLINE, A, B], **DRY)
    assert not _penalised([ends_on_breaker, continues_into_breaker]).any()


def test_dry_follows_recorded_output_tokens() -> None:
    row = _row([A, B, C, D, A, B], **DRY)
    assert _penalised([row])[0, C].item() == pytest.approx(-0.8)  # "a b" + c: length 2
    row.record(C)
    penalised = _penalised([row])
    assert penalised[0, D].item() == pytest.approx(-0.8 * 1.75)  # "a b c" + d: length 3
    assert torch.equal(penalised, _penalised([_row([A, B, C, D, A, B, C], **DRY)]))


def test_dry_off_costs_nothing_and_changes_nothing() -> None:
    row = _row([A, B, C, D, A, B, C])
    assert row.dry is None
    assert not _penalised([row]).any()


def test_dry_match_lengths_handles_overlapping_runs_and_caps_the_length() -> None:
    assert dry_match_lengths([A] * 5, frozenset(), 10) == {A: 4}
    assert dry_match_lengths([A] * 5, frozenset(), 3) == {A: 3}
    assert dry_match_lengths([A, B, A, C, A], frozenset(), 10) == {B: 1, C: 1}


def test_dry_penalty_is_clamped_instead_of_overflowing() -> None:
    params = SamplingParams(dry_multiplier=1.0, dry_base=1e12, dry_allowed_length=1)
    assert dry_penalty(params, 60) == DRY_MAX_PENALTY


def test_dry_breaker_tokens_are_decoded_and_cached() -> None:
    breakers = SamplingParams().dry_sequence_breakers
    found = dry_breaker_tokens(breakers, TOKEN_BYTES)
    assert found == {NEWLINE, COLON}
    assert dry_breaker_tokens(breakers, TOKEN_BYTES) is found
    assert dry_breaker_tokens(("",), TOKEN_BYTES) == frozenset()


# -- mirostat -----------------------------------------------------------------------

# Surprises -log2 p: 0.74, 1.74 and 3.3 bits for the first three tokens.
MIROSTAT_PROBS = [0.6, 0.3, 0.09] + [0.01 / (VOCAB - 3)] * (VOCAB - 3)


def test_mirostat_keeps_only_low_surprise_tokens_and_updates_mu() -> None:
    # target 1 -> mu 2: tokens 0 and 1 survive, renormalised to 2/3 and 1/3.
    rows = _seeded_rows(300, mirostat_target=1.0, mirostat_lr=0.1, top_k=1)
    tokens = sample(_logits_from_probs(MIROSTAT_PROBS, len(rows)), rows)
    assert set(tokens) == {0, 1}  # top_k=1 is ignored: mirostat replaces it
    renormalised = {0: 2 / 3, 1: 1 / 3}
    for token, row in zip(tokens, rows, strict=True):
        surprise = -math.log2(renormalised[token])
        assert row.mirostat_mu == pytest.approx(2.0 - 0.1 * (surprise - 1.0))


def test_mirostat_mu_moves_towards_the_target() -> None:
    uniform = torch.full((1, VOCAB), float("-inf"))
    uniform[0, :4] = 0.0  # every choice has surprise 2
    high = _row(seed=0, mirostat_target=1.5)  # mu 3: nothing truncated, surprise 2 > 1.5
    sample(uniform, [high])
    assert high.mirostat_mu == pytest.approx(3.0 - 0.1 * 0.5)
    dominant = _logits_from_probs(MIROSTAT_PROBS)
    low = _row(seed=0, mirostat_target=0.2)  # mu 0.4: only the top token, surprise 0
    sample(dominant, [low])
    assert low.mirostat_mu == pytest.approx(0.4 + 0.1 * 0.2)


def test_mirostat_average_surprise_settles_at_the_target() -> None:
    zipf = [1.0 / (rank + 1) for rank in range(VOCAB)]
    probs = [weight / sum(zipf) for weight in zipf]
    row = _row(seed=3, mirostat_target=2.0, mirostat_lr=0.2)
    surprises = []
    for _ in range(600):
        mu = row.mirostat_mu
        token = sample(_logits_from_probs(probs), [row])[0]
        kept = [p for p in probs if -math.log2(p) <= mu] or [probs[0]]
        assert probs[token] in kept
        surprise = -math.log2(probs[token] / sum(kept))
        assert row.mirostat_mu == pytest.approx(mu - 0.2 * (surprise - 2.0))
        surprises.append(surprise)
    assert sum(surprises[100:]) / 500 == pytest.approx(2.0, abs=0.1)


def test_greedy_rows_with_mirostat_stay_greedy() -> None:
    row = _row(temperature=0, mirostat_target=1.0)
    logits = _logits_from_probs(MIROSTAT_PROBS)
    assert sample(logits, [row]) == [0]
    assert row.mirostat_mu == 2.0


# -- everything together ------------------------------------------------------------

ALL_FEATURES = {
    "logit_bias": {E: 100.0, A: -50.0},
    "repetition_penalty": 1.3,
    "presence_penalty": 0.5,
    "frequency_penalty": 0.5,
    "dry_allowed_length": 1,
    **DRY,
}
VARIANTS = [
    {"top_k": 3, "top_p": 0.9, "min_p": 0.1},
    {"mirostat_target": 1.0},
    {"mirostat_target": 4.0, "temperature": 1e-30},
    {"temperature": 0},
    {"temperature": 0.7, "min_p": 0.5},
]


def _step_all(rows: Sequence[SamplingRow], step: int, allowed: torch.Tensor) -> list[int]:
    """One engine-like step: penalties, then the constraint mask, then sampling."""
    logits = 4 * torch.stack(
        [
            torch.randn(VOCAB, generator=torch.Generator().manual_seed(1000 * step + i))
            for i in range(len(rows))
        ]
    )
    apply_penalties(logits, rows)
    logits.masked_fill_(~allowed, float("-inf"))
    tokens = sample(logits, rows)
    for row, token in zip(rows, tokens, strict=True):
        row.record(token)
    return tokens


def test_masked_tokens_are_never_chosen_with_every_feature_on() -> None:
    rows = [
        _row([A, B, A, B], seed=seed, **ALL_FEATURES, **variant)
        for seed in range(3)
        for variant in VARIANTS
    ]
    masks = torch.Generator().manual_seed(7)
    for step in range(60):
        allowed = torch.rand(len(rows), VOCAB, generator=masks) < 0.3
        allowed[torch.arange(len(rows)), torch.randint(VOCAB, (len(rows),), generator=masks)] = True
        tokens = _step_all(rows, step, allowed)
        assert all(allowed[i, token] for i, token in enumerate(tokens))
        assert all(math.isfinite(row.mirostat_mu) for row in rows if row.mirostat_mu is not None)


def test_a_fully_masked_row_neither_crashes_nor_corrupts_mirostat() -> None:
    row = _row(seed=1, mirostat_target=1.0, min_p=0.1, **DRY)
    logits = torch.full((1, VOCAB), float("-inf"))
    apply_penalties(logits, [row])
    assert sample(logits, [row])[0] in range(VOCAB)
    assert row.mirostat_mu == 2.0


def test_seeded_rows_reproduce_whatever_else_is_in_the_batch() -> None:
    settings = {**ALL_FEATURES, "logit_bias": {E: 1.0}, "min_p": 0.05, "top_p": 0.95}

    def run(batch_extra: int, seed: int = 11, **variant: object) -> list[int]:
        rows = [_row([A, B], seed=seed, **settings, **variant)]
        rows += [_row([C], seed=100 + i, mirostat_target=2.0) for i in range(batch_extra)]
        allowed = torch.ones(len(rows), VOCAB, dtype=torch.bool)
        return [_step_all(rows, step, allowed)[0] for step in range(30)]

    assert run(0) == run(3)
    assert run(0, mirostat_target=3.0) == run(5, mirostat_target=3.0)
    assert run(0, seed=11) != run(0, seed=12)


def test_draws_follow_the_tempered_softmax_and_never_a_masked_token() -> None:
    probs = [0.4, 0.3, 0.15, 0.1, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0]
    rows = _seeded_rows(4000, temperature=0.5)
    logits = _logits_from_probs(probs, rows=len(rows))
    counts = torch.bincount(torch.tensor(sample(logits, rows)), minlength=VOCAB).double()
    tempered = torch.tensor(probs[:5]) ** 2  # temperature 0.5 squares the probabilities
    expected = torch.cat([tempered / tempered.sum(), torch.zeros(5)]) * len(rows)
    assert counts[5:].sum() == 0
    chi_square = ((counts[:5] - expected[:5]) ** 2 / expected[:5]).sum().item()
    assert chi_square < 18.5  # 4 degrees of freedom, p = 0.001


def test_a_128k_vocabulary_row_draws_its_one_likely_token_past_negligible_ones() -> None:
    vocab = 128_256
    logits = torch.full((64, vocab), float("-inf"))
    logits[:, -1] = 0.0  # only the last token is allowed
    logits[:, :1000] = -40.0  # and a thousand negligible ones
    rows = [
        new_sampling_row(SamplingParams(seed=seed), [], vocab, [b"x"] * vocab) for seed in range(64)
    ]
    assert sample(logits, rows) == [vocab - 1] * 64


# -- the greedy pick, and the blocked draw of large vocabularies ----------------------

# Large enough that a single row's draw goes by blocks; a short last block.
LARGE_VOCAB = BLOCKED_MIN_VOCAB + VOCAB_BLOCK // 3


def test_the_greedy_pick_equals_torch_argmax_ties_and_masks_included() -> None:
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(6, LARGE_VOCAB, generator=generator)
    logits[1, [5, 4000, LARGE_VOCAB - 1]] = 50.0  # tied maxima: the first wins
    logits[2, : LARGE_VOCAB - 2] = float("-inf")  # the answer is in the short tail
    logits[3] = float("-inf")  # nothing allowed
    logits[4, ::2] = float("-inf")
    logits[5, VOCAB_BLOCK - 1 : VOCAB_BLOCK + 1] = 9.0  # a tie across a block boundary
    assert torch.equal(argmax(logits), logits.argmax(dim=-1))


def test_blocked_draws_follow_the_softmax_across_blocks_and_the_tail() -> None:
    allowed = {7: 0.1, VOCAB_BLOCK: 0.2, 5 * VOCAB_BLOCK + 3: 0.3, LARGE_VOCAB - 1: 0.4}
    logits = torch.full((1, LARGE_VOCAB), float("-inf"))
    for token, probability in allowed.items():
        logits[0, token] = math.log(probability)
    rows = [
        new_sampling_row(SamplingParams(seed=seed), [], LARGE_VOCAB, [b"x"] * LARGE_VOCAB)
        for seed in range(2000)
    ]
    tokens = sample(logits.repeat(len(rows), 1), rows)
    assert set(tokens) <= set(allowed)
    counts = torch.tensor([tokens.count(token) for token in allowed], dtype=torch.double)
    expected = torch.tensor(list(allowed.values()), dtype=torch.double) * len(rows)
    chi_square = ((counts - expected) ** 2 / expected).sum().item()
    assert chi_square < 16.3  # 3 degrees of freedom, p = 0.001


def test_a_blocked_row_with_nothing_allowed_falls_back_without_crashing() -> None:
    rows = [
        new_sampling_row(SamplingParams(seed=1), [], LARGE_VOCAB, [b"x"] * LARGE_VOCAB),
        new_sampling_row(SamplingParams(seed=2), [], LARGE_VOCAB, [b"x"] * LARGE_VOCAB),
    ]
    logits = torch.full((2, LARGE_VOCAB), float("-inf"))
    logits[1, 12345] = 0.0
    token, allowed_token = sample(logits, rows)
    assert 0 <= token < LARGE_VOCAB and allowed_token == 12345


def test_a_vocabulary_of_whole_blocks_has_no_tail_to_trip_over() -> None:
    vocab = BLOCKED_MIN_VOCAB  # a multiple of VOCAB_BLOCK
    logits = torch.randn(3, vocab, generator=torch.Generator().manual_seed(5))
    logits[2, -1] = 99.0
    assert torch.equal(argmax(logits), logits.argmax(dim=-1))
    rows = [new_sampling_row(SamplingParams(seed=s), [], vocab, [b"x"] * vocab) for s in range(3)]
    masked = torch.full((3, vocab), float("-inf"))
    masked[:, vocab - 1] = 0.0
    assert sample(masked, rows) == [vocab - 1] * 3


def test_the_greedy_pick_of_a_batch_reads_the_columns_it_is_given() -> None:
    vocab = 4096
    rows = 16
    generator = torch.Generator().manual_seed(7)
    logits = torch.randn(rows, vocab, generator=generator)
    logits[0, VOCAB_BLOCK - 1 : VOCAB_BLOCK + 1] = 9.0  # a tie across a block boundary
    logits[1] = float("-inf")
    logits[2, -1] = 50.0
    assert torch.equal(argmax(logits), logits.argmax(dim=-1))
    # As the engine passes them: the vocabulary's columns of a padded head's output.
    padded = torch.cat([logits, torch.full((rows, 64), 99.0)], dim=1)[:, :vocab]
    assert torch.equal(argmax(padded), logits.argmax(dim=-1))


@pytest.mark.parametrize("vocab", [VOCAB, LARGE_VOCAB])
def test_an_all_drawn_batch_with_a_fully_masked_row_still_draws_the_others(vocab: int) -> None:
    """The fallback is searched for only when a row needs it; the other rows'
    draws are the ones they make in a batch where none does."""
    rows = [
        new_sampling_row(SamplingParams(seed=seed), [], vocab, [b"x"] * vocab) for seed in range(3)
    ]
    logits = torch.randn(3, vocab, generator=torch.Generator().manual_seed(9))
    logits[1] = float("-inf")
    alone = [
        sample(logits[[0]].clone(), [rows[0]])[0],
        sample(logits[[2]].clone(), [rows[2]])[0],
    ]
    rows = [
        new_sampling_row(SamplingParams(seed=seed), [], vocab, [b"x"] * vocab) for seed in range(3)
    ]
    first, masked, third = sample(logits.clone(), rows)
    assert [first, third] == alone
    assert masked in range(vocab)
