#!/usr/bin/env python
"""Serve the whole stack with one command: tritonserver, then the frontend in front of it.

Usage:
    .venv/bin/python scripts/serve.py [--model-dir DIR] [--port 8000] [--api-keys k1,k2] ...

Every flag falls back to an environment variable (shown in --help), so the same command
works in a shell, in CI and in a container. Triton's output is shown behind "[triton]" and
the frontend's behind "[frontend]". Ctrl-C or SIGTERM stops the frontend first (no new
requests reach a stopping Triton), then Triton, and exits 0. A server that dies is
started again on the same ports (the frontend finds a restarted Triton by itself); one
that dies more than --max-restarts times in ten minutes stops everything with status 1.

Without --model-dir and without CT_MODEL_DIR the demo model in .cache/models/demo is
served, built first by scripts/build_demo_model.py when it is missing.
"""

from __future__ import annotations

import argparse
import collections
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from triton_runtime import FrontendServer, ManagedProcess, ProcessError, TritonServer
from triton_runtime.process import echo
from triton_runtime.runtime import REPO_ROOT

DEFAULT_MODEL_DIR = REPO_ROOT / ".cache" / "models" / "demo"
RESTART_WINDOW_S = 600.0


class _Shutdown(Exception):
    """Raised by the SIGINT/SIGTERM handler to unwind from wherever the launcher waits."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path(env("CT_MODEL_DIR", str(DEFAULT_MODEL_DIR))),
        help="Hugging Face causal LM directory to serve (CT_MODEL_DIR; default %(default)s)",
    )
    parser.add_argument(
        "--model-repository",
        type=Path,
        default=Path(env("CT_MODEL_REPOSITORY", str(REPO_ROOT / "model_repository"))),
        help="Triton model repository (CT_MODEL_REPOSITORY; default %(default)s)",
    )
    parser.add_argument(
        "--host",
        default=env("CT_FRONTEND_HOST", "127.0.0.1"),
        help="frontend bind address (CT_FRONTEND_HOST; default %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(env("CT_FRONTEND_PORT", "8000")),
        help="frontend port (CT_FRONTEND_PORT; default %(default)s)",
    )
    parser.add_argument(
        "--triton-host",
        default=env("CT_TRITON_HOST", "127.0.0.1"),
        help="bind address of Triton's HTTP, gRPC and metrics endpoints "
        "(CT_TRITON_HOST; default %(default)s)",
    )
    parser.add_argument(
        "--triton-http-port",
        type=int,
        default=int(env("CT_TRITON_HTTP_PORT", "8010")),
        help="Triton HTTP port (CT_TRITON_HTTP_PORT; default %(default)s)",
    )
    parser.add_argument(
        "--triton-grpc-port",
        type=int,
        default=int(env("CT_TRITON_GRPC_PORT", "8011")),
        help="Triton gRPC port (CT_TRITON_GRPC_PORT; default %(default)s)",
    )
    parser.add_argument(
        "--triton-metrics-port",
        type=int,
        default=int(env("CT_TRITON_METRICS_PORT", "8012")),
        help="Triton metrics port (CT_TRITON_METRICS_PORT; default %(default)s)",
    )
    parser.add_argument(
        "--api-keys",
        default=env("CT_API_KEYS"),
        help="comma-separated API keys the frontend accepts (CT_API_KEYS)",
    )
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=int(env("CT_MAX_RESTARTS", "5")),
        help="restarts of a dead server allowed within ten minutes (CT_MAX_RESTARTS; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=float(env("CT_STARTUP_TIMEOUT", "300")),
        help="seconds to wait for each server to become ready (CT_STARTUP_TIMEOUT; "
        "default %(default)s)",
    )
    return parser.parse_args(argv)


def ensure_model_dir(model_dir: Path) -> Path:
    """Build the demo model on first use; any other missing directory is the user's mistake."""
    model_dir = model_dir.resolve()
    if model_dir.is_dir():
        return model_dir
    if model_dir != DEFAULT_MODEL_DIR:
        raise SystemExit(f"model directory {model_dir} does not exist")
    echo(f"[serve] building the demo model into {model_dir}")
    build = [sys.executable, str(REPO_ROOT / "scripts" / "build_demo_model.py")]
    subprocess.run([*build, "--output", str(model_dir)], check=True)
    if not model_dir.is_dir():
        raise SystemExit(f"scripts/build_demo_model.py did not create {model_dir}")
    return model_dir


def _raise_shutdown(signum: int, _frame: FrameType | None) -> None:
    raise _Shutdown(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    model_dir = ensure_model_dir(args.model_dir)
    triton = TritonServer(
        args.model_repository,
        http_port=args.triton_http_port,
        grpc_port=args.triton_grpc_port,
        metrics_port=args.triton_metrics_port,
        address=args.triton_host,
        env={"CT_MODEL_DIR": str(model_dir)},
        echo_prefix="[triton] ",
        startup_timeout=args.startup_timeout,
    )
    frontend_env = {"CT_TRITON_URL": triton.grpc_url, "CT_MODEL_DIR": str(model_dir)}
    if args.api_keys is not None:
        frontend_env["CT_API_KEYS"] = args.api_keys
    elif not os.environ.get("CT_API_KEYS_FILE") and not os.environ.get("CT_AUTH_DISABLED"):
        # Never serve without a key: make one for this run and say what it is.
        frontend_env["CT_API_KEYS"] = "ct-" + secrets.token_urlsafe(24)
        echo(f"[serve] no --api-keys given; this run's API key: {frontend_env['CT_API_KEYS']}")
    frontend = FrontendServer(
        host=args.host,
        port=args.port,
        env=frontend_env,
        echo_prefix="[frontend] ",
        startup_timeout=args.startup_timeout,
    )

    started: list[ManagedProcess] = []
    signal.signal(signal.SIGINT, _raise_shutdown)
    signal.signal(signal.SIGTERM, _raise_shutdown)
    try:
        for server in (triton, frontend):
            started.append(server)
            server.start()
            server.wait_ready()
        echo(
            f"[serve] ready: frontend {frontend.url}, Triton gRPC {triton.grpc_url}, "
            f"HTTP {triton.http_url}, metrics {triton.metrics_url}"
        )
        restarts: collections.deque[float] = collections.deque()
        while True:
            for server in started:
                status = server.exit_status()
                if status is None:
                    continue
                while restarts and time.monotonic() - restarts[0] > RESTART_WINDOW_S:
                    restarts.popleft()
                if len(restarts) >= args.max_restarts:
                    echo(f"[serve] {server.name} exited with status {status}; too many restarts")
                    return 1
                restarts.append(time.monotonic())
                echo(f"[serve] {server.name} exited with status {status}; restarting it")
                server.stop()  # reaps it and whatever it left behind (stubs)
                server.start()
                server.wait_ready()
                echo(f"[serve] {server.name} is ready again")
            time.sleep(0.5)
    except _Shutdown as stop:
        echo(f"[serve] {stop}: stopping")
        return 0
    except (ProcessError, TimeoutError) as exc:
        # Only the first line: the log tail that follows it has just been echoed live.
        echo(f"[serve] {str(exc).splitlines()[0]}")
        return 1
    finally:
        # A second Ctrl-C must not cut the shutdown short and orphan a server.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for server in reversed(started):
            server.stop()


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
