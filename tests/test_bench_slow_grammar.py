"""The slow-grammar bench's per-request arithmetic (the rounds themselves
run the engine: ``python -m bench.slow_grammar``)."""

from __future__ import annotations

import pytest

from bench.slow_grammar import TimingSink


def test_time_per_token_counts_tokens_after_the_first_report() -> None:
    sink = TimingSink()
    sink.reports = [(10.0, 1), (10.5, 3), (11.0, 5)]  # 4 tokens in 1 s after the first
    assert sink.time_per_token() == pytest.approx(0.25)


def test_time_per_token_needs_two_reports() -> None:
    sink = TimingSink()
    assert sink.time_per_token() is None
    sink.reports = [(10.0, 64)]  # one merged report: no spacing to measure
    assert sink.time_per_token() is None
