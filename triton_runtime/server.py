"""The two servers of the project as managed processes: tritonserver and the frontend."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from triton_runtime.ports import free_port
from triton_runtime.process import ManagedProcess, probe_host
from triton_runtime.runtime import REPO_ROOT, TritonRuntime, locate_runtime


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
        runtime = runtime or locate_runtime()
        self.address = address
        self.http_port = http_port or free_port()
        self.grpc_port = grpc_port or free_port()
        self.metrics_port = metrics_port or free_port()
        command = [
            str(runtime.executable),
            f"--model-repository={Path(model_repository).resolve()}",
            f"--backend-directory={runtime.backend_directory}",
            f"--http-address={address}",
            f"--http-port={self.http_port}",
            f"--grpc-address={address}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-address={address}",
            f"--metrics-port={self.metrics_port}",
            f"--exit-timeout-secs={exit_timeout_secs}",
            *extra_args,
        ]
        super().__init__(
            "tritonserver",
            command,
            f"{self.http_url}/v2/health/ready",
            env={**runtime.env, **(env or {})},
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
        self.port = port or free_port()
        command = [
            python, "-m", "uvicorn", app, "--factory",
            "--host", host, "--port", str(self.port),
            # Open SSE streams would otherwise hold a graceful shutdown forever.
            "--timeout-graceful-shutdown", str(graceful_shutdown_secs),
        ]  # fmt: skip
        super().__init__(
            "frontend",
            command,
            f"{self.url}/health",
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
