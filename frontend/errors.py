"""One error type and one place that turns errors into responses.

Two families of routes, two shapes. The regex/cfg/typed documents show
``{"error": "<message>", "code": <status>}``; OpenAI-style routes answer
``{"error": {"message", "type", "param", "code"}}`` so the SDKs raise the right
exception types. Every error (validation, auth, Triton failures, crashes) gets
its route's shape with the matching HTTP status, never a bare 500 page.

A body that is not JSON is a 400 on every route, saying what is wrong and
where (line and column); a JSON body whose fields are wrong is a 400 on the
OpenAI routes (with ``param``) and a 422 on the others. ``param`` is null only
for errors about the body as a whole (not JSON, not an object).

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


OPENAI_PATHS = frozenset(
    {"/v1/completions", "/completions", "/v1/chat/completions", "/v1/responses", "/v1/models"}
)

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


def _field_path(location: tuple, body: object) -> str:
    """``("body", "tools", 0, "function", "name")`` -> ``tools[0].function.name``.

    Pydantic also names the union branch it tried (``stop.str``,
    ``tool_choice.NamedToolChoice``); a part is kept only where the body has
    it, or as a missing field of an object at the end of the path.
    """
    parts = [part for part in location if part != "body"]
    path, value = "", body
    for position, part in enumerate(parts):
        if isinstance(part, int):
            path += f"[{part}]"
            value = value[part] if isinstance(value, list) and part < len(value) else None
            continue
        if "[" in part or "-" in part:  # pydantic's branch names: literal[...], function-after
            continue
        is_last = position == len(parts) - 1
        if isinstance(value, dict) and (part in value or is_last):
            path += f".{part}" if path else part
            value = value.get(part)
    return path


def _validation_message(items: list[dict], body: object) -> str:
    """``field: what is wrong`` per field; a union's branches' complaints joined."""
    complaints: dict[str, list[str]] = {}
    for item in items:
        path = _field_path(tuple(item.get("loc", ())), body) or "body"
        found = complaints.setdefault(path, [])
        if (msg := item.get("msg", "invalid")) not in found:
            found.append(msg)
    return "; ".join(f"{path}: {_either(msgs)}" for path, msgs in complaints.items())


def _either(messages: list[str]) -> str:
    """``Input should be a valid string, or a valid list``."""
    lead = "Input should be "
    rest = [m.removeprefix(lead) if messages[0].startswith(lead) else m for m in messages[1:]]
    return ", or ".join([messages[0], *rest])


def _position(document: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset, as Python's json counts them."""
    line = document.count("\n", 0, offset) + 1
    return line, offset - document.rfind("\n", 0, offset)


def _json_syntax_error(item: dict, document: object) -> APIError:
    """A body that is not JSON: what is wrong and where, from Python's json
    error (``Invalid control character at`` -> ``invalid control character in
    a string at line 3, column 12``). A syntax error, so a 400 on every route."""
    what = str((item.get("ctx") or {}).get("error") or "invalid JSON").removesuffix(" at")
    what = what[:1].lower() + what[1:]
    hint = ""
    if what == "invalid control character":  # only strings can hold one
        what += " in a string"
        hint = " (a newline inside a string is written \\n)"
    offset = item["loc"][-1] if isinstance(item["loc"][-1], int) else None
    where = ""
    if isinstance(document, str) and offset is not None:
        line, column = _position(document, offset)
        where = f" at line {line}, column {column}"
    return APIError(400, f"the body is not valid JSON: {what}{where}{hint}", code="invalid_json")


def _not_utf8(error: UnicodeDecodeError) -> APIError:
    byte = error.object[error.start : error.start + 1].hex()
    return APIError(
        400,
        f"the body is not valid JSON: it is not UTF-8 (byte 0x{byte} at offset {error.start})",
        code="invalid_json",
    )


def _from_validation(request: Request, error: RequestValidationError) -> APIError:
    items = error.errors()
    if len(items) == 1 and items[0].get("type") == "json_invalid":
        return _json_syntax_error(items[0], error.body)
    message = _validation_message(items, error.body) or "invalid request"
    if request.url.path in OPENAI_PATHS:  # OpenAI answers a bad parameter with 400
        param = _field_path(tuple(items[0].get("loc", ())), error.body) if items else None
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
        cause = error.__cause__  # FastAPI's "error parsing the body" hides why
        if isinstance(cause, UnicodeDecodeError):
            return error_response(request, _not_utf8(cause))
        if isinstance(cause, RecursionError):
            message = "the body is not valid JSON: it nests too deeply to be read"
            return error_response(request, APIError(400, message, code="invalid_json"))
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
