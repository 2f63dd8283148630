"""``POST /v1/completions`` and ``POST /completions``: OpenAI-style text completions."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from frontend.auth import require_api_key
from frontend.completions import service
from frontend.completions.plan import plan_completion, translates_constraint
from frontend.completions.schemas import Completion, CompletionRequest
from frontend.constrained import REPORT_HEADER_RESPONSES, report_headers
from frontend.offload import off_loop

logger = logging.getLogger(__name__)

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])


@router.post(
    "/v1/completions",
    response_model=Completion,
    responses=REPORT_HEADER_RESPONSES,
    summary="Text completion, optionally constrained (grammar, response_format, tools)",
)
@router.post(
    "/completions",
    response_model=Completion,
    responses=REPORT_HEADER_RESPONSES,
    summary="The same endpoint at the path completions-extended.txt documents",
)
async def create_completion(
    body: CompletionRequest, request: Request, response: Response
) -> Completion | StreamingResponse:
    settings = request.app.state.settings
    args = (body, settings.model_name, settings.served_model_names)
    if translates_constraint(body):  # which can take seconds: off the event loop
        plan = await off_loop(plan_completion, *args)
    else:
        plan = plan_completion(*args)
    if plan.user:
        logger.info("completion for user %s", plan.user)
    headers = report_headers(plan.constraint)
    if plan.stream:
        streamed = await service.stream(request, plan)
        streamed.headers.update(headers)
        return streamed
    response.headers.update(headers)
    return await service.complete(request, plan)
