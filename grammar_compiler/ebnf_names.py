"""Rule names in xgrammar's printed EBNF, rewritten without touching anything else.

Two places edit EBNF that xgrammar printed: a grammar embedded in another
gets every rule prefixed (``embedded_ebnf``), and the tool-call grammar
points the copies of a rule at one of them (``tool_grammar``). Both must
leave strings, character classes and keyword arguments
(``Regex("...", json_string=true)``) as they are, where text may happen to
spell a rule name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*) ::= ", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def rewrite_names(ebnf: str, rename: Callable[[str], str]) -> str:
    """``ebnf`` with every name (a rule's, where it is defined or referred
    to) replaced by ``rename(name)``; strings, classes and keyword arguments
    copied as they are."""
    out: list[str] = []
    position = 0
    while position < len(ebnf):
        char = ebnf[position]
        if char in '"[':
            end = _literal_end(ebnf, position)
            out.append(ebnf[position:end])
            position = end
            continue
        name = _NAME.match(ebnf, position)
        if name is None:
            out.append(char)
            position += 1
            continue
        word = name.group()
        keyword = ebnf.startswith("=", name.end())
        out.append(word if keyword else rename(word))
        position = name.end()
    return "".join(out)


def _literal_end(ebnf: str, start: int) -> int:
    """The index just past the string or class that starts at ``start``."""
    closing = '"' if ebnf[start] == '"' else "]"
    position = start + 1
    while position < len(ebnf) and ebnf[position] != closing:
        position += 2 if ebnf[position] == "\\" else 1
    return position + 1
