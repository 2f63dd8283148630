r"""The regexes ``compile_regex`` returns, read back as grammar trees.

Lark terminals are Python regexes. ``grammar_compiler.regex.compile_regex``
already decides what such a regex means and rejects what xgrammar cannot
honour; its output uses a small, regular subset of regex syntax, and this
module reads that subset into ``cfg_tree`` nodes so terminals become
ordinary EBNF rules (rather than xgrammar's ``Regex("...")`` macro, whose
0.2.8 regex reader does not know the ``\U`` escapes that output contains).

The subset: ``|``; groups ``(?:...)``; quantifiers ``* + ? {m} {m,} {m,n}``;
classes ``[...]`` and ``[^...]`` of single characters and ``a-b`` ranges;
``\`` before a metacharacter; ``\uXXXX`` and ``\UXXXXXXXX``; any other
character stands for itself. Anything else raises ``ValueError``: it would
mean ``compile_regex`` changed its output, not that the user erred.
"""

from __future__ import annotations

from grammar_compiler.cfg_tree import (
    CharSet,
    Node,
    Repeat,
    Text,
    choice_of,
    merge_ranges,
    sequence_of,
)

_HEX_WIDTH = {"u": 4, "U": 8}
_SIMPLE_QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}


def regex_tree(regex: str) -> Node:
    """The tree matching exactly the texts ``regex`` (``compile_regex`` output) matches."""
    reader = _Reader(regex)
    node = reader.alternation()
    if reader.pos != len(regex):
        raise ValueError(f"unexpected {regex[reader.pos]!r} at {reader.pos} in {regex!r}")
    return node


class _Reader:
    def __init__(self, regex: str) -> None:
        self.regex = regex
        self.pos = 0

    def peek(self) -> str:
        return self.regex[self.pos] if self.pos < len(self.regex) else ""

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence())
        return choice_of(options)

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified(self.atom()))
        return sequence_of(items)

    def atom(self) -> Node:
        if self.regex.startswith("(?:", self.pos):
            self.pos += 3
            body = self.alternation()
            self.expect(")")
            return body
        if self.peek() == "[":
            return self.char_class()
        return Text(self.character())

    def quantified(self, item: Node) -> Node:
        char = self.peek()
        if char and char in _SIMPLE_QUANTIFIERS:
            self.pos += 1
            return Repeat(item, *_SIMPLE_QUANTIFIERS[char])
        if char != "{":
            return item
        end = self.regex.index("}", self.pos)
        low_text, comma, high_text = self.regex[self.pos + 1 : end].partition(",")
        self.pos = end + 1
        low = int(low_text)
        high = None if comma and not high_text else int(high_text or low_text)
        return Repeat(item, low, high)

    def char_class(self) -> CharSet:
        self.pos += 1
        negated = self.peek() == "^"  # a member ``^`` is never first, even escaped
        self.pos += negated
        ranges = []
        while self.peek() != "]":
            low = ord(self.character())
            high = low
            if self.peek() == "-":
                self.pos += 1
                high = ord(self.character())
            ranges.append((low, high))
        self.pos += 1
        return CharSet(merge_ranges(ranges), negated)

    def character(self) -> str:
        char = self.peek()
        if not char:
            raise ValueError(f"unexpected end of {self.regex!r}")
        if char != "\\":
            self.pos += 1
            return char
        letter = self.regex[self.pos + 1]
        width = _HEX_WIDTH.get(letter)
        if width is None:
            self.pos += 2
            return letter
        digits = self.regex[self.pos + 2 : self.pos + 2 + width]
        self.pos += 2 + width
        return chr(int(digits, 16))

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at {self.pos} in {self.regex!r}")
        self.pos += 1
