"""The shortest text a constraint can produce, and the limit on it.

A small constraint can demand an enormous output: ``(x{1000}){1000}``, a
GBNF rule that doubles itself thirty times (``a1 ::= a0 a0``, ``a2 ::= a1
a1``, ...), a JSON array of 1000 objects of 1000 required constants. Such an
output could never be generated within any token limit, but the decoder does
not wait to find that out: where the grammar forces the text, xgrammar's
jump-forward builds all of it at once (a 2**29 character string took the
decoder to 22 GB and the kernel killed it), and its cost grows faster than
the length (a forced 40,000 character JSON array took 1.2 s of the decode
loop). So every language refuses a constraint in which some part cannot be
satisfied by fewer than ``MAX_SHORTEST_OUTPUT`` characters, before anything
is compiled.

Checking every part, not just the whole, matters: in ``a|b(x{1000}){1000}``
the whole can be one character, yet after ``b`` a million are forced.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping

from grammar_compiler.errors import ConstraintError

MAX_SHORTEST_OUTPUT = 32_768
"""Longest "shortest possible output" of any part of a constraint, in characters.

Far beyond what a completion can hold (8192 tokens are some 30,000
characters of text), and a forced text of this length costs xgrammar well
under a second.
"""
UNBOUNDED = MAX_SHORTEST_OUTPUT + 1
"""Lengths saturate here: anything longer is refused, whatever its exact size."""
IMPOSSIBLE = math.inf
"""The length of a part no text satisfies (its own checks report that)."""


def capped(length: float) -> float:
    """``length``, saturated at ``UNBOUNDED`` so products of counts stay small numbers."""
    return length if length == IMPOSSIBLE else min(length, UNBOUNDED)


def times(count: int, length: float) -> float:
    """``count`` repetitions of something ``length`` long, saturated."""
    return capped(count * length) if count else 0


def over_limit(length: float) -> bool:
    """Whether some text satisfies the part, but none within the limit."""
    return UNBOUNDED <= length < IMPOSSIBLE


def too_long(what: str, **location: int | None) -> ConstraintError:
    """The error for a part whose shortest text is over the limit."""
    return ConstraintError(
        f"{what} needs more than {MAX_SHORTEST_OUTPUT} characters of output "
        "(limit MAX_SHORTEST_OUTPUT): no completion could hold it",
        **location,
    )


def shortest_by_name(
    names: Iterable[str],
    uses: Mapping[str, Iterable[str]],
    shortest_of: Callable[[str, Mapping[str, float]], float],
) -> dict[str, float]:
    """The shortest text of every named rule (grammar rule, schema definition).

    ``uses[name]`` lists the names its body refers to; ``shortest_of(name,
    known)`` is the length of the body's shortest text when the referenced
    names have the lengths in ``known`` and every other one is unusable
    (``IMPOSSIBLE``). Knuth's generalisation of Dijkstra's algorithm: a body's
    length is never below the lengths it refers to, so the smallest tentative
    length is final. Each body is evaluated once per referenced name that is
    settled, so long chains of rules cost linear time (a plain fixpoint
    iteration would take one pass per link). Names that derive no finite text
    are left ``IMPOSSIBLE``.
    """
    names = list(names)
    users: dict[str, set[str]] = {name: set() for name in names}
    for name in names:
        for used in uses.get(name, ()):
            if used in users:
                users[used].add(name)
    known: dict[str, float] = {}
    pending = [(shortest_of(name, known), name) for name in names]
    heapq.heapify(pending)
    while pending:
        length, name = heapq.heappop(pending)
        if name in known:
            continue
        if length == IMPOSSIBLE:
            break
        known[name] = length
        for user in users[name]:
            if user not in known:
                heapq.heappush(pending, (shortest_of(user, known), user))
    return {name: known.get(name, IMPOSSIBLE) for name in names}
