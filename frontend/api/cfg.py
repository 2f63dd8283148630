"""``POST /v1/completion/cfg`` as cfg-completion.txt specifies it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import ConfigDict, Field

from frontend.api.pattern_family import PatternCompletionFields, PatternCompletionResponse
from frontend.auth import require_api_key
from frontend.constrained import compiled_or_400, generate_verified
from frontend.text_fields import require_text
from grammar_compiler.cfg import GrammarFormat

router = APIRouter(dependencies=[Depends(require_api_key)])


class CfgCompletionRequest(PatternCompletionFields):
    grammar: str = Field(
        min_length=1,
        description="The grammar the whole completion must match: the document's BNF dialect "
        "(<start> ::= <noun> <verb> | ...), GBNF/xgrammar EBNF (root ::= ...), Lark, or "
        'ISO/Wirth (digit = "0" | "1" ;) and W3C EBNF, or ABNF (digit = %x30-39).',
    )
    grammar_format: GrammarFormat = Field(
        "auto", description="The grammar's language; auto detects it."
    )

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "prompt": "Start your text here",
                    "grammar": "<start> ::= <noun> <verb> | <verb> <noun>",
                    "max_new_tokens": 10,
                    "stop_after_match": False,
                    "top_k": 30,
                    "top_p": 0.9,
                    "temperature": 1.2,
                    "repetition_penalty": 0.8,
                }
            ]
        },
    )


@router.post(
    "/v1/completion/cfg",
    response_model=PatternCompletionResponse,
    summary="Completion that matches a context-free grammar",
)
async def cfg_completion(body: CfgCompletionRequest, request: Request) -> PatternCompletionResponse:
    require_text(body)
    constraint = await compiled_or_400("grammar", body.grammar, body.grammar_format)
    result = await generate_verified(request, body.prompt, body.sampling_params(), constraint)
    return PatternCompletionResponse.from_verified(result)
