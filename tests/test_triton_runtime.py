"""triton_runtime against a real tritonserver with a one-model Python-backend repository.

A real server, not a mock: what these tests guard is exactly what a mock would hide (the
wheel's server finding its libraries and the stub finding the venv, readiness, and that
stopping leaves no stub process behind).
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

import triton_runtime.server
from triton_runtime import ProcessError, TritonServer, free_port, locate_runtime
from triton_runtime.allocator import allocator_env

pytestmark = pytest.mark.integration

ECHO_CONFIG = """
name: "echo"
backend: "python"
max_batch_size: 8
input [{ name: "INPUT" data_type: TYPE_FP32 dims: [ -1 ] }]
output [{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ -1 ] }]
instance_group [{ kind: KIND_CPU }]
"""

# Imports numpy to prove the stub runs on the venv's site-packages.
ECHO_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            output = pb_utils.Tensor("OUTPUT", np.ascontiguousarray(data))
            responses.append(pb_utils.InferenceResponse([output]))
        return responses
"""


@pytest.fixture(scope="module")
def model_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("model_repository")
    (repository / "echo" / "1").mkdir(parents=True)
    (repository / "echo" / "config.pbtxt").write_text(ECHO_CONFIG)
    (repository / "echo" / "1" / "model.py").write_text(ECHO_MODEL)
    return repository


@pytest.fixture(scope="module")
def server(
    model_repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TritonServer]:
    log_file = tmp_path_factory.mktemp("logs") / "tritonserver.log"
    with TritonServer(model_repository, log_file=log_file, startup_timeout=60) as running:
        yield running


def session_members(session_id: int) -> list[int]:
    """Live processes in the server's session: tritonserver and the stubs it spawned."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            in_session = os.getsid(int(entry.name)) == session_id
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            continue
        if in_session and state != "Z":
            members.append(int(entry.name))
    return members


def test_runtime_is_prepared_once() -> None:
    first = locate_runtime()
    mtime = first.executable.stat().st_mtime_ns
    second = locate_runtime()
    assert second == first
    assert second.executable.stat().st_mtime_ns == mtime
    assert (first.backend_directory / "python" / "triton_python_backend_stub").is_file()


def test_server_and_model_are_ready(server: TritonServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url.removeprefix("http://"))
    assert client.is_server_ready()
    assert client.is_model_ready("echo")
    assert server.grpc_url.startswith("127.0.0.1:")


def test_server_and_stubs_run_on_the_chosen_malloc(server: TritonServer) -> None:
    """The preload reaches the stubs Triton spawns, where the memory is held."""
    preloaded = allocator_env().get("LD_PRELOAD")
    members = session_members(os.getsid(server.pid))
    assert len(members) >= 2  # tritonserver and the echo model's stub
    for pid in members:
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert ("libjemalloc" in maps) == (preloaded is not None), pid


def test_echo_inference(server: TritonServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url.removeprefix("http://"))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    infer_input = httpclient.InferInput("INPUT", list(data.shape), "FP32")
    infer_input.set_data_from_numpy(data)
    result = client.infer("echo", [infer_input])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT"), data)


def test_stop_leaves_no_process(model_repository: Path, tmp_path: Path) -> None:
    server = TritonServer(model_repository, log_file=tmp_path / "tritonserver.log")
    try:
        server.start_and_wait(60)
        members = session_members(server.pid)
        assert server.pid in members
        assert len(members) >= 2, "expected the Python backend stub next to tritonserver"
    finally:
        status = server.stop(timeout=30)
    assert status == 0, server.log_tail()
    assert session_members(server.pid) == []


def test_stop_kills_the_group_when_sigterm_is_not_obeyed(
    model_repository: Path, tmp_path: Path
) -> None:
    server = TritonServer(model_repository, log_file=tmp_path / "tritonserver.log")
    try:
        server.start_and_wait(60)
        os.kill(server.pid, signal.SIGSTOP)  # a hung server: SIGTERM stays pending
        started = time.monotonic()
    finally:
        status = server.stop(timeout=1)
    assert status == -signal.SIGKILL
    assert time.monotonic() - started < 10
    assert session_members(server.pid) == []


def test_wait_ready_fails_fast_with_log_tail(tmp_path: Path) -> None:
    server = TritonServer(tmp_path / "no-such-repository", log_file=tmp_path / "triton.log")
    started = time.monotonic()
    try:
        server.start()
        with pytest.raises(ProcessError, match="no-such-repository"):
            server.wait_ready(60)
    finally:
        server.stop()
    assert time.monotonic() - started < 30


def test_lost_port_race_is_retried_on_fresh_ports(
    model_repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    picks = iter([taken.getsockname()[1]])
    monkeypatch.setattr(
        triton_runtime.server, "free_port", lambda: next(picks, None) or free_port()
    )
    with taken, TritonServer(model_repository, log_file=tmp_path / "triton.log") as server:
        assert server.http_port != taken.getsockname()[1]
        assert server.is_ready()
    assert "already in use" in (tmp_path / "triton.log").read_text()
