"""What the regex and CFG endpoints share: their sampling fields and answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.params import SamplingParams
from frontend.constrained import Verdict, VerifiedCompletion


class PatternCompletionFields(BaseModel):
    """The documented fields and defaults of /v1/completion/regex and /cfg."""

    # Strict: a string is never read as a number or a boolean ("5", "yes").
    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str = Field(description="The prompt to generate from.")
    max_new_tokens: int = Field(
        5, ge=1, le=4096, description="The maximum number of tokens to generate."
    )
    stop_after_match: bool = Field(
        True, description="Stop as soon as the completion is a full match."
    )
    top_k: int = Field(
        50, ge=0, description="Keep the k most likely tokens; 0 disables the filter."
    )
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus sampling probability mass.")
    temperature: float = Field(1.0, ge=0.0, le=100.0, description="0 selects greedy decoding.")
    repetition_penalty: float = Field(1.0, gt=0.0, le=100.0, description="1.0 means no penalty.")

    def sampling_params(self) -> SamplingParams:
        return SamplingParams(
            max_tokens=self.max_new_tokens,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            repetition_penalty=self.repetition_penalty,
            stop_after_match=self.stop_after_match,
        )


class PatternCompletionResponse(BaseModel):
    completion: str = Field(description="The generated text.")
    tokens_generated: int = Field(
        description="Number of tokens generated (an end-of-sequence token included)."
    )
    stop_reason: Literal["pattern_match", "token_limit", "verification_failed"] = Field(
        description="Why generation stopped. pattern_match: the pattern or grammar ended it at a "
        "full match (stop_after_match, a match nothing can extend, or the model ending it); "
        "token_limit: max_new_tokens (or the context window) ended it, whether or not the text "
        "is already a full match (see matched); verification_failed: the independent re-check "
        "disagreed with the decoder (never expected; counted in ct_verification_failures_total "
        "and logged)."
    )
    matched: bool = Field(
        description="Whether the completion is a full match (checked twice: by the decoder's "
        "grammar and by an independent judge). Always true with pattern_match; with token_limit "
        "it tells a complete match from a prefix of one."
    )

    @classmethod
    def from_verified(cls, result: VerifiedCompletion) -> PatternCompletionResponse:
        reason = {
            Verdict.MATCH: "pattern_match",
            Verdict.TOKEN_LIMIT: "token_limit",
            Verdict.VERIFICATION_FAILED: "verification_failed",
        }[result.verdict]
        return cls(
            completion=result.completion.text,
            tokens_generated=result.completion.tokens_generated,
            stop_reason=reason,
            matched=result.matched,
        )
