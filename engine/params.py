"""Per-request generation settings as they travel inside Triton.

The ensemble takes them as JSON strings (``sampling_parameters`` and the
``constraint_*`` tensors) so ``tritonclient`` and ``perf_analyzer`` users can
drive the pipeline directly; pydantic forbids unknown fields so a typo is an
error, never a silently ignored setting.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# llama.cpp's and text-generation-webui's defaults for DRY.
DEFAULT_DRY_SEQUENCE_BREAKERS = ("\n", ":", '"', "*")
MAX_LOGPROBS = 5
MAX_CHOICES = 128
MAX_LOGIT_BIAS = 1024


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
    jump_forward: bool = Field(
        True,
        description="Under a constraint, feed text the grammar forces (JSON keys, literals) in "
        "one forward pass instead of sampling it token by token. The text is the same; its "
        "tokens are the tokenizer's own. Off for requests that ask for logprobs.",
    )
    stream_interval_ms: float = Field(
        0.0,
        ge=0.0,
        description="Merge a choice's outputs until this long after its last response (0: "
        "every token at once). The first and final outputs are never held; a value above the "
        "generation time gives one response per choice.",
    )
    min_p: float = Field(
        0.0, ge=0.0, le=1.0, description="Drop tokens below this fraction of the top probability."
    )
    logit_bias: dict[int, float] = Field(
        default_factory=dict,
        max_length=MAX_LOGIT_BIAS,
        description="Added to the logits of these token ids before sampling (-100..100).",
    )
    dry_multiplier: float = Field(0.0, ge=0.0, description="DRY penalty scale; 0 disables DRY.")
    dry_base: float = Field(1.75, ge=1.0, description="Growth of DRY's penalty per extra token.")
    dry_allowed_length: int = Field(2, ge=1, description="Longest repeat DRY leaves alone.")
    dry_sequence_breakers: tuple[str, ...] = Field(
        DEFAULT_DRY_SEQUENCE_BREAKERS,
        max_length=64,
        description="A token whose text contains one of these ends a DRY repeat match.",
    )
    mirostat_target: float | None = Field(
        None, gt=0.0, description="Mirostat v2 target surprise (bits); None disables mirostat."
    )
    mirostat_lr: float = Field(0.1, gt=0.0, le=1.0, description="Mirostat learning rate.")
    n: int = Field(1, ge=1, le=MAX_CHOICES, description="Choices sampled from one prefill.")
    logprobs: int | None = Field(
        None,
        ge=0,
        le=MAX_LOGPROBS,
        description="Return each chosen token's log probability and this many alternatives.",
    )
    echo_prompt: bool = Field(
        False,
        description="Send the prompt's tokens (with their log probabilities when logprobs is "
        "set) in the first output.",
    )
    context_overflow: Literal["truncate", "error"] = Field(
        "truncate",
        description="When prompt + max_tokens exceeds the context window: lower max_tokens, or "
        "refuse the request.",
    )
    truncate_prompt: bool = Field(
        False, description="Cut a prompt that does not fit from the left instead of refusing it."
    )

    @model_validator(mode="after")
    def _check_logit_bias(self) -> SamplingParams:
        for token, bias in self.logit_bias.items():
            if token < 0 or not -100.0 <= bias <= 100.0:
                raise ValueError(
                    f"logit_bias[{token}] = {bias}: token ids are >= 0 and biases in -100..100"
                )
        return self


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
