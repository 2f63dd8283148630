"""The one shape every constraint language compiles to.

Each language module (regex, BNF dialects, Lark, JSON Schema, TypeScript)
turns what users write into a :class:`CanonicalConstraint`: the form xgrammar
compiles in the decoder, plus an independent judge the frontend runs on the
finished text before it calls the output a match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

# What the decoder compiles; the same strings as engine.params.ConstraintType.
CanonicalKind = Literal["regex", "ebnf", "json_schema"]

# A judge returns None when the text satisfies the user's constraint, else a
# short reason. It must not use xgrammar, so it can catch xgrammar's mistakes.
Judge = Callable[[str], "str | None"]

JUDGE_BUDGET_S = 5.0
"""How long the regex and grammar judges may work on one text. Backtracking
(``(a|a)*a{30}b``: minutes) and Earley parsing of an ambiguous grammar (cubic
in the length) can take practically forever on a short output; a judge that
runs out of time does not call the output a match."""


def out_of_time() -> str:
    """The reason a judge gives when it ran out of ``JUDGE_BUDGET_S``."""
    return f"the check did not finish within {JUDGE_BUDGET_S:g} s"


@dataclass(frozen=True)
class CanonicalConstraint:
    """A user constraint translated for xgrammar, with its independent judge."""

    kind: CanonicalKind
    value: str
    source_language: str
    judge: Judge = field(compare=False, repr=False)
    not_enforced: tuple[str, ...] = ()
    """Keywords accepted only in best-effort mode; empty in strict mode."""
