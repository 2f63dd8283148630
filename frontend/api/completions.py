"""``POST /v1/completions`` and ``POST /completions``: OpenAI-style text completions."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from frontend.auth import require_api_key
from frontend.completions import service
from frontend.completions.plan import plan_completion
from frontend.completions.schemas import Completion, CompletionRequest
from frontend.offload import off_loop

logger = logging.getLogger(__name__)

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])


@router.post(
    "/v1/completions",
    response_model=Completion,
    summary="Text completion, optionally constrained (grammar, response_format, tools)",
)
@router.post(
    "/completions",
    response_model=Completion,
    summary="The same endpoint at the path completions-extended.txt documents",
)
async def create_completion(
    body: CompletionRequest, request: Request
) -> Completion | StreamingResponse:
    # Off the event loop: the plan translates the request's constraint.
    settings = request.app.state.settings
    plan = await off_loop(plan_completion, body, settings.model_name, settings.served_model_names)
    if plan.user:
        logger.info("completion for user %s", plan.user)
    if plan.stream:
        return await service.stream(request, plan)
    return await service.complete(request, plan)
