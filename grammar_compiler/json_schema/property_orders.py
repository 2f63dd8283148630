"""Object schemas that differ only in their properties' order, kept apart for xgrammar.

xgrammar 0.2.8 builds one rule for object schemas that are equal once their
keys are sorted: of ``{"properties": {"a": ..., "c": ...}}`` and
``{"properties": {"c": ..., "a": ...}}`` in one document, the second also
writes ``a`` before ``c`` and refuses its own order (seen in a 260-member
``anyOf`` of Redux actions). The output stays valid, but a caller who put
``reasoning`` before ``answer`` on purpose gets them the other way round.
Keywords that change nothing here (``"minProperties": 0``, ``"required":
[]``) make the schemas unequal to xgrammar, so each order keeps its own rule.
"""

from __future__ import annotations

import json
from typing import Any

_NO_OP_VARIANTS: tuple[dict[str, Any], ...] = (
    {"minProperties": 0},
    {"required": []},
    {"minProperties": 0, "required": []},
)
"""What the second, third and fourth order of one property set get (where
the schema lacks those keywords); a fifth order still shares a rule."""


def keep_property_orders_apart(schema: Any) -> Any:
    """``schema`` with each order of an otherwise equal object schema made distinct
    for xgrammar (inner objects first, in place)."""
    _Separator().visit(schema)
    return schema


class _Separator:
    def __init__(self) -> None:
        # Sorted-key text of an object schema -> the property order that owns it.
        self._owners: dict[str, tuple[str, ...]] = {}

    def visit(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self.visit(item)
            return
        if not isinstance(node, dict):
            return
        for value in node.values():
            self.visit(value)
        properties = node.get("properties")
        if isinstance(properties, dict) and len(properties) > 1:
            self._claim(node, tuple(properties))

    def _claim(self, node: dict, order: tuple[str, ...]) -> None:
        if self._owners.setdefault(_key(node), order) == order:
            return
        for variant in _NO_OP_VARIANTS:
            if any(keyword in node for keyword in variant):
                continue
            key = _key({**node, **variant})
            if self._owners.setdefault(key, order) == order:
                node.update(variant)
                return


def _key(node: dict) -> str:
    return json.dumps(node, sort_keys=True)
