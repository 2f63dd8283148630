"""The OpenAI-style constraint fields: ``grammar``, ``response_format``, ``tools``/``tool_choice``.

Every constraint is compiled by a real xgrammar ``GrammarCompiler`` the way
``engine.grammar_cache`` compiles its kind, and texts are fed to a
``GrammarMatcher`` character by character (``accept_string``), so "the
grammar refuses" means xgrammar refuses. The constraint's own judge is
asked about the same texts; the two must agree. Random walks through the
tool-call grammar check that everything xgrammar lets a model write passes
the judge and parses as tool calls.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import numpy as np
import pytest
import xgrammar as xgr

from grammar_compiler import (
    FieldError,
    ToolCall,
    grammar_constraint,
    parse_tool_calls,
    response_format_constraint,
    tools_constraint,
)
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.tool_calls import tool_calls_judge
from grammar_compiler.tool_grammar import ARGUMENTS_MARK
from grammar_compiler.tools import MAX_TOOLS

_CHARACTERS = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def _compile(compiler: xgr.GrammarCompiler, constraint: CanonicalConstraint) -> xgr.CompiledGrammar:
    """As ``engine.grammar_cache.GrammarCache`` compiles each kind."""
    if constraint.kind == "regex":
        return compiler.compile_regex(constraint.value)
    if constraint.kind == "ebnf":
        return compiler.compile_grammar(constraint.value)
    return compiler.compile_json_schema(constraint.value, any_whitespace=False)


class _Checked:
    """A constraint with its xgrammar matcher, asked about whole texts and prefixes."""

    def __init__(self, constraint: CanonicalConstraint) -> None:
        self.constraint = constraint
        self._matcher = xgr.GrammarMatcher(
            _compile(_CHARACTERS, constraint), terminate_without_stop_token=True
        )

    def grammar_accepts(self, text: str) -> bool:
        self._matcher.reset()
        return self._matcher.accept_string(text) and self._matcher.is_terminated()

    def grammar_continues(self, prefix: str, more: str) -> bool:
        """Whether xgrammar, having read ``prefix``, lets ``more`` follow."""
        self._matcher.reset()
        assert self._matcher.accept_string(prefix), prefix
        return self._matcher.accept_string(more)

    def assert_agrees(self, good: list[str], bad: list[str]) -> None:
        for text in good:
            assert self.grammar_accepts(text), text
            assert self.constraint.judge(text) is None, text
        for text in bad:
            assert not self.grammar_accepts(text), text
            assert self.constraint.judge(text) is not None, text

    def assert_layout_refused(self, texts: list[str]) -> None:
        """Valid JSON in another layout: the grammar fixes the layout, the judge reads JSON."""
        for text in texts:
            assert not self.grammar_accepts(text), text
            assert self.constraint.judge(text) is None, text


def _field_error(call: Callable[..., object], *args: object) -> FieldError:
    with pytest.raises(FieldError) as caught:
        call(*args)
    return caught.value


# ---------------------------------------------------------------------------
# grammar: {type, value}

_GRAMMARS = {
    "regex": (r"[0-9]{3}-[a-z]+", ["123-abc"], ["12-abc", "123-"], "a(?=b)"),
    "json_schema": (
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        ['{"n": 3}'],
        ['{"n": "3"}', "{}"],
        {"type": "strin"},
    ),
    "lark": ('start: "a" NUM\nNUM: /[0-9]+/', ["a12"], ["a", "b1"], "start: undefined_rule"),
    "gbnf": ('root ::= "x" [0-9]+', ["x9"], ["x"], "root ::= missing"),
    "ebnf": ('root ::= ("ab")*', ["", "abab"], ["aba"], 'root ::= "unclosed'),
    "bnf": ("<start> ::= <noun> <verb>", ["noun verb"], ["nounverb"], "<start> ::= <a> |"),
    "abnf": ('date = 4DIGIT "-" 2DIGIT', ["2024-05"], ["24-05"], "date = <prose>"),
    "iso-ebnf": ('d = "0" | "1", { "0" } ;', ["0", "100"], ["2"], 'd = "0" |'),
    "w3c-ebnf": ("d ::= [0-9]+ '%'", ["12%"], ["12"], "d ::= 'x"),
    "llguidance": (
        {"grammars": [{"lark_grammar": 'start: "yes" | "no"'}]},
        ["yes", "no"],
        ["maybe"],
        {"grammars": [{"lark_grammar": "start: nothing"}]},
    ),
}


@pytest.mark.parametrize("grammar_type", sorted(_GRAMMARS))
def test_each_grammar_type_compiles_and_is_enforced(grammar_type: str) -> None:
    value, good, bad, _ = _GRAMMARS[grammar_type]
    _Checked(grammar_constraint(grammar_type, value)).assert_agrees(good, bad)


@pytest.mark.parametrize("grammar_type", sorted(_GRAMMARS))
def test_each_grammar_type_names_the_field_of_a_mistake(grammar_type: str) -> None:
    error = _field_error(grammar_constraint, grammar_type, _GRAMMARS[grammar_type][3])
    assert error.field.startswith("grammar.value")
    assert str(error).startswith(error.field + ": ")


def test_grammar_errors_keep_the_location_inside_the_value() -> None:
    error = _field_error(grammar_constraint, "gbnf", 'root ::= "a"\nb ::= missing')
    assert (error.field, error.line) == ("grammar.value", 2)
    assert _field_error(grammar_constraint, "regex", "ab(?<=x)").position == 2


def test_json_schema_value_may_be_json_text() -> None:
    text = json.dumps(_GRAMMARS["json_schema"][0])
    _Checked(grammar_constraint("json_schema", text)).assert_agrees(['{"n": 1}'], ['{"n": 1.5}'])
    assert _field_error(grammar_constraint, "json_schema", "{not json").field == "grammar.value"


def test_unknown_grammar_type_and_wrong_value_types_are_refused() -> None:
    assert _field_error(grammar_constraint, "xml", "<a/>").field == "grammar.type"
    for grammar_type in ("regex", "lark", "gbnf", "ebnf", "bnf"):
        error = _field_error(grammar_constraint, grammar_type, {"not": "text"})
        assert error.field == "grammar.value"
        assert "must be a string" in str(error)


# ---------------------------------------------------------------------------
# grammar type llguidance


def test_llguidance_wrapper_takes_a_lark_grammar_as_object_or_json_text() -> None:
    wrapper = {"grammars": [{"name": "main", "lark_grammar": 'start: "a"+'}], "max_tokens": None}
    for value in (wrapper, json.dumps(wrapper)):
        constraint = grammar_constraint("llguidance", value)
        assert (constraint.kind, constraint.source_language) == ("ebnf", "llguidance")
        _Checked(constraint).assert_agrees(["a", "aaa"], ["", "ab"])


def test_llguidance_wrapper_takes_a_json_schema() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    for value in (
        {"grammars": [{"json_schema": schema}]},
        json.dumps({"grammars": [{"json_schema": schema}]}),
    ):
        constraint = grammar_constraint("llguidance", value)
        assert constraint.kind == "json_schema"
        _Checked(constraint).assert_agrees(['{"ok": true}'], ['{"ok": 1}', "{}"])


def test_llguidance_options_that_keep_the_language_are_dropped() -> None:
    for options in ("{}", '{"no_forcing": true}', '{"allow_invalid_utf8": false}'):
        lark_text = f'%llguidance {options}\nstart: "a" b\nb: "b"'
        constraint = grammar_constraint("llguidance", {"grammars": [{"lark_grammar": lark_text}]})
        _Checked(constraint).assert_agrees(["ab"], ["a"])
    # Lines are kept: a mistake below the options is reported on its own line.
    broken = '%llguidance {}\nstart: "a"\nb: missing'
    error = _field_error(grammar_constraint, "llguidance", {"grammars": [{"lark_grammar": broken}]})
    assert error.line == 3


_DIALECT = """%llguidance {}
start: <think> "\\n" /(.|\\n)*?<\\/think>/ answer{1,2}
answer: %json {"type": "object", "properties": {"city": {"type": "string"}},
               "required": ["city"]} | ""
