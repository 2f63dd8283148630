"""Drive the served ensemble directly: gRPC streams from tritonclient's asyncio API.

One channel carries every stream (as the frontend does), each request is its
own ``stream_infer`` call, and only arrival times and token counts are read
from each response: the client shares the machine with the server, so it
must do as little as possible per token.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tritonclient.grpc.aio as grpcaio
from tritonclient.utils import InferenceServerException

from bench.timing import RequestTiming
from bench.workload import RequestSpec

STREAM_TIMEOUT_S = 600.0


def _bytes_input(name: str, value: str) -> grpcaio.InferInput:
    array = np.array([[value.encode("utf-8")]], dtype=np.object_)
    tensor = grpcaio.InferInput(name, list(array.shape), "BYTES")
    tensor.set_data_from_numpy(array)
    return tensor


def _inputs(spec: RequestSpec) -> list[grpcaio.InferInput]:
    return [
        _bytes_input("text_input", spec.prompt),
        _bytes_input("sampling_parameters", json.dumps(spec.params)),
        _bytes_input("constraint_type", spec.constraint_type),
        _bytes_input("constraint", spec.constraint),
    ]


class EnsembleClient:
    """Streams requests to the ensemble and times every response."""

    def __init__(self, url: str, model: str = "ensemble") -> None:
        self._client = grpcaio.InferenceServerClient(url)
        self._model = model

    async def stream(self, spec: RequestSpec, timing: RequestTiming | None = None) -> RequestTiming:
        """Send one request and read its responses until the final one.

        A caller that passes `timing` can watch the responses arrive while it runs.
        """
        request = {
            "model_name": self._model,
            "inputs": _inputs(spec),
            "request_id": uuid.uuid4().hex,
        }

        async def requests():
            yield request

        timing = timing or RequestTiming(label=spec.label, sent=0.0)
        timing.sent = time.perf_counter()
        stream = self._client.stream_infer(requests(), stream_timeout=STREAM_TIMEOUT_S)
        try:
            async for result, error in stream:
                now = time.perf_counter()
                if error is not None:
                    timing.error = str(error)
                    break
                timing.arrivals.append(now)
                timing.tokens.append(int(result.as_numpy("tokens_generated").reshape(-1)[0]))
                response = result.get_response()
                if response.parameters["triton_final_response"].bool_param:
                    reason = result.as_numpy("finish_reason").reshape(-1)[0]
                    timing.finish_reason = reason.decode() or None
                    break
            else:
                timing.error = "stream closed before the final response"
        except InferenceServerException as error:
            timing.error = str(error)
        finally:
            stream.cancel()
        return timing

    async def close(self) -> None:
        await self._client.close()


@dataclass
class LoadResult:
    """Every request of a closed-loop run and the run's wall-clock window."""

    timings: list[RequestTiming]
    started: float
    ended: float

    @property
    def wall_s(self) -> float:
        return self.ended - self.started


async def closed_loop(
    client: EnsembleClient, workers: Sequence[Sequence[RequestSpec]]
) -> LoadResult:
    """Concurrency = len(workers): each worker sends its requests one after another.

    All workers start together; the window ends when the last request ends, so
    output tokens / wall time is the throughput a client at this concurrency gets.
    """

    async def worker(specs: Sequence[RequestSpec]) -> list[RequestTiming]:
        return [await client.stream(spec) for spec in specs]

    started = time.perf_counter()
    results = await asyncio.gather(*(worker(specs) for specs in workers))
    ended = time.perf_counter()
    return LoadResult([t for timings in results for t in timings], started, ended)


async def tokens_in_closed_loop(
    url: str, specs: Sequence[RequestSpec], concurrency: int
) -> tuple[int, float]:
    """Output tokens and wall seconds of ``specs`` sent by ``concurrency``
    closed-loop streams on a client of their own; a failed request raises
    (a figure from a run with failures would count fewer tokens)."""
    client = EnsembleClient(url)
    try:
        result = await closed_loop(client, split_among(specs, concurrency))
    finally:
        await client.close()
    failed = [timing.error for timing in result.timings if not timing.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} requests failed: {failed[:2]}")
    return sum(timing.output_tokens for timing in result.timings), result.wall_s


def split_among(specs: Sequence[RequestSpec], concurrency: int) -> list[list[RequestSpec]]:
    """Deal requests round-robin to `concurrency` workers (the first ones get any extra)."""
    return [list(specs[i::concurrency]) for i in range(concurrency) if specs[i::concurrency]]
