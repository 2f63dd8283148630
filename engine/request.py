"""What flows into and out of the engine for one generation."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from engine.params import Constraint, SamplingParams

# Marks errors caused by the request itself. Triton's streaming API carries
# only an error message, not its code, so the frontend reads this marker to
# answer 400 instead of 5xx.
INVALID_ARGUMENT_PREFIX = "invalid argument: "


class FinishReason(str, enum.Enum):
    """Why a generation ended; decided per request, never hard-coded."""

    STOP = "stop"  # end-of-sequence token, or the constraint fully matched
    LENGTH = "length"  # max_tokens or the context window
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class StepOutput:
    """One streamed update for a request.

    ``window_ids[:prefix_len]`` is already-emitted context; the text to emit is
    ``decode(window_ids)`` minus ``decode(window_ids[:prefix_len])``. Sending the
    context lets a stateless detokenizer get token boundaries right (leading
    spaces of SentencePiece tokens, multi-byte characters split across tokens).
    """

    window_ids: list[int]
    prefix_len: int
    tokens_generated: int
    finish_reason: FinishReason | None = None
    matched: bool = False

    @property
    def is_final(self) -> bool:
        return self.finish_reason is not None


class RequestSink(Protocol):
    """Where the engine sends a request's outputs (a Triton response sender in
    production, a list in tests)."""

    def send(self, output: StepOutput) -> None: ...

    def fail(self, message: str, *, invalid_argument: bool) -> None: ...

    def is_cancelled(self) -> bool: ...


@dataclass
class GenerationRequest:
    """A tokenized prompt plus everything needed to generate from it."""

    request_id: str
    prompt_ids: list[int]
    params: SamplingParams
    constraint: Constraint
    sink: RequestSink
    arrival_time: float = field(default=0.0)
