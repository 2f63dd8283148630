"""The playground: a page to try a constraint in the browser before writing code.

Static files only (no build step, no CDN), so it works where the docs must:
on a cluster without internet. The page is public like ``/docs``; the API
calls it makes carry the key the user types, kept in page memory only.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).parent / "static"

router = APIRouter(include_in_schema=False)


@router.get("/playground")
async def playground() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")


def install_playground(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/playground/static", StaticFiles(directory=STATIC_DIR), name="playground-static")
