"""Draft-03 documents, read as the draft-04 documents that mean the same.

Why: draft-03 schemas are still published (old API descriptions, config
files, generators that never moved on), and jsonschema still validates
them; refusing them outright sends users to rewrite what has a plain
meaning. Draft-04 changed few keywords, each with a direct equivalent, so
the document is rewritten once and both the compiler and the judge read
the rewrite (``$schema`` becomes draft-04's):

* ``divisibleBy`` is ``multipleOf``;
* ``extends`` (a schema or a list) joins ``allOf``;
* ``disallow`` (type names or schemas) is ``not`` of their ``anyOf``;
* a ``type`` list holding schemas is an ``anyOf`` of them and the named types;
* ``dependencies`` naming one property is a list of it;
* the ``ip-address`` and ``host-name`` formats are ``ipv4`` and ``hostname``.

``"required": true`` inside a property and ``"type": "any"`` are read by
``drafts.read_leftovers``, as for documents of later drafts that kept them.
"""

from __future__ import annotations

import copy
from typing import Any

from grammar_compiler.json_schema.drafts import metaschema_key
from grammar_compiler.json_schema.refs import schemas_in

DRAFT_03_URIS = frozenset(
    {"json-schema.org/draft-03/schema", "json-schema.org/draft-03/hyper-schema"}
)
"""Draft-03's metaschema URIs, as ``metaschema_key`` writes them."""
DRAFT_04_SCHEMA = "http://json-schema.org/draft-04/schema#"
_FORMATS = {"ip-address": "ipv4", "host-name": "hostname"}


def declares_draft_03(document: Any) -> bool:
    declared = document.get("$schema") if isinstance(document, dict) else None
    key = metaschema_key(declared) if isinstance(declared, str) else None
    return key in DRAFT_03_URIS


def as_draft_04(document: dict) -> dict:
    """A draft-04 copy of a draft-03 document."""
    document = copy.deepcopy(document)
    for schema in schemas_in(document):  # its subschemas are listed after the rewrite
        _rewrite(schema)
    document["$schema"] = DRAFT_04_SCHEMA
    return document


def _rewrite(schema: dict) -> None:
    """Rewrites one schema's own keywords in place (its subschemas come after)."""
    if "divisibleBy" in schema:
        schema.setdefault("multipleOf", schema.pop("divisibleBy"))
    if "extends" in schema:
        extended = schema.pop("extends")
        extended = extended if isinstance(extended, list) else [extended]
        schema["allOf"] = [*schema.get("allOf", []), *extended]
    if "disallow" in schema:
        disallowed = schema.pop("disallow")
        disallowed = disallowed if isinstance(disallowed, list) else [disallowed]
        schema["not"] = {"anyOf": [_as_schema(entry) for entry in disallowed]}
    declared = schema.get("type")
    if isinstance(declared, list) and any(isinstance(entry, dict) for entry in declared):
        del schema["type"]
        options = [_as_schema(entry) for entry in declared]
        schema["allOf"] = [*schema.get("allOf", []), {"anyOf": options}]
    dependencies = schema.get("dependencies")
    if isinstance(dependencies, dict):
        for name, needed in dependencies.items():
            if isinstance(needed, str):
                dependencies[name] = [needed]
    if schema.get("format") in _FORMATS:
        schema["format"] = _FORMATS[schema["format"]]


def _as_schema(entry: Any) -> Any:
    """A draft-03 type entry (a type name, ``any``, or a schema) as a schema."""
    if entry == "any":
        return {}
    return {"type": entry} if isinstance(entry, str) else entry
