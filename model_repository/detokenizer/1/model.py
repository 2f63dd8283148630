"""Triton shell: a decoder window to its new text, token ids in ``details`` to
bytes and text; other fields pass through."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils
import xgrammar as xgr

from engine.details import describe_details
from engine.model_runner import load_tokenizer, vocabulary_bytes
from engine.settings import resolve_model_dir
from engine.text_window import decode_window

PASSED_THROUGH = ("tokens_generated", "prompt_tokens", "finish_reason", "matched", "choice_index")


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.tokenizer = load_tokenizer(resolve_model_dir(config.get("parameters", {})))
        info = xgr.TokenizerInfo.from_huggingface(self.tokenizer)
        self.token_bytes = vocabulary_bytes(info, info.vocab_size)

    def execute(self, requests):
        return [self._detokenize(request) for request in requests]

    def _detokenize(self, request):
        window = pb_utils.get_input_tensor_by_name(request, "window_ids").as_numpy().reshape(-1)
        prefix_len = int(pb_utils.get_input_tensor_by_name(request, "prefix_len").as_numpy().item())
        text = decode_window(self.tokenizer, window.tolist(), prefix_len)
        outputs = [
            pb_utils.Tensor("text_output", np.array([[text.encode("utf-8")]], dtype=np.object_))
        ]
        details = pb_utils.get_input_tensor_by_name(request, "details").as_numpy().reshape(-1)[0]
        described = describe_details(details.decode("utf-8"), self.token_bytes, self._decode)
        outputs.append(
            pb_utils.Tensor("details", np.array([[described.encode("utf-8")]], dtype=np.object_))
        )
        for name in PASSED_THROUGH:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            outputs.append(pb_utils.Tensor(name, tensor.as_numpy()))
        return pb_utils.InferenceResponse(output_tensors=outputs)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(
            ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
