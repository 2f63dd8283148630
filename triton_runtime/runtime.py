"""Find a runnable tritonserver: the NGC container's, or one unpacked from the PyTriton wheel.

The `nvidia-pytriton` wheel ships a complete CPU-capable Triton 2.51 with the Python
backend, which is how tests and local development get a real server without Docker.
The wheel keeps the Python backend stubs apart from the backend, one per Python version,
and its binaries rely on the wheel's bundled libraries, so it cannot be run in place:
it is copied once into a runtime folder with the stub for this interpreter.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNTIME_DIR = REPO_ROOT / ".cache" / "tritonserver-runtime"
NGC_BACKEND_DIR = Path("/opt/tritonserver/backends")

# Written last into a prepared runtime folder: its presence marks the copy as complete,
# its content says which wheel and Python it was made for, so a changed venv rebuilds it.
_STAMP_NAME = ".prepared-from"


@dataclass(frozen=True)
class TritonRuntime:
    """Everything needed to launch tritonserver with working Python-backend models."""

    executable: Path
    backend_directory: Path
    # Variables to set on top of the caller's environment (complete values, not fragments).
    env: Mapping[str, str]


def locate_runtime(runtime_dir: Path = DEFAULT_RUNTIME_DIR) -> TritonRuntime:
    """Prefer a system tritonserver (the NGC container), else prepare one from the wheel."""
    system = shutil.which("tritonserver")
    if system and NGC_BACKEND_DIR.is_dir():
        return TritonRuntime(Path(system), NGC_BACKEND_DIR, MappingProxyType({}))
    return _wheel_runtime(runtime_dir)


def _wheel_runtime(runtime_dir: Path) -> TritonRuntime:
    try:
        import pytriton
    except ImportError as exc:
        raise RuntimeError(
            "no tritonserver found: neither the NGC container's /opt/tritonserver nor the "
            "nvidia-pytriton wheel (pip install nvidia-pytriton) is available"
        ) from exc
    package_dir = Path(pytriton.__file__).resolve().parent
    dist_dir = package_dir / "tritonserver"
    libs_dir = package_dir.parent / "nvidia_pytriton.libs"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = dist_dir / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise RuntimeError(f"nvidia-pytriton has no Python backend stub for Python {version}")

    wheel = f"nvidia-pytriton {importlib.metadata.version('nvidia-pytriton')}"
    stamp = f"{dist_dir}\n{wheel}\nPython {version}\n"
    _prepare_once(runtime_dir, stamp, dist_dir, stub)
    return TritonRuntime(
        executable=runtime_dir / "bin" / "tritonserver",
        backend_directory=runtime_dir / "backends",
        env=MappingProxyType(_wheel_env(libs_dir)),
    )


def _prepare_once(runtime_dir: Path, stamp: str, dist_dir: Path, stub: Path) -> None:
    """Copy the wheel's server into `runtime_dir` unless an identical copy is already there.

    The copy is built in a sibling temporary folder and renamed into place, so concurrent
    callers (parallel test sessions) never see a half-copied server; the loser of the
    rename race simply uses the winner's copy.
    """
    stamp_file = runtime_dir / _STAMP_NAME
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return
    runtime_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tritonserver-", dir=runtime_dir.parent))
    try:
        build = staging / "runtime"
        shutil.copytree(dist_dir, build, ignore=shutil.ignore_patterns("python_backend_stubs"))
        shutil.copy2(stub, build / "backends" / "python" / stub.name)
        (build / _STAMP_NAME).write_text(stamp)
        if runtime_dir.exists():
            # A copy for another wheel or Python: move it aside first, rename cannot replace
            # a non-empty directory.
            runtime_dir.rename(staging / "stale")
        try:
            build.rename(runtime_dir)
        except OSError:
            if not (stamp_file.is_file() and stamp_file.read_text() == stamp):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _wheel_env(libs_dir: Path) -> dict[str, str]:
    """Environment for the wheel's server and the Python stubs it spawns.

    This interpreter's libpython must come first on the library path: otherwise the stub
    binds Debian's older system libpython and `import ssl` fails in model code. The venv's
    bin directory must come first on PATH: the embedded interpreter derives `sys.prefix`
    from it, which gives models the venv's site-packages.
    """
    lib_path = [str(sysconfig.get_config_var("LIBDIR")), str(libs_dir)]
    bin_path = [str(Path(sys.prefix) / "bin")]
    return {
        "LD_LIBRARY_PATH": _join_path(lib_path, os.environ.get("LD_LIBRARY_PATH")),
        "PATH": _join_path(bin_path, os.environ.get("PATH")),
    }


def _join_path(first: list[str], existing: str | None) -> str:
    return os.pathsep.join([*first, *([existing] if existing else [])])
