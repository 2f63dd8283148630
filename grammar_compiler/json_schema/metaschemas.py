"""References to the document's own draft's metaschema, answered from the copy jsonschema ships.

Why: schemas that hold schemas (a plugin's option schema, a form builder's
field definitions) name their draft's metaschema by its URI
(``{"$ref": "http://json-schema.org/draft-07/schema#"}``). Nothing is fetched
at compile time, but jsonschema bundles the official documents, and the
judge resolves the URI to that same copy; so the copy is embedded under
``definitions``, where its ``id`` makes the URI and the references inside it
resolve. Only the document's own draft is embedded (one draft's rules read
the whole document), and only draft-04, -06 and -07: 2019-09 and 2020-12
split theirs into vocabularies joined by dynamic references.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any
from urllib.parse import urldefrag

import jsonschema

from grammar_compiler.json_schema.drafts import DRAFT_04, DRAFT_06, DRAFT_07, Draft, metaschema_key
from grammar_compiler.json_schema.refs import subschemas

_METASCHEMAS = {
    DRAFT_04.name: jsonschema.Draft4Validator.META_SCHEMA,
    DRAFT_06.name: jsonschema.Draft6Validator.META_SCHEMA,
    DRAFT_07.name: jsonschema.Draft7Validator.META_SCHEMA,
}


def with_own_metaschema(document: Any, draft: Draft) -> Any:
    """The document, with its draft's metaschema embedded if a ``$ref`` names it."""
    metaschema = _METASCHEMAS.get(draft.name)
    if metaschema is None or not isinstance(document, dict):
        return document
    definitions = document.get("definitions", {})
    if not isinstance(definitions, dict):
        return document
    uri = metaschema_key(metaschema[draft.id_keyword])
    if not any(metaschema_key(urldefrag(ref)[0]) == uri for ref in _references(document)):
        return document
    name = "metaschema"
    while name in definitions:
        name += "_"
    return {**document, "definitions": {**definitions, name: copy.deepcopy(metaschema)}}


def _references(document: dict) -> Iterator[str]:
    pending: list[Any] = [document]
    while pending:
        schema = pending.pop()
        if isinstance(schema, dict):
            if isinstance(schema.get("$ref"), str):
                yield schema["$ref"]
            pending.extend(sub for _, sub in subschemas(schema))
