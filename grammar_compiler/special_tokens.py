"""Special tokens named in a grammar: written by the frontend, resolved by the decoder.

llguidance's Lark lets a rule name a token of the model (``<think>``,
``<|python_tag|>``) rather than text. Which tokens exist is known only
where the tokenizer is, in the decoder, while grammars are translated in
the frontend. So the translation writes each named token as an EBNF rule
whose name carries the token's text::

    special.token.3c7468696e6b3e ::= "<think>"

and the decoder, which compiles the grammar against the served tokenizer,
replaces its body by ``Token(id)`` (xgrammar's syntax for exactly that
token) with ``resolve_special_tokens``; a name the tokenizer does not have
is refused there, naming the token, and reaches the client as a 400 like
every other grammar the decoder cannot compile. Unresolved, the rule still
means the token's text, so the grammar is never wider than meant.

The ``.`` in the name keeps it apart from every rule the EBNF writer makes
(``root``, ``r_...``) and from GBNF users' rules (their names cannot hold
one). The decoder shows the text of every token of a constrained output,
special ones included, so the text the judge checks is the token's text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from grammar_compiler.cfg_tree import Verbatim
from grammar_compiler.ebnf_writer import ebnf_string

RULE_PREFIX = "special.token."
_RULE = re.compile(r"^(special\.token\.([0-9a-f]+)) ::= .*$", re.MULTILINE)


class UnknownSpecialToken(ValueError):
    """The grammar names a token the served tokenizer does not have."""


def special_token_rule(text: str) -> Verbatim:
    """The EBNF rule that stands for the token whose text is ``text``."""
    name = RULE_PREFIX + text.encode("utf-8").hex()
    return Verbatim(root=name, ebnf=f"{name} ::= {ebnf_string(text)}\n")


def resolve_special_tokens(ebnf: str, vocabulary: Mapping[str, int], vocab_size: int) -> str:
    """``ebnf`` with each special-token rule matching exactly its token.

    ``vocabulary`` maps the texts of the tokenizer's added tokens (the ones
    it never splits) to their ids; ``vocab_size`` is the model's.

    Raises:
        UnknownSpecialToken: a named token is not in ``vocabulary`` or its id
            is outside the model's vocabulary.
    """

    def resolved(found: re.Match[str]) -> str:
        text = bytes.fromhex(found.group(2)).decode("utf-8")
        token = vocabulary.get(text)
        if token is None:
            raise UnknownSpecialToken(
                f"the grammar names the special token {text!r}, which the model's tokenizer "
                "does not have"
            )
        if not 0 <= token < vocab_size:
            raise UnknownSpecialToken(
                f"the grammar names the special token {text!r}, whose id {token} is outside "
                f"the model's vocabulary of {vocab_size}"
            )
        return f"{found.group(1)} ::= Token({token})"

    return _RULE.sub(resolved, ebnf)
