"""One error type and one place that turns errors into responses.

Two families of routes, two shapes. The regex/cfg/typed documents show
``{"error": "<message>", "code": <status>}``; OpenAI-style routes answer
``{"error": {"message", "type", "param", "code"}}`` so the SDKs raise the right
exception types. Every error (validation, auth, Triton failures, crashes) gets
its route's shape with the matching HTTP status, never a bare 500 page.

A crash (an exception no handler expects) is answered by
``UnexpectedErrorMiddleware``, not by an exception handler: Starlette runs a
handler for ``Exception`` in its outermost layer, which re-raises after
sending the 500, and uvicorn closes the connection of an application that
raised, so the client's next request on that keep-alive connection was
dropped. The middleware answers and returns normally instead.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


OPENAI_PATHS = frozenset({"/v1/completions", "/completions", "/v1/models"})

# OpenAI's error types by status; SDKs pick exception classes by status code.
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class APIError(Exception):
    """An error the client should see, with its HTTP status.

    ``param`` names the request field at fault and ``code`` is a short machine
    word (``model_not_found``); the OpenAI shape carries both.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers
        self.param = param
        self.code = code


def openai_error_body(error: APIError) -> dict:
    """OpenAI's error object; also sent as a server-sent event mid-stream."""
    kind = _OPENAI_TYPES.get(error.status, "server_error" if error.status >= 500 else "api_error")
    return {
        "error": {
            "message": error.message,
            "type": kind,
            "param": error.param,
            "code": error.code,
        }
    }


def error_response(request: Request, error: APIError) -> JSONResponse:
    if request.url.path in OPENAI_PATHS:
        body = openai_error_body(error)
    else:
        body = {"error": error.message, "code": error.status}
    return JSONResponse(body, status_code=error.status, headers=error.headers)


def _field_path(location: tuple) -> str:
    """``("body", "tools", 0, "function", "name")`` -> ``tools[0].function.name``."""
    path = ""
    for part in location:
        if part == "body":
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        elif "[" in str(part) or "-" in str(part):  # pydantic's union branch names
            continue
        else:
            path += f".{part}" if path else str(part)
    return path


def _from_validation(request: Request, error: RequestValidationError) -> APIError:
    items = error.errors()
    parts = [
        f"{_field_path(tuple(item.get('loc', ()))) or 'body'}: {item.get('msg', 'invalid')}"
        for item in items
    ]
    message = "; ".join(parts) or "invalid request"
    if request.url.path in OPENAI_PATHS:  # OpenAI answers a bad parameter with 400
        param = _field_path(tuple(items[0].get("loc", ()))) if items else None
        return APIError(400, message, param=param or None, code="invalid_value")
    return APIError(422, message)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(request: Request, error: APIError) -> JSONResponse:
        return error_response(request, error)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(request, _from_validation(request, error))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return error_response(
            request,
            APIError(error.status_code, str(error.detail), headers=getattr(error, "headers", None)),
        )


class UnexpectedErrorMiddleware:
    """Answers an exception no handler expects with a 500 in the route's shape, and
    keeps the connection open for the client's next request.

    Installed as the outermost middleware that ``add_middleware`` reaches, so
    it also covers the metrics and body-limit layers. A response already under
    way (a stream that failed mid-way) cannot be turned into a 500: the
    exception goes on, and the server closes the connection, the only way
    left to tell the client the response is incomplete.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = False

        async def send_noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, receive, send_noting_start)
        except Exception as error:
            if started:
                raise
            request = Request(scope)
            logger.exception("unhandled error on %s", request.url.path, exc_info=error)
            await error_response(request, APIError(500, "internal server error"))(
                scope, receive, send
            )
