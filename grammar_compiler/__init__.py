"""User constraints (regex now; BNF/GBNF, Lark, JSON Schema, TypeScript types later) -> xgrammar.

Pure Python, no Triton: the HTTP frontend uses it to reject a bad constraint
early with a 400 that says where the mistake is (``ConstraintError``), and the
decoder uses it to get the one canonical form that xgrammar compiles.
"""

from grammar_compiler.cfg import compile_grammar
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.regex import compile_regex
from grammar_compiler.typescript import compile_typescript, typescript_to_json_schema

__all__ = [
    "ConstraintError",
    "compile_grammar",
    "compile_json_schema",
    "compile_regex",
    "compile_typescript",
    "typescript_to_json_schema",
]
