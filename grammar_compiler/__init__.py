"""What users write -> what xgrammar compiles, plus an independent judge.

Regexes, the cfg document's BNF, GBNF/xgrammar EBNF, Lark, llguidance's
wrapper, JSON Schema (drafts 4 to 2020-12), TypeScript type definitions,
OpenAI's ``response_format`` and tools each become one canonical constraint
(a regex, EBNF or JSON Schema for xgrammar) with a report of what is enforced
and a judge that re-checks outputs without xgrammar. Pure Python, no Triton:
the HTTP frontend uses it to reject a bad constraint early with a 400 that
says where the mistake is (``ConstraintError``), and the decoder compiles the
canonical form.
"""

from grammar_compiler.cfg import compile_grammar
from grammar_compiler.errors import ConstraintError
from grammar_compiler.field_errors import FieldError
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.openai_constraints import grammar_constraint, response_format_constraint
from grammar_compiler.regex import compile_regex
from grammar_compiler.tool_calls import ToolCall, parse_tool_calls
from grammar_compiler.tools import tools_constraint
from grammar_compiler.typescript import compile_typescript, typescript_to_json_schema

__all__ = [
    "ConstraintError",
    "FieldError",
    "ToolCall",
    "compile_grammar",
    "compile_json_schema",
    "compile_regex",
    "compile_typescript",
    "grammar_constraint",
    "parse_tool_calls",
    "response_format_constraint",
    "tools_constraint",
    "typescript_to_json_schema",
]
