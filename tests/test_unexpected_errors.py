"""A crash in a route is a 500 in that route's error shape, and its connection stays usable.

The frontend runs under a real uvicorn (on a thread, no Triton: these
requests never reach the engine), because what broke was the server's
handling of the connection after the 500, which an in-process test client
does not have. ``http.client`` sends each request on the one socket it
holds and never reconnects behind the test's back, so a connection the
server closed shows as an error on the second request.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn

from frontend import constrained
from frontend.app import create_app
from frontend.completions import plan
from frontend.settings import Settings

KEY = "unexpected-errors-key-0123456789"
HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}


@pytest.fixture
def port() -> Iterator[int]:
    app = create_app(Settings(api_keys=(KEY,)))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="critical"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.01)
            assert thread.is_alive(), "uvicorn stopped before it started"
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


def _typed(schema: str) -> str:
    return json.dumps({"prompt": "x", "schema": schema, "type_name": "T", "max_tokens": 4})


def _post(connection: http.client.HTTPConnection, path: str, body: str) -> tuple[int, dict]:
    connection.request("POST", path, body=body, headers=HEADERS)
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_a_crash_in_translation_is_a_500_and_the_connection_goes_on(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object) -> None:
        raise RuntimeError("a bug in a compiler")

    monkeypatch.setitem(constrained.COMPILERS, "typescript", crash)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        status, body = _post(connection, "/v1/completion/typed", _typed("type T = 'crash'"))
        assert (status, body) == (500, {"error": "internal server error", "code": 500})
        first_socket = connection.sock
        monkeypatch.undo()
        status, body = _post(connection, "/v1/completion/typed", _typed("type T = {"))
        assert status == 400 and "line 1" in body["error"], body
        assert connection.sock is first_socket  # not reconnected: the same connection answered
    finally:
        connection.close()


def test_a_crash_on_an_openai_route_has_the_openai_shape(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object) -> None:
        raise RuntimeError("a bug in a compiler")

    monkeypatch.setattr(plan, "response_format_constraint", crash)
    schema = {"const": "a schema no other test sends, so the translation cache misses"}
    body = json.dumps(
        {
            "model": "default",
            "prompt": "x",
            "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        status, answer = _post(connection, "/v1/completions", body)
        assert status == 500, answer
        assert answer["error"]["type"] == "server_error"
        assert answer["error"]["message"] == "internal server error"
        connection.request("GET", "/v1/models", headers=HEADERS)
        assert connection.getresponse().status == 200
    finally:
        connection.close()
