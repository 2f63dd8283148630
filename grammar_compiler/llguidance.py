r"""llguidance's grammars, for clients written against llguidance-based servers.

llguidance takes a ``TopLevelGrammar``: ``{"grammars": [g0, g1, ...]}`` where
each ``g`` holds a ``lark_grammar`` (llguidance's Lark dialect) or a
``json_schema``, and ``g0`` may reference the others (``@name``). Clients
also send the Lark text alone. Both are accepted:

* a text that does not start with ``{`` is a Lark grammar in llguidance's
  dialect, start rule ``start`` (``compile_grammar(text, "lark")``, which
  reads the dialect: ``%json``, special tokens, counts, lazy and empty
  terminals, ``%llguidance`` options; see ``lark_dialect``);
* ``{"grammars": [{"lark_grammar": "start: ..."}]}`` (an object or its JSON
  text) holds exactly one grammar, read the same way;
* ``{"grammars": [{"json_schema": {...}}]}`` is ``compile_json_schema``
  in strict mode (keywords that cannot be enforced are refused). llguidance's
  ``x-guidance`` layout options are annotations to it and change nothing:
  output is xgrammar's ``", "`` / ``": "`` layout without free whitespace.

A grammar entry may also carry a ``name``, which is ignored. Everything else
is refused with the field that holds it: several grammars (so ``@name``
references between them), other entry fields (``nodes``, ``rx_nodes``,
lexer options) and a non-null ``max_tokens``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg import compile_grammar
from grammar_compiler.errors import ConstraintError
from grammar_compiler.field_errors import FieldError, at_field
from grammar_compiler.json_schema import compile_json_schema

SOURCE_LANGUAGE = "llguidance"
_ENTRY_FIELDS = ("name", "lark_grammar", "json_schema")


def llguidance_constraint(value: str | dict, field: str) -> CanonicalConstraint:
    """The constraint of an llguidance grammar: a Lark text, a ``TopLevelGrammar`` or its JSON.

    ``field`` is where the grammar sits in the request (``grammar.value``);
    errors name the field below it that is wrong.

    Raises:
        FieldError: the wrapper is malformed, holds more or other than one
            grammar, or the grammar is invalid or uses an unsupported feature.
    """
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return replace(_lark(value, field), source_language=SOURCE_LANGUAGE)
    document = _load(value, field)
    grammars = document.get("grammars")
    if not isinstance(grammars, list) or not grammars:
        raise FieldError(f"{field}.grammars", "must be a list holding one grammar")
    if len(grammars) > 1:
        raise FieldError(
            f"{field}.grammars",
            f"holds {len(grammars)} grammars; exactly one is supported "
            "(references between grammars, @name, are not; inline a schema with %json)",
        )
    return replace(_grammar(grammars[0], f"{field}.grammars[0]"), source_language=SOURCE_LANGUAGE)


def _load(value: str | dict, field: str) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise FieldError(field, f"not valid JSON: {err.msg}", position=err.pos) from None
    if not isinstance(value, dict):
        raise FieldError(
            field, 'must be a Lark grammar or an llguidance grammar object {"grammars": [...]}'
        )
    for key, item in value.items():
        if key == "max_tokens" and item is not None:
            raise FieldError(
                f"{field}.max_tokens", "is not supported; use the request's max_tokens"
            )
        if key not in ("grammars", "max_tokens"):
            raise FieldError(f"{field}.{key}", "is not supported (expected only grammars)")
    return value


def _grammar(entry: object, field: str) -> CanonicalConstraint:
    if not isinstance(entry, dict):
        raise FieldError(field, "must be an object with lark_grammar or json_schema")
    for key in entry:
        if key not in _ENTRY_FIELDS:
            raise FieldError(
                f"{field}.{key}", "is not supported (expected lark_grammar or json_schema)"
            )
    lark_text, schema = entry.get("lark_grammar"), entry.get("json_schema")
    if (lark_text is None) == (schema is None):
        raise FieldError(field, "must hold exactly one of lark_grammar and json_schema")
    if schema is not None:
        try:
            return compile_json_schema(schema)
        except ConstraintError as err:
            raise at_field(f"{field}.json_schema", err) from None
    if not isinstance(lark_text, str):
        raise FieldError(f"{field}.lark_grammar", "must be a string")
    return _lark(lark_text, f"{field}.lark_grammar")


def _lark(text: str, field: str) -> CanonicalConstraint:
    try:
        return compile_grammar(text, "lark")
    except ConstraintError as err:
        raise at_field(field, err) from None
