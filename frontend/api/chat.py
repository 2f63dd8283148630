"""``POST /v1/chat/completions``: OpenAI's chat completions, optionally constrained."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from frontend.auth import require_api_key
from frontend.chat import service
from frontend.chat.plan import plan_chat
from frontend.chat.schemas import ChatCompletion, ChatCompletionRequest
from frontend.completions.plan import translates_constraint
from frontend.constrained import REPORT_HEADER_RESPONSES, report_headers
from frontend.offload import off_loop

logger = logging.getLogger(__name__)

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletion,
    responses=REPORT_HEADER_RESPONSES,
    summary="Chat completion, optionally constrained (response_format, grammar, tools)",
)
async def create_chat_completion(
    body: ChatCompletionRequest, request: Request, response: Response
) -> ChatCompletion | StreamingResponse:
    settings = request.app.state.settings
    args = (body, settings.model_name, settings.served_model_names)
    if translates_constraint(body):  # which can take seconds: off the event loop
        plan = await off_loop(plan_chat, *args)
    else:
        plan = plan_chat(*args)
    plan = await service.rendered(request, plan)
    if plan.completion.user:
        logger.info("chat completion for user %s", plan.completion.user)
    headers = report_headers(plan.completion.constraint)
    if plan.completion.stream:
        streamed = await service.stream(request, plan)
        streamed.headers.update(headers)
        return streamed
    response.headers.update(headers)
    return await service.complete(request, plan)
