"""xgrammar's verdict on an EBNF text, with its location in a usable form.

xgrammar 0.2.8 raises ``RuntimeError`` whose text is one log line, e.g.::

    [04:19:05] /project/cpp/grammar_parser.cc:820: EBNF parser error at line 2,
    column 12: Expect element, but got \\n

(``EBNF lexer error`` for token-level mistakes). Lines count ``\\n``, ``\\r\\n``
and a lone ``\\r``; columns count UTF-8 bytes from 1. Errors found after
parsing (such as ``The root rule with name "root" is not found``) still say
line 1, column 1, so the location is only as good as xgrammar's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import xgrammar

from grammar_compiler.cfg_tree import lines

_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*\S+:\d+:\s*")
_LOCATED = re.compile(r"EBNF (?:lexer|parser) error at line (\d+), column (\d+): (.*)", re.DOTALL)


@dataclass(frozen=True)
class Complaint:
    message: str
    line: int | None = None
    byte_column: int | None = None

    def column_in(self, text: str) -> int | None:
        """The 1-based character column in ``text`` that xgrammar's byte column points at."""
        if self.line is None or self.byte_column is None:
            return None
        all_lines = lines(text)
        if self.line > len(all_lines):
            return self.byte_column
        prefix = all_lines[self.line - 1].encode("utf-8")[: self.byte_column - 1]
        return len(prefix.decode("utf-8", "ignore")) + 1


def xgrammar_complaint(ebnf: str) -> Complaint | None:
    """None if xgrammar parses ``ebnf`` with root rule ``root``, else what it says."""
    try:
        xgrammar.Grammar.from_ebnf(ebnf, root_rule_name="root")
    except (RuntimeError, ValueError) as err:
        return parse_complaint(str(err))
    return None


def parse_complaint(raw: str) -> Complaint:
    text = _LOG_PREFIX.sub("", raw.strip())
    located = _LOCATED.search(text)
    if located is None:
        return Complaint(text)
    return Complaint(located.group(3).strip(), int(located.group(1)), int(located.group(2)))
