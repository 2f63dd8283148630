"""Keeps each tool call's arguments from repeating a name or a unique array's item.

Why: a strict tool's arguments are a JSON Schema inside the tool-call
grammar (``grammar_compiler/tool_grammar.py``), and xgrammar can no more
keep names or unique items apart there than in a schema given whole. The
grammar's first line (``ARGUMENTS_MARK``) carries each tool's argument
schema; this follows the output call by call and hands each call's
arguments to a ``JsonOutline`` of its tool's schema, so the decoder's
repeat guard works inside them as it does for ``response_format``.

The layout is the grammar's own (``grammar_compiler/tool_calls.py``):
``<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>``, calls joined
by a newline. Where the output is plain text instead (``tool_choice``
``"auto"``), no call starts and nothing is kept out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from engine.json_repeats import JsonOutline, needs_outline
from grammar_compiler.tool_calls import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_SEPARATOR
from grammar_compiler.tool_grammar import ARGUMENTS_MARK

_HEAD_END = b', "arguments": '
"""How a call's head ends: it is matched only once it has (every byte is fed here)."""
_HEAD = re.compile(
    b"(?:"
    + re.escape(f"}}{TOOL_CALL_CLOSE}{TOOL_CALL_SEPARATOR}".encode())
    + b")?"
    + re.escape(f'{TOOL_CALL_OPEN}{{"name": '.encode())
    + rb'("(?:[^"\\]|\\.)*")'
    + re.escape(_HEAD_END)
)
"""What comes before a call's arguments: the end of the call before, if any."""
_MAX_HEAD = 256
"""Bytes past which no call can be starting (names have at most 64 characters)."""


class ToolArguments(NamedTuple):
    """Each tool's argument schema, and the tools whose arguments may repeat a
    name or hold a unique array (``needs_outline``)."""

    schemas: dict[str, Any]
    repeating: frozenset[str]


def tool_arguments(ebnf: str) -> ToolArguments | None:
    """The argument schemas of a tool-call grammar (its first line); None for
    any other grammar, or where no tool's arguments need following."""
    if not ebnf.startswith(ARGUMENTS_MARK):
        return None
    try:  # a grammar sent straight to Triton may start with anything
        schemas = json.loads(ebnf[len(ARGUMENTS_MARK) : ebnf.find("\n")])
    except ValueError:
        return None
    if not isinstance(schemas, dict):
        return None
    repeating = frozenset(name for name, schema in schemas.items() if needs_outline(schema))
    return ToolArguments(schemas, repeating) if repeating else None


class ToolCallsOutline:
    """The outline of one row's tool calls, fed byte by byte: the arguments of
    the call being written, followed by a ``JsonOutline`` of its tool's schema."""

    room = None  # tool arguments keep their string lengths in the grammar
    repeats = True

    def __init__(self, arguments: ToolArguments) -> None:
        self._arguments = arguments
        self._head = bytearray()  # since the last call's arguments ended
        self._call: JsonOutline | None = None
        self._plain = False  # the output is text, not calls

    def push(self, piece: bytes) -> None:
        for byte in piece:
            if self._call is not None:
                self._call.push(bytes((byte,)))
                if self._call.finished:
                    self._call = None
                continue
            if self._plain:
                continue
            self._head.append(byte)
            found = _HEAD.fullmatch(self._head) if self._head.endswith(_HEAD_END) else None
            if found is not None:
                name = json.loads(found.group(1))  # before the buffer it reads is cleared
                self._head.clear()
                schema = self._arguments.schemas.get(name, {})
                self._call = JsonOutline(schema, repeats=name in self._arguments.repeating)
            elif len(self._head) > _MAX_HEAD:
                self._plain = True

    def texts_to_avoid(self) -> Iterator[bytes]:
        """The call's arguments' (``JsonOutline.texts_to_avoid``); nothing between calls."""
        if self._call is not None and self._call.repeats:
            yield from self._call.texts_to_avoid()


Outline = JsonOutline | ToolCallsOutline
"""What the decoder follows of a row's output for its repeat and length guards."""
