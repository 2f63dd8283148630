"""The decoder's Triton shell builds only the outputs a request asks for.

Triton 24.12's stub drops unrequested outputs inside ``send()`` without the
GIL; under load that corrupted the decoder stub's heap (the ensemble never
asks for the decoder's ``text_output``). ``triton_python_backend_utils`` only
exists inside a stub, so a small stand-in records what the shell builds.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.request import FinishReason, StepOutput

MODEL_PY = Path(__file__).parents[1] / "model_repository/constrained_decoder/1/model.py"
ENSEMBLE_ASKS = frozenset(
    {
        "token_window",
        "window_prefix_len",
        "shows_special_tokens",
        "tokens_generated",
        "prompt_tokens",
        "finish_reason",
        "matched",
        "choice_index",
        "details",
    }
)


class _Tensor:
    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array


class _Response:
    def __init__(self, output_tensors=(), error=None) -> None:
        self.tensors = {tensor.name: tensor.array for tensor in output_tensors}
        self.error = error


@pytest.fixture(scope="module")
def decoder_shell(monkeypatch_module: pytest.MonkeyPatch) -> types.ModuleType:
    stand_in = types.ModuleType("triton_python_backend_utils")
    stand_in.Tensor = _Tensor
    stand_in.InferenceResponse = _Response
    stand_in.TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
    monkeypatch_module.setitem(sys.modules, "triton_python_backend_utils", stand_in)
    spec = importlib.util.spec_from_file_location("decoder_shell", MODEL_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


class _Tokenizer:
    def decode(self, ids, **_) -> str:
        return "".join(chr(ord("a") + token) for token in ids)


def _builder(shell: types.ModuleType, *, make_text: bool):
    runner = types.SimpleNamespace(tokenizer=_Tokenizer(), token_bytes=[b"a", b"b", b"c"])
    return shell._ResponseBuilder(runner, make_text=make_text)


OUTPUT = StepOutput(
    window_ids=[0, 1, 2],
    prefix_len=1,
    tokens_generated=2,
    finish_reason=FinishReason.STOP,
    matched=True,
    request_done=True,
    prompt_tokens=4,
)


def test_an_ensemble_step_gets_exactly_the_outputs_it_maps(decoder_shell) -> None:
    response = _builder(decoder_shell, make_text=True).response(OUTPUT, ENSEMBLE_ASKS)
    assert set(response.tensors) == ENSEMBLE_ASKS
    assert response.tensors["token_window"].tolist() == [[0, 1, 2]]
    assert response.tensors["window_prefix_len"].tolist() == [[1]]
    assert response.tensors["finish_reason"].tolist() == [[b"stop"]]


def test_a_direct_caller_asking_for_text_gets_the_decoded_text(decoder_shell) -> None:
    response = _builder(decoder_shell, make_text=True).response(
        OUTPUT, frozenset({"text_output", "tokens_generated"})
    )
    assert set(response.tensors) == {"text_output", "tokens_generated"}
    assert response.tensors["text_output"].tolist() == [[b"bc"]]


def test_an_empty_window_still_sends_one_context_token(decoder_shell) -> None:
    ended = StepOutput(window_ids=[], prefix_len=0, tokens_generated=5, request_done=True)
    response = _builder(decoder_shell, make_text=False).response(
        ended, frozenset({"token_window", "window_prefix_len"})
    )
    assert response.tensors["token_window"].tolist() == [[0]]
    assert response.tensors["window_prefix_len"].tolist() == [[1]]
