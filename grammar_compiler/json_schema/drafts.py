"""The JSON Schema drafts this compiler reads: which one a document declares, its metaschema."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from grammar_compiler import ecma_regex
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_judge import pointer
from grammar_compiler.json_schema.pointers import location


@dataclass(frozen=True)
class Draft:
    """What differs between the drafts this module reads."""

    name: str
    validator_class: type[Validator]
    tuple_items: bool  # items: [...] and additionalItems (before 2020-12)
    ref_hides_siblings: bool  # $ref siblings are ignored (before 2019-09)

    @staticmethod
    def of(document: Any) -> Draft:
        declared = document.get("$schema") if isinstance(document, dict) else None
        if declared is None:
            return DRAFT_07 if _uses_tuple_items(document) else DRAFT_2020
        if not isinstance(declared, str):
            raise ConstraintError("$schema must be a string")
        key = re.sub(r"^https?://", "", declared).rstrip("#")
        draft = _DRAFTS.get(key)
        if draft is None:
            raise ConstraintError(
                f"unsupported $schema {declared!r}: use draft-06, draft-07, 2019-09 or 2020-12"
            )
        return draft


DRAFT_07 = Draft("draft-07", jsonschema.Draft7Validator, True, True)
DRAFT_2020 = Draft("2020-12", jsonschema.Draft202012Validator, False, False)
_DRAFTS = {
    "json-schema.org/draft-06/schema": Draft("draft-06", jsonschema.Draft6Validator, True, True),
    "json-schema.org/draft-07/schema": DRAFT_07,
    "json-schema.org/draft/2019-09/schema": Draft(
        "2019-09", jsonschema.Draft201909Validator, True, False
    ),
    "json-schema.org/draft/2020-12/schema": DRAFT_2020,
}


def _uses_tuple_items(document: Any) -> bool:
    """A schema without $schema is read as 2020-12 unless it is written the draft-07 way."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("items"), list) or "additionalItems" in value:
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def check_metaschema(document: Any, validator_class: type[Validator]) -> None:
    """The schema is checked against its draft's metaschema, regexes compiled by Python too."""
    checker = jsonschema.FormatChecker(formats=("regex",))
    meta = validator_class(validator_class.META_SCHEMA, format_checker=checker)
    error = best_match(meta.iter_errors(document))
    if error is None:
        return
    where = location(pointer(error.absolute_path))
    if error.validator == "format" and isinstance(error.instance, str):
        _explain_regex(error.instance, where)
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    raise ConstraintError(f"invalid JSON Schema at {where}: {message}")


def _explain_regex(pattern: str, where: str) -> None:
    """Python's re refused a regex; say why in terms of the dialects if this module can."""
    try:
        ecma_regex.parse_pattern(pattern)
    except ecma_regex.PatternError as err:
        raise ConstraintError(f"regex at {where}: {err.message}", position=err.position) from None
