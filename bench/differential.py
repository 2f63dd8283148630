"""What the regex and grammar fuzzers share: the texts they try, and their findings.

Both compare a real xgrammar matcher with the service's judge on every short
text over a small alphabet (``regex_fuzz``, ``grammar_fuzz``); a constraint
either compiles, is refused (counted), or crashes the compiler (a finding).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from grammar_compiler import ConstraintError

Compiled = TypeVar("Compiled")


def texts(letters: list[str], length: int) -> Iterator[str]:
    """Every text of up to ``length`` of the letters, shortest first."""
    for size in range(length + 1):
        yield from map("".join, itertools.product(letters, repeat=size))


@dataclass
class Findings:
    """Per constraint (its text first): refused with the reason, crashed, or the
    text only xgrammar accepts (unsound) or only the judge does (incomplete)."""

    drawn: int = 0
    compiled: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    unsound: list[tuple[str, str]] = field(default_factory=list)
    incomplete: list[tuple[str, str]] = field(default_factory=list)
    crashed: list[tuple[str, str]] = field(default_factory=list)

    def compile(self, subject: str, compile_one: Callable[[], Compiled]) -> Compiled | None:
        """``compile_one()``, or None once its refusal or crash is recorded."""
        self.drawn += 1
        try:
            compiled = compile_one()
        except ConstraintError as error:
            self.refused.append((subject, str(error)))
            return None
        except Exception as error:  # a crash is a finding, reported with its subject
            self.crashed.append((subject, f"{type(error).__name__}: {error}"))
            return None
        self.compiled += 1
        return compiled

    def disagreement(self, subject: str, text: str, *, accepted: bool) -> None:
        (self.unsound if accepted else self.incomplete).append((subject, repr(text)))

    def print(self, *, show_refused: bool, shown: Callable[[str, str], str]) -> None:
        """Each finding (refusals too if asked) as ``LABEL`` and ``shown(subject, detail)``."""
        groups = [("UNSOUND", self.unsound), ("INCOMPLETE", self.incomplete)]
        groups.append(("CRASH", self.crashed))
        if show_refused:
            groups.insert(0, ("REFUSED", self.refused))
        for label, cases in groups:
            for subject, detail in cases:
                print(f"{label} {shown(subject, detail)}")

    def summary(self) -> str:
        return (
            f"{self.drawn} drawn, {len(self.refused)} refused, {self.compiled} compiled;"
            f" {len(self.unsound)} unsound, {len(self.incomplete)} incomplete,"
            f" {len(self.crashed)} crashed"
        )
