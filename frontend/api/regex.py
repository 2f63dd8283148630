"""``POST /v1/completion/regex`` as regex-completion.txt specifies it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import ConfigDict, Field

from frontend.api.pattern_family import PatternCompletionFields, PatternCompletionResponse
from frontend.auth import require_api_key
from frontend.constrained import compiled_or_400, generate_verified
from frontend.text_fields import require_text

router = APIRouter(dependencies=[Depends(require_api_key)])


class RegexCompletionRequest(PatternCompletionFields):
    pattern: str | Annotated[list[str], Field(min_length=1)] = Field(
        description="A regex, or a list of regexes the completion may match any of. The whole "
        "completion must match: ^ and $ anchors are implicit. Python syntax; \\d \\w \\s are ASCII."
    )

    model_config = ConfigDict(
        json_schema_extra={
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
        },
    )


@router.post(
    "/v1/completion/regex",
    response_model=PatternCompletionResponse,
    summary="Completion that matches a regular expression",
)
async def regex_completion(
    body: RegexCompletionRequest, request: Request
) -> PatternCompletionResponse:
    require_text(body)
    constraint = await compiled_or_400("regex", _hashable(body.pattern))
    result = await generate_verified(request, body.prompt, body.sampling_params(), constraint)
    return PatternCompletionResponse.from_verified(result)


def _hashable(pattern: str | list[str]) -> str | tuple[str, ...]:
    return pattern if isinstance(pattern, str) else tuple(pattern)
