"""The malloc choice for tritonserver: jemalloc where found, glibc's on request,
an error (not a quiet fallback) where jemalloc is asked for and missing."""

from __future__ import annotations

import pytest

from triton_runtime import allocator
from triton_runtime.allocator import JEMALLOC_CONF, MALLOC_ENV, allocator_env


@pytest.fixture
def jemalloc_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator.ctypes.util, "find_library", lambda name: f"lib{name}.so.2")


@pytest.fixture
def jemalloc_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator.ctypes.util, "find_library", lambda name: None)


def test_jemalloc_is_preloaded_by_default_where_found(jemalloc_found: None) -> None:
    assert allocator_env({}) == {"LD_PRELOAD": "libjemalloc.so.2", "MALLOC_CONF": JEMALLOC_CONF}


def test_a_callers_jemalloc_settings_are_kept(jemalloc_found: None) -> None:
    env = allocator_env({MALLOC_ENV: "jemalloc", "MALLOC_CONF": "narenas:2"})
    assert env["MALLOC_CONF"] == "narenas:2"


def test_system_malloc_on_request(jemalloc_found: None) -> None:
    assert allocator_env({MALLOC_ENV: "System"}) == {}


def test_an_existing_preload_is_left_alone(jemalloc_found: None) -> None:
    assert allocator_env({"LD_PRELOAD": "libtcmalloc_minimal.so.4"}) == {}


def test_default_without_jemalloc_is_glibc(jemalloc_missing: None) -> None:
    assert allocator_env({}) == {}


def test_jemalloc_asked_for_but_missing_is_an_error(jemalloc_missing: None) -> None:
    with pytest.raises(RuntimeError, match="apt-get install libjemalloc2"):
        allocator_env({MALLOC_ENV: "jemalloc"})


def test_an_unknown_choice_is_an_error() -> None:
    with pytest.raises(ValueError, match="expected one of jemalloc, system"):
        allocator_env({MALLOC_ENV: "tcmalloc"})
