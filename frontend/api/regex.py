"""``POST /v1/completion/regex`` as regex-completion.txt specifies it."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from engine.params import Constraint, ConstraintType, SamplingParams
from frontend.auth import require_api_key
from frontend.errors import APIError
from frontend.generation import collect_completion
from grammar_compiler import ConstraintError, compile_regex
from grammar_compiler.regex import matches

logger = logging.getLogger(__name__)
router = APIRouter(dependencies=[Depends(require_api_key)])


class RegexCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="The prompt to generate from.")
    pattern: str | Annotated[list[str], Field(min_length=1)] = Field(
        description="A regex, or a list of regexes the completion may match any of. The whole "
        "completion must match: ^ and $ anchors are implicit."
    )
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

    model_config["json_schema_extra"] = {
        "examples": [
            {
                "prompt": "This is a sample prompt",
                "pattern": ".*prompt$",
                "max_new_tokens": 10,
                "stop_after_match": False,
                "top_k": 50,
                "top_p": 0.9,
                "temperature": 0.8,
                "repetition_penalty": 1.2,
            }
        ]
    }


class RegexCompletionResponse(BaseModel):
    completion: str = Field(description="The generated text.")
    tokens_generated: int = Field(description="Number of tokens generated.")
    stop_reason: Literal["pattern_match", "token_limit", "verification_failed"] = Field(
        description="pattern_match: the completion fully matches; token_limit: max_new_tokens cut "
        "it short (it is then a prefix the pattern could still complete); verification_failed: "
        "the independent re-check disagreed with the decoder (never expected; logged)."
    )


@router.post(
    "/v1/completion/regex",
    response_model=RegexCompletionResponse,
    summary="Completion that matches a regular expression",
)
async def regex_completion(
    body: RegexCompletionRequest, request: Request
) -> RegexCompletionResponse:
    try:
        canonical = compile_regex(body.pattern)
    except ConstraintError as error:
        raise APIError(400, str(error)) from None
    params = SamplingParams(
        max_tokens=body.max_new_tokens,
        temperature=body.temperature,
        top_k=body.top_k,
        top_p=body.top_p,
        repetition_penalty=body.repetition_penalty,
        stop_after_match=body.stop_after_match,
    )
    constraint = Constraint(type=ConstraintType.REGEX, value=canonical)
    result = await collect_completion(request, body.prompt, params, constraint)
    if not result.matched:
        stop_reason = "token_limit"
    elif matches(body.pattern, result.text):
        stop_reason = "pattern_match"
    else:
        logger.error(
            "decoder reported a match that re.fullmatch rejects: %r / %r", body.pattern, result.text
        )
        stop_reason = "verification_failed"
    return RegexCompletionResponse(
        completion=result.text, tokens_generated=result.tokens_generated, stop_reason=stop_reason
    )
