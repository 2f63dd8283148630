"""``GET /health``: open (no key), for load balancers and Kubernetes probes."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter()


@router.get("/health", summary="Ready when a Triton endpoint serves the whole pipeline")
async def health(request: Request) -> JSONResponse:
    """Reports the health monitors' latest finding (probed every second),
    so a probe storm never reaches Triton."""
    if request.app.state.engine.is_ready():
        return JSONResponse({"status": "ok"})
    return JSONResponse(
        {"status": "unavailable", "error": "the inference server is not ready", "code": 503},
        status_code=503,
    )
