"""Merged outputs decode to the same text as the outputs sent one by one."""

from __future__ import annotations

from engine.coalesce import coalesce
from engine.request import FinishReason, StepOutput, TokenLogprob
from engine.text_window import TextWindow


def _windows(token_bytes: list[bytes], prompt: list[int], tokens: list[int]) -> list:
    window = TextWindow(token_bytes, prompt)
    pushed = [window.push(token) for token in tokens]
    return [w for w in pushed if w is not None] + [window.flush()]


def _text(token_bytes: list[bytes], outputs: list[StepOutput]) -> bytes:
    text = b""
    for output in outputs:
        text += b"".join(token_bytes[i] for i in output.window_ids[output.prefix_len :])
    return text


def test_coalesced_outputs_carry_the_same_tokens_text_and_logprobs() -> None:
    token_bytes = [bytes([byte]) for byte in range(256)] + ["é".encode()[:1], "é".encode()[1:]]
    tokens = [72, 105, 256, 257, 33, 10]  # "Hi" + "é" split over two tokens + "!\n"
    outputs = []
    for number, (ids, prefix) in enumerate(_windows(token_bytes, [80, 81], tokens)):
        new = ids[prefix:]
        outputs.append(
            StepOutput(
                ids,
                prefix,
                tokens_generated=number + 1,
                logprobs=[TokenLogprob(token, -0.5) for token in new],
            )
        )
    outputs[-1] = StepOutput(
        outputs[-1].window_ids,
        outputs[-1].prefix_len,
        6,
        finish_reason=FinishReason.LENGTH,
        logprobs=outputs[-1].logprobs,
        request_done=True,
    )
    (merged,) = coalesce(outputs)
    assert _text(token_bytes, [merged]) == _text(token_bytes, outputs) == "Hié!\n".encode()
    assert [entry.token for entry in merged.logprobs] == tokens
    assert merged.request_done and merged.tokens_generated == 6
    assert merged.finish_reason is FinishReason.LENGTH


def test_choices_stay_apart_and_the_final_output_stays_last() -> None:
    outputs = [
        StepOutput([1, 2], 1, 1, choice_index=0),
        StepOutput([3, 4], 1, 1, choice_index=1),
        StepOutput([2, 5], 1, 2, choice_index=0, finish_reason=FinishReason.STOP),
        StepOutput(
            [4, 6], 1, 2, choice_index=1, finish_reason=FinishReason.STOP, request_done=True
        ),
    ]
    first, second = coalesce(outputs)
    assert (first.choice_index, first.window_ids, first.prefix_len) == (0, [1, 2, 5], 1)
    assert (second.choice_index, second.window_ids) == (1, [3, 4, 6])
    assert second.request_done and not first.request_done
