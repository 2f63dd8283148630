"""MetricBuffer: updates merged in process and sent in batches by its own thread."""

from __future__ import annotations

import threading
import time

from engine.metric_buffer import MetricBuffer


class RecordingMetric:
    """Stands in for a Python-backend metric (each call an IPC round trip there)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.thread_names: set[str] = set()

    def _record(self, kind: str, value: float) -> None:
        self.calls.append((kind, value))
        self.thread_names.add(threading.current_thread().name)

    def increment(self, value: float) -> None:
        self._record("increment", value)

    def set(self, value: float) -> None:
        self._record("set", value)

    def observe(self, value: float) -> None:
        self._record("observe", value)


def test_updates_are_merged_until_a_flush() -> None:
    buffer = MetricBuffer(interval_s=3600)
    counter, gauge, histogram = RecordingMetric(), RecordingMetric(), RecordingMetric()
    for amount in (1, 2, 3):
        buffer.increment(counter, amount)
    for value in (4, 7, 5):
        buffer.set(gauge, value)
    buffer.observe(histogram, 0.25)
    buffer.observe(histogram, 0.5)
    assert counter.calls == gauge.calls == histogram.calls == []
    buffer.close()
    assert counter.calls == [("increment", 6)]
    assert gauge.calls == [("set", 5)]  # only the latest value
    assert histogram.calls == [("observe", 0.25), ("observe", 0.5)]  # every observation


def test_a_gauge_is_sent_only_when_its_value_changed() -> None:
    buffer = MetricBuffer(interval_s=3600)
    gauge = RecordingMetric()
    for value in (2, 2, 3, 3):
        buffer.set(gauge, value)
        buffer.flush()
    buffer.close()
    assert gauge.calls == [("set", 2), ("set", 3)]


def _wait_for_calls(metric: RecordingMetric, timeout_s: float = 5.0) -> None:
    """Until the buffer's own thread has sent something to ``metric``."""
    deadline = time.monotonic() + timeout_s
    while not metric.calls and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_buffer_sends_by_itself_on_its_own_thread() -> None:
    buffer = MetricBuffer(interval_s=0.05)
    counter = RecordingMetric()
    buffer.increment(counter, 1)
    _wait_for_calls(counter)
    buffer.close()
    assert counter.calls == [("increment", 1)]
    assert counter.thread_names == {"metric-buffer"}


def test_a_failing_metric_does_not_stop_the_sending() -> None:
    class Failing(RecordingMetric):
        def increment(self, value: float) -> None:
            raise RuntimeError("the stub lost its IPC channel")

    buffer = MetricBuffer(interval_s=0.02)
    buffer.increment(Failing(), 1)
    time.sleep(0.1)
    counter = RecordingMetric()
    buffer.increment(counter, 2)
    _wait_for_calls(counter)
    buffer.close()
    assert counter.calls == [("increment", 2)]
