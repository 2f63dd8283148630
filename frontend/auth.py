"""Bearer-token authentication shared by every generation route."""

from __future__ import annotations

import hmac

from fastapi import Request

from frontend.errors import APIError

INVALID_KEY = "Invalid API Key provided."


def _matches_any(candidate: str, keys: tuple[str, ...]) -> bool:
    """Compares against every key in constant time so timing reveals nothing."""
    found = False
    for key in keys:
        found |= hmac.compare_digest(candidate.encode(), key.encode())
    return found


async def require_api_key(request: Request) -> None:
    settings = request.app.state.settings
    if settings.auth_disabled:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if (
        scheme.lower() != "bearer"
        or not token
        or not _matches_any(token.strip(), settings.api_keys)
    ):
        raise APIError(401, INVALID_KEY, headers={"WWW-Authenticate": "Bearer"})
