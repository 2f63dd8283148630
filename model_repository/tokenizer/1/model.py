"""Triton shell: prompt text to token ids, or token ids passed through.

A prompt arrives either as ``text_input`` or, already tokenized, as
``input_ids`` (OpenAI's token-id prompts); exactly one of them is given.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.request import INVALID_ARGUMENT_PREFIX
from engine.tokenizer_model import TokenizerModel


def _invalid(message: str):
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(
            INVALID_ARGUMENT_PREFIX + message, pb_utils.TritonError.INVALID_ARG
        )
    )


class TritonPythonModel(TokenizerModel):
    def respond(self, request):
        text = pb_utils.get_input_tensor_by_name(request, "text_input")
        ids = pb_utils.get_input_tensor_by_name(request, "input_ids")
        if (text is None) == (ids is None):
            return _invalid("give the prompt as exactly one of text_input or input_ids")
        if ids is not None:
            ids = ids.as_numpy()
            if ids.ndim == 2 and ids.shape[0] != 1:
                return _invalid("input_ids takes one prompt per request (batch size 1)")
            ids = ids.reshape(1, -1).astype(np.int32)
        else:
            prompts = text.as_numpy().reshape(-1)
            if prompts.size != 1:
                return _invalid("text_input takes one prompt per request (batch size 1)")
            try:
                decoded = prompts[0].decode("utf-8")
            except UnicodeDecodeError as error:
                return _invalid(f"text_input is not valid UTF-8: {error}")
            ids = np.asarray([self.tokenizer.encode(decoded)], dtype=np.int32)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("input_ids", ids)])
