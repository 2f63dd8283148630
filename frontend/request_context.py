"""Each HTTP request's id and context, from the outermost middleware to Triton.

The id comes from the client's ``X-Request-ID`` when it is safe to echo and
log, otherwise it is made here; every response carries it back, every log line
of the request names it, and every Triton request of it starts with it, so one
request can be followed from the client through the frontend into Triton's
logs. The context lives in a contextvar holding one mutable object, so tasks a
request spawns (one per prompt) share it.
"""

from __future__ import annotations

import contextvars
import logging
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = b"x-request-id"
_VALID_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
# Probes and scrapes arrive every few seconds; their lines would drown the rest.
QUIET_PATHS = frozenset({"/health", "/metrics"})

access_logger = logging.getLogger("frontend.access")
_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "ct_request", default=None
)


def valid_request_id(value: str | None) -> bool:
    """At most 128 of ``[A-Za-z0-9._-]``: safe in headers, log lines and Triton ids."""
    return value is not None and _VALID_ID.fullmatch(value) is not None


def new_request_id() -> str:
    return uuid.uuid4().hex


@dataclass
class RequestContext:
    request_id: str
    scope: Scope | None = None
    """The request's ASGI scope: the router adds the matched route to it."""
    started: float = field(default_factory=time.perf_counter)
    client_disconnected: bool = False
    """Set once the server reports the client gone, which tells a departure
    from a failure when the request's generations are cancelled."""
    _attempt: str = field(default_factory=lambda: secrets.token_hex(4))
    _generations: int = 0
    _first_chunk_seen: bool = False

    @property
    def route(self) -> str:
        """The matched route's template (bounded cardinality), ``unmatched`` before routing."""
        return getattr((self.scope or {}).get("route"), "path", "unmatched")

    def next_triton_request_id(self) -> str:
        """``<request id>-<attempt>-<n>`` for the request's n-th generation.

        The random attempt part keeps Triton ids unique when a client reuses its
        ``X-Request-ID`` (retries do): the decoder cancels by id and remembers
        cancelled ids for a while, so a repeated id would cancel the retry.
        """
        number, self._generations = self._generations, self._generations + 1
        return f"{self.request_id}-{self._attempt}-{number}"

    def first_chunk_seconds(self) -> float | None:
        """Seconds from the request's start to its first chunk from Triton; None after that."""
        if self._first_chunk_seen:
            return None
        self._first_chunk_seen = True
        return time.perf_counter() - self.started


def current() -> RequestContext | None:
    """The running request's context; None outside a request."""
    return _current.get()


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == HEADER:
            candidate = value.decode("latin-1")
            return candidate if valid_request_id(candidate) else None
    return None


class RequestContextMiddleware:
    """Outermost pure-ASGI layer: sets the context, answers ``X-Request-ID`` on
    every response (server errors included) and logs one access line per request.

    Pure ASGI because BaseHTTPMiddleware hides client disconnects from handlers.
    Only the method and path are logged: no query string, no headers, so no key.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        context = RequestContext(_incoming_id(scope) or new_request_id(), scope)
        token = _current.set(context)
        status = 500

        async def receive_noting_disconnect() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                context.client_disconnected = True
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != HEADER]
                headers.append((HEADER, context.request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self._app(scope, receive_noting_disconnect, send_with_id)
        finally:
            duration_ms = round((time.perf_counter() - context.started) * 1000, 1)
            access_logger.log(
                logging.DEBUG if scope["path"] in QUIET_PATHS else logging.INFO,
                "%s %s %s %.1f ms",
                scope["method"],
                scope["path"],
                status,
                duration_ms,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": duration_ms,
                },
            )
            _current.reset(token)
