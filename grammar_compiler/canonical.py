"""The one shape every constraint language compiles to.

Each language module (regex, BNF dialects, Lark, JSON Schema, TypeScript)
turns what users write into a :class:`CanonicalConstraint`: the form xgrammar
compiles in the decoder, plus an independent judge the frontend runs on the
finished text before it calls the output a match.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal
from urllib.parse import quote

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
class KeywordAt:
    """One keyword at one place of the user's schema, and why it is listed."""

    keyword: str
    pointer: str
    """JSON pointer (RFC 6901) of the subschema that holds the keyword; "" is the root."""
    note: str = ""

    def __str__(self) -> str:
        return f"{self.keyword} at {self.pointer or 'the root'}"

    def keyword_pointer(self) -> str:
        """The pointer of the keyword itself (``/properties/a/nullable``)."""
        return f"{self.pointer}/{self.keyword.replace('~', '~0').replace('/', '~1')}"


REPORT_SUMMARY_POINTERS = 3
"""Pointers a summary lists per category before ``...``."""
MAX_REPORT_SUMMARY = 512
"""Characters of a summary at most (it travels as an HTTP header)."""
_HEADER_SAFE = "/~:@!$&'()*+=-._"  # percent-encoded: ',' ';' ' ' '%', non-ASCII, controls


@dataclass(frozen=True)
class ConstraintReport:
    """What a JSON Schema (or TypeScript) constraint enforces, ignores and leaves unenforced.

    ``enforced`` counts, by keyword, the subschemas in which a keyword that
    constrains (one the draft's validator checks) was read and enforced: one
    count per keyword per subschema the compiler visited, so a keyword inside a
    ``$ref`` target counts once however often it is referenced, and keywords of
    definitions nothing references are not counted. ``ignored`` lists the
    keywords that constrain nothing under the schema's draft and were dropped:
    unknown keywords and vendor keys, keywords of another draft, OpenAPI's
    (``nullable``, ``discriminator``, ...), unknown ``format`` names, and
    siblings that ``$ref`` hides before 2019-09. JSON Schema's own annotations
    (``title``, ``description``, ``default``, ``examples``, ``readOnly``, ...)
    and ``x-`` extensions are neither counted nor listed. ``not_enforced``
    lists, with ``strict: false`` only, the keywords that constrain but that
    generation does not enforce (the judge still checks them). ``subsets``
    lists the keywords enforced as a subset: every output is valid, but some
    valid values are never generated (the note says which), in either mode.
    """

    enforced: tuple[tuple[str, int], ...] = ()
    """(keyword, count) pairs, sorted by keyword."""
    ignored: tuple[KeywordAt, ...] = ()
    not_enforced: tuple[KeywordAt, ...] = ()
    subsets: tuple[KeywordAt, ...] = ()

    @property
    def enforced_total(self) -> int:
        return sum(count for _, count in self.enforced)

    def prefixed(self, prefix: str) -> ConstraintReport:
        """The same report with every pointer below ``prefix`` (a JSON pointer)."""

        def moved(items: tuple[KeywordAt, ...]) -> tuple[KeywordAt, ...]:
            return tuple(replace(item, pointer=prefix + item.pointer) for item in items)

        return replace(
            self,
            ignored=moved(self.ignored),
            not_enforced=moved(self.not_enforced),
            subsets=moved(self.subsets),
        )

    @staticmethod
    def combined(reports: Iterable[ConstraintReport]) -> ConstraintReport:
        """One report for several schemas (the arguments of several tools)."""
        counts: Counter[str] = Counter()
        ignored: list[KeywordAt] = []
        not_enforced: list[KeywordAt] = []
        subsets: list[KeywordAt] = []
        for report in reports:
            counts.update(dict(report.enforced))
            ignored += report.ignored
            not_enforced += report.not_enforced
            subsets += report.subsets
        return ConstraintReport(
            tuple(sorted(counts.items())), tuple(ignored), tuple(not_enforced), tuple(subsets)
        )

    def summary(self) -> str:
        """One ASCII line of at most ``MAX_REPORT_SUMMARY`` characters, for a response header.

        e.g. ``enforced=14; ignored=2; not_enforced=0;
        ignored_at=/properties/a/nullable,/properties/b/maxmimum``: the counts,
        then the first ``REPORT_SUMMARY_POINTERS`` pointers of each listed
        keyword, percent-encoded (RFC 3986) where not plain ASCII; the
        subsets' count and pointers follow where there are any.
        """
        parts = [
            f"enforced={self.enforced_total}",
            f"ignored={len(self.ignored)}",
            f"not_enforced={len(self.not_enforced)}",
        ]
        if self.subsets:
            parts.append(f"subsets={len(self.subsets)}")
        listed = (
            ("ignored_at", self.ignored),
            ("not_enforced_at", self.not_enforced),
            ("subset_at", self.subsets),
        )
        for name, items in listed:
            if items:
                shown = [
                    quote(item.keyword_pointer(), safe=_HEADER_SAFE)
                    for item in items[:REPORT_SUMMARY_POINTERS]
                ]
                if len(items) > REPORT_SUMMARY_POINTERS:
                    shown.append("...")
                parts.append(f"{name}={','.join(shown)}")
        text = "; ".join(parts)
        if len(text) > MAX_REPORT_SUMMARY:
            text = text[: MAX_REPORT_SUMMARY - 3] + "..."
        return text


@dataclass(frozen=True)
class CanonicalConstraint:
    """A user constraint translated for xgrammar, with its independent judge."""

    kind: CanonicalKind
    value: str
    source_language: str
    judge: Judge = field(compare=False, repr=False)
    not_enforced: tuple[str, ...] = ()
    """Keywords accepted only in best-effort mode; empty in strict mode."""
    report: ConstraintReport | None = field(default=None, compare=False)
    """JSON Schema and TypeScript: what is enforced, ignored and not enforced."""
