"""Keeps a JSON output from writing one object's undeclared name twice.

Why: a map (``additionalProperties``, ``Record<string, T>``, any JSON value)
lets xgrammar write a name that the object already holds, ``{"x": 1, "x":
2}``: JSON that most parsers read as its last value, that TypeScript's
compiler refuses as a literal, and that a grammar cannot rule out (which
names came before is not context-free). With the demo model about one
output in forty of an open map repeated a name.

So a row whose schema has such objects keeps the structure of its output
(``JsonKeys``: the open containers, each object's finished names, the name
being written), and while it writes a name that could still become one of
them, the tokens that would close it there are taken out of its mask
(``RepeatedKeys``): those whose bytes start with the rest of that name and
its closing quote. If that leaves nothing, the mask is left as it was, so a
grammar that only allows the name again still finishes (and the judge,
reading the last value, has the final word).

Names are compared as written: ``"a"`` and ``"\\u0061"`` are one name to a
parser but two spellings here; the grammars the service compiles write
names plainly. A token that holds a whole name after other text (``, "id"``)
is not looked into: vocabularies hold few such tokens, and finding them would
mean searching every token's bytes for every name.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

_QUOTE = ord('"')
_BACKSLASH = ord("\\")
_STRUCTURE = {ord("{"), ord("}"), ord("["), ord("]"), ord(":"), ord(","), _QUOTE}

# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE_SCHEMA = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_NOT_ANY_VALUE = ("const", "enum", "$ref", "anyOf", "oneOf", "allOf", "properties")


def may_repeat_keys(schema: Any) -> bool:
    """Whether xgrammar (strict, as the decoder compiles schemas) may write an
    object whose names are not all declared, anywhere in ``schema``."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if node is False:
            continue
        if not isinstance(node, dict) or _free_names(node):
            return True  # true, or a shape not known here: assume the worst
        for keyword in _ONE_SCHEMA:
            value = node.get(keyword)
            pending.extend(value if isinstance(value, list) else [] if value is None else [value])
        for keyword in _SCHEMA_LISTS:
            pending.extend(node.get(keyword, ()))
        for keyword in _SCHEMA_MAPS:
            pending.extend(node.get(keyword, {}).values())
    return False


def _free_names(node: dict) -> bool:
    types = node.get("type")
    if types is None:
        may_be_object = not any(keyword in node for keyword in _NOT_ANY_VALUE)
    else:
        may_be_object = "object" in (types if isinstance(types, list) else [types])
    if not may_be_object:
        return False
    if "propertyNames" in node or "patternProperties" in node:
        return True
    extra = node.get("additionalProperties")
    return "properties" not in node if extra is None else extra is not False


@dataclass
class _Container:
    names: set[bytes] | None  # an object's finished names; None for an array
    expects_name: bool = True


@dataclass
class JsonKeys:
    """The structure of one row's JSON output so far, byte by byte."""

    _open: list[_Container] = field(default_factory=list)
    _in_string: bool = False
    _escaped: bool = False
    _name: bytearray | None = None  # the name being written, inside its quotes

    def push(self, piece: bytes) -> None:
        for byte in piece:
            if self._in_string:
                self._string_byte(byte)
            elif byte in _STRUCTURE:
                self._structure_byte(byte)

    def _string_byte(self, byte: int) -> None:
        if self._escaped:
            self._escaped = False
        elif byte == _BACKSLASH:
            self._escaped = True
        elif byte == _QUOTE:
            self._in_string = False
            if self._name is not None:
                names = self._open[-1].names
                assert names is not None
                names.add(bytes(self._name))
                self._name = None
            return
        if self._name is not None:
            self._name.append(byte)

    def _structure_byte(self, byte: int) -> None:
        top = self._open[-1] if self._open else None
        if byte == _QUOTE:
            self._in_string = True
            if top is not None and top.names is not None and top.expects_name:
                self._name = bytearray()
        elif byte in (ord("{"), ord("[")):
            self._open.append(_Container(set() if byte == ord("{") else None))
        elif byte in (ord("}"), ord("]")):
            if self._open:
                self._open.pop()
        elif top is not None and top.names is not None:
            top.expects_name = byte == ord(",")

    def closings_to_avoid(self) -> Iterator[bytes]:
        """What must not come next: the rest of each finished name of this object
        that the name being written could still become, then its closing quote;
        where the object expects a name, each whole name in quotes (after the
        space the layout may put first)."""
        if self._in_string:
            if self._name is None or self._escaped:
                return
            names = self._open[-1].names
            assert names is not None
            written = bytes(self._name)
            for name in names:
                if name.startswith(written):
                    yield name[len(written) :] + b'"'
            return
        top = self._open[-1] if self._open else None
        if top is None or top.names is None or not top.expects_name:
            return
        for name in top.names:
            yield b'"' + name + b'"'
            yield b' "' + name + b'"'


class RepeatedKeys:
    """The vocabulary sorted by bytes, to find the tokens that start with a text."""

    def __init__(self, token_bytes: Sequence[bytes]) -> None:
        order = sorted(range(len(token_bytes)), key=token_bytes.__getitem__)
        self._sorted = [token_bytes[token] for token in order]
        self._order = order

    def banned(self, keys: JsonKeys) -> list[int] | None:
        """The tokens that would repeat a name of the object ``keys`` is writing, if any."""
        found: list[int] = []
        for text in keys.closings_to_avoid():
            low = bisect.bisect_left(self._sorted, text)
            high = bisect.bisect_left(self._sorted, _after_prefix(text), lo=low)
            found += self._order[low:high]
        return found or None

    @staticmethod
    def restrict(bitmask: torch.Tensor, index: int, banned: list[int] | None) -> None:
        """Clears row ``index``'s bits of ``banned``, unless no token would be left."""
        if not banned:
            return
        clear: dict[int, int] = {}
        for token in banned:
            clear[token // 32] = clear.get(token // 32, 0) | 1 << (token % 32)
        words = torch.tensor(list(clear), dtype=torch.long)
        bits = torch.tensor([_int32(mask) for mask in clear.values()], dtype=torch.int32)
        row = bitmask[index]
        kept = row.index_select(0, words).bitwise_and_(bits.bitwise_not_())
        remaining = row.clone()
        remaining[words] = kept
        if bool(remaining.any()):
            row[words] = kept


def _after_prefix(text: bytes) -> bytes:
    """The least byte string above every one that starts with ``text`` (which
    ends in a quote, so its last byte can be raised)."""
    return text[:-1] + bytes([text[-1] + 1])


def _int32(mask: int) -> int:
    """A 32-bit mask as the signed word xgrammar's bitmask holds."""
    return mask - (1 << 32) if mask >= 1 << 31 else mask
