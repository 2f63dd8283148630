"""How the health monitor reacts to each finding, and how the pool picks an
endpoint, with a small fake in place of Triton (tests/integration/test_faults.py
kills real processes)."""

from __future__ import annotations

import asyncio

import pytest

from frontend.errors import APIError
from frontend.triton_health import EndpointMonitor, HealthPolicy
from frontend.triton_pool import TritonPool

DEAD = "Stub process 'constrained_decoder_0_0' is not healthy."
FAST = HealthPolicy(interval_s=0.001, probe_timeout_s=0.02, restart_backoff_s=60)


class FakeTriton:
    """Answers the monitor's probes as told; records aborts and restarts."""

    def __init__(self, url: str = "fake:8001") -> None:
        self.url = url
        self.server_ready = True
        self.decoder_problem: str | None = None
        self.decoder_hangs = False
        self.in_flight = 0
        self.aborted: list[APIError] = []
        self.restarted: list[str] = []
        self.restart_error: Exception | None = None

    async def is_ready(self, timeout_s: float) -> bool:
        return self.server_ready

    async def probe_decoder(self, timeout_s: float) -> str | None:
        if self.decoder_hangs:
            await asyncio.sleep(timeout_s)
            return "DEADLINE_EXCEEDED"
        return self.decoder_problem

    async def probe_tokenizer(self, timeout_s: float) -> str | None:
        return None

    async def probe_detokenizer(self, timeout_s: float) -> str | None:
        return None

    def abort_in_flight(self, failure: APIError) -> int:
        self.aborted.append(failure)
        return self.in_flight

    async def restart_model(self, model: str) -> None:
        if self.restart_error is not None:
            raise self.restart_error
        self.restarted.append(model)
        self.decoder_problem = None
        self.decoder_hangs = False

    async def close(self) -> None:
        pass


def _monitor(triton: FakeTriton, policy: HealthPolicy = FAST) -> EndpointMonitor:
    return EndpointMonitor(
        triton,  # type: ignore[arg-type]
        decoder_model="constrained_decoder",
        tokenizer_model="tokenizer",
        policy=policy,
    )


def _check(monitor: EndpointMonitor, times: int = 1) -> None:
    async def run() -> None:
        for _ in range(times):
            await monitor.check()

    asyncio.run(run())


def test_a_healthy_endpoint_is_ready() -> None:
    monitor = _monitor(FakeTriton())
    assert not monitor.ready  # nothing is sent anywhere before a probe went through
    _check(monitor)
    assert monitor.ready and monitor.problem is None


def test_a_dead_stub_ends_the_generations_in_flight_and_restarts_its_model() -> None:
    triton = FakeTriton()
    monitor = _monitor(triton)
    _check(monitor)
    triton.decoder_problem, triton.in_flight = DEAD, 3
    _check(monitor)
    (failure,) = triton.aborted
    assert failure.status == 503 and failure.code == "backend_failure"
    assert failure.headers is not None and int(failure.headers["Retry-After"]) >= 1
    assert triton.restarted == ["constrained_decoder"]
    assert not monitor.ready  # until the next probe finds the new stub
    _check(monitor)
    assert monitor.ready


def test_a_triton_that_is_down_or_draining_keeps_its_generations() -> None:
    """Streams of a vanished Triton fail by themselves; a draining one finishes them."""
    triton = FakeTriton()
    monitor = _monitor(triton)
    _check(monitor)
    triton.server_ready = False
    _check(monitor)
    assert not monitor.ready
    assert triton.aborted == [] and triton.restarted == []
    triton.server_ready = True
    _check(monitor)
    assert monitor.ready


def test_a_slow_answer_is_not_a_failure_until_it_repeats() -> None:
    triton = FakeTriton()
    monitor = _monitor(triton)
    _check(monitor)
    triton.decoder_hangs = True
    _check(monitor, times=FAST.unresponsive_after - 1)
    assert monitor.ready and triton.aborted == []
    _check(monitor)
    assert len(triton.aborted) == 1 and "unresponsive" in triton.aborted[0].message
    assert triton.restarted == ["constrained_decoder"]


def test_a_model_is_not_restarted_again_within_the_backoff() -> None:
    triton = FakeTriton()
    monitor = _monitor(triton)
    triton.decoder_problem = DEAD
    _check(monitor)
    triton.decoder_problem = DEAD  # died again right after its restart
    _check(monitor)
    assert triton.restarted == ["constrained_decoder"]
    assert not monitor.ready


def test_a_refused_restart_leaves_the_endpoint_out_of_service() -> None:
    triton = FakeTriton()
    triton.restart_error = RuntimeError("explicit model load / unload is not allowed")
    triton.decoder_problem = DEAD
    monitor = _monitor(triton)
    _check(monitor, times=2)
    assert not monitor.ready and triton.restarted == []


def test_a_generation_that_meets_a_failure_takes_the_endpoint_out_at_once() -> None:
    triton = FakeTriton()
    monitor = _monitor(triton)
    _check(monitor)
    triton.on_server_failure()  # type: ignore[attr-defined]  # set by the monitor
    assert not monitor.ready


def _pool(*tritons: FakeTriton) -> TritonPool:
    monitors = [_monitor(triton) for triton in tritons]
    for monitor in monitors:
        _check(monitor)
    return TritonPool(monitors)


def test_the_pool_sends_work_to_the_ready_endpoint_with_least_in_flight() -> None:
    busy, idle, down = FakeTriton("busy:1"), FakeTriton("idle:1"), FakeTriton("down:1")
    busy.in_flight, idle.in_flight = 5, 1
    down.server_ready = False
    pool = _pool(busy, idle, down)
    assert pool.is_ready()
    assert {pool._choose().url for _ in range(6)} == {"idle:1"}


def test_the_pool_takes_equally_loaded_endpoints_in_turn() -> None:
    pool = _pool(FakeTriton("a:1"), FakeTriton("b:1"), FakeTriton("c:1"))
    assert {pool._choose().url for _ in range(3)} == {"a:1", "b:1", "c:1"}


def test_with_no_endpoint_ready_the_pool_refuses_at_once() -> None:
    down = FakeTriton()
    down.server_ready = False
    pool = _pool(down)
    assert not pool.is_ready()
    with pytest.raises(APIError) as refused:
        pool._choose()
    assert refused.value.status == 503 and refused.value.code == "backend_unavailable"
    assert refused.value.headers == {"Retry-After": "2"}
