"""How a text completion calls tools, and the parser and judge of that format.

A chat model wraps tool calls in markup of its chat template; a text
completion has no such structure, so this service defines one. A tool call is
one line of text::

    <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>

and a completion that calls tools is one or more calls joined by a single
``"\\n"``, with nothing before the first or after the last. ``arguments`` is
always a JSON object. The grammar (``tool_grammar``) generates exactly this
layout: ``{"name": ..., "arguments": ...}`` in that order, xgrammar's ``", "``
and ``": "`` separators and no other whitespace. The parser reads the object
between the tags as JSON, so it also accepts other layouts of the same
object (key order, whitespace inside the braces), but not whitespace around
the tags or separators other than ``"\\n"``.

With ``tool_choice="auto"`` a completion is either plain text — any text
that does not start with ``<tool_call>``, the empty text included — or tool
calls. Text starting with ``<tool_call>`` is never plain text, so a reader
can tell the two apart from the first characters.

Nothing here uses xgrammar: the judge checks xgrammar's output with
``json`` and ``jsonschema`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grammar_compiler.canonical import Judge

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
TOOL_CALL_SEPARATOR = "\n"


@dataclass(frozen=True)
class ToolCall:
    """One call read from a completion: the tool's name and its arguments object."""

    name: str
    arguments: dict[str, Any]


class _Malformed(Exception):
    """Text that starts like tool calls but is not; the message says where it goes wrong."""


def parse_tool_calls(text: str) -> list[ToolCall] | None:
    """The calls in ``text``, or None when ``text`` is not a sequence of tool calls.

    Whether the calls name declared tools with valid arguments is the
    judge's business (``tool_calls_judge``), not the parser's.
    """
    try:
        return _read_calls(text)
    except _Malformed:
        return None


def is_plain_text(text: str) -> bool:
    """Whether ``text`` counts as plain text rather than tool calls under ``tool_choice="auto"``."""
    return not text.startswith(TOOL_CALL_OPEN)


def tool_calls_judge(
    arguments_judges: Mapping[str, Judge], *, allow_text: bool, parallel: bool = True
) -> Judge:
    """The judge of a completion that may call the tools in ``arguments_judges``.

    Args:
        arguments_judges: for each tool that may be called, the judge of its
            arguments as JSON text.
        allow_text: whether plain text passes too (``tool_choice="auto"``).
        parallel: whether several calls may follow each other.
    """

    def judge(text: str) -> str | None:
        if allow_text and is_plain_text(text):
            return None
        try:
            calls = _read_calls(text)
        except _Malformed as malformed:
            return str(malformed)
        if not parallel and len(calls) > 1:
            return f"{len(calls)} tool calls where parallel_tool_calls allows one"
        for number, call in enumerate(calls, start=1):
            if call.name not in arguments_judges:
                return f"tool call {number}: no tool named {call.name!r} may be called"
            reason = arguments_judges[call.name](json.dumps(call.arguments))
            if reason is not None:
                return f"tool call {number} ({call.name}) arguments: {reason}"
        return None

    return judge


def _read_calls(text: str) -> list[ToolCall]:
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    calls = []
    position = 0
    while True:
        number = len(calls) + 1
        if not text.startswith(TOOL_CALL_OPEN, position):
            raise _Malformed(f"expected {TOOL_CALL_OPEN!r} at position {position}")
        position += len(TOOL_CALL_OPEN)
        try:
            value, position = decoder.raw_decode(text, position)
        except ValueError as err:
            raise _Malformed(f"tool call {number} is not JSON: {err}") from None
        except RecursionError:
            raise _Malformed(f"tool call {number} nests too deeply to be read") from None
        calls.append(_call(value, number))
        if not text.startswith(TOOL_CALL_CLOSE, position):
            raise _Malformed(f"expected {TOOL_CALL_CLOSE!r} at position {position}")
        position += len(TOOL_CALL_CLOSE)
        if position == len(text):
            return calls
        if not text.startswith(TOOL_CALL_SEPARATOR, position):
            raise _Malformed(f"expected a newline and the next call at position {position}")
        position += len(TOOL_CALL_SEPARATOR)


def _call(value: object, number: int) -> ToolCall:
    if not isinstance(value, dict) or set(value) != {"name", "arguments"}:
        raise _Malformed(f'tool call {number} must be an object with just "name" and "arguments"')
    name, arguments = value["name"], value["arguments"]
    if not isinstance(name, str):
        raise _Malformed(f"tool call {number}: the name must be a string")
    if not isinstance(arguments, dict):
        raise _Malformed(f"tool call {number}: the arguments must be a JSON object")
    return ToolCall(name, arguments)


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")
