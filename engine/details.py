"""The ``details`` tensor: per-output extras (logprobs, echoed prompt) as JSON.

Logprobs and echoed prompts have ragged shapes (top-k lists per token, prompts
of any length) that fixed Triton tensors carry badly, and most requests want
none of them, so they travel as one JSON string that is empty when unused.
Tokens are given by their bytes (hex, since a token may hold half a UTF-8
character) and the prompt as text, so clients need no tokenizer of their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from engine.request import StepOutput, TokenLogprob


def details_json(
    output: StepOutput, token_bytes: Sequence[bytes], decode: Callable[[list[int]], str]
) -> str:
    """The extras of one output, or "" when the request asked for none."""

    def described(entry: TokenLogprob) -> dict[str, Any]:
        return {
            "bytes": token_bytes[entry.token].hex(),
            "logprob": entry.logprob,
            "top": [[token_bytes[other].hex(), logprob] for other, logprob in entry.top],
        }

    details: dict[str, Any] = {}
    if output.logprobs is not None:
        details["logprobs"] = [described(entry) for entry in output.logprobs]
    if output.cumulative_logprob is not None:
        details["cumulative_logprob"] = output.cumulative_logprob
    prompt = output.prompt
    if prompt is not None:
        details["prompt"] = {"text": decode(prompt.ids), "truncated": prompt.truncated}
        if prompt.logprobs is not None:
            details["prompt"]["tokens"] = [
                described(entry)
                if entry is not None
                else {"bytes": token_bytes[token].hex(), "logprob": None, "top": None}
                for token, entry in zip(prompt.ids, prompt.logprobs, strict=True)
            ]
    return json.dumps(details, separators=(",", ":")) if details else ""
