"""Keeps a JSON output from repeating an object's name or an item of a unique array.

Why: a map (``additionalProperties``, ``Record<string, T>``, any JSON value)
lets xgrammar write a name that the object already holds, ``{"x": 1, "x":
2}``: JSON that most parsers read as its last value, that TypeScript's
compiler refuses as a literal, and that a grammar cannot rule out (which
names came before is not context-free; with the demo model about one output
in forty of an open map repeated a name). ``uniqueItems`` is the same
problem for an array's items, and xgrammar ignores it.

So a row whose schema may repeat either (``needs_outline``) keeps the
outline of its output (``JsonOutline``): the open containers, each object's
finished names, each unique array's finished items, and what is being
written. Before each fill it lists the texts that must not come next
(``texts_to_avoid``): the rest of a finished name or item that the one
being written could still become, with what would end it there (the closing
quote; for an item that is not a string, the ``,`` or ``]`` after it), and
where a name or item is about to start, each finished one whole. The tokens
whose bytes start with one of those texts are taken out of the row's mask
(``RepeatGuard``). If that leaves nothing, the mask is kept as it was: the
output then repeats (its grammar allowed nothing else), and the judge has
the final word.

Which arrays are unique is read off the schema as the output goes: each open
container keeps the subschemas that may apply to it (through ``$ref``,
``anyOf``, ``oneOf`` and ``allOf``), a member takes those of its name
(``properties``, else ``additionalProperties``), an item those of its
position (``prefixItems``, else ``items``). The compiler lets
``uniqueItems`` through only for items that are strings, integers, booleans
or null, or objects with a member that keeps them apart
(``grammar_compiler.json_schema``): scalars are equal exactly
when they are written alike, except that a string may escape a character it
need not (``"\\u0061"`` is ``"a"``): the grammars the service compiles write
strings plainly. A taken ``true``, ``false`` or ``null`` is kept out from
its first letter, and an integer from the first start whose every way of
ending in the item's range is taken (``_integers_to_avoid``: a start that
could end as a new value never is). Objects are kept apart by the member
the compiler names (``UNIQUE_BY``): a required string that can always go
on, whose end is refused where the object so far matches a finished
item's (``_KeyedItem``), or an integer, whose taken values are kept out at
the ``,`` or ``}`` after them and whose dead starts as an integer item's.
Strings (or such members) of ``maxLength`` alone cannot go on at the
maximum: a taken one of that length is kept out before its quote
(``_longest``; the compiler caps such arrays at 93 items, which no writer
can corner); so is a taken name of an open object whose ``propertyNames``
are such strings (capped at 93 names likewise). Strings (or such members)
of a pattern too many to list
(``UNIQUE_COUNTED``: ``date``, ``uuid``) are counted on the pattern's
automaton: a start every ending of which is taken is kept out
(``_dead_starts``). A token that holds a whole name or item after other
text (``, "id"``) is not looked into: vocabularies hold few such tokens, and finding them would
mean searching every token's bytes each time.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from engine.string_schemas import free_string_lengths, may_be_string
from grammar_compiler.ecma_regex import pattern_counts
from grammar_compiler.json_schema.normalize import (
    MAX_LISTED_INTEGERS,
    UNIQUE_BY,
    UNIQUE_COUNTED,
    value_key,
)
from grammar_compiler.regex_automaton import TextCounts

_QUOTE = ord('"')
_BACKSLASH = ord("\\")
_WHITESPACE = frozenset(b" \t\n\r")
_OPENING = {ord("{"): True, ord("["): False}  # -> whether the container is an object
_CLOSING = frozenset(b"}]")
_INTEGER = re.compile(rb"-?[0-9]+")
_INTEGER_BYTES = frozenset(b"-0123456789")
_ENDS = (b",", b"}")  # what may follow an object's member value
MAX_SUBSCHEMAS = 64
"""Subschemas kept for one container; past this, the rest are not followed."""

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
_BRANCHES = ("anyOf", "oneOf", "allOf")
_FINITE_TYPES = {"boolean": (True, False), "null": (None,)}
_BRANCHING = frozenset({*_BRANCHES, "$ref", "description", "title"})
"""Keywords of a schema that lists no values itself but through its branches."""


def needs_outline(schema: Any) -> bool:
    """Whether outputs of ``schema`` (as the decoder compiles it: xgrammar,
    strict) may repeat a name or hold a unique array, anywhere in it."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if node is False:
            continue
        if not isinstance(node, dict) or _free_names(node) or node.get("uniqueItems") is True:
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