"""


@pytest.mark.parametrize("grammar_type", ["lark", "llguidance"])
def test_lark_and_llguidance_types_read_llguidance_dialect_as_raw_text(grammar_type: str) -> None:
    constraint = grammar_constraint(grammar_type, _DIALECT)
    assert constraint.source_language == grammar_type
    checked = _Checked(constraint)
    checked.assert_agrees(
        [
            '<think>\nhm</think>{"city": "Paris"}',
            '<think>\n</think>{"city": "a"}{"city": "b"}',
            "<think>\n</think>",
        ],
        [
            '<think>\nhm</think>{"city": 1}',
            '<think>\n</think>x</think>{"city": "a"}',
            '<think>\n</think>{"city": "a"}{"city": "b"}{"city": "c"}',
        ],
    )
    checked.assert_layout_refused(['<think>\n</think>{"city":"Paris"}'])


def test_llguidance_raw_text_mistakes_name_the_value() -> None:
    error = _field_error(grammar_constraint, "llguidance", 'start: "a"\nb: <[128010]>')
    assert (error.field, error.line, error.column) == ("grammar.value", 2, 4)
    assert "given by id" in str(error)


@pytest.mark.parametrize(
    ("lark_text", "feature", "line", "column"),
    [
        ('start: %regex {"substring_words": "a b"}', "%regex", 1, 8),
        ("start: @other", "@name", 1, 8),
        ("start: <[128010]>", "given by id", 1, 8),
        ("start: <[128000-128255]>", "given by id", 1, 8),
        ('start: A\nA: "a" <think>', "only be used in rules", 2, 8),
        ('start: gen\ngen[stop="\\n", max_tokens=5]: /.*/', "rule option stop=", 2, 5),
        ("start: /[a-z]+/ & ~/if/", "intersection", 1, 17),
        ('%llguidance {"allow_invalid_utf8": true}\nstart: "a"', "allow_invalid_utf8", 1, 1),
        ('%llguidance {"skip_repetition": "once"}\nstart: "a"', "skip_repetition", 1, 1),
        ('start: "a" /(ab|a)*?b/', "lazy quantifier on more than one character", 1, 12),
    ],
)
def test_llguidance_extensions_that_stay_refused_are_named(
    lark_text: str, feature: str, line: int, column: int | None
) -> None:
    error = _field_error(
        grammar_constraint, "llguidance", {"grammars": [{"lark_grammar": lark_text}]}
    )
    assert error.field == "grammar.value.grammars[0].lark_grammar"
    assert feature in str(error)
    assert (error.line, error.column) == (line, column)


def test_plain_lark_mistakes_in_llguidance_are_reported_as_lark_reports_them() -> None:
    error = _field_error(
        grammar_constraint, "llguidance", {"grammars": [{"lark_grammar": "start: missing"}]}
    )
    assert "llguidance" not in str(error)
    assert "missing" in str(error)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"grammars": []}, "grammar.value.grammars"),
        ({"grammars": [{"lark_grammar": 'start: "a"'}] * 2}, "grammar.value.grammars"),
        (
            {"grammars": [{"lark_grammar": 'start: "a"'}], "max_tokens": 5},
            "grammar.value.max_tokens",
        ),
        ({"grammars": [{"lark_grammar": 'start: "a"'}], "extra": 1}, "grammar.value.extra"),
        ({"grammars": [{"nodes": [], "lark_grammar": "s"}]}, "grammar.value.grammars[0].nodes"),
        (
            {"grammars": [{"lark_grammar": 'start: "a"', "json_schema": {}}]},
            "grammar.value.grammars[0]",
        ),
        ({"grammars": [{"name": "nothing"}]}, "grammar.value.grammars[0]"),
        ({"grammars": ["start: 'a'"]}, "grammar.value.grammars[0]"),
        ({"grammars": [{"lark_grammar": 7}]}, "grammar.value.grammars[0].lark_grammar"),
        (
            {"grammars": [{"json_schema": {"type": "array", "uniqueItems": True, "minItems": 2}}]},
            "grammar.value.grammars[0].json_schema",
        ),
        ('{"grammars": [', "grammar.value"),
        (["grammars"], "grammar.value"),
        ("start: missing", "grammar.value"),
    ],
)
def test_llguidance_wrapper_mistakes_name_their_field(value: object, field: str) -> None:
    assert _field_error(grammar_constraint, "llguidance", value).field == field


# ---------------------------------------------------------------------------
# response_format


def test_text_response_format_is_unconstrained() -> None:
    assert response_format_constraint({"type": "text"}) is None


def test_json_object_mode_accepts_any_object_and_nothing_else() -> None:
    constraint = response_format_constraint({"type": "json_object"})
    assert constraint.source_language == "json_object"
    checked = _Checked(constraint)
    checked.assert_agrees(
        ["{}", '{"a": [1, {"b": null}], "c": "d"}'],
        ["[]", '"text"', "3", "{", '{"a": 1', ""],
    )
    checked.assert_layout_refused(['{"a" : 1}', "{ }", '{"a":1}', ' {"a": 1}', '{"a": 1}\n'])


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
    ],
)
def test_json_mode_cannot_run_away_into_whitespace(response_format: dict) -> None:
    checked = _Checked(response_format_constraint(response_format))
    for prefix in ("", "{", '{"a"', '{"a": ', '{"a": 1', '{"a": [', '{"a": [1, ', "{}"):
        assert not checked.grammar_continues(prefix, " "), prefix
        assert not checked.grammar_continues(prefix, "\n"), prefix
    # The separators' own single spaces are the only whitespace there is.
    for prefix in ('{"a":', '{"a": 1,', '{"a": [1,'):
        assert checked.grammar_continues(prefix, " ")
        assert not checked.grammar_continues(prefix, "  ")


def test_json_mode_contrasts_with_standard_json_whitespace() -> None:
    """Why JSON mode is not xgrammar's standard JSON grammar: it takes any run of spaces."""
    matcher = xgr.GrammarMatcher(_CHARACTERS.compile_builtin_json_grammar())
    assert matcher.accept_string("{" + " " * 1000)


