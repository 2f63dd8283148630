"""A real tritonserver on the real model repository, and the real frontend.

Both are started once per test session on free loopback ports and always
stopped by process id, even when tests fail.
"""

from __future__ import annotations

import re
import shutil
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


def repository_with_decoder_settings(work: Path, **settings: str) -> Path:
    """A copy of the real model repository (in ``work``) whose decoder has
    these ``config.pbtxt`` parameters changed."""
    repository = work / "model_repository"
    shutil.copytree(
        REPO_ROOT / "model_repository", repository, ignore=shutil.ignore_patterns("__pycache__")
    )
    config = repository / "constrained_decoder" / "config.pbtxt"
    text = config.read_text(encoding="utf-8")
    for name, value in settings.items():
        entry = rf'(key: "{name}", value: {{ string_value: )"[^"]*"'
        text = re.sub(entry, rf'\g<1>"{value}"', text)
        assert f'key: "{name}", value: {{ string_value: "{value}" }}' in text, name
    config.write_text(text, encoding="utf-8")
    return repository


@contextmanager
def served(
    model_dir: Path,
    logs: Path,
    repository: Path = REPO_ROOT / "model_repository",
    **frontend_env: str,
) -> Iterator[Service]:
    """tritonserver on ``repository`` (the real model repository) serving
    ``model_dir``, and the frontend in front of it; both stopped by process
    id on leaving."""
    triton = TritonServer(
        repository,
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


_TROUBLE = re.compile(
    r'^[EW]\d{4} |Traceback|Error:|Exception|"level": "(WARNING|ERROR|CRITICAL)"|killed|unhealthy'
    r"|Segfault|Fatal Python|[Ss]ignal|core dumped|not healthy"
)
_TROUBLE_LINES = 60


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A failed test that used the shared stack reports what its logs said
    went wrong: CI keeps the test output, not the temporary log files."""
    outcome = yield
    report = outcome.get_result()
    stack = getattr(item, "funcargs", {}).get("service")
    if report.when != "call" or not report.failed or not isinstance(stack, Service):
        return
    for name, process in (("triton", stack.triton), ("frontend", stack.frontend)):
        log_file = process.log_file
        if log_file is None or not log_file.is_file():
            continue
        lines = log_file.read_text(encoding="utf-8", errors="replace").splitlines()
        trouble = [line for line in lines if _TROUBLE.search(line)][-_TROUBLE_LINES:]
        report.sections.append((f"{name} log: warnings and errors", "\n".join(trouble)))


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
