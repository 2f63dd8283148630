"""References to the official metaschemas, answered from the copies jsonschema ships.

Why: schemas that hold schemas (a plugin's option schema, a form builder's
field definitions, a tool's parameter schema) name a metaschema by its URI
(``{"$ref": "http://json-schema.org/draft-07/schema#"}``), often without a
``$schema`` of their own. Nothing is fetched at compile time, but jsonschema
bundles the official documents, and the judge resolves the URI to that same
copy; so the copy is embedded under ``definitions``, where its id makes the
URI and the references inside it resolve.

One draft's rules read the whole document, so a metaschema of another draft
is embedded as the document's draft says the same thing: draft-04's ``id``
is ``$id`` later, and its boolean ``exclusiveMinimum`` beside ``minimum`` is
the number form. The judge reads the original document, each metaschema by
its own draft, so it checks this rewriting too. Draft-06's and -07's
metaschemas use ``propertyNames``, which a draft-04 document cannot say:
they stay remote there.

2019-09's and 2020-12's metaschemas are split into vocabularies joined by
dynamic references (``dynamic_scope``), whose meaning changed between the
two: each is embedded whole (the metaschema and its vocabularies) in a
document of its own draft only.

xgrammar writes an object's members in the order its schema lists them, so
a schema the model writes would list ``type`` after ``properties`` and
``required`` (the metaschemas' own orders); the copies list the keywords in
the order people write them (``WRITING_ORDER``: ``{"type": "object",
"properties": ..., "required": ...}``), which changes nothing they accept.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any
from urllib.parse import urldefrag

import jsonschema
from jsonschema_specifications import REGISTRY

from grammar_compiler.json_schema.drafts import (
    DRAFT_04,
    DRAFT_06,
    DRAFT_07,
    DRAFT_2019,
    DRAFT_2020,
    Draft,
    metaschema_key,
)
from grammar_compiler.json_schema.refs import schemas_in

_METASCHEMAS = {
    DRAFT_04: jsonschema.Draft4Validator.META_SCHEMA,
    DRAFT_06: jsonschema.Draft6Validator.META_SCHEMA,
    DRAFT_07: jsonschema.Draft7Validator.META_SCHEMA,
}
_VOCABULARY_FOLDERS = {
    DRAFT_2019: "https://json-schema.org/draft/2019-09/",
    DRAFT_2020: "https://json-schema.org/draft/2020-12/",
}


WRITING_ORDER = (
    *("$schema", "$id", "id", "$ref", "title", "type", "description", "enum", "const"),
    *("format", "pattern", "minLength", "maxLength", "minimum", "exclusiveMinimum", "maximum"),
    *("exclusiveMaximum", "multipleOf", "items", "prefixItems", "additionalItems", "minItems"),
    *("maxItems", "uniqueItems", "contains", "minContains", "maxContains", "properties"),
    *("required", "additionalProperties", "patternProperties", "propertyNames"),
    *("minProperties", "maxProperties", "dependencies", "dependentRequired"),
    *("dependentSchemas", "if", "then", "else", "allOf", "anyOf", "oneOf", "not", "default"),
    *("examples", "readOnly", "writeOnly", "deprecated", "$comment", "$anchor"),
    *("$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$vocabulary"),
    *("unevaluatedItems", "unevaluatedProperties", "contentEncoding", "contentMediaType"),
    *("contentSchema", "definitions", "$defs"),
)
"""The keywords of a schema in the order people write them (see the module docstring)."""
_RANK = {keyword: rank for rank, keyword in enumerate(WRITING_ORDER)}


def with_metaschemas(document: Any, draft: Draft) -> Any:
    """The document, with each official metaschema a ``$ref`` names embedded as ``draft``
    reads it, its keywords in ``WRITING_ORDER``."""
    if not isinstance(document, dict):
        return document
    holder = "$defs" if not draft.legacy_ids and "definitions" not in document else "definitions"
    definitions = document.get(holder, {})
    if not isinstance(definitions, dict):
        return document
    named = {metaschema_key(urldefrag(ref)[0]) for ref in _references(document)}
    embedded = dict(definitions)
    folder = _VOCABULARY_FOLDERS.get(draft)
    if folder is not None and any(key.startswith(metaschema_key(folder)) for key in named):
        for name, metaschema in _vocabulary_metaschemas(folder):
            embedded[_free(name, embedded)] = metaschema
    for own_draft, metaschema in _METASCHEMAS.items():
        if metaschema_key(metaschema[own_draft.id_keyword]) not in named:
            continue
        rewritten = _as_read_by(metaschema, own_draft, draft)
        if rewritten is not None:
            rewritten["properties"] = _in_writing_order(rewritten["properties"])
            embedded[_free(f"metaschema-{own_draft.name}", embedded)] = rewritten
    if len(embedded) == len(definitions):
        return document
    return {**document, holder: embedded}


def _vocabulary_metaschemas(folder: str) -> Iterator[tuple[str, dict]]:
    """A draft's metaschema and vocabularies, named for ``$defs``; the metaschema
    lists every keyword its vocabularies declare first (``true``: the
    vocabularies constrain them), in ``WRITING_ORDER``, so the merged object
    writes them in that order."""
    uris = sorted(uri for uri in REGISTRY if uri.startswith(folder))
    declared = {key for uri in uris for key in REGISTRY.contents(uri).get("properties", {})}
    for uri in uris:
        metaschema = copy.deepcopy(REGISTRY.contents(uri))
        if "allOf" in metaschema:  # the metaschema itself, joining the vocabularies
            listed = {key: True for key in WRITING_ORDER if key in declared}
            metaschema["properties"] = {**listed, **metaschema.get("properties", {})}
        name = "metaschema-" + uri.removeprefix("https://json-schema.org/draft/")
        yield name.replace("/", "-"), metaschema


def _in_writing_order(properties: dict) -> dict:
    return dict(sorted(properties.items(), key=lambda item: _RANK.get(item[0], len(_RANK))))


def _free(name: str, taken: dict) -> str:
    while name in taken:
        name += "_"
    return name


def _as_read_by(metaschema: dict, own: Draft, reader: Draft) -> dict | None:
    """The metaschema rewritten into ``reader``'s spelling, or None where it cannot be said."""
    rewritten = copy.deepcopy(metaschema)
    if own is reader:
        return rewritten
    if reader is DRAFT_04:
        return None  # propertyNames (draft-06 on) has no draft-04 equivalent
    del rewritten["$schema"]  # the document's own draft reads it
    rewritten["$id"] = rewritten.pop(own.id_keyword)
    if own is DRAFT_04:
        for schema in schemas_in(rewritten):
            for bound in ("Minimum", "Maximum"):
                exclusive, limit = f"exclusive{bound}", bound.lower()
                if schema.get(exclusive) is True:
                    schema[exclusive] = schema.pop(limit)
                elif schema.get(exclusive) is False:
                    del schema[exclusive]
    return rewritten


def _references(document: dict) -> Iterator[str]:
    for schema in schemas_in(document):
        if isinstance(schema.get("$ref"), str):
            yield schema["$ref"]