def test_json_object_with_schema_enforces_the_schema_strictly() -> None:
    schema = {"type": "object", "properties": {"n": {"enum": [1, 2]}}, "required": ["n"]}
    checked = _Checked(response_format_constraint({"type": "json_object", "schema": schema}))
    checked.assert_agrees(['{"n": 1}'], ['{"n": 3}', "{}"])
    error = _field_error(
        response_format_constraint,
        {
            "type": "json_object",
            "schema": {"items": {"type": "object"}, "uniqueItems": True, "minItems": 2},
        },
    )
    assert error.field == "response_format.schema"


def test_openai_json_schema_format_is_strict_only_when_asked() -> None:
    schema = {"type": "array", "items": {"type": "number", "multipleOf": 0.5}, "uniqueItems": True}
    schema["minItems"] = 2  # (one item would be a subset strict mode writes)
    strict = {
        "type": "json_schema",
        "json_schema": {"name": "ids", "schema": schema, "strict": True},
    }
    error = _field_error(response_format_constraint, strict)
    assert error.field == "response_format.json_schema.schema"
    assert "uniqueItems" in str(error)
    for lenient in (False, None):
        options = {"name": "ids", "schema": schema, "strict": lenient}
        constraint = response_format_constraint({"type": "json_schema", "json_schema": options})
        assert constraint.not_enforced == ("uniqueItems at the root",)
        checked = _Checked(constraint)
        assert checked.grammar_accepts("[1, 1]")  # not enforced by the grammar ...
        assert constraint.judge("[1, 1]") is not None  # ... and the judge says so
        checked.assert_agrees(["[1, 2]"], ['["a"]'])


