"""Watching one Triton endpoint, and healing it when a model's stub dies.

Triton keeps calling a Python model ready after its stub process died: the
requests that stub held never end, and every new one fails. So the frontend
probes each stub with a request only the stub can answer, every
``interval_s``. When one is dead (or has stopped answering), it ends the
generations in flight with a 503 at once, takes the endpoint out of service,
and unloads and loads that model, which starts a new stub. A Triton that is
gone altogether fails its streams by itself (gRPC UNAVAILABLE); it is taken
out of service until it answers again, e.g. after its supervisor restarted it.
A draining Triton (not ready after SIGTERM) gets no new work but keeps its
generations, so a graceful shutdown stays graceful.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from frontend.metrics import GENERATIONS_ABORTED, MODEL_RESTARTS, TRITON_FAILURES, TRITON_READY
from frontend.triton_client import STUB_DEAD_MARKER, TritonEngineClient, backend_failure

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HealthPolicy:
    """How often to probe, how long to wait, and whether to restart models."""

    interval_s: float = 1.0
    probe_timeout_s: float = 5.0
    unresponsive_after: int = 3
    """Probes in a row that time out before a stub counts as hung, not just busy."""
    restart_models: bool = True
    restart_backoff_s: float = 30.0
    """Least time between restarts of one model, so a model that cannot come
    back (or a Triton without explicit model control) is not hammered."""


@dataclass(frozen=True)
class _Finding:
    model: str | None = None
    """The model whose stub failed; None when the server as a whole is not ready."""
    problem: str | None = None
    timed_out: bool = False


class EndpointMonitor:
    """Probes one endpoint and reacts; ``ready`` says whether to send it work."""

    def __init__(
        self,
        client: TritonEngineClient,
        *,
        decoder_model: str,
        tokenizer_model: str,
        detokenizer_model: str = "detokenizer",
        policy: HealthPolicy,
    ) -> None:
        self.client = client
        self.ready = False
        self.problem: str | None = "not probed yet"
        self._probes: tuple[tuple[str, Callable[[float], Awaitable[str | None]]], ...] = (
            (decoder_model, client.probe_decoder),
            (tokenizer_model, client.probe_tokenizer),
            (detokenizer_model, client.probe_detokenizer),
        )
        self._policy = policy
        self._timeouts_in_a_row = 0
        self._last_restart: dict[str, float] = {}
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        client.on_server_failure = self._failure_reported
        self._set_ready(False)

    def _failure_reported(self) -> None:
        """A generation met a failed server: stop sending work, look now."""
        if self.ready:
            logger.warning("a generation found Triton at %s failing; probing", self.client.url)
        self._set_ready(False)
        self._wake.set()

    async def start(self) -> None:
        """Probes once (so a healthy endpoint serves from the first request), then watches."""
        await self.check()
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._policy.interval_s)
            self._wake.clear()
            try:
                await self.check()
            except Exception:  # a bug here must not stop the watching
                logger.exception("health check of %s failed", self.client.url)

    async def check(self) -> None:
        """One probe of the endpoint and, if it failed, the reaction."""
        finding = await self._probe()
        if finding is None:
            if not self.ready:
                logger.info("Triton at %s is serving", self.client.url)
            self._timeouts_in_a_row = 0
            self.problem = None
            self._set_ready(True)
            return
        self.problem = finding.problem
        if finding.model is None:  # down, starting or draining: its streams speak for themselves
            if self.ready:
                logger.warning("Triton at %s is not ready: %s", self.client.url, finding.problem)
            self._set_ready(False)
            return
        if finding.timed_out:
            self._timeouts_in_a_row += 1
            if self._timeouts_in_a_row < self._policy.unresponsive_after:
                return  # busy, perhaps: keep serving
        await self._fail(finding)

    async def _probe(self) -> _Finding | None:
        timeout = self._policy.probe_timeout_s
        if not await self.client.is_ready(timeout):
            return _Finding(problem="Triton is not ready (down, starting or shutting down)")
        for model, probe in self._probes:
            started = time.monotonic()
            problem = await probe(timeout)
            if problem is not None:
                timed_out = STUB_DEAD_MARKER not in problem and (
                    time.monotonic() - started >= timeout * 0.9
                )
                return _Finding(model=model, problem=problem, timed_out=timed_out)
        return None

    async def _fail(self, finding: _Finding) -> None:
        kind = "unresponsive" if finding.timed_out else "stub_died"
        if self.ready:
            TRITON_FAILURES.labels(self.client.url, kind).inc()
            logger.error(
                "model %s on Triton at %s failed (%s): %s",
                finding.model,
                self.client.url,
                kind,
                finding.problem,
            )
        self._set_ready(False)
        failure = backend_failure(
            f"the inference server failed during the generation ({finding.model}: {kind})"
        )
        if aborted := self.client.abort_in_flight(failure):
            GENERATIONS_ABORTED.labels(self.client.url).inc(aborted)
            logger.warning("ended %d generations in flight on %s", aborted, self.client.url)
        if self._policy.restart_models and finding.model is not None:
            await self._restart(finding.model)

    async def _restart(self, model: str) -> None:
        last = self._last_restart.get(model)
        if last is not None and time.monotonic() - last < self._policy.restart_backoff_s:
            return
        # Other frontends watch the same Triton: wait a moment at random and
        # look again, so one of them restarts the model, not each in turn.
        await asyncio.sleep(random.uniform(0, self._policy.interval_s))
        if (finding := await self._probe()) is None or finding.model != model:
            return
        self._last_restart[model] = time.monotonic()
        logger.warning("restarting model %s on Triton at %s", model, self.client.url)
        started = time.monotonic()
        try:
            await self.client.restart_model(model)
        except Exception as error:  # Triton refuses (no explicit model control) or fails to load
            MODEL_RESTARTS.labels(self.client.url, model, "failed").inc()
            logger.error("restarting model %s on %s failed: %s", model, self.client.url, error)
            return
        MODEL_RESTARTS.labels(self.client.url, model, "ok").inc()
        self._timeouts_in_a_row = 0
        logger.warning(
            "model %s on %s restarted in %.1f s", model, self.client.url, time.monotonic() - started
        )

    def _set_ready(self, ready: bool) -> None:
        self.ready = ready
        TRITON_READY.labels(self.client.url).set(1 if ready else 0)
