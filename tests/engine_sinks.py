"""A request sink for tests that drive the engine directly (no Triton):
it collects what the engine sends."""

from __future__ import annotations

import threading

from engine.request import StepOutput
from engine.text_window import decode_window


class ListSink:
    """Collects a request's outputs; can be told to report cancellation."""

    def __init__(self) -> None:
        self.outputs: list[StepOutput] = []
        self.error: tuple[str, bool] | None = None
        self.field: str | None = None
        self.cancelled = False
        self.done = threading.Event()
        self.first_output = threading.Event()

    def send(self, output: StepOutput) -> None:
        self.outputs.append(output)
        self.first_output.set()
        if output.request_done:
            self.done.set()

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        self.error = (message, invalid_argument)
        self.field = field
        self.done.set()

    def is_cancelled(self) -> bool:
        return self.cancelled

    def choice_texts(self, tokenizer) -> dict[int, str]:
        """Each choice's text, its outputs decoded and joined in order."""
        texts: dict[int, str] = {}
        for output in self.outputs:
            piece = decode_window(tokenizer, output.window_ids, output.prefix_len)
            texts[output.choice_index] = texts.get(output.choice_index, "") + piece
        return texts

    def choices(self, tokenizer) -> dict[int, tuple[str, str | None, list[int]]]:
        """Per choice: its text, how it ended, and its logprob entries'
        tokens (how outputs of several choices interleave depends on timing)."""
        return {
            index: (
                text,
                [o.finish_reason for o in self.outputs if o.choice_index == index][-1],
                [
                    entry.token
                    for o in self.outputs
                    if o.choice_index == index
                    for entry in o.logprobs or []
                ],
            )
            for index, text in self.choice_texts(tokenizer).items()
        }
