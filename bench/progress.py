"""Progress lines on stdout, stamped with the time since the run began."""

from __future__ import annotations

import sys
import time

_STARTED = time.monotonic()


def say(message: str) -> None:
    elapsed = time.monotonic() - _STARTED
    sys.stdout.write(f"[bench {elapsed:7.1f}s] {message}\n")
    sys.stdout.flush()
