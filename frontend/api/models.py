"""``GET /v1/models``: the one served model, as the OpenAI SDK lists it."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request

from frontend.auth import require_api_key
from frontend.completions.schemas import Model, ModelList

router = APIRouter(dependencies=[Depends(require_api_key)], tags=["OpenAI-compatible"])

STARTED = int(time.time())


@router.get("/v1/models", response_model=ModelList, summary="The served model")
async def list_models(request: Request) -> ModelList:
    name = request.app.state.settings.model_name
    return ModelList(data=[Model(id=name, created=STARTED, owned_by="constrained-triton")])
