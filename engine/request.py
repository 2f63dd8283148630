"""What flows into and out of the engine for one generation."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Protocol

from engine.params import Constraint, SamplingParams

# Marks errors caused by the request itself. Triton's streaming API carries
# only an error message, not its code, so the frontend reads this marker to
# answer 400 instead of 5xx.
INVALID_ARGUMENT_PREFIX = "invalid argument: "
# After the marker, the request field at fault, when known: ``[prompt] ...``.
_FIELD = re.compile(r"\[([A-Za-z_][\w.]*)\] (.*)", re.DOTALL)


def invalid_argument_text(message: str, field: str | None = None) -> str:
    """An invalid-argument error as Triton carries it, naming its field when known."""
    return INVALID_ARGUMENT_PREFIX + (f"[{field}] {message}" if field else message)


def read_invalid_argument(text: str) -> tuple[str, str | None] | None:
    """The message and field of an error made by :func:`invalid_argument_text`;
    None when ``text`` is some other error."""
    if INVALID_ARGUMENT_PREFIX not in text:
        return None
    detail = text.split(INVALID_ARGUMENT_PREFIX, 1)[1]
    named = _FIELD.fullmatch(detail)
    return (named[2], named[1]) if named else (detail, None)


# Marks a request refused because the decoder's queue is full: the client may
# retry later (the frontend answers 503 with Retry-After).
BUSY_PREFIX = "server busy: "


class FinishReason(str, enum.Enum):
    """Why a generation ended; decided per request, never hard-coded."""

    # The output ended itself: an end-of-sequence token, a stop string, or its
    # constraint (fully matched under stop_after_match, or complete with no
    # token but end-of-sequence allowed next).
    STOP = "stop"
    # max_tokens or the context window cut it; ``matched`` says whether it is
    # nevertheless a complete match (stop_after_match off).
    LENGTH = "length"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class TokenLogprob:
    """A token's log probability under the model (before sampling settings and
    constraint masks) and the most likely alternatives at its position."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class PromptDetails:
    """The prompt as the model saw it (after any truncation), for ``echo``.

    ``logprobs[0]`` is None: the first token has no context to be predicted from.
    """

    ids: list[int]
    truncated: bool
    logprobs: list[TokenLogprob | None] | None = None


@dataclass(frozen=True)
class StepOutput:
    """One streamed update for a request.

    ``window_ids[:prefix_len]`` is already-emitted context; the text to emit is
    ``decode(window_ids)`` minus ``decode(window_ids[:prefix_len])``. Sending the
    context lets stateless decoding get token boundaries right (leading
    spaces of SentencePiece tokens, multi-byte characters split across tokens).
    """

    window_ids: list[int]
    prefix_len: int
    tokens_generated: int
    finish_reason: FinishReason | None = None
    matched: bool = False
    choice_index: int = 0
    logprobs: list[TokenLogprob] | None = None
    """One per new token, ``window_ids[prefix_len:]``; None unless requested."""
    cumulative_logprob: float | None = None
    """Sum of the choice's token log probabilities; on final outputs with logprobs."""
    prompt: PromptDetails | None = None
    """On the request's first output when the prompt is to be echoed."""
    request_done: bool = False
    """The request's last output: every choice has finished."""
    prompt_tokens: int = 0
    """Prompt length as the model saw it (after any truncation)."""
    shows_special_tokens: bool = False
    """Decode special tokens into the text too. Set for constrained requests: their
    text must be exactly the text of the tokens the grammar accepted, and a grammar
    may name a special token (``<think>``), whose text xgrammar also matches as text."""

    @property
    def is_final(self) -> bool:
        """This choice has finished."""
        return self.finish_reason is not None


class RequestSink(Protocol):
    """Where the engine sends a request's outputs (a Triton response sender in
    production, a list in tests)."""

    def send(self, output: StepOutput) -> None: ...

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        """Ends the request with an error; ``field`` names the request field
        an invalid argument is about (``prompt``, ``max_tokens``, ``logit_bias``,
        ``constraint``), when one is."""

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
