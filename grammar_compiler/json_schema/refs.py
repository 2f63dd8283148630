"""The subschemas of a document and the ``$ref`` targets they can name (pointers, anchors, ids)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urldefrag, urljoin

from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema.pointers import escape_token, location

if TYPE_CHECKING:
    from grammar_compiler.json_schema.drafts import Draft

_SCHEMA_KEYWORDS = (
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_MAP_KEYWORDS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)
_SCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")


def subschemas(schema: dict) -> Iterator[tuple[str, Any]]:
    """(pointer suffix, subschema) for every schema directly inside ``schema``, in any draft.

    Values of the wrong type are skipped, so a document not yet checked
    against its metaschema can be walked.
    """
    for key in _SCHEMA_KEYWORDS:
        if key in schema:
            yield f"/{key}", schema[key]
    for key in _SCHEMA_MAP_KEYWORDS:
        mapping = schema.get(key)
        for name, sub in mapping.items() if isinstance(mapping, dict) else ():
            if isinstance(sub, (dict, bool)):  # dependencies may also hold name lists
                yield f"/{key}/{escape_token(name)}", sub
    for key in _SCHEMA_LIST_KEYWORDS:
        listed = schema.get(key)
        for index, sub in enumerate(listed if isinstance(listed, list) else ()):
            yield f"/{key}/{index}", sub
    items = schema.get("items")
    if isinstance(items, list):
        for index, sub in enumerate(items):
            yield f"/items/{index}", sub
    elif items is not None:
        yield "/items", items


class RefIndex:
    """Where every subschema is, its base URI, and the targets of anchors and ids."""

    def __init__(self, document: Any, draft: Draft) -> None:
        self.document = document
        self.bases: dict[str, str] = {}
        self.resources: dict[str, str] = {}
        self.anchors: dict[tuple[str, str], str] = {}
        self.dynamic_anchors: set[tuple[str, str]] = set()  # (resource, name): 2020-12's
        self.recursive_roots: set[str] = set()  # resources whose root has $recursiveAnchor: true
        self._walk(document, "", "", draft)

    def _walk(self, schema: Any, where: str, base: str, draft: Draft) -> None:
        if not isinstance(schema, dict):
            self.bases[where] = base
            return
        identifier = schema.get(draft.id_keyword)
        if isinstance(identifier, str):
            if identifier.startswith("#") and draft.legacy_ids:
                self.anchors[(base, identifier[1:])] = where
            elif not (draft.legacy_ids and "$ref" in schema):  # an id next to $ref is ignored
                base = urldefrag(_join(base, identifier))[0]
                self.resources[base] = where
        if where == "":
            self.resources.setdefault(base, "")
        # A $dynamicAnchor is also a plain anchor (``dynamic_scope`` says when it is more).
        for keyword in () if draft.legacy_ids else ("$anchor", "$dynamicAnchor"):
            anchor = schema.get(keyword)
            if isinstance(anchor, str):
                self.anchors[(base, anchor)] = where
                if keyword == "$dynamicAnchor" and "$dynamicRef" in draft.keywords:
                    self.dynamic_anchors.add((base, anchor))
        recursive = schema.get("$recursiveAnchor") is True and "$recursiveRef" in draft.keywords
        if recursive and self.resources.get(base) == where:
            self.recursive_roots.add(base)
        self.bases[where] = base
        for suffix, sub in subschemas(schema):
            self._walk(sub, where + suffix, base, draft)

    @property
    def dynamic(self) -> bool:
        """Whether a reference's target may depend on the way there (``dynamic_scope``)."""
        return bool(self.dynamic_anchors or self.recursive_roots)

    def locate(self, ref: str, where: str) -> tuple[str, str]:
        """The resource (its URI, which this document holds) and fragment ``ref`` names."""
        uri, fragment = urldefrag(_join(self.bases.get(where, ""), ref))
        if uri not in self.resources:
            raise RemoteRef(ref)
        return uri, fragment

    def resolve(self, ref: str, where: str) -> str:
        """The pointer of the subschema ``ref`` (found at ``where``) names."""
        uri, fragment = self.locate(ref, where)
        resource = self.resources[uri]
        if fragment and not fragment.startswith("/"):
            target = self.anchors.get((uri, fragment))
            if target is None:
                raise ConstraintError(
                    f"unresolvable $ref {ref!r} at {location(where)}: no such anchor"
                )
            return target
        target = resource + unquote(fragment)
        self.lookup(target, ref, where)
        return target

    def lookup(self, target: str, ref: str = "", where: str = "") -> Any:
        value = self.document
        for token in target.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                raise ConstraintError(f"unresolvable $ref {ref!r} at {location(where)}")
        if not isinstance(value, (dict, bool)):
            raise ConstraintError(f"$ref {ref!r} at {location(where)} does not point to a schema")
        return value


def _join(base: str, ref: str) -> str:
    """``urljoin``, except that a fragment keeps any base (``urljoin`` drops ``urn:`` ones)."""
    return urldefrag(base)[0] + ref if ref.startswith("#") else urljoin(base, ref)


class RemoteRef(Exception):
    def __init__(self, ref: str) -> None:
        super().__init__(ref)
        self.ref = ref


def schemas_in(document: Any) -> Iterator[dict]:
    """Every schema object of the document (not values of enum, const, default, ...)."""
    stack = [document]
    while stack:
        schema = stack.pop()
        if isinstance(schema, dict):
            yield schema
            stack.extend(sub for _, sub in subschemas(schema))


def references_in(schema: Any) -> bool:
    """Whether ``schema`` or a subschema of it holds a reference of any kind."""
    keys = ("$ref", "$dynamicRef", "$recursiveRef")
    return any(key in current for current in schemas_in(schema) for key in keys)
