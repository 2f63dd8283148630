"""A grammar tree as a constraint: xgrammar's EBNF, checked, with a Lark judge.

The readers of the BNF dialect, ISO/Wirth/W3C EBNF and ABNF end at the same
tree, and from there the constraint is made the same way: the EBNF the
decoder compiles (refused here if xgrammar would not parse it, so the error
is a 400 at validation, not a failure in the decoder) and the judge that
re-checks outputs from the tree, never with xgrammar.
"""

from __future__ import annotations

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_tree import Grammar
from grammar_compiler.ebnf_writer import write_ebnf
from grammar_compiler.errors import ConstraintError
from grammar_compiler.lark_writer import bnf_judge
from grammar_compiler.xgrammar_errors import xgrammar_complaint


def checked_ebnf(grammar: Grammar) -> str:
    """The grammar's xgrammar EBNF.

    Raises:
        ConstraintError: xgrammar does not take it.
    """
    ebnf = write_ebnf(grammar)
    complaint = xgrammar_complaint(ebnf)
    if complaint is not None:
        raise ConstraintError(f"grammar not accepted by xgrammar: {complaint.message}")
    return ebnf


def tree_constraint(grammar: Grammar, language: str) -> CanonicalConstraint:
    """The constraint of a grammar read from ``language``, judged from its tree.

    Raises:
        ConstraintError: xgrammar does not take the grammar's EBNF.
    """
    return CanonicalConstraint(
        kind="ebnf", value=checked_ebnf(grammar), source_language=language, judge=bnf_judge(grammar)
    )
