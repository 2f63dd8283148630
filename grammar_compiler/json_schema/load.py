"""Reading the schema document (JSON text or a parsed value) and checking its size limits.

The limits are checked before anything recurses into the document, so any
nesting or size is refused in bounded time.
"""

from __future__ import annotations

import json
import math
from typing import Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema.pointers import escape_token, location

MAX_SCHEMA_BYTES = 2 * 1024 * 1024
"""Why this large: standalone schemas generated from API specifications (Kubernetes'
inline every definition they use) are mostly descriptions. A generated one of 817 KB
with 1,500 properties compiled in 0.7 s here and 0.9 s in xgrammar with Llama 3's
vocabulary (its canonical form: 88 KB); what compiling costs follows the structure,
which the limits below bound."""
MAX_DEPTH = 64
"""Nesting of JSON objects and arrays in the schema document."""
MAX_ENUM_VALUES = 10_000
"""JSON values (nested ones included) in one enum or const."""
MAX_PROPERTIES = 5_000
"""Entries of all ``properties`` objects together."""


def load(schema: str | dict | bool) -> Any:
    """The document, from JSON text or data, refused if larger than ``MAX_SCHEMA_BYTES``."""
    if isinstance(schema, str):
        if len(schema.encode()) > MAX_SCHEMA_BYTES:
            raise ConstraintError(_too_large(len(schema.encode())))
        try:
            document = json.loads(
                schema,
                parse_constant=_refuse_constant,
                parse_float=_finite_float,
                object_pairs_hook=_unique_keys,
            )
        except json.JSONDecodeError as err:
            raise ConstraintError(
                f"schema is not valid JSON: {err.msg}",
                position=err.pos,
                line=err.lineno,
                column=err.colno,
            ) from None
        except RecursionError:
            raise ConstraintError(f"schema nests deeper than {MAX_DEPTH} levels") from None
    elif isinstance(schema, (dict, bool)):
        try:
            size = len(json.dumps(schema, allow_nan=False).encode())
        except (TypeError, ValueError) as err:
            raise ConstraintError(f"schema is not JSON data: {err}") from None
        if size > MAX_SCHEMA_BYTES:
            raise ConstraintError(_too_large(size))
        document = schema
    else:
        raise ConstraintError("a JSON Schema must be JSON text, an object or a boolean")
    if not isinstance(document, (dict, bool)):
        raise ConstraintError("a JSON Schema must be an object or a boolean")
    return document


def _too_large(size: int) -> str:
    return f"schema too large: {size} bytes (at most {MAX_SCHEMA_BYTES})"


def _refuse_constant(name: str) -> Any:
    raise ConstraintError(f"schema is not valid JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ConstraintError(f"schema number {text} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ConstraintError(f"schema has the key {key!r} twice in one object")
        result[key] = value
    return result


def check_limits(document: Any) -> None:
    """Depth, enum/const sizes and property counts, without recursion (any depth is safe)."""
    properties = 0
    stack: list[tuple[Any, str, int]] = [(document, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise ConstraintError(
                f"schema nests deeper than {MAX_DEPTH} levels at {location(where)}"
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            child_where = f"{where}/{escape_token(str(key))}"
            if isinstance(value, dict) and key in ("enum", "const"):
                count = _count_values(child if key == "enum" else [child])
                if count > MAX_ENUM_VALUES:
                    raise ConstraintError(
                        f"{key} at {location(where)} holds {count} values "
                        f"(at most {MAX_ENUM_VALUES})"
                    )
            if isinstance(value, dict) and key == "properties" and isinstance(child, dict):
                properties += len(child)
                if properties > MAX_PROPERTIES:
                    raise ConstraintError(
                        f"schema declares more than {MAX_PROPERTIES} properties in all"
                    )
            stack.append((child, child_where, depth + 1))


def _count_values(values: Any) -> int:
    count, stack = 0, [values]
    while stack:
        value = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children if isinstance(value, (dict, list)) else ():
            count += 1
            stack.append(child)
    return count
