"""OpenAI ``tools`` and ``tool_choice`` on a text completion: checked, then one constraint.

The completion follows the tool-call format of ``tool_calls``
(``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, calls joined
by ``"\\n"``). ``tool_choice`` decides what else it may be:

=============================================== =====================================
``tool_choice``                                 the completion is
=============================================== =====================================
``"none"``                                      unconstrained (no constraint)
``"auto"`` (the default when tools are given)   plain text not starting with
                                                ``<tool_call>``, or tool calls
``"required"``                                  one or more calls of declared tools
``{"type": "function", "function": {"name": N}}`` one or more calls, all of ``N``
=============================================== =====================================

A tool's arguments are enforced by the grammar when it is ``strict``: its
``parameters`` schema is compiled by ``compile_json_schema`` in strict mode
(keywords that cannot be enforced are refused) and must describe an object;
with no ``parameters`` a strict tool takes none (``{}``). Otherwise the
arguments are any JSON object, without free whitespace (``json_mode``): the
schema is the model's to follow, as with OpenAI's non-strict tools.

The constraint's ``report`` combines the callable tools': a strict tool's
schema report with its pointers under ``/tools/N/function/parameters`` (JSON
pointers into the request), and for a tool that is not strict its
``parameters`` listed as not enforced.

Checked, each error naming its field: ``tools`` is a list of at most
``MAX_TOOLS`` ``{"type": "function", "function": {...}}`` objects; names
match ``^[a-zA-Z0-9_-]{1,64}$`` and are unique; ``description`` is a string,
``parameters`` an object, ``strict`` a boolean (each may be null or absent);
``tool_choice`` is one of the forms above, names a declared tool, and is not
``"required"`` without tools. Tools are checked even under ``"none"``: the
request is wrong either way.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from grammar_compiler.canonical import CanonicalConstraint, ConstraintReport, KeywordAt
from grammar_compiler.errors import ConstraintError
from grammar_compiler.field_errors import FieldError, at_field
from grammar_compiler.json_mode import json_object_constraint
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.tool_calls import tool_calls_judge
from grammar_compiler.tool_grammar import tool_calls_grammar

MAX_TOOLS = 128
SOURCE_LANGUAGE = "tools"
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_CHOICES = ("none", "auto", "required")
_NO_PARAMETERS = {"type": "object", "properties": {}, "additionalProperties": False}


def tools_constraint(
    tools: list[dict[str, Any]] | None,
    tool_choice: str | dict[str, Any] | None = None,
    *,
    parallel: bool = True,
) -> CanonicalConstraint | None:
    """The constraint a completion with these ``tools`` and ``tool_choice`` follows.

    ``tool_choice`` None means ``"auto"`` when there are tools, else ``"none"``.
    Returns None when the completion is not constrained (``"none"``, or
    ``"auto"`` without tools). ``parallel`` False (OpenAI's
    ``parallel_tool_calls``) allows one call instead of one or more. The
    constraint is xgrammar EBNF (kind ``"ebnf"``) with a judge that parses
    the calls and checks each one's name and (strict tools) arguments with
    ``jsonschema``.

    Raises:
        FieldError: a tool or ``tool_choice`` is malformed, a name is invalid
            or repeated, a strict tool's ``parameters`` cannot be enforced,
            or ``tool_choice`` names no declared tool or requires a call
            without tools.
    """
    selection = _callable_tools(tool_choice, _declared_tools(tools))
    if selection is None:
        return None
    arguments, allow_text = selection
    return CanonicalConstraint(
        kind="ebnf",
        value=tool_calls_grammar(
            {name: constraint.value for name, constraint in arguments.items()},
            allow_text=allow_text,
            parallel=parallel,
        ),
        source_language=SOURCE_LANGUAGE,
        judge=tool_calls_judge(
            {name: constraint.judge for name, constraint in arguments.items()},
            allow_text=allow_text,
            parallel=parallel,
        ),
        report=ConstraintReport.combined(
            constraint.report for constraint in arguments.values() if constraint.report
        ),
    )


def _declared_tools(tools: object) -> dict[str, CanonicalConstraint]:
    """Each tool's name and the constraint its arguments follow, in declaration order."""
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise FieldError("tools", "must be a list of tools")
    if len(tools) > MAX_TOOLS:
        raise FieldError("tools", f"holds {len(tools)} tools (at most {MAX_TOOLS})")
    declared: dict[str, CanonicalConstraint] = {}
    first_index: dict[str, int] = {}
    for index, tool in enumerate(tools):
        field = f"tools[{index}]"
        function = _function(tool, field)
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise FieldError(
                f"{field}.function.name", "must be 1 to 64 letters, digits, '_' or '-'"
            )
        if name in declared:
            raise FieldError(
                f"{field}.function.name",
                f"{name!r} is already the name of tools[{first_index[name]}]",
            )
        declared[name] = _arguments(function, f"{field}.function", f"/tools/{index}/function")
        first_index[name] = index
    return declared


def _function(tool: object, field: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise FieldError(field, 'must be an object {"type": "function", "function": {...}}')
    if tool.get("type") != "function":
        raise FieldError(f"{field}.type", 'must be "function"')
    function = tool.get("function")
    if not isinstance(function, dict):
        raise FieldError(f"{field}.function", "must be an object with a name")
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise FieldError(f"{field}.function.description", "must be a string")
    strict = function.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise FieldError(f"{field}.function.strict", "must be true or false")
    parameters = function.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise FieldError(f"{field}.function.parameters", "must be a JSON Schema object")
    return function


def _arguments(function: dict[str, Any], field: str, where: str) -> CanonicalConstraint:
    """What the arguments follow: the strict tool's parameters, else any JSON object.

    ``where`` is the function's JSON pointer in the request, for the report.
    """
    parameters = function.get("parameters")
    if not function.get("strict"):
        unused = (KeywordAt("parameters", where, "the tool is not strict"),) if parameters else ()
        return replace(json_object_constraint(), report=ConstraintReport(not_enforced=unused))
    if parameters is None:
        parameters = _NO_PARAMETERS
    elif parameters.get("type") != "object":
        raise FieldError(
            f"{field}.parameters", 'a strict tool\'s parameters must have "type": "object"'
        )
    try:
        # The decoder keeps each call's names and unique items apart, as for a
        # schema given whole (the grammar's first line: ``tool_grammar``).
        constraint = compile_json_schema(parameters, strict=True, decoder_guard=True)
    except ConstraintError as err:
        raise at_field(f"{field}.parameters", err) from None
    return replace(constraint, report=constraint.report.prefixed(f"{where}/parameters"))


def _callable_tools(
    tool_choice: object, declared: dict[str, CanonicalConstraint]
) -> tuple[dict[str, CanonicalConstraint], bool] | None:
    """The tools a completion may call and whether it may be plain text; None if unconstrained."""
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, str):
        if tool_choice not in _CHOICES:
            raise FieldError(
                "tool_choice", 'must be "none", "auto", "required" or a function object'
            )
        if tool_choice == "required" and not declared:
            raise FieldError("tool_choice", '"required" needs at least one tool in tools')
        if tool_choice == "none" or not declared:
            return None
        return declared, tool_choice == "auto"
    if not isinstance(tool_choice, dict) or tool_choice.get("type") != "function":
        raise FieldError(
            "tool_choice", 'must be "none", "auto", "required" or {"type": "function", ...}'
        )
    function = tool_choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise FieldError("tool_choice.function.name", "must be a string")
    if name not in declared:
        raise FieldError("tool_choice.function.name", f"no tool named {name!r} in tools")
    return {name: declared[name]}, False
