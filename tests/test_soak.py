"""The soak phase's memory reading and verdict (the soak itself runs for
half an hour and is a bench phase, not a test)."""

from __future__ import annotations

import os

from bench.soak import group_memory_mb, verdict


def test_memory_of_this_process_group_includes_this_process() -> None:
    memory = group_memory_mb(os.getpgrp())
    mine = [mb for name, mb in memory.items() if name.endswith(f"[{os.getpid()}]")]
    assert len(mine) == 1 and mine[0] > 10  # a Python process with pytest loaded


def _minute(minute: int, tokens_per_s: float, rss: dict[str, float]) -> dict:
    return {"minute": minute, "tokens_per_s": tokens_per_s, "rss_mb": rss}


def test_verdict_compares_the_last_minute_with_the_reference() -> None:
    minutes = [_minute(m, 100.0, {"a[1]": 300.0, "b[2]": 50.0}) for m in range(1, 6)]
    minutes.append(_minute(6, 96.0, {"a[1]": 305.0, "b[2]": 50.0, "c[3]": 9.0}))
    steady = verdict(minutes, reference_minute=5)
    assert steady["throughput_ok"] and steady["memory_ok"]
    assert set(steady["memory_ratio_by_process"]) == {"a[1]", "b[2]"}
    minutes[-1] = _minute(6, 90.0, {"a[1]": 320.0, "b[2]": 50.0})
    creeping = verdict(minutes, reference_minute=5)
    assert not creeping["throughput_ok"] and not creeping["memory_ok"]
