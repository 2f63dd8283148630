"""Triton shell: a decoder window to its new text; other fields pass through."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.model_runner import load_tokenizer
from engine.settings import resolve_model_dir
from engine.text_window import decode_window

PASSED_THROUGH = ("tokens_generated", "prompt_tokens", "finish_reason", "matched")


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.tokenizer = load_tokenizer(resolve_model_dir(config.get("parameters", {})))

    def execute(self, requests):
        return [self._detokenize(request) for request in requests]

    def _detokenize(self, request):
        window = pb_utils.get_input_tensor_by_name(request, "window_ids").as_numpy().reshape(-1)
        prefix_len = int(pb_utils.get_input_tensor_by_name(request, "prefix_len").as_numpy().item())
        text = decode_window(self.tokenizer, window.tolist(), prefix_len)
        outputs = [
            pb_utils.Tensor("text_output", np.array([[text.encode("utf-8")]], dtype=np.object_))
        ]
        for name in PASSED_THROUGH:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            outputs.append(pb_utils.Tensor(name, tensor.as_numpy()))
        return pb_utils.InferenceResponse(output_tensors=outputs)
