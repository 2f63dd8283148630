"""Incremental detokenization that never splits a character.

Byte-level BPE and SentencePiece byte-fallback tokenizers can put one UTF-8
character across several tokens. Decoding token by token then yields U+FFFD
and garbles streams (a well-known bug of several servers). The engine knows
each token's raw bytes, so it holds tokens back until their bytes end on a
character boundary, and decodes a window with enough preceding
context that tokenizers which drop a leading space on a lone token still
decode correctly.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PreTrainedTokenizerBase

# Tokens of the prompt kept as decoding context for the first generated token.
PROMPT_CONTEXT_TOKENS = 4


def _utf8_sequence_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1  # invalid lead byte: nothing to wait for


def ends_mid_character(data: bytes) -> bool:
    """True when ``data`` stops inside a multi-byte UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): the last character starts here
            return back < _utf8_sequence_length(byte)
    return False


class TextWindow:
    """Decides which generated tokens are ready to become text."""

    def __init__(self, token_bytes: Sequence[bytes], prompt_ids: Sequence[int]) -> None:
        self._token_bytes = token_bytes
        self._ids = list(prompt_ids[-PROMPT_CONTEXT_TOKENS:])
        self._prefix_offset = 0
        self._read_offset = len(self._ids)

    def push(self, token_id: int, *, release: bool = True) -> tuple[list[int], int] | None:
        """Adds a token; returns ``(window_ids, prefix_len)`` once it completes text.

        ``release=False`` holds the token back (more are coming at once), so
        several tokens can leave in one window.
        """
        self._ids.append(token_id)
        if not release:
            return None
        pending = b"".join(self._token_bytes[i] for i in self._ids[self._read_offset :])
        if ends_mid_character(pending):
            return None
        return self.flush()

    def flush(self) -> tuple[list[int], int]:
        """Releases everything held, complete or not (the generation is over)."""
        window = self._ids[self._prefix_offset :]
        prefix_len = self._read_offset - self._prefix_offset
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._ids)
        return window, prefix_len


def decode_window(
    tokenizer: PreTrainedTokenizerBase,
    window_ids: Sequence[int],
    prefix_len: int,
    *,
    skip_special_tokens: bool = True,
) -> str:
    """The new text of a window: ``decode(window)`` minus ``decode(window[:prefix_len])``."""
    options = {
        "skip_special_tokens": skip_special_tokens,
        "clean_up_tokenization_spaces": False,
    }
    full = tokenizer.decode(list(window_ids), **options)
    if prefix_len == 0:
        return full
    prefix = tokenizer.decode(list(window_ids[:prefix_len]), **options)
    return full[len(prefix) :]
