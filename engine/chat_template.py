"""Chat messages to the prompt the model was trained on, with its own template.

The template is the model directory's (``chat_template`` in its tokenizer
configuration, read by ``transformers``), never one of ours: a chat model only
answers in turn when its prompt is laid out exactly as in training. Plain
Python, so the Triton shell (``model_repository/chat_template``) stays thin
and this is tested without Triton.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jinja2 import TemplateError
from transformers import PreTrainedTokenizerBase


class ChatTemplateError(ValueError):
    """The messages cannot become a prompt for this model; the client's to fix."""


def render_chat(
    tokenizer: PreTrainedTokenizerBase,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None = None,
) -> str:
    """The prompt text for ``messages``, ending where the assistant's reply begins.

    ``tools`` are OpenAI function tools; templates that know tools list them
    in the prompt, others ignore them (the grammar still constrains the calls).
    """
    if not tokenizer.chat_template:
        raise ChatTemplateError(
            "the served model has no chat template (its tokenizer configuration has no "
            "chat_template); send a prompt to /v1/completions instead"
        )
    if not messages:
        raise ChatTemplateError("messages must hold at least one message")
    try:
        return tokenizer.apply_chat_template(
            list(messages),
            tools=list(tools) if tools else None,
            add_generation_prompt=True,
            tokenize=False,
        )
    except TemplateError as error:  # the template's own raise_exception() included
        raise ChatTemplateError(
            f"the model's chat template refused the messages: {error}"
        ) from None