def test_unique_items_of_plain_scalars_are_enforced_in_a_schema_given_whole() -> None:
    """The decoder keeps them apart (engine/json_repeats.py); the canonical schema
    says where, and the report counts the keyword as enforced."""
    schema = {"type": "array", "items": {"enum": ["a", "b", 1]}, "uniqueItems": True}
    strict = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema, "strict": True}}
    constraint = response_format_constraint(strict)
    assert json.loads(constraint.value)["uniqueItems"] is True
    assert constraint.not_enforced == ()
    assert ("uniqueItems", 1) in constraint.report.enforced
    pairs = {**schema, "minItems": 2}  # (one item, always unique, would be written)
    inside = _field_error(grammar_constraint, "lark", f"start: %json {json.dumps(pairs)}")
    assert "uniqueItems" in str(inside)


@pytest.mark.parametrize(
    ("response_format", "field"),
    [
        ("json_object", "response_format"),
        ({"type": "yaml"}, "response_format.type"),
        ({}, "response_format.type"),
        ({"type": "json_schema"}, "response_format.json_schema"),
        (
            {"type": "json_schema", "json_schema": {"name": "x"}},
            "response_format.json_schema.schema",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": 3, "schema": {}}},
            "response_format.json_schema.name",
        ),
        (
            {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}},
            "response_format.json_schema.strict",
        ),
        ({"type": "json_object", "schema": 12}, "response_format.schema"),
        ({"type": "json_object", "schema": {"type": "nope"}}, "response_format.schema"),
    ],
)
def test_response_format_mistakes_name_their_field(response_format: object, field: str) -> None:
    assert _field_error(response_format_constraint, response_format).field == field


