"""Request bodies over ``CT_MAX_BODY_BYTES`` are refused with 413, without being read whole.

uvicorn and FastAPI accept a body of any size and hold all of it in memory
before a route sees it, so a few clients sending 100 MB bodies could exhaust
the frontend however small their constraints are. Every size limit past this
one (schema, grammar and regex sizes in ``grammar_compiler``) is far below
it, so an honest request never meets it.

A declared ``Content-Length`` over the limit is answered at once, before a
byte of the body is read. A body sent without one (chunked) is counted as it
arrives and refused at the first chunk that takes it over, so it is never
buffered beyond the limit either. Both answers have the route's error shape
(``frontend.errors``).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from frontend.errors import APIError, error_response


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` mid-body; FastAPI passes an ``HTTPException`` raised
    while it reads a body on to the error handlers, which give it the route's shape."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large_message(limit))


def too_large_message(limit: int) -> str:
    return f"request body too large: the limit is {limit} bytes (CT_MAX_BODY_BYTES)"


class BodyLimitMiddleware:
    """ASGI middleware refusing HTTP request bodies over ``max_bytes`` (0: no limit)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            request = Request(scope)
            error = APIError(413, too_large_message(self.max_bytes))
            await error_response(request, error)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:  # the server refuses a malformed length before the app runs
        return None
