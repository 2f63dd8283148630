"""Request strings must be text that UTF-8 can carry.

JSON may spell a lone UTF-16 surrogate (``"\\ud800"``); Python's ``json``
accepts it and pydantic passes such a string through, but no UTF-8 encoder
can write it, so it would fail deep inside (sending the prompt to Triton:
a 500). Each route checks its validated body here first: a 400 naming the
field, like any other body that is not valid JSON text.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from frontend.errors import APIError

_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: object) -> tuple[str, str] | None:
    """The path of the first string holding a lone surrogate, and the surrogate."""
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return path, found[0]
        elif isinstance(item, BaseModel):
            for name, field in reversed(type(item).model_fields.items()):
                key = field.alias or name
                pending.append((f"{path}.{key}" if path else key, getattr(item, name)))
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if (found := _lone_surrogate(key)) is not None:
                    return path, found[1]
                pending.append((f"{path}.{key}" if path else str(key), child))
        elif isinstance(item, list | tuple):
            pending.extend(
                (f"{path}[{index}]", child) for index, child in reversed(list(enumerate(item)))
            )
    return None


def require_text(body: BaseModel) -> None:
    """Refuses a body with a lone surrogate in any string, naming the field."""
    found = _lone_surrogate(body)
    if found is not None:
        path, surrogate = found
        raise APIError(
            400,
            f"{path}: holds a lone UTF-16 surrogate (\\u{ord(surrogate):04x}), which is not a "
            "character (a \\uD800-\\uDFFF escape must be half of a pair)",
            param=path,
            code="invalid_value",
        )
