"""A real tritonserver on the real model repository, and the real frontend.

Both are started once per test session on free loopback ports and always
stopped by process id, even when tests fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest

from triton_runtime.server import FrontendServer, TritonServer

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "test-key-0123456789"
MODEL_NAME = "tiny-demo"
MODEL_ALIAS = "mistral"  # the model openai-completions-with-grammar.txt's example asks for


@dataclass(frozen=True)
class Service:
    triton: TritonServer
    frontend: FrontendServer

    def sdk(self, *, api_key: str = API_KEY, timeout: float = 120.0) -> openai.OpenAI:
        """The official SDK, pointed at the frontend."""
        return openai.OpenAI(
            base_url=f"{self.frontend.url}/v1", api_key=api_key, timeout=timeout, max_retries=0
        )

    def client(self, *, api_key: str | None = API_KEY, timeout: float = 120.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        return httpx.Client(base_url=self.frontend.url, headers=headers, timeout=timeout)


@contextmanager
def served(model_dir: Path, logs: Path, **frontend_env: str) -> Iterator[Service]:
    """tritonserver on the real model repository serving ``model_dir``, and
    the frontend in front of it; both stopped by process id on leaving."""
    triton = TritonServer(
        REPO_ROOT / "model_repository",
        env={"CT_MODEL_DIR": str(model_dir)},
        log_file=logs / "triton.log",
        startup_timeout=240.0,
    )
    with triton:
        frontend = FrontendServer(
            env={"CT_TRITON_URL": triton.grpc_url, "CT_API_KEYS": API_KEY, **frontend_env},
            log_file=logs / "frontend.log",
        )
        with frontend:
            yield Service(triton, frontend)


@pytest.fixture(scope="session")
def service(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with served(
        tiny_model_dir,
        tmp_path_factory.mktemp("logs"),
        CT_MODEL_NAME=MODEL_NAME,
        CT_SERVED_MODEL_NAMES=MODEL_ALIAS,
    ) as stack:
        yield stack


@pytest.fixture(scope="session")
def triton(service: Service) -> TritonServer:
    return service.triton
