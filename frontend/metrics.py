"""The frontend's Prometheus metrics (Triton's own are on its metrics port)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

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


def install_metrics(app: FastAPI) -> None:
    @app.middleware("http")
    async def _observe(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        REQUESTS.labels(path, str(response.status_code)).inc()
        LATENCY.labels(path).observe(time.perf_counter() - started)
        return response

    @app.get("/metrics", include_in_schema=False)
    async def _metrics() -> Response:
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
