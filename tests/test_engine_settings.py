"""The decoder's knobs read from config.pbtxt parameters."""

from __future__ import annotations

import os

import pytest

from engine.settings import forward_threads, model_parameter


def test_a_parameter_left_empty_falls_back_to_the_default() -> None:
    parameters = {"torch_threads": {"string_value": "  "}, "device": {"string_value": "cpu"}}
    assert model_parameter(parameters, "torch_threads", "auto") == "auto"
    assert model_parameter(parameters, "device", "auto") == "cpu"
    assert model_parameter({}, "mask_threads", "auto") == "auto"


def test_auto_forward_threads_leave_one_core_and_never_fewer_than_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for cores, expected in [(1, 1), (2, 1), (16, 15)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert forward_threads("auto") == expected


def test_explicit_forward_threads() -> None:
    assert forward_threads("0") is None  # torch's own default
    assert forward_threads("3") == 3
    with pytest.raises(ValueError, match="torch_threads"):
        forward_threads("-1")
    with pytest.raises(ValueError):
        forward_threads("many")