_DeadStarts = tuple[int, list[tuple[str, tuple[int, ...]]]]
"""How many strings were taken, and each with the lengths of its dead starts."""


@dataclass
class _KeyedItem:
    """An object item of a unique array kept apart by one member (``UNIQUE_BY``).

    Its key is what the members before that member hold (as values: ``1.0``
    is ``1``) and that member's string as written; the decoder refuses to end
    the string where the key would be a finished item's.
    """

    anchor: str
    start: int  # where its "{" is in the output
    integer: bool = False  # the anchor is an integer (else a string)
    prior: str | None = None  # the members before the anchor, once the anchor's name is written
    value_start: int | None = None  # the anchor's value: a string past its opening quote
    key: tuple[str, bytes] | None = None  # once that value has ended

    def ends_its_anchor(self) -> bool:
        """Whether a string of the item that ends now is its anchor's value."""
        return (
            not self.integer
            and self.value_start is not None
            and self.key is None
            and self.prior is not None
        )

    def writes_its_integer(self) -> bool:
        """Whether the anchor's integer is being written (it ends at the next other byte)."""
        return self.integer and self.value_start is not None and self.key is None


@dataclass
class _Container:
    """An open object or array of the output, and the subschemas that may apply to it."""

    schemas: tuple[dict, ...]
    names: set[bytes] | None  # an object's finished names; None for an array
    expects_name: bool = True  # an object, between "{" or "," and the next name
    last_name: bytes | None = None  # an object: the name whose value is being written
    unique: bool = False  # an array whose items must differ
    items: set[bytes] = field(default_factory=set)  # a unique array's finished items
    index: int = 0  # an array: the position of the item being written
    expects_item: bool = True  # an array, between "[" or "," and the next item
    item: bytearray | None = None  # a unique array: the scalar item being written
    choices: tuple[bytes, ...] | None = None  # a unique array of listed values: their texts
    anchor: str | None = None  # a unique array of objects: the member that keeps them apart
    integers: tuple[int | None, int | None] | None = None  # a unique array of a range's integers
    longest: int | None = None  # a unique array of strings of bounded length: the maximum
    name_bounds: frozenset[int] = frozenset()  # an object: the maxLength of names bounded alone
    counted: TextCounts | None = None  # a unique array of strings (or anchors) of a pattern
    dead: dict[str | None, _DeadStarts] = field(default_factory=dict)  # see _dead_lengths
    keys: set[tuple[str, bytes]] = field(default_factory=set)  # its finished items' keys
    keyed: _KeyedItem | None = None  # an object that is an item of such an array


