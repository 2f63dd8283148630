"""Keyword classes: annotations (never constrain), keywords the decoder cannot enforce, composition.

Which keywords constrain depends on the draft (``drafts.Draft.keywords``);
every other keyword is an annotation. ``ANNOTATIONS`` are JSON Schema's own
(never reported); any other keyword outside the draft is reported as ignored,
with the note ``ignored_note`` gives it.

The full table of what is enforced and how is in the package docstring
(``grammar_compiler.json_schema``).
"""

from __future__ import annotations

import difflib

from grammar_compiler.json_schema.drafts import DRAFTS, Draft

ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$defs",
        "definitions",
        "$comment",
        "$vocabulary",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "then",  # read with "if" (``conditionals``); alone they do nothing
        "else",
        "minContains",  # read with "contains" (``contains``)
        "maxContains",
    }
)
CONTENT_ASSERTIONS = {
    "contentEncoding": "draft-07 lets validators check encoded content, which generation "
    "cannot enforce (from 2019-09 on it is an annotation)",
    "contentMediaType": "draft-07 lets validators check the content's media type, which "
    "generation cannot enforce (from 2019-09 on it is an annotation)",
}
"""Annotations in every other draft; assertions a draft-07 validator may make."""
ENCODED_ALPHABETS = {
    "base64": "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
    "base32": "^(?:[A-Z2-7]{8})*"
    "(?:[A-Z2-7]{2}======|[A-Z2-7]{4}====|[A-Z2-7]{5}===|[A-Z2-7]{7}=)?$",
    "base16": "^(?:[0-9A-F]{2})*$",
}
"""RFC 4648's encodings as patterns: draft-07's ``contentEncoding`` alone (no
``contentMediaType``, which would ask what the decoded bytes are) is enforced
by writing only text that decodes."""


def content_pattern(schema: dict) -> str | None:
    """The pattern that enforces a draft-07 schema's ``contentEncoding``, if one does."""
    encoding = schema.get("contentEncoding")
    if "contentMediaType" in schema or not isinstance(encoding, str):
        return None
    return ENCODED_ALPHABETS.get(encoding.lower())


COMPOSITION = ("allOf", "anyOf", "oneOf", "$ref", "not", "if", "dependentSchemas")

_OPENAPI = "an OpenAPI keyword, not JSON Schema's; JSON Schema ignores it"
OPENAPI_NOTES = {
    "nullable": _OPENAPI + ' (to allow null, list "null" in "type")',
    "discriminator": _OPENAPI + " (oneOf/anyOf decide the branch)",
    "xml": _OPENAPI,
    "example": _OPENAPI + " (JSON Schema spells it examples)",
    "externalDocs": _OPENAPI,
}
OTHER_SPELLINGS = {"id": "draft-04's spelling of $id"}


def ignored_note(keyword: str, value: object, draft: Draft) -> str:
    """Why ``keyword`` (not one of ``draft``'s) constrains nothing, and what was probably meant."""
    if keyword in OPENAPI_NOTES:
        note = OPENAPI_NOTES[keyword]
        return note if keyword != "nullable" or value is True else _OPENAPI
    owners = [other.name for other in DRAFTS if keyword in other.keywords]
    if owners:
        spelling = OTHER_SPELLINGS.get(keyword, f"a keyword of {', '.join(owners)}")
        return f"{spelling}, not of {draft.name}, which ignores it"
    if keyword in OTHER_SPELLINGS:
        return f"{OTHER_SPELLINGS[keyword]}; {draft.name} ignores it"
    note = "not a JSON Schema keyword, so it constrains nothing"
    close = difflib.get_close_matches(keyword, sorted(draft.keywords), n=1, cutoff=0.75)
    return note + (f" (did you mean {close[0]!r}?)" if close else "")
