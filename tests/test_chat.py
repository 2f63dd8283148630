"""Chat completions without Triton: the request plan, the chat template and
the shapes the chat route answers in (the live route is tested in
tests/integration/test_chat.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pydantic import ValidationError
from transformers import AutoTokenizer

from demo_model.chat import CHAT_TEMPLATE, render
from demo_model.corpus import chat_conversation
from engine.chat_template import ChatTemplateError, render_chat
from frontend.chat.plan import UNBOUNDED_MAX_TOKENS, plan_chat
from frontend.chat.schemas import ChatCompletionRequest
from frontend.chat.service import HeldContent, chat_logprobs
from frontend.completions.choices import Piece
from frontend.completions.schemas import LegacyLogprobs
from frontend.errors import APIError


def _request(**fields) -> ChatCompletionRequest:
    return ChatCompletionRequest(messages=[{"role": "user", "content": "Hi"}], **fields)


def _plan(**fields):
    return plan_chat(_request(**fields), "tiny-demo")


def test_the_plan_carries_chat_fields_to_the_completion() -> None:
    plan = _plan(
        max_completion_tokens=12, n=2, seed=7, stop=["\n"], temperature=0.5, top_p=0.9,
        presence_penalty=0.5, frequency_penalty=0.25, logit_bias={"5": -100.0},
        logprobs=True, top_logprobs=3,
    )  # fmt: skip
    params = plan.completion.params
    assert params.max_tokens == 12 and params.n == 2 and params.seed == 7
    assert params.stop == ("\n",) and params.temperature == 0.5 and params.top_p == 0.9
    assert params.presence_penalty == 0.5 and params.frequency_penalty == 0.25
    assert params.logit_bias == {5: -100.0} and params.logprobs == 3
    assert plan.top_logprobs == 3 and not plan.completion.echo


def test_without_a_limit_the_model_ends_its_own_turn() -> None:
    assert _plan().completion.params.max_tokens == UNBOUNDED_MAX_TOKENS
    assert _plan(max_tokens=9).completion.params.max_tokens == 9


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"max_tokens": 5, "max_completion_tokens": 6}, "max_tokens"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": 9}, "top_logprobs"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"model": "gpt-4o"}, "model"),
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {
                "response_format": {"type": "json_object"},
                "grammar": {"type": "regex", "value": "a+"},
            },
            "response_format",
        ),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}}, None),
    ],
)
def test_bad_fields_are_refused_naming_the_chat_field(fields: dict, param: str | None) -> None:
    with pytest.raises(APIError) as caught:
        _plan(**fields)
    assert caught.value.status in (400, 404)
    if param is not None:
        assert caught.value.param == param


def test_unknown_fields_and_roles_are_refused() -> None:
    with pytest.raises(ValidationError, match="functions"):
        _request(functions=[])
    with pytest.raises(ValidationError):
        ChatCompletionRequest(messages=[{"role": "robot", "content": "Hi"}])
    with pytest.raises(ValidationError):
        ChatCompletionRequest(messages=[])


def test_the_conversation_joins_text_parts_and_keeps_tool_calls() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    parts = [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]
    body = ChatCompletionRequest(
        messages=[
            {"role": "system", "content": parts},
            {"role": "user", "content": "Call f."},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "done"},
        ]
    )  # fmt: skip
    conversation = json.loads(plan_chat(body, "m").conversation)
    assert conversation["messages"][0] == {"role": "system", "content": "Be brief."}
    assert conversation["messages"][2]["tool_calls"] == [call]
    assert conversation["messages"][3] == {
        "role": "tool", "tool_call_id": "call_1", "content": "done"
    }  # fmt: skip
    assert conversation["tools"] is None


def test_the_model_templates_render_with_transformers(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompt = render_chat(
        tokenizer,
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    )
    assert prompt == "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"


def test_training_conversations_render_as_the_service_renders_them(tiny_model_dir: Path) -> None:
    """The corpus renders with jinja2 directly, the service with transformers:
    one template, one text, or the model would be served prompts it never saw."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert tokenizer.chat_template == CHAT_TEMPLATE
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    messages = [
        {"role": "user", "content": "Où est <b>?"},
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "f", "arguments": '{"a": "é"}'}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "ok"},
        {"role": "assistant", "content": "Fine."},
    ]
    served = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    assert served == render(messages, tools)
    assert chat_conversation(random.Random(3))  # the corpus generator renders


def test_a_model_without_a_template_is_told_so(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.chat_template = None
    with pytest.raises(ChatTemplateError, match="no chat template"):
        render_chat(tokenizer, [{"role": "user", "content": "Hi"}])


def test_a_template_that_raises_is_a_client_error(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.chat_template = "{{ raise_exception('roles must alternate') }}"
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        render_chat(tokenizer, [{"role": "user", "content": "Hi"}])


def test_logprobs_take_the_chat_shape() -> None:
    legacy = LegacyLogprobs(
        tokens=["Hi", "bytes:\\xe4\\xb8"],
        token_logprobs=[-0.5, -1.0],
        top_logprobs=[{"Hi": -0.5, "Ho": -1.5, "He": -2.5}, {"bytes:\\xe4\\xb8": -1.0}],
        text_offset=[0, 2],
    )
    content = chat_logprobs(legacy, top=2).content
    assert [entry.token for entry in content] == ["Hi", "bytes:\\xe4\\xb8"]
    assert content[0].bytes == list(b"Hi") and content[1].bytes == [0xE4, 0xB8]
    assert [top.token for top in content[0].top_logprobs] == ["Hi", "Ho"]
    assert chat_logprobs(None, top=2) is None


def test_streamed_content_is_held_only_while_it_may_be_tool_calls() -> None:
    text = HeldContent(watching=True)
    assert text.take(Piece("<to", None)) == ("", [])
    assert text.take(Piece("day", None)) == ("<today", [])
    assert text.take(Piece(" is", None)) == (" is", [])
    call = HeldContent(watching=True)
    assert call.take(Piece('<tool_call>{"name"', None)) == ("", [])
    assert call.take(Piece("}</tool_call>", None, "tool_calls"))[0].startswith("<tool_call>")
    plain = HeldContent(watching=False)
    assert plain.take(Piece("<tool_call>", None)) == ("<tool_call>", [])


def test_parallel_tool_calls_false_allows_exactly_one_call() -> None:
    tool = {"type": "function", "function": {"name": "f", "strict": True}}
    single = _plan(tools=[tool], tool_choice="required", parallel_tool_calls=False)
    several = _plan(tools=[tool], tool_choice="required")
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert single.completion.constraint.judge(call) is None
    assert "parallel_tool_calls" in single.completion.constraint.judge(f"{call}\n{call}")
    assert several.completion.constraint.judge(f"{call}\n{call}") is None
    assert single.completion.constraint.value != several.completion.constraint.value
