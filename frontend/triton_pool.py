"""The engine routes talk to: generations spread over one or more Triton endpoints.

Each generation goes to the ready endpoint with the fewest generations in
flight (ties taken in turn), so one frontend balances per request, not per
connection, and a failed endpoint simply stops getting work until its monitor
finds it serving again. With no endpoint ready, a request is refused at once
with 503 and ``Retry-After`` instead of waiting on a dead server.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence

from engine.params import Constraint, SamplingParams
from frontend.metrics import TRITON_GENERATIONS
from frontend.settings import Settings
from frontend.triton_client import Chunk, TritonEngineClient, unavailable
from frontend.triton_health import EndpointMonitor, HealthPolicy


class TritonPool:
    """Monitored Triton endpoints behind one ``generate``."""

    def __init__(self, monitors: Sequence[EndpointMonitor]) -> None:
        if not monitors:
            raise ValueError("at least one Triton endpoint is needed")
        self._monitors = tuple(monitors)
        self._turns = itertools.count()

    @classmethod
    def from_settings(cls, settings: Settings) -> TritonPool:
        policy = HealthPolicy(
            interval_s=settings.health_interval_s,
            probe_timeout_s=settings.health_probe_timeout_s,
            restart_models=settings.restart_failed_models,
        )
        return cls(
            [
                EndpointMonitor(
                    TritonEngineClient(
                        url,
                        settings.triton_model,
                        settings.triton_decoder_model,
                        tokenizer_model=settings.triton_tokenizer_model,
                        chat_template_model=settings.triton_chat_template_model,
                        detokenizer_model=settings.triton_detokenizer_model,
                        timeout_s=settings.request_timeout_s,
                    ),
                    decoder_model=settings.triton_decoder_model,
                    tokenizer_model=settings.triton_tokenizer_model,
                    detokenizer_model=settings.triton_detokenizer_model,
                    policy=policy,
                )
                for url in settings.triton_urls
            ]
        )

    async def start(self) -> None:
        for monitor in self._monitors:
            await monitor.start()

    async def close(self) -> None:
        for monitor in self._monitors:
            await monitor.stop()
            await monitor.client.close()

    def is_ready(self) -> bool:
        return any(monitor.ready for monitor in self._monitors)

    def _choose(self) -> TritonEngineClient:
        ready = [monitor.client for monitor in self._monitors if monitor.ready]
        if not ready:
            raise unavailable()
        turn = next(self._turns) % len(ready)
        in_turn = ready[turn:] + ready[:turn]
        return min(in_turn, key=lambda client: client.in_flight)

    def generate(
        self, prompt: str | list[int], params: SamplingParams, constraint: Constraint
    ) -> AsyncIterator[Chunk]:
        """One generation's chunks from the endpoint chosen for it.

        Hands out the endpoint's own iterator rather than wrapping it, so
        closing it early cancels the generation at once, not at collection.
        """
        client = self._choose()
        TRITON_GENERATIONS.labels(client.url).inc()
        return client.generate(prompt, params, constraint)

    async def render_chat(self, conversation: str) -> str:
        """The chat template's prompt for a conversation, from a ready endpoint."""
        return await self._choose().render_chat(conversation)
