"""Stop strings, matched on the output's bytes.

Matching bytes rather than decoded text finds a stop string even when it
spans tokens or when a token ends inside a multi-byte character.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopStringMatcher:
    """Reports when the output so far contains one of the stop strings."""

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [stop.encode("utf-8") for stop in stops if stop]
        self._keep = max((len(stop) for stop in self._stops), default=1) - 1
        self._tail = b""

    def push(self, token_bytes: bytes) -> bool:
        """Adds one token's bytes; True once a stop string has appeared."""
        window = self._tail + token_bytes
        found = any(stop in window for stop in self._stops)
        self._tail = window[-self._keep :] if self._keep else b""
        return found
