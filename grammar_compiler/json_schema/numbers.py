"""Numbers: OpenAPI's range formats, non-integer ``multipleOf``, and the default length guard.

Range formats. OpenAPI's integer formats (``int32``, ``uint8``, ...) are
annotations to ``jsonschema`` (the judge ignores them), and say exactly
which range the value must fit; enforcing that range is a subset of what
the schema allows and what the user means. ``uint`` (no width, common in
Go-generated specs) is read as ``uint64``; ``double-int`` is the
registry's integer a double holds exactly. On ``number`` the format bounds
the value's range only; on a string it constrains nothing.

Non-integer ``multipleOf``. The judge, like most validators, decides
``multipleOf: 0.01`` by floating-point division: ``19.99 / 0.01`` is
``1998.9999999999998``, so it rejects 19.99, and about one two-decimal
value in seven. A grammar for "at most two decimals" would therefore
produce output the judge rejects. What every validator accepts is:

* integer multiples of the step (``DecimalStep.integer_step``: for 0.3
  the multiples of 3), when the step's binary rounding is within half an
  ulp of the quotient for every integer below 2**53, which
  ``DecimalStep.exact_for_integers`` proves per step;
* in a bounded range, the multiples themselves, each one checked with
  ``jsonschema`` before it is offered (the renderer lists them).

The runaway guard. A model can write the digits of an unbounded number
until it runs out of tokens. By default integers stay within
``SAFE_INTEGER`` (what a double, and so every common JSON parser, holds
exactly), and numbers with a fraction within ``FRACTION_LIMIT``, where
xgrammar's range grammar allows at most 6 decimals and no exponent: at
most 17 significant digits. A schema lifts the guard with the root keyword
``"x-unbounded-numbers": true`` (an annotation to every validator). Two
places stay unguarded: an integer ``multipleOf`` without bounds (xgrammar
enforces a step only unbounded or over a range narrower than 10,000, so the
guard would drop the step) and values a schema leaves free (``{}``, an
object's undeclared properties), which xgrammar generates as any JSON.
Each guarded range is costly for xgrammar to build (a tenth of a second to a
second on a 77k-token vocabulary), so the renderer writes each distinct
one once, as a ``$defs`` entry, and refers to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from math import gcd, lcm

from grammar_compiler.errors import ConstraintError

SAFE_INTEGER = 2**53 - 1
"""Largest integer a double holds exactly, and with it every integer below."""
FRACTION_LIMIT = 1e11
"""Guarded numbers with a fraction lie strictly within +-FRACTION_LIMIT: 11 integer
digits and xgrammar's at most 6 decimals make at most 17 significant digits."""
UNBOUNDED_NUMBERS = "x-unbounded-numbers"
"""Root keyword that lifts the guard (``true``)."""

_UNSIGNED_64 = (0, 2**64 - 1)
FORMAT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": _UNSIGNED_64,
    "uint": _UNSIGNED_64,
    "double-int": (-SAFE_INTEGER, SAFE_INTEGER),
}
"""OpenAPI formats that are an integer range, enforced as ``minimum``/``maximum``."""


def guard_numbers(document: object) -> bool:
    """Whether the guard applies: unless the root says ``"x-unbounded-numbers": true``."""
    if not isinstance(document, dict) or UNBOUNDED_NUMBERS not in document:
        return True
    lifted = document[UNBOUNDED_NUMBERS]
    if not isinstance(lifted, bool):
        raise ConstraintError(f"{UNBOUNDED_NUMBERS} at the root must be true or false")
    return not lifted


@dataclass(frozen=True)
class DecimalStep:
    """A non-integer ``multipleOf``, as the decimal the user wrote and the float the judge uses."""

    value: Fraction  # the decimal, 0.01 as 1/100
    binary: Fraction  # the double the schema holds

    @staticmethod
    def of(step: float) -> DecimalStep:
        return DecimalStep(Fraction(Decimal(repr(step))), Fraction(step))

    @property
    def integer_step(self) -> int:
        """The integers that are multiples: those of the numerator (0.3 = 3/10: multiples of 3)."""
        return self.value.numerator

    def exact_for_integers(self) -> bool:
        """Whether the judge's ``n / step`` is an integer for every integer multiple n.

        For n = k * value, the exact quotient n / binary is k / (1 + d), with
        d = binary / value - 1. Below 2**53, a double's half ulp at k is more
        than k * 2**-54, so |d / (1 + d)| <= 2**-54 rounds it to k; from 2**53
        on every double is an integer. (Python divides ints above 2**53 by
        rounding them to doubles first; for steps above 1 the renderer keeps
        integers below it.)
        """
        drift = self.binary / self.value - 1
        return abs(drift / (1 + drift)) <= Fraction(1, 2**54)


def combined_step(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    """The least common multiple of two positive rational steps."""
    if a is None or b is None:
        return a or b
    return Fraction(lcm(a.numerator, b.numerator), gcd(a.denominator, b.denominator))
