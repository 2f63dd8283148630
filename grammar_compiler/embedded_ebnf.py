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

import xgrammar

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_tree import Verbatim
from grammar_compiler.ebnf_names import DEFINITION, rewrite_names


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
    defined = set(DEFINITION.findall(ebnf))
    return rewrite_names(ebnf, lambda name: prefix + name if name in defined else name)
