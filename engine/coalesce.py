"""Merging a request's queued outputs when responses cannot keep up.

Every response costs an IPC round trip inside Triton's Python backend (and a
hop through the ensemble). When the sender falls behind the engine — many
streams at once — the outputs a request has waiting are merged into one
response: the same text and tokens, fewer messages. With spare capacity
nothing waits and every token still goes out on its own, so streaming stays
token by token exactly when it is cheap.
"""

from __future__ import annotations

from dataclasses import replace

from engine.request import StepOutput


def merge(first: StepOutput, second: StepOutput) -> StepOutput:
    """``first`` followed by ``second`` (the next output of the same choice).

    A window's context is exactly the previous window's new tokens, so the
    merged window is ``first``'s plus ``second``'s new tokens.
    """
    logprobs = first.logprobs
    if second.logprobs is not None:
        logprobs = (logprobs or []) + second.logprobs
    return replace(
        second,
        window_ids=first.window_ids + second.window_ids[second.prefix_len :],
        prefix_len=first.prefix_len,
        logprobs=logprobs,
        prompt=first.prompt or second.prompt,
    )


def coalesce(outputs: list[StepOutput]) -> list[StepOutput]:
    """One output per choice, in the order the choices' last outputs came,
    so the request's final output (``request_done``) stays last."""
    merged: dict[int, StepOutput] = {}
    for output in outputs:
        earlier = merged.pop(output.choice_index, None)
        merged[output.choice_index] = output if earlier is None else merge(earlier, output)
    return list(merged.values())
