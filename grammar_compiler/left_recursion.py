"""Direct left recursion written as repetition, for xgrammar.

``R ::= A | R B`` and ``R ::= A B*`` match the same texts. Lark spells every
``x*`` and ``x+`` of a rule as such a rule (``__expr_star_0 ::= op term |
__expr_star_0 op term``), and users write ``expr: expr "+" term | term``.
xgrammar 0.2.8 parses both forms, but fills token masks for the repetition
far faster: the bench's Lark workload (``bench/workload.py``), an expression
grammar, over an 80-token-per-line text with Llama 3's vocabulary took 0.46
ms a fill left-recursive and 0.18 ms as ``A B*``.

Only the EBNF given to xgrammar is rewritten; the judge parses the grammar
as written. Indirect left recursion (through other rules or a nullable
prefix) is left as it is.
"""

from __future__ import annotations

from grammar_compiler.cfg_tree import (
    Choice,
    Grammar,
    Node,
    Ref,
    Repeat,
    Sequence,
    choice_of,
    sequence_of,
)


def without_direct_left_recursion(grammar: Grammar) -> Grammar:
    """The same grammar with each directly left-recursive rule as ``A B*``."""
    rules = {
        name: _as_repetition(name, body) if name not in grammar.verbatim else body
        for name, body in grammar.rules.items()
    }
    return Grammar(rules, grammar.start, grammar.verbatim)


def _as_repetition(name: str, body: Node) -> Node:
    options = body.options if isinstance(body, Choice) else (body,)
    bases: list[Node] = []
    tails: list[Node] = []
    for option in options:
        items = option.items if isinstance(option, Sequence) else (option,)
        if items and items[0] == Ref(name):
            if len(items) > 1:  # ``R ::= R`` adds no text: dropped
                tails.append(sequence_of(list(items[1:])))
        else:
            bases.append(option)
    if not tails or not bases:  # not left-recursive, or no text to start from
        return body
    return Sequence((choice_of(bases), Repeat(choice_of(tails), 0, None)))
