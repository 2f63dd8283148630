"""The ensemble driven directly with tritonclient, as perf_analyzer users do."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import time

import httpx
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio

from engine.model_runner import load_tokenizer
from engine.text_window import decode_window
from triton_runtime.server import TritonServer


def _bytes_input(name: str, value: str) -> grpcclient.InferInput:
    array = np.array([[value.encode()]], dtype=np.object_)
    tensor = grpcclient.InferInput(name, list(array.shape), "BYTES")
    tensor.set_data_from_numpy(array)
    return tensor


def _stream(triton: TritonServer, inputs: list[grpcclient.InferInput]) -> tuple[list, str | None]:
    """Streams one request; returns its results and the error message, if any."""
    responses: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    client.start_stream(callback=lambda result, error: responses.put((result, error)))
    try:
        client.async_stream_infer("ensemble", inputs, request_id="direct-1")
        results = []
        while True:
            result, error = responses.get(timeout=120)
            if error is not None:
                return results, str(error)
            results.append(result)
            if result.get_response().parameters["triton_final_response"].bool_param:
                return results, None
    finally:
        client.stop_stream()
        client.close()


def _field(result, name: str):
    return result.as_numpy(name).reshape(-1)[0]


def test_streamed_deltas_concatenate_to_a_full_match(triton: TritonServer) -> None:
    pattern = "(日本語|café|😀){3,6}"
    results, error = _stream(
        triton,
        [
            _bytes_input("text_input", "Say it: "),
            _bytes_input("sampling_parameters", json.dumps({"max_tokens": 64, "seed": 3})),
            _bytes_input("constraint_type", "regex"),
            _bytes_input("constraint", pattern),
        ],
    )
    assert error is None
    deltas = [_field(r, "text_output").decode("utf-8") for r in results]
    assert all("\ufffd" not in delta for delta in deltas)
    final = results[-1]
    assert _field(final, "finish_reason") == b"stop" and bool(_field(final, "matched"))
    assert re.fullmatch(pattern, "".join(deltas))
    assert int(_field(final, "tokens_generated")) >= len(results) - 1
    assert int(_field(final, "prompt_tokens")) > 0


def test_optional_inputs_default_to_unconstrained_generation(triton: TritonServer) -> None:
    results, error = _stream(triton, [_bytes_input("text_input", "Hello")])
    assert error is None
    final = results[-1]
    assert _field(final, "finish_reason") in (b"stop", b"length")
    assert int(_field(final, "tokens_generated")) <= 16  # SamplingParams' default max_tokens


def test_bad_parameters_are_reported_not_ignored(triton: TritonServer) -> None:
    _, error = _stream(
        triton,
        [
            _bytes_input("text_input", "x"),
            _bytes_input("sampling_parameters", json.dumps({"max_tokenz": 3})),
        ],
    )
    assert error is not None and "max_tokenz" in error


def test_decoder_metrics_are_on_tritons_metrics_port(triton: TritonServer) -> None:
    for _ in range(2):  # the second identical constraint is a cache hit
        _, error = _stream(
            triton,
            [
                _bytes_input("text_input", "n"),
                _bytes_input("constraint_type", "regex"),
                _bytes_input("constraint", "[0-9]{2}"),
            ],
        )
        assert error is None
    # The decoder sends its metrics in batches (engine/metric_buffer.py): wait for them.
    assert _wait_for_metric_above(triton, 'ct_decoder_requests_finished_total{reason="stop"}', 1)
    assert _wait_for_metric_above(triton, 'ct_grammar_cache_lookups_total{result="hit"}', 0)
    assert _wait_for_metric_above(triton, 'ct_grammar_cache_lookups_total{result="miss"}', 0)
    assert _wait_for_metric_above(triton, "ct_decoder_output_tokens_total", 3)
    assert _wait_for_metric_above(triton, "ct_decoder_steps_total", 3)
    for part in ("model", "engine"):
        assert _wait_for_metric_above(triton, f'ct_decoder_step_seconds_total{{part="{part}"}}', 0)


def _metric(triton: TritonServer, name: str) -> float:
    for line in httpx.get(triton.metrics_url, timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split(" ")[1])
    return 0.0


CANCELLED = 'ct_decoder_requests_finished_total{reason="cancelled"}'


def _wait_for_metric_above(
    triton: TritonServer, name: str, floor: float, timeout_s: float = 20.0
) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = _metric(triton, name)
        if value > floor:
            return value
        time.sleep(0.2)
    return _metric(triton, name)


def test_cancelling_by_request_id_stops_generation_in_the_decoder(triton: TritonServer) -> None:
    """Closing an ensemble stream does not reach the running decoder step (Triton
    checks an ensemble's cancellation only between steps); naming the request
    in a cancel_request_id request to the decoder does."""
    before = _metric(triton, CANCELLED)
    endless = json.dumps({"max_tokens": 1_000_000, "ignore_eos": True})

    async def start_then_cancel() -> None:
        client = grpcaio.InferenceServerClient(triton.grpc_url)

        async def generate():
            yield {
                "model_name": "ensemble",
                "request_id": "endless-1",
                "inputs": [
                    _bytes_input("text_input", "go"),
                    _bytes_input("sampling_parameters", endless),
                ],
            }

        async def cancel():
            yield {
                "model_name": "constrained_decoder",
                "inputs": [_bytes_input("cancel_request_id", "endless-1")],
            }

        stream = client.stream_infer(generate())
        async for _, error in stream:
            assert error is None
            break  # one response proves it is generating; now leave
        stream.cancel()
        acknowledgement = client.stream_infer(cancel())
        async for _, error in acknowledgement:
            assert error is None
            break
        acknowledgement.cancel()
        await client.close()

    asyncio.run(start_then_cancel())
    assert _wait_for_metric_above(triton, CANCELLED, before) > before


def _ids_input(ids: list[int]) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput("input_ids", [1, len(ids)], "INT32")
    tensor.set_data_from_numpy(np.array([ids], dtype=np.int32))
    return tensor


def test_token_id_prompt_with_n_choices_logprobs_and_echo(triton: TritonServer) -> None:
    params = {"max_tokens": 5, "n": 3, "seed": 4, "logprobs": 2, "echo_prompt": True}
    results, error = _stream(
        triton,
        [_ids_input([72, 101, 108]), _bytes_input("sampling_parameters", json.dumps(params))],
    )
    assert error is None
    by_choice: dict[int, list] = {}
    for result in results:
        by_choice.setdefault(int(_field(result, "choice_index")), []).append(result)
    assert sorted(by_choice) == [0, 1, 2]
    details = [json.loads(_field(r, "details").decode() or "{}") for r in results]
    prompts = [d["prompt"] for d in details if "prompt" in d]
    assert len(prompts) == 1 and prompts[0]["truncated"] is False
    assert len(prompts[0]["tokens"]) == 3 and prompts[0]["tokens"][0]["logprob"] is None
    for choice_results in by_choice.values():
        final = choice_results[-1]
        assert _field(final, "finish_reason") in (b"stop", b"length")
        assert int(_field(final, "prompt_tokens")) == 3
        entries = [
            entry
            for r in choice_results
            for entry in json.loads(_field(r, "details").decode() or "{}").get("logprobs", [])
        ]
        text = "".join(_field(r, "text_output").decode() for r in choice_results)
        joined = b"".join(bytes.fromhex(entry["bytes"]) for entry in entries)
        assert joined.decode("utf-8", "replace") == text
        assert all(len(entry["top"]) == 2 for entry in entries)


def test_a_prompt_must_be_text_or_ids_not_both(triton: TritonServer) -> None:
    _, error = _stream(triton, [_ids_input([72]), _bytes_input("text_input", "x")])
    assert error is not None and "exactly one of text_input or input_ids" in error
    _, error = _stream(triton, [_ids_input([999_999])])
    assert error is not None and "prompt token ids" in error


def _int_input(name: str, values: list[int], datatype: str = "INT32") -> grpcclient.InferInput:
    array = np.array([values], dtype=np.bool_ if datatype == "BOOL" else np.int32)
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def test_the_detokenizer_decodes_a_window_after_its_prefix(
    triton: TritonServer, tiny_model_dir
) -> None:
    """The ensemble's last step, alone: for every split of a window (some
    inside a character spread over byte tokens) the text after the prefix."""
    tokenizer = load_tokenizer(tiny_model_dir)
    ids = tokenizer.encode("Zoë and 佐藤 wrote", add_special_tokens=False)
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        for prefix_len in range(len(ids)):
            expected = decode_window(tokenizer, ids, prefix_len)
            result = client.infer(
                "detokenizer",
                [
                    _int_input("token_window", ids),
                    _int_input("window_prefix_len", [prefix_len]),
                    _int_input("shows_special_tokens", [0], "BOOL"),
                ],
            )
            assert _field(result, "text_output").decode() == expected, prefix_len
    finally:
        client.close()
