"""The slow lane in the served decoder (``engine/slow_lane.py``): a Triton
whose decoder sends every constrained row there (``slow_mask_fill_ms`` 0:
each is sampled once a thread of its own has filled its mask) answers as
the shared stack does, through the real frontend, and counts those tokens."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from triton_runtime.server import TritonServer

from .conftest import MODEL_NAME, Service, repository_with_decoder_settings, served

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "tags": {"type": "array", "items": {"enum": ["a", "bc"]}, "maxItems": 3},
    },
    "required": ["name", "tags"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "p", "schema": SCHEMA, "strict": True},
}
REQUESTS = [
    (
        "/v1/completion/regex",
        {"prompt": "Say:", "pattern": r"([a-z]+ ?){2,5}\.", "max_new_tokens": 24, "temperature": 0},
    ),
    (
        "/v1/completions",
        {
            "model": MODEL_NAME,
            "prompt": "Person: ",
            "max_tokens": 40,
            "temperature": 0,
            "response_format": RESPONSE_FORMAT,
        },
    ),
    (
        "/v1/completions",
        {
            "model": MODEL_NAME,
            "prompt": "Person: ",
            "max_tokens": 40,
            "n": 2,
            "seed": 4,
            "logprobs": 1,
            "response_format": RESPONSE_FORMAT,
        },
    ),
]


@pytest.fixture(scope="module")
def lane_stack(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    work = tmp_path_factory.mktemp("slow-lane")
    repository = repository_with_decoder_settings(work, slow_mask_fill_ms="0")
    with served(tiny_model_dir, work, repository, CT_MODEL_NAME=MODEL_NAME) as stack:
        yield stack


def _answer(route: str, body: dict) -> tuple[object, list[list[float]]]:
    """What a response says (without its ids and timestamps), and apart from
    it the log probabilities of its choices' tokens: those are compared to
    1e-4, as a row fed nothing while its mask fills pads the step, and a
    padded step adds up the same logits in another order."""
    if route == "/v1/completion/regex":
        return {key: body[key] for key in ("completion", "stop_reason", "matched")}, []
    said, values = [], []
    for choice in body["choices"]:
        logprobs = choice["logprobs"] or {}
        said.append(
            (choice["index"], choice["text"], choice["finish_reason"], logprobs.get("tokens"))
        )
        values.append(logprobs.get("token_logprobs") or [])
    return said, values


def _slow_lane_tokens(triton: TritonServer) -> float:
    for line in httpx.get(triton.metrics_url, timeout=10).text.splitlines():
        if line.startswith("ct_decoder_slow_lane_tokens_total "):
            return float(line.split(" ")[1])
    return 0.0


def test_every_constrained_row_in_the_slow_lane_answers_as_the_batch_does(
    service: Service, lane_stack: Service
) -> None:
    with service.client() as shared, lane_stack.client() as lane:
        for route, request in REQUESTS:
            expected, got = shared.post(route, json=request), lane.post(route, json=request)
            assert expected.status_code == 200, expected.text
            assert got.status_code == 200, got.text
            (said, values), (expected_said, expected_values) = (
                _answer(route, got.json()),
                _answer(route, expected.json()),
            )
            assert said == expected_said
            for choice_values, expected_choice in zip(values, expected_values, strict=True):
                assert choice_values == pytest.approx(expected_choice, abs=1e-4)
    deadline = time.monotonic() + 20  # the decoder's metrics reach Triton every 0.5 s
    while _slow_lane_tokens(lane_stack.triton) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _slow_lane_tokens(lane_stack.triton) > 0
