"""Shared fixtures: the small test model, built once and cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo_model.build import TINY, ensure_model

REPO_ROOT = Path(__file__).resolve().parent.parent
TINY_MODEL_DIR = REPO_ROOT / ".cache" / "models" / "tiny"


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """The TINY preset: seconds to build, a real Llama + byte-level BPE directory."""
    return ensure_model(TINY_MODEL_DIR, TINY, progress=False)
