"""The frontend's Prometheus metrics (Triton's own are on its metrics port)."""

from __future__ import annotations

import time

from fastapi import Depends, FastAPI, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from frontend.auth import require_metrics_key

REGISTRY = CollectorRegistry()

REQUESTS = Counter(
    "ct_http_requests_total",
    "HTTP requests by route and status",
    ["route", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "ct_http_request_seconds",
    "HTTP request latency by route",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
VERIFICATION_FAILURES = Counter(
    "ct_verification_failures_total",
    "Outputs the decoder called complete that the independent judge rejected",
    ["language"],
    registry=REGISTRY,
)
TOKENS = Counter("ct_tokens_total", "Prompt and completion tokens", ["kind"], registry=REGISTRY)
TIME_TO_FIRST_TOKEN = Histogram(
    "ct_time_to_first_token_seconds",
    "From the HTTP request's start to its first chunk from Triton, streamed or collected",
    ["route"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
GENERATIONS_IN_FLIGHT = Gauge(
    "ct_generations_in_flight",
    "Triton requests the frontend has open (queued or running): its view of the queue",
    registry=REGISTRY,
)
CANCELLATION_CAUSES = ("client_disconnect", "error", "timeout")
CANCELLATIONS = Counter(
    "ct_generation_cancellations_total",
    "Generations the frontend cancelled in the decoder, by cause",
    ["cause"],
    registry=REGISTRY,
)
for _cause in CANCELLATION_CAUSES:  # every cause shows, at 0, before it first happens
    CANCELLATIONS.labels(_cause)
CONSTRAINT_CACHE_LOOKUPS = Counter(
    "ct_constraint_cache_lookups_total",
    "Lookups in the frontend's constraint translation caches",
    ["cache", "result"],
    registry=REGISTRY,
)
CONSTRAINT_TRANSLATION = Histogram(
    "ct_constraint_translation_seconds",
    "Translating a user constraint to its canonical form (cache misses only)",
    ["cache"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
    registry=REGISTRY,
)
TRITON_READY = Gauge(
    "ct_triton_ready",
    "1 while the health probe finds this Triton endpoint serving (new generations go there)",
    ["endpoint"],
    registry=REGISTRY,
)
TRITON_GENERATIONS = Counter(
    "ct_triton_generations_total",
    "Generations sent to each Triton endpoint (how the frontend spreads its load)",
    ["endpoint"],
    registry=REGISTRY,
)
TRITON_FAILURES = Counter(
    "ct_triton_failures_total",
    "Failures the health probe found: a model's stub process died, or stopped answering",
    ["endpoint", "kind"],
    registry=REGISTRY,
)
GENERATIONS_ABORTED = Counter(
    "ct_generations_aborted_total",
    "Generations in flight ended with 503 because their Triton endpoint failed",
    ["endpoint"],
    registry=REGISTRY,
)
MODEL_RESTARTS = Counter(
    "ct_triton_model_restarts_total",
    "Models the frontend unloaded and loaded again to replace a failed stub, by result",
    ["endpoint", "model", "result"],
    registry=REGISTRY,
)


class _MetricsMiddleware:
    """Pure ASGI, not BaseHTTPMiddleware: that one hides client disconnects
    from handlers, and a departed client must cancel its generation."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, send_and_observe)
        finally:
            path = getattr(scope.get("route"), "path", "unmatched")
            REQUESTS.labels(path, str(status)).inc()
            LATENCY.labels(path).observe(time.perf_counter() - started)


def install_metrics(app: FastAPI) -> None:
    app.add_middleware(_MetricsMiddleware)

    @app.get("/metrics", include_in_schema=False, dependencies=[Depends(require_metrics_key)])
    async def _metrics() -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
