"""Per-request generation settings as they travel inside Triton.

The ensemble takes them as JSON strings (``sampling_parameters`` and the
``constraint_*`` tensors) so ``tritonclient`` and ``perf_analyzer`` users can
drive the pipeline directly; pydantic forbids unknown fields so a typo is an
error, never a silently ignored setting.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class SamplingParams(BaseModel):
    """How one request samples and when it stops."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(16, ge=1, description="Upper bound on generated tokens.")
    temperature: float = Field(1.0, ge=0.0, description="0 selects greedy decoding.")
    top_k: int = Field(0, ge=0, description="0 disables top-k filtering.")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    repetition_penalty: float = Field(1.0, gt=0.0, description="1.0 disables it.")
    presence_penalty: float = Field(
        0.0, ge=-2.0, le=2.0, description="OpenAI-style, on output tokens."
    )
    frequency_penalty: float = Field(
        0.0, ge=-2.0, le=2.0, description="OpenAI-style, on output tokens."
    )
    stop: tuple[str, ...] = Field(
        (),
        max_length=16,
        description="Strings that end generation; the output keeps them. Under a constraint "
        "they end it only where the constraint is fully matched.",
    )
    seed: int | None = Field(None, ge=0, description="Same seed and request give the same output.")
    stop_after_match: bool = Field(
        True, description="End as soon as the constraint is fully matched."
    )
    ignore_eos: bool = False


class ConstraintType(str, Enum):
    """Canonical constraint forms the decoder compiles with xgrammar.

    Users' languages (BNF dialects, Lark, TypeScript, ...) are translated to one
    of these by ``grammar_compiler`` before they reach Triton.
    """

    NONE = "none"
    REGEX = "regex"
    EBNF = "ebnf"
    JSON_SCHEMA = "json_schema"


class Constraint(BaseModel):
    """A canonical constraint: the whole completion must match it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ConstraintType = ConstraintType.NONE
    value: str = ""

    @property
    def is_constrained(self) -> bool:
        return self.type is not ConstraintType.NONE