# ---------------------------------------------------------------------------
# tools and tool_choice

_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 20},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
_SEARCH = {
    "type": "function",
    "function": {
        "name": "web-search_2",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
_TOOLS = [_WEATHER, _SEARCH]


def _call(name: str, arguments: object) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(arguments)}}}</tool_call>'


_PARIS = _call("get_weather", {"city": "Paris"})
_PARIS_3_DAYS = _call("get_weather", {"city": "Paris", "days": 3})
_SEARCH_CALL = _call("web-search_2", {"query": "xgrammar"})


_HALVES = {"type": "array", "items": {"type": "number", "multipleOf": 0.5}, "minItems": 2}
"""Items no decoder guard keeps apart, under uniqueItems (two of them: one is always unique)."""


def test_tool_calls_are_an_ebnf_constraint_that_xgrammar_reads_back_unchanged() -> None:
    """After its first line: the argument schemas, a comment to xgrammar, for
    the decoder's repeat guard (``engine.tool_outline``)."""
    constraint = tools_constraint(_TOOLS, "auto")
    assert (constraint.kind, constraint.source_language) == ("ebnf", "tools")
    first, rules = constraint.value.split("\n", 1)
    assert str(xgr.Grammar.from_ebnf(constraint.value)) == rules
    schemas = json.loads(first.removeprefix(ARGUMENTS_MARK))
    assert list(schemas) == ["get_weather", "web-search_2"]
    assert schemas["web-search_2"] == {"type": "object"}  # not strict: any object


def test_valid_tool_calls_are_accepted_and_parsed() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "required"))
    several = "\n".join([_PARIS, _SEARCH_CALL, _PARIS_3_DAYS])
    checked.assert_agrees([_PARIS, _PARIS_3_DAYS, _SEARCH_CALL, several], [])
    assert parse_tool_calls(several) == [
        ToolCall("get_weather", {"city": "Paris"}),
        ToolCall("web-search_2", {"query": "xgrammar"}),
        ToolCall("get_weather", {"city": "Paris", "days": 3}),
    ]


