"""The served stack for one benchmark run: tritonserver, then the frontend in front of it.

Both come from ``triton_runtime`` (free loopback ports, process groups stopped
by id) and are stopped when the ``with`` block ends, whatever ended it.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from triton_runtime import FrontendServer, TritonServer

REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = REPO_ROOT / "model_repository"


@dataclass(frozen=True)
class Stack:
    triton: TritonServer
    frontend: FrontendServer
    api_key: str


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGTERM and SIGINT until the block ends: a stop cut short by a second
    signal would leave a server running; the signal is handled right after."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _code_from(repo_root: Path) -> dict[str, str]:
    """The environment that makes both servers (and Triton's Python stubs) run
    ``repo_root``'s code, whichever tree the project is installed from."""
    inherited = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root.resolve()), inherited]))}


@contextmanager
def served_stack(model_dir: Path, log_dir: Path, *, repo_root: Path = REPO_ROOT) -> Iterator[Stack]:
    """Start both servers on ``repo_root``'s code and model repository (logs
    under `log_dir`), yield them, always stop them."""
    log_dir.mkdir(parents=True, exist_ok=True)
    api_key = f"bench-{secrets.token_hex(8)}"
    code = _code_from(repo_root)
    stack = ExitStack()
    try:
        triton = TritonServer(
            repo_root / "model_repository",
            env={"CT_MODEL_DIR": str(model_dir.resolve()), **code},
            log_file=log_dir / "tritonserver.log",
            startup_timeout=600.0,  # a large model loads slowly on a busy CPU
        )
        stack.enter_context(triton)
        frontend = FrontendServer(
            env={
                "CT_TRITON_URL": triton.grpc_url,
                "CT_API_KEYS": api_key,
                "CT_MODEL_DIR": str(model_dir.resolve()),
                **code,
            },
            cwd=repo_root,
            log_file=log_dir / "frontend.log",
        )
        stack.enter_context(frontend)
        yield Stack(triton, frontend, api_key)
    finally:
        with _signals_deferred():
            stack.close()
