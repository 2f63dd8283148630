"""The legacy completions ``logprobs`` object, built token by token.

The decoder describes each token by its bytes (hex) because a token may
carry part of a UTF-8 character. Such a token is shown as ``bytes:\\xNN...``
(OpenAI's convention) and ``text_offset`` counts characters of the returned
text, a split character counting where it starts.
"""

from __future__ import annotations

import codecs

from frontend.completions.schemas import LegacyLogprobs


def token_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{byte:02x}" for byte in raw)


class LogprobsBuilder:
    """Turns one choice's token entries into legacy logprobs, keeping the
    character offset across streamed chunks."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("ignore")
        self._offset = 0

    def skip_text(self, text: str) -> None:
        """Advances the offsets past text that has no entries (a suffix)."""
        self._offset += len(text)

    def add(self, entries: list[dict]) -> LegacyLogprobs:
        tokens, token_logprobs, top_logprobs, offsets = [], [], [], []
        for entry in entries:
            raw = bytes.fromhex(entry["bytes"])
            text = token_text(raw)
            tokens.append(text)
            token_logprobs.append(entry["logprob"])
            if entry["top"] is None:  # the prompt's first token: nothing predicted it
                top_logprobs.append(None)
            else:
                top = {token_text(bytes.fromhex(other)): lp for other, lp in entry["top"]}
                top.setdefault(text, entry["logprob"])  # the chosen token is always there
                top_logprobs.append(top)
            offsets.append(self._offset)
            self._offset += len(self._decoder.decode(raw))
        return LegacyLogprobs(
            tokens=tokens,
            token_logprobs=token_logprobs,
            top_logprobs=top_logprobs,
            text_offset=offsets,
        )


def concatenate(parts: list[LegacyLogprobs]) -> LegacyLogprobs:
    return LegacyLogprobs(
        tokens=[token for part in parts for token in part.tokens],
        token_logprobs=[value for part in parts for value in part.token_logprobs],
        top_logprobs=[value for part in parts for value in part.top_logprobs],
        text_offset=[value for part in parts for value in part.text_offset],
    )
