"""The one error type every constraint language reports user mistakes with.

The HTTP frontend turns a ``ConstraintError`` into a 400 response, so it
carries where the mistake is in a machine-readable form as well as a message
a person can act on. Regexes locate mistakes by character offset; line-based
languages (BNF, Lark, TypeScript) by line and column; a request may carry a
list of patterns, so the index of the offending one travels along too.
"""

from __future__ import annotations


class ConstraintError(ValueError):
    """A constraint the service cannot accept, and where it goes wrong.

    Attributes:
        message: what is wrong, without the location.
        position: 0-based character offset into the offending pattern.
        line, column: 1-based location, for languages that are read by line.
        pattern_index: 0-based index of the offending pattern when the request
            gave a list of them.
    """

    def __init__(
        self,
        message: str,
        *,
        position: int | None = None,
        line: int | None = None,
        column: int | None = None,
        pattern_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.line = line
        self.column = column
        self.pattern_index = pattern_index

    def describe(self) -> str:
        """One line for people: the message followed by the location, if known.

        e.g. ``unsupported regex feature 'lookahead (?=...)' at position 3 of pattern 1``.
        """
        location = self._location()
        return f"{self.message} {location}" if location else self.message

    def _location(self) -> str:
        if self.line is not None:
            where = f"at line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
        elif self.position is not None:
            where = f"at position {self.position}"
        else:
            where = ""
        if self.pattern_index is not None:
            number = self.pattern_index + 1  # people count patterns from 1
            where = f"{where} of pattern {number}" if where else f"in pattern {number}"
        return where

    def __str__(self) -> str:
        return self.describe()
