"""Triton shell: prompt text to token ids."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.model_runner import load_tokenizer
from engine.settings import resolve_model_dir


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.tokenizer = load_tokenizer(resolve_model_dir(config.get("parameters", {})))

    def execute(self, requests):
        return [self._tokenize(request) for request in requests]

    def _tokenize(self, request):
        prompts = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)
        if prompts.size != 1:
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError("text_input takes one prompt per request (batch size 1)")
            )
        try:
            text = prompts[0].decode("utf-8")
        except UnicodeDecodeError as error:
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(f"text_input is not valid UTF-8: {error}")
            )
        ids = np.asarray([self.tokenizer.encode(text)], dtype=np.int32)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("input_ids", ids)])