def test_tools_with_the_same_string_pattern_share_one_regex_rule() -> None:
    """xgrammar builds a JSON string's negated-class pattern (a maxLength
    string) once per copy of its Regex rule; each tool brings its own copy,
    so the tool grammar keeps one and points the others at it."""
    twin = json.loads(json.dumps(_WEATHER))
    twin["function"]["name"] = "get_forecast"
    constraint = tools_constraint([_WEATHER, twin], "required")
    regex_rules = [line for line in constraint.value.splitlines() if " ::= Regex(" in line]
    assert len(regex_rules) == 1
    checked = _Checked(constraint)
    checked.assert_agrees(
        [_PARIS, _call("get_forecast", {"city": "Lyon", "days": 2})],
        [_call("get_forecast", {"city": "L" * 21}), _call("get_weather", {"city": "P" * 21})],
    )


def test_strict_tool_arguments_that_break_the_schema_are_refused_by_the_grammar() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "required"))
    checked.assert_agrees(
        [],
        [
            _call("get_weather", {"city": "Paris", "days": 9}),  # maximum
            _call("get_weather", {"days": 3}),  # required
            _call("get_weather", {"city": "Paris", "unit": "C"}),  # additionalProperties
            _call("get_weather", {"city": "P" * 21}),  # maxLength
            _call("get_weather", {"city": 75}),  # type
        ],
    )
    reason = checked.constraint.judge(_call("get_weather", {"city": "Paris", "days": 9}))
    assert "get_weather" in reason and "maximum" in reason


def test_non_strict_tool_takes_any_object_without_free_whitespace() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "required"))
    checked.assert_agrees(
        [
            _call("web-search_2", {}),
            _call("web-search_2", {"query": 7, "other": [True, {"x": None}]}),
        ],
        [
            _call("web-search_2", [1, 2]),
            _call("web-search_2", "query"),
            _call("web-search_2", None),
        ],
    )
    checked.assert_layout_refused(
        ['<tool_call>{"name": "web-search_2", "arguments": { }}</tool_call>']
    )
    prefix = '<tool_call>{"name": "web-search_2", "arguments": {'
    assert not checked.grammar_continues(prefix, " ")


def test_the_call_layout_is_exact() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "required"))
    checked.assert_agrees(
        [],
        [
            "",
            _PARIS + "\n",
            _PARIS + "\n\n" + _PARIS,
            " " + _PARIS,
            _PARIS.replace("<tool_call>", "<tool_call> "),
            '<tool_call>{"name": "get_weather"}</tool_call>',
            '<tool_call>{"name": "nobody", "arguments": {}}</tool_call>',
        ],
    )


def test_auto_accepts_plain_text_or_tool_calls() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "auto"))
    checked.assert_agrees(
        [
            "",
            "It is sunny.",
            "<tool",
            " <tool_call>",
            "Line\n<tool_call>",
            _PARIS,
            _PARIS + "\n" + _SEARCH_CALL,
        ],
        [
            "<tool_call>",
            "<tool_call>It is sunny.",
            _call("get_weather", {"city": 1}),
            _PARIS + " ok",
        ],
    )
    assert tools_constraint(_TOOLS).value == checked.constraint.value  # auto is the default


def test_required_refuses_plain_text() -> None:
    checked = _Checked(tools_constraint(_TOOLS, "required"))
    checked.assert_agrees([_PARIS], ["", "It is sunny.", "I will call get_weather."])


def test_a_named_tool_choice_allows_calls_of_that_tool_only() -> None:
    choice = {"type": "function", "function": {"name": "web-search_2"}}
    checked = _Checked(tools_constraint(_TOOLS, choice))
    checked.assert_agrees([_SEARCH_CALL, _SEARCH_CALL + "\n" + _SEARCH_CALL], [_PARIS, "plain"])
    assert "no tool named 'get_weather'" in checked.constraint.judge(_PARIS)


def test_a_tool_may_be_named_like_a_tool_choice_keyword() -> None:
    tools = [{"type": "function", "function": {"name": "auto"}}, _WEATHER]
    checked = _Checked(tools_constraint(tools, {"type": "function", "function": {"name": "auto"}}))
    checked.assert_agrees([_call("auto", {"x": 1})], [_PARIS, "text"])


