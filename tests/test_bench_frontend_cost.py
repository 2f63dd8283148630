"""The frontend-cost phase's own parts: the lean HTTP client against a real
socket server, and the rounds that rotate which path goes first."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.frontend_cost import _rounds
from bench.lean_http import LeanHTTPClient


async def _serve(answers: list[bytes], seen: list[bytes], connections: list[int]):
    """A loopback server answering each request with the next canned response."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while answers:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            seen.append(head + await reader.readexactly(length))
            writer.write(answers.pop(0))
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def _response(status: int, body: dict, *, close: bool = False) -> bytes:
    data = json.dumps(body).encode()
    extra = b"Connection: close\r\n" if close else b""
    return (
        b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\ncontent-length: %d\r\n%s\r\n"
        % (status, len(data), extra)
    ) + data


def test_the_lean_client_keeps_its_connection_and_reads_each_response_whole() -> None:
    async def scenario() -> None:
        answers = [_response(200, {"n": 1}), _response(503, {"n": 2}, close=True)]
        answers.append(_response(200, {"n": 3}))
        seen: list[bytes] = []
        connections: list[int] = []
        server = await _serve(answers, seen, connections)
        port = server.sockets[0].getsockname()[1]
        client = LeanHTTPClient("127.0.0.1", port, {"Authorization": "Bearer k"})
        try:
            first = await client.post_json("/v1/completions", {"prompt": "é"})
            second = await client.post_json("/v1/completions", {"prompt": "b"})
            assert (first.status, first.json()) == (200, {"n": 1})
            assert (second.status, second.json()) == (503, {"n": 2})
            assert len(connections) == 1, "two requests, one kept-open connection"
            third = await client.post_json("/v1/completions", {"prompt": "c"})
            assert third.json() == {"n": 3}
            assert len(connections) == 2, "the server said close: a new connection"
        finally:
            await client.close()
            server.close()
            await server.wait_closed()
        assert b"Authorization: Bearer k\r\n" in seen[0]
        assert json.loads(seen[0].split(b"\r\n\r\n", 1)[1]) == {"prompt": "é"}

    asyncio.run(scenario())


def test_rounds_rotate_the_first_path_and_drop_a_round_with_a_failure() -> None:
    calls: list[tuple[str, int]] = []

    def path(name: str, failing_seed: int | None = None):
        async def send(prompt: str, seed: int) -> float | None:
            calls.append((name, seed))
            return None if seed == failing_seed else float(seed)

        return send

    paths = {"a": path("a"), "b": path("b", failing_seed=2001), "c": path("c")}
    ms = asyncio.run(_rounds(paths, 3))
    measured = [call for call in calls if call[1] >= 2000]
    firsts = [measured[i][0] for i in range(0, 9, 3)]
    assert firsts == ["a", "b", "c"]
    assert ms["a"] == ms["c"] == [2000e3, 2002e3], "round 2001 failed on b: dropped whole"
    assert ms["b"] == pytest.approx([2000e3, 2002e3])
