"""Constrained rows never get tokens that would make their output invalid UTF-8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import xgrammar as xgr

from engine.model_runner import load_tokenizer, vocabulary_bytes
from engine.structured_output import StructuredOutputs
from engine.utf8_guard import SECOND_BYTE_RANGES, Utf8Guard
from grammar_compiler import compile_json_schema

PIECES = [
    b"a",  # 0
    b"\xed",  # 1: a lead byte whose second byte must be 80-9F
    b"\xa0\x80",  # 2: would make ED A0 80, an encoded surrogate
    b"\x9f\xbf",  # 3: completes ED 9F BF (U+D7FF)
    b"\xc0\x80",  # 4: C0 never occurs
    b"\xe0\x82\xa4",  # 5: an overlong U+00A4 inside one token
    b"\xf0",  # 6: second byte must be 90-BF
    b"\x90\x80\x80",  # 7: completes F0 90 80 80 (U+10000)
    b"\x80\x80\x80",  # 8: would make an overlong four-byte form
    b"",  # 9: end of sequence
    b"\xe2\x82\xac",  # 10: a whole euro sign
]


def _allowed(words: torch.Tensor, vocab: int) -> list[int]:
    bits = (words.unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1
    return bits.flatten()[:vocab].nonzero().flatten().tolist()


def test_tokens_invalid_on_their_own_are_never_allowed() -> None:
    guard = Utf8Guard(PIECES, words=1)
    assert _allowed(guard.allowed, len(PIECES)) == [0, 1, 2, 3, 6, 7, 8, 9, 10]


@pytest.mark.parametrize(
    ("lead_token", "expected"),
    # The guard looks at the next byte only; how many continuations follow is xgrammar's check.
    [(1, [3, 7, 8, 9]), (6, [2, 3, 7, 9]), (0, [0, 1, 2, 3, 6, 7, 8, 9, 10])],
)
def test_after_a_restricted_lead_only_its_second_bytes_are_allowed(
    lead_token: int, expected: list[int]
) -> None:
    guard = Utf8Guard(PIECES, words=1)
    bitmask = torch.full((2, 1), -1, dtype=torch.int32)
    guard.restrict(bitmask, 1, guard.pending_lead(lead_token))
    assert _allowed(bitmask[1], len(PIECES)) == expected
    assert _allowed(bitmask[0], len(PIECES)) == list(range(len(PIECES)))  # other rows untouched


@pytest.mark.parametrize(
    "indices",
    [[0, 1, 2, 3], [2, 3, 4], [4, 1, 3], [0, 2, 5]],
    ids=["all", "consecutive", "unordered", "scattered"],
)
def test_restricting_rows_together_equals_restricting_each(indices: list[int]) -> None:
    """The batch call (one operation for the rows without a lead byte) clears
    what ``restrict`` clears row by row, and leaves the other rows alone."""
    guard = Utf8Guard(PIECES, words=1)
    leads = [guard.pending_lead(1) if i == 3 else None for i in indices]
    together = torch.full((6, 1), -1, dtype=torch.int32)
    one_by_one = together.clone()
    guard.restrict_rows(together, indices, leads)
    for index, lead in zip(indices, leads, strict=True):
        guard.restrict(one_by_one, index, lead)
    assert torch.equal(together, one_by_one)
    untouched = [i for i in range(6) if i not in indices]
    assert bool((together[untouched] == -1).all())


@pytest.mark.parametrize(
    ("schema", "lead", "invalid", "valid"),
    [
        # xgrammar's own JSON string: ED A0 would begin an encoded surrogate.
        pytest.param({"type": "string"}, 0xED, 0xA0, 0x80, id="surrogate"),
        # The project's maxLength string, a negated class: E0 80 would begin
        # an overlong form (E0 80 A2 spells a quote).
        pytest.param({"type": "string", "maxLength": 8}, 0xE0, 0x80, 0xA0, id="overlong"),
    ],
)
def test_a_json_string_cannot_spell_invalid_utf8(
    tiny_model_dir: Path, schema: dict, lead: int, invalid: int, valid: int
) -> None:
    """xgrammar alone lets the invalid second byte through after the lead
    byte inside a JSON string; a row's mask through StructuredOutputs does
    not, and still lets a valid one through."""
    tokenizer = load_tokenizer(tiny_model_dir)
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    token_bytes = vocabulary_bytes(info, len(tokenizer))
    byte_token = {piece[0]: token for token, piece in enumerate(token_bytes) if len(piece) == 1}
    lead_token, refused, fine = byte_token[lead], byte_token[invalid], byte_token[valid]
    value = compile_json_schema(json.dumps(schema)).value
    grammar = xgr.GrammarCompiler(info).compile_json_schema(value, any_whitespace=False)

    def matcher_after_lead() -> xgr.GrammarMatcher:
        matcher = xgr.GrammarMatcher(grammar)
        assert matcher.accept_string('"') and matcher.accept_token(lead_token)
        return matcher

    alone = xgr.allocate_token_bitmask(1, len(tokenizer))
    matcher_after_lead().fill_next_token_bitmask(alone)
    assert {refused, fine} <= set(_allowed(alone[0], len(tokenizer)))

    outputs = StructuredOutputs(
        None,  # type: ignore[arg-type]  # the grammar is compiled above
        vocab_size=len(tokenizer),
        eos_token_ids=[tokenizer.eos_token_id],
        token_bytes=token_bytes,
        encode=lambda text: [],
        max_batch_size=2,
        mask_threads=0,
    )
    outputs.fill_masks_async(
        [None, matcher_after_lead()],
        [None, outputs.row_limits(outputs.lead_after(lead_token), None)],
        first_row=0,
    ).result()
    allowed = set(_allowed(outputs._bitmask[1], len(tokenizer)))
    assert fine in allowed and refused not in allowed
    low, high = SECOND_BYTE_RANGES[lead]
    assert allowed == set(_allowed(alone[0], len(tokenizer))) - {
        token for token, piece in enumerate(token_bytes) if piece and not low <= piece[0] <= high
    }
