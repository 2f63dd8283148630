"""Which malloc tritonserver and its Python-backend stubs run on.

Why: glibc's malloc keeps freed memory in per-thread arenas and hands little of
it back, so a decoder stub whose batch grows and shrinks (prefill buffers,
per-step logits, xgrammar's mask threads) shows a resident size that swings
by tens of megabytes and drifts, a false leak that hides a real one. Triton's
own release notes name this and advise preloading jemalloc or tcmalloc (both
ship in the NGC container). jemalloc with a background thread returns unused
pages within about a second of the batch shrinking, off the serving threads.

``CT_MALLOC`` chooses: ``jemalloc`` (the default where the library is found),
or ``system`` for glibc's. Asking for jemalloc where it is missing is an
error, not a quiet fallback. An ``LD_PRELOAD`` the caller already set is kept
as it is: whoever set it chose.
"""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Mapping

MALLOC_ENV = "CT_MALLOC"
ALLOCATORS = ("jemalloc", "system")
# Unused dirty pages go back to the OS after ~1 s (jemalloc's default is 10 s),
# purged outright (muzzy 0: no MADV_FREE pages that still count as resident),
# by jemalloc's own thread rather than inside a serving thread's free().
# oversize_threshold 1 GiB: by default an allocation over 8 MB goes to an arena
# that hands it back to the OS as soon as it is freed, so a step's [rows, 128k]
# logits (16 MB at 32 rows) were faulted in afresh every step: 30% of the
# throughput at c=32 on the 128k bench model (988 against 1433 tokens/s with
# this setting, 1427 on glibc). A threshold of 0, which would also disable it,
# left the decoder stub unresponsive in the integration tests.
JEMALLOC_CONF = (
    "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,oversize_threshold:1073741824"
)


def allocator_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables that make tritonserver (and the stubs it spawns) use the chosen malloc."""
    choice = environ.get(MALLOC_ENV, "").strip().lower()
    if choice not in ("", *ALLOCATORS):
        raise ValueError(f"{MALLOC_ENV}={choice!r}: expected one of {', '.join(ALLOCATORS)}")
    if choice == "system" or environ.get("LD_PRELOAD"):
        return {}
    library = ctypes.util.find_library("jemalloc")
    if library is None:
        if choice == "jemalloc":
            raise RuntimeError(
                f"{MALLOC_ENV}=jemalloc, but no libjemalloc was found "
                "(Debian/Ubuntu: apt-get install libjemalloc2)"
            )
        return {}
    return {"LD_PRELOAD": library, "MALLOC_CONF": environ.get("MALLOC_CONF", JEMALLOC_CONF)}