def test_a_strict_tool_without_parameters_takes_an_empty_object() -> None:
    tools = [{"type": "function", "function": {"name": "now", "strict": True}}]
    _Checked(tools_constraint(tools, "required")).assert_agrees(
        [_call("now", {})], [_call("now", {"x": 1})]
    )


def test_no_constraint_without_tools_or_with_tool_choice_none() -> None:
    assert tools_constraint(None) is None
    assert tools_constraint([]) is None
    assert tools_constraint(None, "auto") is None
    assert tools_constraint(_TOOLS, "none") is None


_LONG_NAME = "n" * 65


@pytest.mark.parametrize(
    ("tools", "tool_choice", "field"),
    [
        ({"type": "function"}, None, "tools"),
        ([_WEATHER] * 2, None, "tools[1].function.name"),
        ([{"type": "function", "function": {"name": "a b"}}], None, "tools[0].function.name"),
        ([{"type": "function", "function": {"name": _LONG_NAME}}], None, "tools[0].function.name"),
        ([{"type": "function", "function": {}}], None, "tools[0].function.name"),
        ([{"type": "retrieval", "function": {"name": "a"}}], None, "tools[0].type"),
        ([{"type": "function"}], None, "tools[0].function"),
        (["get_weather"], None, "tools[0]"),
        (
            [{"type": "function", "function": {"name": "a", "description": 3}}],
            None,
            "tools[0].function.description",
        ),
        (
            [{"type": "function", "function": {"name": "a", "strict": "yes"}}],
            None,
            "tools[0].function.strict",
        ),
        (
            [{"type": "function", "function": {"name": "a", "parameters": "{}"}}],
            None,
            "tools[0].function.parameters",
        ),
        (
            [
                _SEARCH,
                {
                    "type": "function",
                    "function": {"name": "a", "strict": True, "parameters": {"type": "array"}},
                },
            ],
            None,
            "tools[1].function.parameters",
        ),
        (
            [
                {
                    "type": "function",
                    "function": {
                        "name": "a",
                        "strict": True,
                        "parameters": {
                            "type": "object",
                            "properties": {"x": {**_HALVES, "uniqueItems": True}},
                        },
                    },
                }
            ],
            None,
            "tools[0].function.parameters",
        ),
        ([_WEATHER] + [_SEARCH] * MAX_TOOLS, None, "tools"),
        ([], "required", "tool_choice"),
        (None, "required", "tool_choice"),
        (_TOOLS, "always", "tool_choice"),
        (_TOOLS, {"type": "tool", "function": {"name": "get_weather"}}, "tool_choice"),
        (_TOOLS, {"type": "function", "function": {"name": "nobody"}}, "tool_choice.function.name"),
        (_TOOLS, {"type": "function"}, "tool_choice.function.name"),
        ([_SEARCH, _SEARCH], "none", "tools[1].function.name"),  # checked even under "none"
    ],
)
def test_tool_mistakes_name_their_field(tools: object, tool_choice: object, field: str) -> None:
    assert _field_error(tools_constraint, tools, tool_choice).field == field


def test_unenforceable_strict_schema_is_reported_with_its_keyword() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "tag",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"tags": {**_HALVES, "uniqueItems": True}},
            },
        },
    }
    error = _field_error(tools_constraint, [tool], "auto")
    assert "uniqueItems" in str(error) and "/properties/tags" in str(error)
    tool["function"]["strict"] = False  # the model's business then; any object is allowed
    assert tools_constraint([tool], "auto") is not None


# ---------------------------------------------------------------------------
# parse_tool_calls and the judge on their own


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Plain text",
        "<tool_call>",
        _PARIS + "\n",
        _PARIS + " ",
        "\n" + _PARIS,
        _PARIS.replace("</tool_call>", ""),
        "<tool_call> " + _PARIS[len("<tool_call>") :],
        '<tool_call>{"name": "f", "arguments": []}</tool_call>',
        '<tool_call>{"name": 1, "arguments": {}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {}, "id": 1}</tool_call>',
        '<tool_call>{"name": "f"}</tool_call>',
        '<tool_call>["f", {}]</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>',
        _PARIS + _PARIS,
    ],
)
def test_text_that_is_not_tool_calls_parses_to_none(text: str) -> None:
    assert parse_tool_calls(text) is None


