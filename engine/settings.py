"""Where the Triton models find the served model directory and their knobs.

Triton does not expand environment variables in ``config.pbtxt``; a
parameter left empty falls back to an environment variable, so one model
repository serves any Hugging Face directory by configuration alone (a
Kubernetes ``env:`` entry, or ``scripts/serve.py --model-dir``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

MODEL_DIR_ENV = "CT_MODEL_DIR"


def model_parameter(parameters: Mapping[str, Mapping[str, str]], key: str, default: str) -> str:
    """A ``parameters { key: ... value: { string_value: ... } }`` entry, or ``default``."""
    value = parameters.get(key, {}).get("string_value", "").strip()
    return value or default


def resolve_model_dir(parameters: Mapping[str, Mapping[str, str]]) -> Path:
    configured = model_parameter(parameters, "model_dir", os.environ.get(MODEL_DIR_ENV, ""))
    if not configured:
        raise RuntimeError(
            f"no model directory: set the 'model_dir' parameter in config.pbtxt or ${MODEL_DIR_ENV}"
        )
    path = Path(configured).expanduser()
    if not (path / "config.json").is_file():
        raise RuntimeError(f"{path} is not a Hugging Face model directory (no config.json)")
    return path
