"""Triton shell: a decoder response's token window to its new text."""

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.text_window import decode_window
from engine.tokenizer_model import TokenizerModel


def _input(request, name: str) -> np.ndarray:
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)


class TritonPythonModel(TokenizerModel):
    def respond(self, request):
        text = decode_window(
            self.tokenizer,
            _input(request, "token_window").tolist(),
            int(_input(request, "window_prefix_len")[0]),
            skip_special_tokens=not bool(_input(request, "shows_special_tokens")[0]),
        )
        output = np.array([[text.encode("utf-8")]], dtype=np.object_)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("text_output", output)])
