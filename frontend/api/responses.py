"""``POST /v1/responses``: OpenAI's Responses API (stateless), optionally constrained."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from frontend.auth import require_api_key
from frontend.chat import service as chat_service
from frontend.completions.schemas import VLLM_CONSTRAINT_FIELDS
from frontend.constrained import REPORT_HEADER_RESPONSES, report_headers
from frontend.errors import APIError
from frontend.offload import off_loop
from frontend.responses import schemas, service
from frontend.responses.plan import located, plan_responses
from frontend.responses.schemas import ResponsesRequest

logger = logging.getLogger(__name__)

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])


@router.post(
    "/v1/responses",
    response_model=schemas.Response,
    responses=REPORT_HEADER_RESPONSES,
    summary="Response (OpenAI's Responses API, stateless), optionally constrained "
    "(text.format, tools)",
)
async def create_response(
    body: ResponsesRequest, request: Request, response: Response
) -> schemas.Response | StreamingResponse:
    settings = request.app.state.settings
    args = (body, settings.model_name, settings.served_model_names)
    if _translates_constraint(body):
        plan = await off_loop(plan_responses, *args)  # a translation can take seconds
    else:
        plan = plan_responses(*args)
    try:
        plan = await chat_service.rendered(request, plan)
    except APIError as error:
        raise located(error) from None
    if plan.completion.user:
        logger.info("response for user %s", plan.completion.user)
    headers = report_headers(plan.completion.constraint)
    if plan.completion.stream:
        streamed = await service.stream(request, body, plan)
        streamed.headers.update(headers)
        return streamed
    response.headers.update(headers)
    return await service.complete(request, body, plan)


def _translates_constraint(body: ResponsesRequest) -> bool:
    """Whether planning translates a constraint (tools are checked even under "none")."""
    given = [getattr(body, name) for name in ("grammar", "tools", *VLLM_CONSTRAINT_FIELDS)]
    text_format = body.text.format if body.text is not None else None
    return any(given) or (text_format is not None and text_format.type != "text")
