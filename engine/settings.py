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


def forward_threads(setting: str) -> int | None:
    """The decoder's torch threads: ``auto`` is every usable core but one, ``0``
    torch's own default (every core), ``N`` exactly N; None leaves torch alone.

    The spare core is for the processes the decoder serves beside: the
    frontend, the tokenizer and detokenizer stubs, tritonserver itself. With
    every core in the forward they preempt its threads mid-step, and with
    ``OMP_WAIT_POLICY=PASSIVE`` each parallel region must wake sleeping
    threads; on two cores one thread made a one-row JSON step 3.2 -> 1.3 ms
    and served throughput at c=8 ~10% higher (c=32 ~5% lower).
    """
    if setting == "auto":
        usable = (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        )
        return max(1, (usable or 1) - 1)
    threads = int(setting)
    if threads < 0:
        raise ValueError(f"torch_threads must be auto, 0 or a positive count, got {setting!r}")
    return threads or None
