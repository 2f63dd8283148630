"""Incremental detokenization never garbles multi-byte text."""

from __future__ import annotations

import pytest

from engine.text_window import TextWindow, decode_window, ends_mid_character

SAMPLES = [
    "héllo wörld",
    "日本語のテキスト",
    "emoji 🎉🚀 mixed ✓ text",
    "plain ascii",
    "a\u0301 combining",
]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"abc", False),
        ("é".encode()[:1], True),
        ("é".encode(), False),
        ("日".encode()[:2], True),
        ("🎉".encode()[:3], True),
        ("🎉".encode(), False),
        (b"", False),
        (b"\xff", False),  # invalid lead byte: nothing to wait for
    ],
)
def test_ends_mid_character(data: bytes, expected: bool) -> None:
    assert ends_mid_character(data) is expected


def _stream(
    token_bytes: list[bytes], tokenizer, prompt_ids: list[int], ids: list[int]
) -> list[str]:
    window = TextWindow(token_bytes, prompt_ids)
    deltas = []
    for token in ids:
        ready = window.push(token)
        if ready is not None:
            deltas.append(decode_window(tokenizer, *ready))
    deltas.append(decode_window(tokenizer, *window.flush()))
    return deltas


def test_one_token_at_a_time_byte_tokens_never_emit_replacement_chars() -> None:
    """Worst case: every byte is its own token, so every character is split."""
    token_bytes = [bytes([b]) for b in range(256)]

    class ByteTokenizer:
        def decode(self, ids, **_: object) -> str:
            return bytes(ids).decode("utf-8", errors="replace")

    for text in SAMPLES:
        ids = list(text.encode())
        deltas = _stream(token_bytes, ByteTokenizer(), [], ids)
        assert all("\ufffd" not in delta for delta in deltas)
        assert "".join(deltas) == text


def test_real_tokenizer_deltas_concatenate_to_the_full_decode(tiny_model_dir) -> None:
    from engine.model_runner import ModelRunner

    runner = ModelRunner.load(tiny_model_dir)
    tokenizer = runner.tokenizer
    prompt_ids = tokenizer.encode("Prompt: ")
    for text in SAMPLES:
        ids = tokenizer.encode(text, add_special_tokens=False)
        deltas = _stream(runner.token_bytes, tokenizer, prompt_ids, ids)
        assert all("\ufffd" not in delta for delta in deltas)
        assert "".join(deltas) == text