def test_the_parser_reads_any_json_layout_of_a_call() -> None:
    text = '<tool_call>{ "arguments" : {"a":1} ,"name":"f" }</tool_call>'
    assert parse_tool_calls(text) == [ToolCall("f", {"a": 1})]


def test_judge_checks_names_and_arguments() -> None:
    strict = response_format_constraint(
        {
            "type": "json_object",
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }
    )
    judge = tool_calls_judge({"f": strict.judge, "g": lambda _: None}, allow_text=False)
    assert judge(_call("f", {"n": 1}) + "\n" + _call("g", {"anything": "goes"})) is None
    assert "tool call 2 (f) arguments" in judge(_call("g", {}) + "\n" + _call("f", {"n": "1"}))
    assert "no tool named 'h'" in judge(_call("h", {}))
    assert judge("plain") is not None
    assert tool_calls_judge({"f": strict.judge}, allow_text=True)("plain") is None


# ---------------------------------------------------------------------------
# Random walks: whatever xgrammar lets a model write is judged a match

_VOCABULARY = [chr(code) for code in range(32, 127)] + [
    "\n",
    "<tool_call>",
    "</tool_call>",
    '{"name": "',
    '", "arguments": {',
    "get_weather",
    "web-search_2",
    '": ',
    ", ",
    "é",
    "</s>",
]
_END = len(_VOCABULARY) - 1
_TOKENIZER = xgr.TokenizerInfo(_VOCABULARY, xgr.VocabType.RAW, stop_token_ids=[_END])
_TOKENS = xgr.GrammarCompiler(_TOKENIZER, cache_enabled=False)


def _walk(
    compiled: xgr.CompiledGrammar, rng: random.Random, start: str = "", max_tokens: int = 300
) -> str | None:
    """One random path from ``start`` to the end of the grammar (closing characters favoured).

    None if it ran past ``max_tokens``.
    """
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(start)
    bitmask = xgr.allocate_token_bitmask(1, _TOKENIZER.vocab_size)
    pieces = [start]
    for _ in range(max_tokens):
        matcher.fill_next_token_bitmask(bitmask)
        bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        allowed = [int(token) for token in np.flatnonzero(bits[: len(_VOCABULARY)])]
        choices = [token for token in allowed if token != _END]
        if _END in allowed and (not choices or rng.random() < 0.3):
            return "".join(pieces)
        assert choices, f"xgrammar is stuck after {''.join(pieces)!r}"
        weights = [10 if set(_VOCABULARY[token]) & set('"}]>\n') else 1 for token in choices]
        token = rng.choices(choices, weights)[0]
        assert matcher.accept_token(token)
        pieces.append(_VOCABULARY[token])
    return None


@pytest.mark.parametrize(
    "tool_choice", ["auto", "required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_everything_the_tool_grammar_generates_passes_the_judge(tool_choice: object) -> None:
    constraint = tools_constraint(_TOOLS, tool_choice)
    compiled = _compile(_TOKENS, constraint)
    rng = random.Random(7)
    # Under "auto" a model rarely happens upon "<tool_call>", so half the walks start with it.
    starts = ["", "<tool_call>"] if tool_choice == "auto" else [""]
    walks = (_walk(compiled, rng, starts[number % len(starts)]) for number in range(80))
    texts = [text for text in walks if text is not None]
    calls = [text for text in texts if text.startswith("<tool_call>")]
    assert len(calls) > 20
    assert any("\n<tool_call>" in text for text in calls)  # several calls in one completion too
    for text in texts:
        assert constraint.judge(text) is None, text
        assert (parse_tool_calls(text) is not None) == (text in calls), text
