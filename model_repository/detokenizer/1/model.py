"""Triton shell: a decoder response's token window to its new text."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.diagnostics import dump_stacks_on_sigusr1
from engine.model_runner import load_tokenizer
from engine.settings import resolve_model_dir
from engine.text_window import decode_window


def _input(request, name: str) -> np.ndarray:
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)


class TritonPythonModel:
    def initialize(self, args):
        dump_stacks_on_sigusr1()
        config = json.loads(args["model_config"])
        self.tokenizer = load_tokenizer(resolve_model_dir(config.get("parameters", {})))

    def execute(self, requests):
        return [self._detokenize(request) for request in requests]

    def _detokenize(self, request):
        text = decode_window(
            self.tokenizer,
            _input(request, "token_window").tolist(),
            int(_input(request, "window_prefix_len")[0]),
            skip_special_tokens=not bool(_input(request, "shows_special_tokens")[0]),
        )
        output = np.array([[text.encode("utf-8")]], dtype=np.object_)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("text_output", output)])
