"""The FastAPI application factory (``uvicorn frontend.app:create_app --factory``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp

from frontend.api import cfg, chat, completions, health, models, regex, responses, typed, validate
from frontend.body_limit import BodyLimitMiddleware
from frontend.docs_pages import install_docs_pages
from frontend.errors import UnexpectedErrorMiddleware, install_error_handlers
from frontend.logs import configure_logging
from frontend.metrics import install_metrics
from frontend.playground import install_playground
from frontend.request_context import RequestContextMiddleware
from frontend.settings import Settings
from frontend.triton_pool import TritonPool

logger = logging.getLogger(__name__)


class _App(FastAPI):
    """FastAPI with the request context outside even its server-error layer,
    which ``add_middleware`` cannot reach: a crash's 500 still carries
    ``X-Request-ID``, and its log line names the request."""

    def build_middleware_stack(self) -> ASGIApp:
        return RequestContextMiddleware(super().build_middleware_stack())


def create_app(settings: Settings | None = None) -> FastAPI:
    configure_logging()
    settings = settings or Settings.from_env()
    if not settings.api_keys and not settings.auth_disabled:
        raise RuntimeError(
            "no API keys configured: set CT_API_KEYS or CT_API_KEYS_FILE (or CT_AUTH_DISABLED=1)"
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engine = TritonPool.from_settings(settings)
        await app.state.engine.start()
        try:
            yield
        finally:
            await app.state.engine.close()

    app = _App(
        title="Constrained completions on Triton",
        version="0.1.0",
        description=(
            "LLM completions that provably match a regex, grammar, JSON Schema or TypeScript type."
        ),
        lifespan=lifespan,
        docs_url=None,  # served by install_docs_pages, without a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    install_metrics(app)
    app.add_middleware(UnexpectedErrorMiddleware)  # last added: outermost, so around the rest
    # Routes are matched in order: the busiest first.
    for module in (completions, chat, responses, health, regex, cfg, typed, validate, models):
        app.include_router(module.router)
    install_docs_pages(app)
    install_playground(app)
    return app
