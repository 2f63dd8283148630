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
    """The path of the first string holding a lone surrogate, and the surrogate.

    Runs on every request, so the walk skips absent fields and names a path
    only once it has found something (most of a request's ~80 fields are
    None). Iterative: a hostile body may nest deeper than Python recurses.
    """
    # Each entry: the item, and the index in `seen` of its parent entry with its key.
    pending: list[tuple[object, int]] = [(value, -1)]
    seen: list[tuple[int, object, object]] = []  # (parent entry, key, container)
    while pending:
        item, at = pending.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return _path(seen, at), found[0]
            continue
        if isinstance(item, BaseModel):
            children = item.__dict__.items()
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and (found := _SURROGATE.search(key)):
                    return _path(seen, at), found[0]
            children = item.items()
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        else:
            continue
        for key, child in reversed(list(children)):
            if child is not None and not isinstance(child, bool | int | float):
                seen.append((at, key, item))
                pending.append((child, len(seen) - 1))
    return None


def _path(seen: list[tuple[int, object, object]], at: int) -> str:
    """``messages[2].content``: a field by its alias, an index in brackets."""
    parts: list[str] = []
    while at >= 0:
        at, key, container = seen[at]
        if isinstance(container, BaseModel):
            field = type(container).model_fields.get(str(key))
            parts.append("." + ((field.alias if field else None) or str(key)))
        elif isinstance(container, dict):
            parts.append(f".{key}")
        else:
            parts.append(f"[{key}]")
    return "".join(reversed(parts)).removeprefix(".")


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
