"""``GET /v1/models``: the one served model (and the aliases it answers to), as the
OpenAI SDK lists them."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request

from frontend.auth import require_api_key
from frontend.completions.schemas import Model, ModelList

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])

STARTED = int(time.time())


@router.get("/v1/models", response_model=ModelList, summary="The served model and its aliases")
async def list_models(request: Request) -> ModelList:
    names = request.app.state.settings.model_names
    return ModelList(
        data=[Model(id=name, created=STARTED, owned_by="constrained-triton") for name in names]
    )
