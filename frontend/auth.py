"""Bearer-token authentication and per-key rate limits, shared by every protected route.

The limit is checked inside the same dependency that checks the key, so no
route can be protected by one and not the other. Keys are never logged; a
log line names a key by :func:`frontend.keys.key_id` at most.

``python -m frontend.auth hash [KEY]`` prints the ``sha256:`` form of a key for
``CT_API_KEYS``/``CT_API_KEYS_FILE`` (the key is read from stdin when omitted,
which keeps it out of shell history).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

from fastapi import FastAPI, Request

from frontend.errors import APIError
from frontend.keys import PREFIX, key_id, match, normalize
from frontend.ratelimit import RateLimiter
from frontend.settings import Settings

logger = logging.getLogger(__name__)

INVALID_KEY = "Invalid API Key provided."


def _limiter(app: FastAPI, settings: Settings) -> RateLimiter | None:
    """The app's limiter, made on first use (None when unlimited).

    Made here rather than in the app factory so the auth dependency stays the
    one place that knows about limits; no await separates the lookup from the
    store, so two requests on the event loop cannot both make one.
    """
    if not settings.rate_limit_rps:
        return None
    limiter = getattr(app.state, "rate_limiter", None)
    if limiter is None:
        burst = settings.rate_limit_burst or max(1, math.ceil(settings.rate_limit_rps))
        limiter = RateLimiter(settings.api_keys, settings.rate_limit_rps, burst)
        app.state.rate_limiter = limiter
    return limiter


async def require_api_key(request: Request) -> None:
    """401 without a configured key, 429 with ``Retry-After`` once its bucket is empty."""
    settings = request.app.state.settings
    if settings.auth_disabled:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    digest = match(token, settings.api_keys) if scheme.lower() == "bearer" and token else None
    if digest is None:
        raise APIError(401, INVALID_KEY, headers={"WWW-Authenticate": "Bearer"})
    limiter = _limiter(request.app, settings)
    wait = limiter.take(digest) if limiter else 0
    if wait:
        logger.info("rate limited key %s on %s", key_id(digest), request.url.path)
        raise APIError(
            429,
            f"Rate limit reached for this API key; retry in {wait} s.",
            headers={"Retry-After": str(wait)},
            code="rate_limit_exceeded",
        )


async def require_metrics_key(request: Request) -> None:
    """``/metrics`` is open unless ``CT_METRICS_REQUIRE_KEY``: scrapers often hold no key."""
    if request.app.state.settings.metrics_require_key:
        await require_api_key(request)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m frontend.auth")
    commands = parser.add_subparsers(dest="command", required=True)
    hash_command = commands.add_parser(
        "hash", help=f"print the {PREFIX}<hex> form of a key for CT_API_KEYS or CT_API_KEYS_FILE"
    )
    hash_command.add_argument("key", nargs="?", help="the key (default: read from stdin)")
    args = parser.parse_args(argv)
    key = args.key if args.key is not None else sys.stdin.read().strip()
    if key.lower().startswith(PREFIX):
        parser.error(f"a key starting with {PREFIX} would be read as a digest; pick another")
    try:
        print(normalize(key, "the key given"))
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
