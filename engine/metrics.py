"""What the engine reports about itself, independent of where it goes.

The Triton shell exports these through the Python backend's custom metrics
(so they appear on Triton's own metrics port); tests and the plain-Python
engine use the no-op default.
"""

from __future__ import annotations


class EngineMetrics:
    """No-op observer; subclasses export the figures."""

    def grammar_lookup(self, *, hit: bool) -> None:
        """A request asked for a compiled grammar (hit: it was cached or in flight)."""

    def grammar_compiled(self, seconds: float, *, ok: bool) -> None:
        """A grammar compilation ended after ``seconds``."""

    def request_finished(self, reason: str, output_tokens: int) -> None:
        """A request left the engine (``reason``: stop, length, cancelled, error)."""

    def jump_forward(self, tokens: int) -> None:
        """``tokens`` forced by a grammar were taken without sampling."""

    def slow_lane_tokens(self, tokens: int) -> None:
        """``tokens`` were sampled after their masks filled in the slow lane
        (``engine/slow_lane.py``): a grammar slow to mask is in use."""

    def batch_state(self, *, waiting: int, running: int) -> None:
        """Queue depth and batch size after a step."""

    def step_finished(self, seconds: float, model_seconds: float) -> None:
        """A step took ``seconds``, ``model_seconds`` of them in the model's
        forward calls (decode and prompts); the rest is the engine's own work."""
