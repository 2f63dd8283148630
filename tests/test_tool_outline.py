"""The repeat guard inside tool calls' arguments (``engine.tool_outline``).

A strict tool's parameters with ``uniqueItems`` compile (the decoder keeps
the items apart, as for a schema given whole), and a writer that always
takes the first token the masks allow, the hardest way to repeat an item,
still writes calls the judge accepts.
"""

from __future__ import annotations

import json

import numpy as np
import xgrammar as xgr
from json_instances import VOCABULARY

from engine.json_repeats import RepeatGuard
from engine.tool_outline import ToolCallsOutline, tool_arguments
from grammar_compiler import parse_tool_calls, tools_constraint
from grammar_compiler.tool_grammar import ARGUMENTS_MARK

TAGS = {
    "type": "object",
    "properties": {
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": 1},
            "uniqueItems": True,
            "minItems": 5,
            "maxItems": 5,
        },
        "headers": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"pattern": "^[a-z]+$"},
            "maxProperties": 3,
        },
    },
    "required": ["tags", "headers"],
    "additionalProperties": False,
}
CLOSED = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "tag", "strict": True, "parameters": TAGS}},
    {"type": "function", "function": {"name": "closed", "strict": True, "parameters": CLOSED}},
]


def _outline(tool_choice: object = "required") -> ToolCallsOutline:
    constraint = tools_constraint(TOOLS, tool_choice)
    assert constraint is not None and constraint.value.startswith(ARGUMENTS_MARK)
    arguments = tool_arguments(constraint.value)
    assert arguments is not None and arguments.repeating == {"tag"}
    return ToolCallsOutline(arguments)


def test_a_call_s_arguments_are_followed_and_a_new_call_starts_afresh() -> None:
    outline = _outline()
    outline.push(b'<tool_call>{"name": "tag", "arguments": {"tags": ["a", ')
    assert sorted(outline.texts_to_avoid()) == [b' "a', b'"a']  # as long as tags may be
    outline.push(b'"b", "c", "d", "e"], "headers": {"x": 1, ')
    assert sorted(outline.texts_to_avoid()) == [b' "x"', b'"x"']
    outline.push(b'"y": 2}}}</tool_call>\n')
    assert list(outline.texts_to_avoid()) == []
    outline.push(b'<tool_call>{"name": "tag", "arguments": {"tags": ["')
    assert list(outline.texts_to_avoid()) == []  # "a" was another call's
    outline.push(b'z", "')
    assert sorted(outline.texts_to_avoid()) == [b"z"]


def test_plain_text_and_tools_that_need_no_outline_keep_nothing_out() -> None:
    outline = _outline("auto")
    outline.push(b'The answer is ["a", "a"] and {"x": 1, "x": 1}' * 8)
    assert list(outline.texts_to_avoid()) == []
    outline = _outline()
    outline.push(b'<tool_call>{"name": "closed", "arguments": {"x": 1')
    assert list(outline.texts_to_avoid()) == []
    closed = [tool for tool in TOOLS if tool["function"]["name"] == "closed"]
    constraint = tools_constraint(closed, "required")
    assert constraint is not None and tool_arguments(constraint.value) is None


def test_a_writer_always_choosing_the_first_allowed_token_writes_valid_calls() -> None:
    """One call, tags of one character each, the lowest token every time: " "
    again and again unless the guard keeps the taken ones out."""
    constraint = tools_constraint(TOOLS, {"type": "function", "function": {"name": "tag"}})
    assert constraint is not None
    end = len(VOCABULARY) - 1
    info = xgr.TokenizerInfo(VOCABULARY, xgr.VocabType.RAW, stop_token_ids=[end])
    compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(constraint.value)
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, len(VOCABULARY))
    guard = RepeatGuard([token.encode("utf-8") for token in VOCABULARY])
    arguments = tool_arguments(constraint.value)
    assert arguments is not None
    outline, written = ToolCallsOutline(arguments), []
    for _ in range(2000):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(bitmask)
        RepeatGuard.restrict(bitmask, 0, guard.banned(outline))
        bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        allowed = set(np.flatnonzero(bits[: len(VOCABULARY)]).tolist())
        assert allowed - set(guard.banned(outline) or ()), f"cornered after {written!r}"
        token = min(allowed)
        assert matcher.accept_token(token)
        if token != end:
            written.append(VOCABULARY[token])
            outline.push(VOCABULARY[token].encode("utf-8"))
    text = "".join(written)
    assert constraint.judge(text) is None, text
    (call,) = parse_tool_calls(text)
    assert len(set(call.arguments["tags"])) == 5 and " " in call.arguments["tags"], text
    body = text.removeprefix("<tool_call>").removesuffix("</tool_call>")
    json.loads(body, object_pairs_hook=_names_once)  # headers' names too (json keeps the last)
    assert len(call.arguments["headers"]) == 3, text


def _names_once(pairs: list[tuple[str, object]]) -> dict:
    names = [name for name, _ in pairs]
    assert len(set(names)) == len(names), names
    return dict(pairs)


def test_a_grammar_that_only_looks_like_tool_calls_has_no_outline() -> None:
    for ebnf in (ARGUMENTS_MARK + '{not json\nroot ::= "x"', ARGUMENTS_MARK + '[1]\nroot ::= "x"'):
        assert tool_arguments(ebnf) is None
