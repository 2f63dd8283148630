"""Triton shell: chat messages to the prompt text (engine/chat_template.py)."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from engine.chat_template import ChatTemplateError, render_chat
from engine.request import invalid_argument_text
from engine.tokenizer_model import TokenizerModel


def _invalid(message: str):
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(
            invalid_argument_text(message, "messages"), pb_utils.TritonError.INVALID_ARG
        )
    )


class TritonPythonModel(TokenizerModel):
    def respond(self, request):
        values = pb_utils.get_input_tensor_by_name(request, "chat_request").as_numpy().reshape(-1)
        if values.size != 1:
            return _invalid("chat_request takes one conversation per request (batch size 1)")
        try:
            chat = json.loads(values[0])
            prompt = render_chat(self.tokenizer, chat["messages"], chat.get("tools"))
        except (ValueError, KeyError, TypeError) as error:  # ChatTemplateError included
            message = (
                str(error) if isinstance(error, ChatTemplateError) else f"bad chat_request: {error}"
            )
            return _invalid(message)
        text = np.array([[prompt.encode("utf-8")]], dtype=np.object_)
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("text_output", text)])
