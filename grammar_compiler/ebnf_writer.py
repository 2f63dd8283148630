r"""Grammar trees out as xgrammar EBNF, the text the decoder compiles.

What the output relies on, probed on xgrammar 0.2.8:

* Rule names may hold letters, digits, ``_``, ``-`` and ``.``; every rule is
  renamed to ``r_`` plus its name with other characters replaced by ``_``
  (numbered on a clash), and ``root ::= `` refers to the start rule, so no
  user name can collide with ``root``.
* Strings take ``\\``, ``\"``, ``\n``, ``\r``, ``\t``, ``\uXXXX`` and
  ``\UXXXXXXXX``. A NUL inside a string is lost (``"a\x00b"`` matches
  neither ``a\0b`` nor ``ab``), so NUL is written as the class ``[\u0000]``.
  (``\x`` is avoided: xgrammar reads every hex digit after it.)
* Classes take ``\\ \] \[ \^ \-`` escaped and the same code point escapes;
  ``[]`` matches nothing and ``[^]`` any character, newline included.
* ``{m}``, ``{m,}`` and ``{m,n}`` repeat; ``""`` is the empty string.
* Left recursion and unused rules are accepted (xgrammar parses with Earley).

A rule with ``Verbatim`` EBNF (``Grammar.verbatim``) is written as a
reference to its ``root``, and the verbatim text is appended once.
"""

from __future__ import annotations

import re

from grammar_compiler.cfg_tree import (
    CharSet,
    Choice,
    Grammar,
    Node,
    Ref,
    Repeat,
    Sequence,
    Text,
    reachable_rules,
)
from grammar_compiler.left_recursion import without_direct_left_recursion

ROOT = "root"


def write_ebnf(grammar: Grammar) -> str:
    """The grammar as xgrammar EBNF with root rule ``root``, one rule per line
    (direct left recursion as repetition: ``left_recursion``)."""
    grammar = without_direct_left_recursion(grammar)
    order = reachable_rules(grammar)
    names = _rule_names(order)
    writer = _Writer(names)
    lines = [f"{ROOT} ::= {names[grammar.start]}"]
    appended: dict[str, None] = {}
    for name in order:
        verbatim = grammar.verbatim.get(name)
        if verbatim is None:
            lines.append(f"{names[name]} ::= {writer.choice(grammar.rules[name])}")
        else:
            lines.append(f"{names[name]} ::= {verbatim.root}")
            appended[verbatim.ebnf.rstrip("\n")] = None
    return "\n".join([*lines, *appended]) + "\n"


def ebnf_string(value: str) -> str:
    """``value`` as an xgrammar string literal (for text that must contain no NUL)."""
    return _string(value)


def _rule_names(order: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    taken = {ROOT}
    for name in order:
        base = "r_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        candidate, number = base, 1
        while candidate in taken:
            number += 1
            candidate = f"{base}_{number}"
        taken.add(candidate)
        names[name] = candidate
    return names


class _Writer:
    """Writes expressions; each method returns text safe in the place its name says."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def choice(self, node: Node) -> str:
        if isinstance(node, Choice):
            return " | ".join(self.sequence(option) for option in node.options)
        return self.sequence(node)

    def sequence(self, node: Node) -> str:
        if isinstance(node, Sequence):
            if not node.items:
                return '""'
            return " ".join(self.item(item) for item in node.items)
        if isinstance(node, Text) and "\0" in node.value:
            return " ".join(self.atom(piece) for piece in _split_nul(node.value))
        return self.item(node)

    def item(self, node: Node) -> str:
        """One element of a sequence."""
        if isinstance(node, Repeat):
            return self.atom(node.item) + _quantifier(node.low, node.high)
        return self.atom(node)

    def atom(self, node: Node) -> str:
        """An element a quantifier can follow: anything compound is parenthesised."""
        if isinstance(node, Text) and "\0" not in node.value:
            return _string(node.value)
        if isinstance(node, CharSet):
            return _char_class(node)
        if isinstance(node, Ref):
            return self.names[node.name]
        return f"({self.choice(node)})"


def _split_nul(value: str) -> list[Node]:
    nul = CharSet(((0, 0),))
    pieces: list[Node] = []
    for index, part in enumerate(value.split("\0")):
        if index:
            pieces.append(nul)
        if part:
            pieces.append(Text(part))
    return pieces


def _quantifier(low: int, high: int | None) -> str:
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_METACHARACTERS = frozenset("\\][^-")


def _string(value: str) -> str:
    return '"' + "".join(_STRING_ESCAPES.get(char) or _char(char) for char in value) + '"'


def _char(char: str) -> str:
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _class_char(code: int) -> str:
    char = chr(code)
    return "\\" + char if char in _CLASS_METACHARACTERS else _char(char)


def _char_class(node: CharSet) -> str:
    parts = []
    for low, high in node.ranges:
        parts.append(_class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}")
    return "[" + ("^" if node.negated else "") + "".join(parts) + "]"
