"""Assembling choices from the pipeline's streamed chunks.

One :class:`PromptRun` per prompt (one decoder request with ``n`` or
``best_of`` choices); each chunk names its choice. The same pieces serve the
streamed response (one event each) and the collected one (concatenated), so
streamed text always adds up to the non-streamed text.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field

from frontend.completions.logprobs import LogprobsBuilder, concatenate
from frontend.completions.plan import CompletionPlan
from frontend.completions.schemas import (
    CompletionChoice,
    FunctionCall,
    LegacyLogprobs,
    ToolCall,
)
from frontend.errors import APIError
from frontend.metrics import VERIFICATION_FAILURES
from frontend.offload import off_loop
from frontend.triton_client import Chunk
from grammar_compiler.tool_calls import parse_tool_calls

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Piece:
    """What one chunk adds to one choice."""

    text: str
    logprobs: LegacyLogprobs | None
    finish_reason: str | None = None
    tool_calls: list[ToolCall] | None = None

    @property
    def is_empty(self) -> bool:
        return (
            not self.text
            and self.finish_reason is None
            and not (self.logprobs and self.logprobs.tokens)
        )


@dataclass
class ChoiceBuilder:
    plan: CompletionPlan
    run: PromptRun
    pieces: list[Piece] = field(default_factory=list)
    generated: list[str] = field(default_factory=list)
    tokens_generated: int = 0
    cumulative_logprob: float = 0.0
    logprobs: LogprobsBuilder = field(default_factory=LogprobsBuilder)

    async def add(self, chunk: Chunk) -> Piece:
        details = chunk.details or {}
        prefix, entries = "", list(details.get("logprobs") or [])
        if not self.pieces and self.plan.echo:
            prefix = self.run.echo_text
            entries = list(self.run.echo_entries or []) + entries
        self.generated.append(chunk.text)
        self.tokens_generated = chunk.tokens_generated
        if "cumulative_logprob" in details:
            self.cumulative_logprob = details["cumulative_logprob"]
        logprobs = self.logprobs.add(entries) if self.plan.logprobs is not None else None
        piece = Piece(prefix + chunk.text, logprobs)
        if chunk.finish_reason is not None:
            piece = await self._finish(piece, chunk)
        self.pieces.append(piece)
        return piece

    async def _finish(self, piece: Piece, chunk: Chunk) -> Piece:
        if chunk.finish_reason == "cancelled":
            raise APIError(503, "the generation was cancelled by the inference server")
        text = "".join(self.generated)
        reason, calls = chunk.finish_reason, None
        if reason == "stop" and self.plan.constraint is not None:
            await self._verify(text, chunk.matched)
            if self.plan.calls_tools:
                parsed = parse_tool_calls(text)
                if parsed:
                    reason = "tool_calls"
                    calls = [
                        ToolCall(
                            id=f"call_{uuid.uuid4().hex[:24]}",
                            function=FunctionCall(
                                name=call.name, arguments=json.dumps(call.arguments)
                            ),
                        )
                        for call in parsed
                    ]
        return Piece(piece.text + self.plan.suffix, piece.logprobs, reason, calls)

    async def _verify(self, text: str, matched: bool) -> None:
        """The independent judge re-checks every output the decoder completed
        (off the event loop: it may take up to ``JUDGE_BUDGET_S``)."""
        constraint = self.plan.constraint
        problem = (
            await off_loop(constraint.judge, text)
            if matched
            else "the decoder did not report a match"
        )
        if problem is not None:
            VERIFICATION_FAILURES.labels(constraint.source_language).inc()
            logger.error(
                "verification failed (%s): %s; constraint=%r output=%r",
                constraint.source_language,
                problem,
                constraint.value[:2000],
                text[:2000],
            )

    def choice(self, index: int) -> CompletionChoice:
        final = self.pieces[-1]
        logprobs = None
        if self.plan.logprobs is not None:
            logprobs = concatenate([piece.logprobs for piece in self.pieces])
        return CompletionChoice(
            index=index,
            text="".join(piece.text for piece in self.pieces),
            logprobs=logprobs,
            finish_reason=final.finish_reason,
            tool_calls=final.tool_calls,
        )


class PromptRun:
    """One prompt's generation: its choices and what they share."""

    def __init__(self, plan: CompletionPlan, index: int, prompt: str | list[int]) -> None:
        self.plan = plan
        self.index = index
        self.prompt = prompt
        self.prompt_tokens = 0
        self.echo_text = ""
        self.echo_entries: list[dict] | None = None
        self.choices = [ChoiceBuilder(plan, self) for _ in range(plan.params.n)]

    async def add(self, chunk: Chunk) -> tuple[int, Piece]:
        """Applies a chunk; returns the choice's index in the response and its piece."""
        self.prompt_tokens = chunk.prompt_tokens
        prompt = (chunk.details or {}).get("prompt")
        if prompt is not None:
            keep_original = isinstance(self.prompt, str) and not prompt["truncated"]
            self.echo_text = self.prompt if keep_original else prompt["text"]
            self.echo_entries = prompt.get("tokens")
        piece = await self.choices[chunk.choice_index].add(chunk)
        return self.index * self.plan.choices_per_prompt + chunk.choice_index, piece

    def best_choices(self) -> list[CompletionChoice]:
        """The ``n`` choices returned: the most likely ones when best_of ranked more."""
        ranked = list(self.choices)
        if self.plan.ranks_choices:
            ranked.sort(key=lambda builder: builder.cumulative_logprob, reverse=True)
        first = self.index * self.plan.choices_per_prompt
        return [
            builder.choice(first + rank)
            for rank, builder in enumerate(ranked[: self.plan.choices_per_prompt])
        ]

    @property
    def completion_tokens(self) -> int:
        return sum(builder.tokens_generated for builder in self.choices)
