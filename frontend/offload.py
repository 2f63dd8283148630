"""Constraint work (translation, verification) off the event loop, on a few threads of its own.

Translating a constraint is pure Python that can take seconds within the
limits (lark's parser set-up for a 500-rule grammar, jsonschema's meta-schema
check of 5000 properties), and so can the judge of an output (bounded by
``JUDGE_BUDGET_S``). Run in a request handler, either would stop the event
loop: every other request, health checks included, would wait (measured
before this module: ``/health`` took 6 s while one 10,000-value enum was
translated). On a worker thread the loop keeps its share of the GIL and
goes on serving.

The pool is separate from the default executor, so a burst of heavy
constraints cannot take the threads the server needs for anything else, and
wide enough that a cheap translation (most are cache hits) gets a thread at
once even while slow ones run: threads share the GIL in 5 ms slices, so the
cheap one waits milliseconds, not for the slow ones to finish.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

WORKERS = 16
"""Threads translating and judging at once; more wait for one."""

_POOL = ThreadPoolExecutor(WORKERS, thread_name_prefix="constraint-work")


async def off_loop(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` on the constraint pool, with the caller's context
    (so its log lines still name the request)."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, work, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_POOL, call)