class JsonOutline:
    """The outline of one row's JSON output so far, fed byte by byte."""

    def __init__(
        self,
        schema: Any,
        *,
        repeats: bool = True,
        bounds: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        """``repeats``: whether names or items may repeat (``needs_outline``);
        ``bounds``: the strings whose maxLength the decoder keeps, by the
        ``id`` of their schema in ``schema`` (``engine.string_lengths``)."""
        self._root = schema
        self.repeats = repeats
        self._bounds = bounds or {}
        self._open: list[_Container] = []
        self._in_string = False
        self._escaped = False
        self._name: bytearray | None = None  # the name being written, inside its quotes
        self._text = bytearray()  # the output so far
        self.room: int | None = None
        """Characters the bounded string being written may still take; None outside one."""

    @property
    def finished(self) -> bool:
        """Whether an object or array has been written whole (its first container closed)."""
        return bool(self._text) and not self._open and not self._in_string

    def push(self, piece: bytes) -> None:
        for byte in piece:
            self._text.append(byte)
            if self._in_string:
                self._string_byte(byte)
            else:
                self._value_byte(byte)

    def _string_byte(self, byte: int) -> None:
        top = self._open[-1] if self._open else None
        if top is not None and top.item is not None:
            top.item.append(byte)
        if self.room is not None and byte != _QUOTE and byte & 0xC0 != 0x80:
            self.room -= 1  # a character starts (a bounded string holds no escapes)
        if self._escaped:
            self._escaped = False
        elif byte == _BACKSLASH:
            self._escaped = True
        elif byte == _QUOTE:
            self._in_string = False
            self.room = None
            if self._name is not None:
                assert top is not None and top.names is not None
                top.last_name = bytes(self._name)
                top.names.add(top.last_name)
                self._name = None
                if top.keyed is not None and _decoded_name(top.last_name) == top.keyed.anchor:
                    top.keyed.prior = self._members_before(top.keyed)
            elif top is not None and top.keyed is not None and top.keyed.ends_its_anchor():
                text = bytes(self._text[top.keyed.value_start : -1])
                top.keyed.key = (top.keyed.prior, text)
            return
        if self._name is not None:
            self._name.append(byte)

    def _value_byte(self, byte: int) -> None:
        top = self._open[-1] if self._open else None
        keyed = None if top is None else top.keyed
        if keyed is not None and keyed.writes_its_integer() and byte not in _INTEGER_BYTES:
            assert keyed.prior is not None and keyed.value_start is not None
            keyed.key = (keyed.prior, bytes(self._text[keyed.value_start : -1]))
        if byte in _WHITESPACE:
            return
        if top is not None and top.names is None and top.expects_item and byte != ord("]"):
            top.expects_item = False  # an item starts
            top.item = bytearray() if top.unique else None
        if byte in _OPENING:
            if top is not None and top.names is None:
                top.item = None  # an object or array is not an item kept apart
            self._open.append(self._container(top, is_object=_OPENING[byte]))
        elif byte in _CLOSING:
            if top is not None:
                self._end_item(top)
                self._open.pop()
                if top.keyed is not None and top.keyed.key is not None and self._open:
                    self._open[-1].keys.add(top.keyed.key)
        elif top is not None and top.names is not None:  # between an object's members
            if byte == _QUOTE and top.expects_name:
                self._in_string = True
                self._name = bytearray()
            elif byte == _QUOTE:
                self._in_string = True
                self._string_starts(member_schemas(top.schemas, top.last_name))
                if keyed is not None and keyed.prior is not None and keyed.value_start is None:
                    keyed.value_start = len(self._text)  # the anchor's value: its name came last
            elif byte in (ord(":"), ord(",")):
                top.expects_name = byte == ord(",")
            elif (
                keyed is not None
                and keyed.integer
                and keyed.prior is not None
                and keyed.value_start is None
                and byte in _INTEGER_BYTES
            ):
                keyed.value_start = len(self._text) - 1  # the anchor's integer starts
        elif byte == ord(","):
            assert top is not None
            self._end_item(top)
            top.index += 1
            top.expects_item = True
        else:
            if top is not None and top.item is not None:
                top.item.append(byte)
            self._in_string = byte == _QUOTE
            if self._in_string:
                self._string_starts(
                    [self._root] if top is None else item_schemas(top.schemas, top.index)
                )

    def _string_starts(self, schemas: list[Any]) -> None:
        """A string value opens: its room, if its schema is a bounded string."""
        if not self._bounds:
            return
        for schema in self._expanded(schemas):
            if id(schema) in self._bounds:
                self.room = self._bounds[id(schema)][1]
                return

    @staticmethod
    def _end_item(top: _Container) -> None:
        if top.item:
            top.items.add(bytes(top.item))
        top.item = None

    def _container(self, parent: _Container | None, *, is_object: bool) -> _Container:
        if parent is None:
            schemas = self._expanded([self._root])
        elif parent.names is not None:
            schemas = self._expanded(member_schemas(parent.schemas, parent.last_name))
        else:
            schemas = self._expanded(item_schemas(parent.schemas, parent.index))
        if is_object:
            keyed = None
            if parent is not None and parent.names is None and parent.anchor is not None:
                integer = parent.integers is not None
                keyed = _KeyedItem(parent.anchor, start=len(self._text) - 1, integer=integer)
            return _Container(
                schemas, names=set(), keyed=keyed, name_bounds=self._name_bounds(schemas)
            )
        unique = any(schema.get("uniqueItems") is True for schema in schemas)
        choices = self._listed_items(schemas) if unique else None
        anchors = [schema[UNIQUE_BY] for schema in schemas if UNIQUE_BY in schema]
        anchor = anchors[0] if unique and choices is None and anchors else None
        integers = longest = counted = None
        if unique and choices is None:
            item = self._expanded(item_schemas(schemas, 0))
            if anchor is not None:
                name = json.dumps(anchor, ensure_ascii=False)[1:-1].encode("utf-8")
                item = self._expanded(member_schemas(item, name))
            integers = _integer_range(item)  # the items', or the anchor's
            pattern = _string_pattern(item)
            lengths = free_string_lengths(pattern)
            longest = None if lengths is None else lengths[1]
            if any(schema.get(UNIQUE_COUNTED) is True for schema in schemas):
                counted = pattern_counts(pattern) if isinstance(pattern, str) else None
        return _Container(
            schemas,
            names=None,
            unique=unique,
            choices=choices,
            anchor=anchor,
            integers=integers,
            longest=longest,
            counted=counted,
        )

    def _name_bounds(self, schemas: tuple[dict, ...]) -> frozenset[int]:
        """The longest names an open object may take under each of its schemas
        that bounds undeclared names as the compiler's free strings of bounded
        length (which of its schemas xgrammar follows is not known here: a
        taken name as long as any of them allows is kept out before its quote)."""
        bounds = set()
        for schema in filter(_free_names, schemas):
            if "propertyNames" in schema:
                pattern = _string_pattern(self._expanded([schema["propertyNames"]]))
                lengths = free_string_lengths(pattern)
                if lengths is not None:
                    bounds.add(lengths[1])
        return frozenset(bounds)

    def _members_before(self, keyed: _KeyedItem) -> str | None:
        """The members an item wrote before its anchor's name (just written),
        compared as values; None if they cannot be read (never, for the
        prefix of an object a JSON grammar allows)."""
        try:
            members = json.loads(self._text[keyed.start :] + b": null}")
        except ValueError:
            return None
        members.pop(keyed.anchor, None)
        return value_key(members)

    def _listed_items(self, schemas: tuple[dict, ...]) -> tuple[bytes, ...] | None:
        """The texts of every value an item may take, when the item schemas list
        them (``_listed_values``); None when they do not."""
        if any("prefixItems" in schema for schema in schemas):
            return None
        texts: dict[bytes, None] = {}
        for schema in self._expanded(item_schemas(schemas, 0)):
            values = _listed_values(schema)
            if values is None and not _BRANCHING.issuperset(schema):
                return None  # an item schema that does not list its values
            for value in values or ():
                texts[json.dumps(value, ensure_ascii=False).encode("utf-8")] = None
        return tuple(texts) or None

    def _expanded(self, schemas: list[Any]) -> tuple[dict, ...]:
        return expanded(self._root, schemas)

    def texts_to_avoid(self) -> Iterator[bytes]:
        """What must not come next: each way of finishing, from here, a name or
        item the container already holds."""
        top = self._open[-1] if self._open else None
        if top is None or self._escaped:
            return
        if top.names is not None:
            yield from self._names_to_avoid(top)
            if top.keyed is not None:
                yield from self._keys_to_avoid(top, self._open[-2])
        elif top.unique and top.choices is not None:
            yield from _listed_items_to_avoid(top, in_string=self._in_string)
        elif top.unique:
            yield from _items_to_avoid(top, in_string=self._in_string)
            if top.counted is not None:
                yield from _dead_starts(top, top.counted, in_string=self._in_string)
            yield from _literals_to_avoid(top)
            if top.integers is not None and top.anchor is None:
                yield from _integers_to_avoid(top)

    def _names_to_avoid(self, top: _Container) -> Iterator[bytes]:
        """Each way of ending a taken name: at its closing quote, or for a name
        as long as names may be, at its last character."""
        assert top.names is not None
        if self._name is not None:
            written = bytes(self._name)
            for name in top.names:
                if name.startswith(written):
                    full = _at_a_bound(name, top.name_bounds) and len(name) > len(written)
                    yield name[len(written) :] + (b"" if full else b'"')
        elif top.expects_name and not self._in_string:
            for name in top.names:
                ending = b"" if _at_a_bound(name, top.name_bounds) else b'"'
                yield from _spaced(b'"' + name + ending, True)

    def _keys_to_avoid(self, item: _Container, array: _Container) -> Iterator[bytes]:
        """Where the item's anchor string is (about to be) written: each way of
        ending it as a finished item with the same members before it did (for
        a string as long as the anchor may be: writing its last character);
        for an anchor of a counted pattern, each way into a start every
        ending of which such items took."""
        keyed = item.keyed
        if keyed is None or keyed.prior is None or keyed.key is not None:
            return
        taken = [text for prior, text in array.keys if prior == keyed.prior]
        if keyed.integer:
            yield from self._integer_keys_to_avoid(item, taken, array.integers)
            return
        dead = []
        if array.counted is not None:
            dead = _dead_lengths(array, array.counted, taken, keyed.prior)
        if keyed.value_start is None and not self._in_string:
            quoted = [b'"' + t + (b"" if _longest(t, array.longest) else b'"') for t in taken]
            for text in [*quoted, *_dead_ahead(dead, None)]:
                if item.expects_name:  # the colon is still to come
                    yield b": " + text
                yield from _spaced(text, True)
        elif keyed.value_start is not None and self._in_string:
            written = bytes(self._text[keyed.value_start :])
            for text in taken:
                if not text.startswith(written):
                    continue
                full = _longest(text, array.longest) and len(text) > len(written)
                yield text[len(written) :] + (b"" if full else b'"')
            yield from _dead_ahead(dead, written)

    def _integer_keys_to_avoid(
        self, item: _Container, taken: list[bytes], bounds: tuple[int | None, int | None] | None
    ) -> Iterator[bytes]:
        """An integer anchor (about to be) written: each way of ending it as a
        taken one (at the ``,`` or ``}`` after it), and each start every way
        of ending which is taken (``_dead_integers``)."""
        keyed = item.keyed
        assert keyed is not None and bounds is not None
        before = keyed.value_start is None
        if before and self._in_string:
            return
        written = b"" if before else bytes(self._text[keyed.value_start :])
        texts = [t[len(written) :] + end for t in taken if t.startswith(written) for end in _ENDS]
        texts += _dead_integers(written, {int(text) for text in taken}, bounds)
        for text in texts:
            if before and item.expects_name:  # the colon is still to come
                yield b": " + text
            yield from _spaced(text, before)

    def writes_by_character(self, text: str) -> bool:
        """Feeds ``text`` a character at a time, as a model writing one character
        a token would; False at the first character the guard would keep out."""
        for character in text:
            piece = character.encode("utf-8")
            if self.room == 0 and piece != b'"':
                return False
            if self.repeats and piece in self.texts_to_avoid():
                return False
            self.push(piece)
        return True


def _items_to_avoid(top: _Container, *, in_string: bool) -> Iterator[bytes]:
    """A string item ends at its closing quote, or where it reaches the strings'
    maximum length (only the quote may follow there); any other item at the
    ``,`` or ``]`` after it."""
    if top.expects_item:
        for item in top.items:
            endings = (b"",) if item[:1] == b'"' else (b",", b"]")
            string = item[:1] == b'"'
            text = item[:-1] if string and _longest(item[1:-1], top.longest) else item
            for ending in endings:
                yield from _spaced(text + ending, True)
        return
    written = top.item
    if written is None or (written[:1] == b'"') != in_string:
        return  # not kept apart, or a string item already closed
    for item in top.items:
        if not item.startswith(written):
            continue
        rest = item[len(written) :]
        if in_string:
            yield rest[:-1] if len(rest) > 1 and _longest(item[1:-1], top.longest) else rest
        else:
            yield rest + b","
            yield rest + b"]"


def _longest(content: bytes, longest: int | None) -> bool:
    """Whether a string (between its quotes) is as long as the array's strings
    may be, so that nothing but its quote can follow it."""
    return longest is not None and len(content.decode("utf-8", "replace")) == longest


def _at_a_bound(name: bytes, bounds: frozenset[int]) -> bool:
    """Whether a name is as long as one of an object's bounds on its names."""
    return any(_longest(name, bound) for bound in bounds)


def _string_pattern(schemas: tuple[dict, ...]) -> Any:
    """The pattern of the one schema among ``schemas`` that may be a string, if any."""
    strings = [schema for schema in schemas if may_be_string(schema)]
    return strings[0].get("pattern") if len(strings) == 1 else None


def _dead_starts(top: _Container, counts: TextCounts, *, in_string: bool) -> Iterator[bytes]:
    """Strings of a pattern (``UNIQUE_COUNTED``): each way on from the item being
    written (between items: from its opening quote) into a start every ending
    of which is taken, so that no start is ever left without an untaken end."""
    if top.expects_item:
        body = None
    elif top.item is None or top.item[:1] != b'"' or not in_string:
        return  # not a string, or one already closed
    else:
        body = bytes(top.item[1:])
    taken = [item[1:-1] for item in top.items]
    for text in _dead_ahead(_dead_lengths(top, counts, taken), body):
        yield from _spaced(text, top.expects_item)


def _dead_ahead(found: list[tuple[str, tuple[int, ...]]], body: bytes | None) -> Iterator[bytes]:
    """Each way on from a string written so far (``body``, past its opening
    quote; None: before that quote, which the texts then start with) into one
    of the dead starts ``found`` (``_dead_lengths``)."""
    whole, cut = _whole_characters(body or b"")
    lead = b'"' if body is None else b""
    seen: set[str] = set()  # taken strings share their dead starts
    for text, lengths in found:
        if not text.startswith(whole):
            continue
        end = next((length for length in lengths if length >= len(whole)), None)
        if end == len(whole) == 0:  # every string is taken: none may start (or end empty)
            yield b'"'
        elif end is not None and end > len(whole) and text[:end] not in seen:
            seen.add(text[:end])
            ahead = text[len(whole) : end].encode("utf-8")
            if ahead.startswith(cut):  # past the bytes of a character already begun
                yield lead + ahead[len(cut) :]


def _dead_lengths(
    top: _Container, counts: TextCounts, strings: list[bytes], prior: str | None = None
) -> list[tuple[str, tuple[int, ...]]]:
    """Each taken string (``strings``: as written, inside the quotes) with the
    lengths of its starts every ending of which is taken; worked out again
    only when another is taken (cached per ``prior``: an anchor's members
    before it, ``_KeyedItem``)."""
    cached = top.dead.get(prior)
    if cached is not None and cached[0] == len(strings):
        return cached[1]
    taken = sorted(string.decode("utf-8", "replace") for string in strings)
    found = []
    for text in taken:
        lengths = [0] if counts.total() <= len(taken) else []
        state: int | None = 0
        for end in range(1, len(text) + 1):
            state = counts.state_after(text[end - 1], state)
            if state is None:
                break
            if counts.counts[state] <= _starting_with(taken, text[:end]):
                lengths.append(end)
        found.append((text, tuple(lengths)))
    top.dead[prior] = (len(strings), found)
    return found


def _whole_characters(body: bytes) -> tuple[str, bytes]:
    """The text of whole characters in ``body``, and the bytes of one it only begins."""
    for cut in range(min(4, len(body)) + 1):
        try:
            return body[: len(body) - cut].decode("utf-8"), body[len(body) - cut :]
        except UnicodeDecodeError:
            continue
    return "", body


def _starting_with(texts: list[str], start: str) -> int:
    """How many of the sorted ``texts`` start with ``start``."""
    return bisect.bisect_left(texts, start + "\U0010ffff") - bisect.bisect_left(texts, start)


def _integer_range(schemas: tuple[dict, ...]) -> tuple[int | None, int | None] | None:
    """The bounds of the integers of a range that items may be, beside
    strings, booleans and null (``{"type": "integer", "minimum": 1}``); None
    for other items."""
    own = [schema for schema in schemas if not _BRANCHING.issuperset(schema)]
    if any("enum" in schema or "const" in schema for schema in own):
        return None
    numbers = [schema for schema in own if _types(schema) & {"integer", "number"}]
    if len(numbers) != 1 or _types(numbers[0]) != {"integer"}:
        return None
    if not set(numbers[0]) <= {"type", "minimum", "maximum"}:
        return None
    low, high = numbers[0].get("minimum"), numbers[0].get("maximum")
    if not all(bound is None or isinstance(bound, int) for bound in (low, high)):
        return None
    return low, high


def _types(schema: dict) -> set[str]:
    declared = schema.get("type")
    return {declared} if isinstance(declared, str) else set(declared or ())


def _literals_to_avoid(top: _Container) -> Iterator[bytes]:
    """Where an item starts: the first letter of each taken ``true``,
    ``false`` or ``null``, which no other value starts with and which
    nothing can follow but its end."""
    if top.expects_item:
        for literal in (b"true", b"false", b"null"):
            if literal in top.items:
                yield from _spaced(literal[:1], True)


def _integers_to_avoid(top: _Container) -> Iterator[bytes]:
    """Where an integer item is (about to be) written: each start whose every
    way of ending is taken (``_dead_integers``)."""
    assert top.integers is not None
    written = b"" if top.expects_item else top.item
    if written is None:
        return
    taken = {int(item) for item in top.items if _INTEGER.fullmatch(item)}
    for text in _dead_integers(bytes(written), taken, top.integers):
        yield from _spaced(text, top.expects_item)


def _dead_integers(
    written: bytes, taken: set[int], bounds: tuple[int | None, int | None]
) -> list[bytes]:
    """From an integer written so far, each way on into a start whose every way
    of ending in ``bounds`` is taken (a taken ``7`` of at most 9, the ``7``;
    ``0``, also as ``-0``), so that the integer can always end as a new one."""
    found = []
    texts = sorted({str(value).encode() for value in taken} | ({b"-0"} if 0 in taken else set()))
    for text in texts:
        if not text.startswith(written) or text == written:
            continue
        for end in range(len(written) + 1, len(text) + 1):
            start = text[:end]
            if start != b"-" and _within(int(start), *bounds) and int(start) not in taken:
                continue  # it can end right here, as a new value
            # Only as many ways on as taken values start so can all be taken.
            count = bisect.bisect_left(texts, _after_prefix(start)) - bisect.bisect_left(
                texts, start
            )
            ways = _integers_starting(start, *bounds, limit=count)
            if ways and taken.issuperset(ways):
                found.append(text[len(written) : end])
                break
    return found


def _within(value: int, low: int | None, high: int | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _integers_starting(
    start: bytes, low: int | None, high: int | None, *, limit: int
) -> list[int] | None:
    """The integers of [low, high] written starting with ``start``, or None
    when there are more than ``limit``."""
    negative = start[:1] == b"-"
    digits = start[1:] if negative else start
    if digits == b"0":
        return [0] if (low is None or low <= 0) and (high is None or high >= 0) else []
    # Magnitudes m of values s*m within [low, high].
    if negative:
        floor = None if high is None else -high
        ceiling = None if low is None else -low
    else:
        floor, ceiling = low, high
    if ceiling is None:
        return None
    leads = [int(digits)] if digits else list(range(1, 10))
    found: list[int] = []  # "-0" is not counted as a way on from "-": xgrammar never writes it
    for lead in leads:
        scale = 1
        while lead * scale <= ceiling:
            first = max(lead * scale, floor or 0)
            last = min((lead + 1) * scale - 1, ceiling)
            if last - first + 1 + len(found) > limit:
                return None
            found += [(-m if negative else m) for m in range(first, last + 1)]
            scale *= 10
    return found


def _listed_values(schema: dict) -> list[Any] | None:
    """The values a schema lists: ``enum``, ``const``, booleans and null, or the
    integers of a small range (as the compiler lets through); None otherwise."""
    if "enum" in schema:
        return schema["enum"]
    if "const" in schema:
        return [schema["const"]]
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    if set(types) <= {"boolean", "null"} and set(schema) <= {"type", "description", "title"}:
        return [value for kind in types for value in _FINITE_TYPES[kind]]
    low, high = schema.get("minimum"), schema.get("maximum")
    plain_range = set(schema) <= {"type", "minimum", "maximum"} and types == ["integer"]
    if plain_range and isinstance(low, int) and isinstance(high, int):
        return list(range(low, high + 1)) if high - low < MAX_LISTED_INTEGERS else None
    return None


def _listed_items_to_avoid(top: _Container, *, in_string: bool) -> Iterator[bytes]:
    """For items listed by value: where writing one already there becomes
    certain, which is often before it ends (with ``"books"`` taken from a list
    whose other values do not start ``"b``, the ``b``): there the grammar
    would allow nothing but finishing it. Once every value is taken, the
    comma that would start another item."""
    assert top.choices is not None
    taken = set(top.items)
    if top.item and not in_string and bytes(top.item) in top.choices:
        taken.add(bytes(top.item))  # written whole, not yet ended by "," or "]"
    open_choices = [choice for choice in top.choices if choice not in taken]
    if not open_choices and not top.expects_item and not in_string:
        yield b","
        return
    written = b"" if top.expects_item else top.item
    if written is None or (written[:1] == b'"' and not in_string and not top.expects_item):
        return
    if len(open_choices) == 1 and open_choices[0].startswith(written):
        # The last value, and a comma in the same token: another item could only repeat.
        yield from _spaced(open_choices[0][len(written) :] + b",", top.expects_item)
    for item in top.items:
        if not item.startswith(written):
            continue
        certain = next(
            (
                length
                for length in range(len(written) + 1, len(item) + 1)
                if not any(choice.startswith(item[:length]) for choice in open_choices)
            ),
            None,
        )
        if certain is None:  # a number another value continues: its end makes it certain
            texts = [item[len(written) :] + b",", item[len(written) :] + b"]"]
        else:
            texts = [item[len(written) : certain]]
        for text in texts:
            yield from _spaced(text, top.expects_item)


def _spaced(text: bytes, item_ahead: bool) -> Iterator[bytes]:
    """``text``, and where an item is yet to start, after the space the layout puts first."""
    yield text
    if item_ahead:
        yield b" " + text


def expanded(root: Any, schemas: list[Any]) -> tuple[dict, ...]:
    """The schemas with every ``$ref`` target and branch that also applies
    (at most ``MAX_SUBSCHEMAS``)."""
    found: dict[int, dict] = {}
    pending = list(schemas)
    while pending and len(found) < MAX_SUBSCHEMAS:
        schema = pending.pop()
        if not isinstance(schema, dict) or id(schema) in found:
            continue
        found[id(schema)] = schema
        reference = schema.get("$ref")
        if isinstance(reference, str):
            pending.append(_resolved(root, reference))
        for keyword in _BRANCHES:
            pending.extend(schema.get(keyword, ()))
    return tuple(found.values())


def _resolved(root: Any, reference: str) -> Any:
    """A local JSON pointer's target in the schema (the compiler writes no other)."""
    target = root
    for part in reference.removeprefix("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, dict) else None
    return target


def member_schemas(schemas: tuple[dict, ...], name: bytes | None) -> list[Any]:
    """The schemas of a member named ``name`` (as written, inside its quotes;
    None: a name no ``properties`` lists)."""
    key = _decoded_name(name)
    found = []
    for schema in schemas:
        properties = schema.get("properties", {})
        if key in properties:
            found.append(properties[key])
        elif isinstance(schema.get("additionalProperties"), dict):
            found.append(schema["additionalProperties"])
    return found


def item_schemas(schemas: tuple[dict, ...], index: int) -> list[Any]:
    """The schemas of an array's item at ``index``."""
    found = []
    for schema in schemas:
        prefix = schema.get("prefixItems", ())
        if index < len(prefix):
            found.append(prefix[index])
        elif isinstance(schema.get("items"), dict):
            found.append(schema["items"])
    return found


def _decoded_name(name: bytes | None) -> str | None:
    if name is None:
        return None
    try:
        return json.loads(b'"' + name + b'"')
    except ValueError:
        return None


class Avoiding(Protocol):
    """An outline that says which texts must not come next (``JsonOutline``,
    ``engine.tool_outline.ToolCallsOutline``)."""

    def texts_to_avoid(self) -> Iterator[bytes]: ...


class RepeatGuard:
    """The vocabulary sorted by bytes, to find the tokens that start with a text."""

    def __init__(self, token_bytes: Sequence[bytes]) -> None:
        order = sorted(range(len(token_bytes)), key=token_bytes.__getitem__)
        self._sorted = [token_bytes[token] for token in order]
        self._order = order

    def banned(self, outline: Avoiding) -> list[int] | None:
        """The tokens that would repeat a name or item where ``outline`` is, if any."""
        found: list[int] = []
        for text in outline.texts_to_avoid():
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
    ends in a quote, a comma, a bracket or a byte of a string: never 0xFF)."""
    return text[:-1] + bytes([text[-1] + 1])


def _int32(mask: int) -> int:
    """A 32-bit mask as the signed word xgrammar's bitmask holds."""
    return mask - (1 << 32) if mask >= 1 << 31 else mask
