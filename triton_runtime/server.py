"""The two servers of the project as managed processes: tritonserver and the frontend."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from triton_runtime.allocator import allocator_env
from triton_runtime.ports import free_port
from triton_runtime.process import ManagedProcess, probe_host
from triton_runtime.runtime import REPO_ROOT, TritonRuntime, locate_runtime

# The decoder shares the CPU with Triton's other stubs and the frontend. With
# OpenMP's default spin-waiting, torch's idle threads burn the cores those
# need and a step can take several times longer (measured on the demo model,
# 16 rows, a busy core beside it: 60 ms a step spinning, 15 ms passive).
CPU_FRIENDLY_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


class TritonServer(ManagedProcess):
    """tritonserver on a model repository, ready once `/v2/health/ready` says so.

    Ready means every model in the repository loaded, so `startup_timeout` must cover the
    slowest model's `initialize()` (loading torch and a checkpoint, on a busy CPU).
    Ports left as None are picked free on this machine, which is what tests want.
    """

    def __init__(
        self,
        model_repository: Path,
        *,
        http_port: int | None = None,
        grpc_port: int | None = None,
        metrics_port: int | None = None,
        address: str = "127.0.0.1",
        exit_timeout_secs: int = 10,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        runtime: TritonRuntime | None = None,
        log_file: Path | None = None,
        echo_prefix: str | None = None,
        startup_timeout: float = 120.0,
    ) -> None:
        self._runtime = runtime or locate_runtime()
        self._model_repository = Path(model_repository).resolve()
        self._requested_ports = (http_port, grpc_port, metrics_port)
        self._exit_timeout_secs = exit_timeout_secs
        self._extra_args = tuple(extra_args)
        self.address = address
        self._assign_ports()
        super().__init__(
            "tritonserver",
            self._command(),
            self._ready_url(),
            env={**CPU_FRIENDLY_ENV, **allocator_env(), **self._runtime.env, **(env or {})},
            log_file=log_file,
            echo_prefix=echo_prefix,
            startup_timeout=startup_timeout,
        )

    @property
    def http_url(self) -> str:
        """Base URL of the HTTP/REST endpoint, as a local client reaches it."""
        return f"http://{probe_host(self.address)}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """The gRPC endpoint as host:port, the form tritonclient.grpc and CT_TRITON_URL take."""
        return f"{probe_host(self.address)}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{probe_host(self.address)}:{self.metrics_port}/metrics"

    def _assign_ports(self) -> None:
        self.http_port, self.grpc_port, self.metrics_port = (
            port or free_port() for port in self._requested_ports
        )

    def _repick_ports(self) -> bool:
        if all(self._requested_ports):
            return False
        self._assign_ports()
        self.command, self.ready_url = self._command(), self._ready_url()
        return True

    def _ready_url(self) -> str:
        return f"{self.http_url}/v2/health/ready"

    def _command(self) -> list[str]:
        return [
            str(self._runtime.executable),
            f"--model-repository={self._model_repository}",
            f"--backend-directory={self._runtime.backend_directory}",
            f"--http-address={self.address}",
            f"--http-port={self.http_port}",
            f"--grpc-address={self.address}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-address={self.address}",
            f"--metrics-port={self.metrics_port}",
            f"--exit-timeout-secs={self._exit_timeout_secs}",
            # Every model loads at start, and the frontend may unload and load
            # one whose stub process died (Triton never restarts a stub).
            "--model-control-mode=explicit",
            "--load-model=*",
            *self._extra_args,
        ]


class FrontendServer(ManagedProcess):
    """The FastAPI frontend under uvicorn, ready once `/health` answers with any status.

    Any status counts because readiness here only means "uvicorn serves the app"; whether
    Triton behind it is healthy is the app's own business to report.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        app: str = "frontend.app:create_app",
        env: Mapping[str, str] | None = None,
        cwd: Path = REPO_ROOT,
        python: str = sys.executable,
        graceful_shutdown_secs: int = 10,
        log_file: Path | None = None,
        echo_prefix: str | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.host = host
        self._requested_port = port
        self.port = port or free_port()
        self._app = app
        self._python = python
        self._graceful_shutdown_secs = graceful_shutdown_secs
        super().__init__(
            "frontend",
            self._command(),
            self._ready_url(),
            # Unbuffered, so its log lines interleave with Triton's as they happen.
            env={**(env or {}), "PYTHONUNBUFFERED": "1"},
            cwd=cwd,
            log_file=log_file,
            echo_prefix=echo_prefix,
            any_status_is_ready=True,
            startup_timeout=startup_timeout,
        )

    @property
    def url(self) -> str:
        return f"http://{probe_host(self.host)}:{self.port}"

    def _repick_ports(self) -> bool:
        if self._requested_port:
            return False
        self.port = free_port()
        self.command, self.ready_url = self._command(), self._ready_url()
        return True

    def _ready_url(self) -> str:
        return f"{self.url}/health"

    def _command(self) -> list[str]:
        return [
            self._python, "-m", "uvicorn", self._app, "--factory",
            "--host", self.host, "--port", str(self.port),
            # Open SSE streams would otherwise hold a graceful shutdown forever.
            "--timeout-graceful-shutdown", str(self._graceful_shutdown_secs),
            # Longer than clients keep idle connections (httpx 5 s, nginx 60 s):
            # uvicorn's 5 s default races them, and a reused connection the
            # server just closed loses its request without a status.
            "--timeout-keep-alive", "75",
        ]  # fmt: skip
