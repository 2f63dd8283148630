"""The ``details`` tensor: per-output extras (logprobs, echoed prompt) as JSON.

Logprobs and echoed prompts have ragged shapes (top-k lists per token, prompts
of any length) that fixed Triton tensors carry badly, and most requests want
none of them, so they travel as one JSON string that is empty when unused.
The decoder writes token ids; the detokenizer replaces them with each token's
bytes (hex, since a token may hold half a UTF-8 character) and the prompt's
text, so the frontend needs no tokenizer of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from engine.request import StepOutput, TokenLogprob


def _entry(entry: TokenLogprob | None) -> list | None:
    if entry is None:
        return None
    return [entry.token, entry.logprob, [list(pair) for pair in entry.top]]


def encode_details(output: StepOutput) -> str:
    """The decoder's side: ids and log probabilities, or "" when nothing extra."""
    details: dict[str, Any] = {}
    if output.logprobs is not None:
        details["logprobs"] = [_entry(entry) for entry in output.logprobs]
    if output.cumulative_logprob is not None:
        details["cumulative_logprob"] = output.cumulative_logprob
    if output.prompt is not None:
        prompt: dict[str, Any] = {"ids": output.prompt.ids, "truncated": output.prompt.truncated}
        if output.prompt.logprobs is not None:
            prompt["logprobs"] = [_entry(entry) for entry in output.prompt.logprobs]
        details["prompt"] = prompt
    return json.dumps(details, separators=(",", ":")) if details else ""


def describe_details(
    encoded: str, token_bytes: Sequence[bytes], decode: Callable[[list[int]], str]
) -> str:
    """The detokenizer's side: token ids become bytes, the prompt becomes text."""
    if not encoded:
        return ""
    details = json.loads(encoded)

    def described(entry: list | None) -> dict | None:
        if entry is None:
            return None
        token, logprob, top = entry
        return {
            "bytes": token_bytes[token].hex(),
            "logprob": logprob,
            "top": [[token_bytes[other].hex(), other_logprob] for other, other_logprob in top],
        }

    if "logprobs" in details:
        details["logprobs"] = [described(entry) for entry in details["logprobs"]]
    prompt = details.get("prompt")
    if prompt is not None:
        ids = prompt.pop("ids")
        prompt["text"] = decode(ids)
        entries = prompt.pop("logprobs", None)
        if entries is not None:
            prompt["tokens"] = [
                described(entry)
                or {"bytes": token_bytes[token].hex(), "logprob": None, "top": None}
                for token, entry in zip(ids, entries, strict=True)
            ]
    return json.dumps(details, separators=(",", ":"))
