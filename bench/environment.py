"""What the figures were measured on: the machine, the software, the model.

A throughput means little without the CPU/GPU it ran on and the model's size,
so the report carries both next to every figure.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

PACKAGES = ("torch", "transformers", "xgrammar", "tritonclient", "nvidia-pytriton", "matplotlib")


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    return None


def _gpus() -> list[str]:
    """GPU names as torch sees them, else nvidia-smi's, else none."""
    try:
        import torch

        if torch.cuda.is_available():
            return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except ImportError:
        pass
    if shutil.which("nvidia-smi"):
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        )
        return [line.strip() for line in listing.stdout.splitlines() if line.strip()]
    return []


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """CPU, cores, memory, GPUs, load and package versions of this run."""
    return {
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "memory_gib": _memory_gib(),
        "gpus": _gpus(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "packages": {package: _version(package) for package in PACKAGES},
        "load_average_at_start": list(os.getloadavg()),
    }


def model_info(model_dir: Path, parameters: int | None) -> dict:
    """Size of the served model, read from its config (the parameter count from its weights)."""
    config = json.loads((model_dir / "config.json").read_text())
    text = config.get("text_config", config)  # multimodal configs nest the decoder's
    return {
        "path": str(model_dir.resolve()),
        "name": model_dir.resolve().name,
        "architecture": (config.get("architectures") or [config.get("model_type")])[0],
        "parameters": parameters,
        "layers": text.get("num_hidden_layers"),
        "hidden_size": text.get("hidden_size"),
        "vocab_size": text.get("vocab_size"),
        "dtype": config.get("torch_dtype") or config.get("dtype"),
    }


def machine_line(machine: dict) -> str:
    """One line for captions: CPU, cores, GPU, versions."""
    gpu = ", ".join(machine.get("gpus") or []) or "no GPU"
    packages = machine.get("packages", {})
    return (
        f"{machine.get('cpu_model')} ({machine.get('cpu_cores')} cores), {gpu}; "
        f"torch {packages.get('torch')}, xgrammar {packages.get('xgrammar')}"
    )


def model_line(model: dict) -> str:
    """One line for captions: name, parameters, layers x hidden, vocab."""
    parameters = model.get("parameters")
    size = f"{parameters / 1e6:.1f}M params" if parameters else "params unknown"
    shape = f"{model.get('layers')} layers x {model.get('hidden_size')}"
    return (
        f"{model.get('name')} ({model.get('architecture')}, {size}, {shape}, "
        f"vocab {model.get('vocab_size')})"
    )
