r"""A compiled constraint as EBNF rules that another grammar can use (Lark's ``%json``).

A JSON schema inside a Lark grammar is compiled by ``compile_json_schema``
like any other; what the decoder would compile for it alone is then printed
by xgrammar as EBNF (``Grammar.from_json_schema(value, any_whitespace=False,
strict_mode=True)``, exactly the options the decoder compiles a schema
with, so the layout is the service's: ``{"a": 1, "b": [2, 3]}``) and every
rule of it renamed under a prefix, so it can sit next to the rules of the
grammar that embeds it.

Probed on xgrammar 0.2.8: the printed EBNF reads back as the same grammar
(printing it again gives the same text), lookahead assertions in it such as
``(=[ \n\r\t]* [,}\]:])`` after a string do not stop the embedded value
from being followed by other text, and rule names may contain ``.``,
which the prefix ends with, so no renamed rule can clash with one the EBNF
writer makes (``root``, ``r_...``).
"""

from __future__ import annotations

import re

import xgrammar

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_tree import Verbatim

_DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*) ::= ", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def embedded_ebnf(constraint: CanonicalConstraint, prefix: str) -> Verbatim:
    """The constraint's grammar as EBNF whose rules are all named ``prefix`` + their name.

    ``prefix`` must contain a ``.``.
    """
    if constraint.kind == "json_schema":
        grammar = xgrammar.Grammar.from_json_schema(
            constraint.value, any_whitespace=False, strict_mode=True
        )
    else:  # a schema the compiler already wrote out as EBNF
        grammar = xgrammar.Grammar.from_ebnf(constraint.value)
    return Verbatim(root=prefix + "root", ebnf=renamed(str(grammar), prefix))


def renamed(ebnf: str, prefix: str) -> str:
    """``ebnf`` with each rule it defines, and every reference to one, prefixed.

    Strings and character classes are copied as they are, so text that
    happens to spell a rule name is left alone; so are keyword arguments
    (``Regex("...", json_string=true)``).
    """
    defined = set(_DEFINITION.findall(ebnf))
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
        out.append(prefix + word if word in defined and not keyword else word)
        position = name.end()
    return "".join(out)


def _literal_end(ebnf: str, start: int) -> int:
    """The index just past the string or class that starts at ``start``."""
    closing = '"' if ebnf[start] == '"' else "]"
    position = start + 1
    while position < len(ebnf) and ebnf[position] != closing:
        position += 2 if ebnf[position] == "\\" else 1
    return position + 1
