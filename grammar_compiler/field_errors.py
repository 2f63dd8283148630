"""Constraint errors that say which field of an OpenAI-style request is wrong.

A ``/v1/completions`` request carries constraints in several fields
(``grammar``, ``response_format``, ``tools``, ``tool_choice``), so "invalid
regex at position 3" is not enough: the client must also learn where the
regex was. OpenAI's error object has a ``param`` for that, which
:attr:`FieldError.field` fills; the message starts with the same path.
"""

from __future__ import annotations

from grammar_compiler.errors import ConstraintError


class FieldError(ConstraintError):
    """A :class:`ConstraintError` about one request field, e.g. ``tools[1].function.name``.

    Attributes:
        field: the path of the offending field, as a client would write it.
    """

    def __init__(
        self,
        field: str,
        message: str,
        *,
        position: int | None = None,
        line: int | None = None,
        column: int | None = None,
        pattern_index: int | None = None,
    ) -> None:
        super().__init__(
            f"{field}: {message}",
            position=position,
            line=line,
            column=column,
            pattern_index=pattern_index,
        )
        self.field = field


def at_field(field: str, error: ConstraintError) -> FieldError:
    """``error`` (raised by a language compiler) located in ``field``, its location kept.

    An error that already names a field, deeper than ``field``, is returned as it is.
    """
    if isinstance(error, FieldError):
        return error
    return FieldError(
        field,
        error.message,
        position=error.position,
        line=error.line,
        column=error.column,
        pattern_index=error.pattern_index,
    )
