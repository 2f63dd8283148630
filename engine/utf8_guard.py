"""Keeps constrained output valid UTF-8 where xgrammar's token masks do not.

Why: xgrammar 0.2.8 checks the shape of every multi-byte character (a lead
byte and its continuation bytes), but not the few second bytes that make a
well-shaped sequence invalid. Its own JSON string (a schema's plain
``{"type": "string"}``, any JSON value) lets the bytes ED A0 80 through, an
encoded surrogate that UTF-8 cannot hold; a negated class, which the
grammar compiler writes for a string's characters because its masks fill
far faster (``grammar_compiler/regex_emit.py``), lets overlong forms
through (E0 82 A4 for U+00A4). Probed with Llama 3's byte-level
vocabulary, token by token: those pass, while a lone continuation byte,
C0 80, FF, or a character cut short by the closing quote are refused. A
model that samples such bytes writes text that no decoder reads back.

What is left to refuse depends on at most two bytes in a row, so the guard
is two kinds of word mask over the vocabulary, ANDed into a row's bitmask
after xgrammar fills it: tokens holding a byte that UTF-8 never uses, or an
invalid pair, are never allowed; after a token that ends in one of the four
lead bytes whose second byte is restricted, tokens that begin outside its
range are not allowed either (RFC 3629, section 4).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch

# Bytes that never occur in UTF-8.
_NEVER = frozenset({0xC0, 0xC1, *range(0xF5, 0x100)})
# Lead byte -> the range its second byte must be in (inclusive).
SECOND_BYTE_RANGES = {
    0xE0: (0xA0, 0xBF),  # below: overlong
    0xED: (0x80, 0x9F),  # above: surrogates
    0xF0: (0x90, 0xBF),  # below: overlong
    0xF4: (0x80, 0x8F),  # above: past U+10FFFF
}


def _invalid_inside(piece: bytes) -> bool:
    """Whether the token's own bytes break UTF-8 wherever it is placed."""
    if any(byte in _NEVER for byte in piece):
        return True
    for lead, second in itertools.pairwise(piece):
        allowed = SECOND_BYTE_RANGES.get(lead)
        if allowed is not None and not allowed[0] <= second <= allowed[1]:
            return True
    return False


def _words(allowed: np.ndarray) -> torch.Tensor:
    """xgrammar's bitmask layout: token ``t`` is bit ``t % 32`` of int32 word ``t // 32``."""
    packed = np.packbits(allowed.reshape(-1, 8), axis=1, bitorder="little")
    return torch.from_numpy(packed.reshape(-1).view("<i4").astype(np.int32))


class Utf8Guard:
    """Word masks of the tokens UTF-8 allows, overall and after each restricted lead byte."""

    def __init__(self, token_bytes: Sequence[bytes], words: int) -> None:
        allowed = np.ones(words * 32, dtype=bool)
        first_bytes = np.full(words * 32, -1, dtype=np.int16)  # -1: no bytes
        # The few tokens ending in a restricted lead byte, and that byte.
        self._leads: dict[int, int] = {}
        for token, piece in enumerate(token_bytes):
            if not piece:
                continue
            allowed[token] = not _invalid_inside(piece)
            first_bytes[token] = piece[0]
            if piece[-1] in SECOND_BYTE_RANGES:
                self._leads[token] = piece[-1]
        self.allowed = _words(allowed)
        self.allowed_after: dict[int, torch.Tensor] = {}
        for lead, (low, high) in SECOND_BYTE_RANGES.items():
            # A token with no bytes (end of sequence, a special token) is left
            # to the grammar: it refuses to end inside a character itself.
            fits = (first_bytes == -1) | ((first_bytes >= low) & (first_bytes <= high))
            self.allowed_after[lead] = _words(allowed & fits)

    def pending_lead(self, token: int) -> int | None:
        """The restricted lead byte the token ends in, if any: the next
        token's first byte must then be in its range (a lookup: this runs
        for every token of every constrained row)."""
        return self._leads.get(token)

    def restrict(self, bitmask: torch.Tensor, index: int, lead: int | None) -> None:
        """Clears row ``index``'s bits of tokens that would break UTF-8."""
        mask = self.allowed if lead is None else self.allowed_after[lead]
        bitmask[index].bitwise_and_(mask)

    def restrict_rows(
        self, bitmask: torch.Tensor, indices: Sequence[int], leads: Sequence[int | None]
    ) -> None:
        """``restrict`` for distinct rows ``indices`` (the i-th ending as
        ``leads[i]`` says), the rows that end on no restricted lead byte
        (nearly all) in one operation: a batch fill's rows are consecutive,
        and one operation a row cost ~50 µs a step at 32 rows, against ~2."""
        plain: list[int] = []
        for index, lead in zip(indices, leads, strict=True):
            if lead is None:
                plain.append(index)
            else:
                self.restrict(bitmask, index, lead)
        if plain:
            low, high = min(plain), max(plain)
            if high - low + 1 == len(plain):  # distinct: exactly the rows low..high
                bitmask[low : high + 1].bitwise_and_(self.allowed)
            else:
                at = torch.tensor(plain, dtype=torch.long)
                bitmask[at] = bitmask[at].bitwise_and_(self.allowed)
