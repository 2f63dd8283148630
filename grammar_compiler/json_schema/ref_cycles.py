"""References that lead back to their own schema without going into the value.

``{"$defs": {"D": {"minimum": 1, "$ref": "#/$defs/D"}}}``, or ``D`` as
``anyOf: [{type: string}, {$ref: D}]``: checking a value against ``D``
means checking the same value against ``D`` again, so a validator never
finishes (``jsonschema`` runs out of stack, and the service's judge could
not check an output). JSON Schema leaves such schemas undefined; they are
refused, naming the reference. Only the keywords that apply a schema to
the value itself are followed (``$ref`` and the dynamic references,
``allOf``/``anyOf``/``oneOf``, ``not``, ``if``/``then``/``else``,
``dependentSchemas`` and draft-04-to-07 ``dependencies``); ``properties``,
``items`` and the like go into the value, so recursion through them ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema.pointers import escape_token, location
from grammar_compiler.json_schema.refs import RefIndex, RemoteRef

if TYPE_CHECKING:
    from grammar_compiler.json_schema.drafts import Draft

_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")


def refuse_in_place_cycles(index: RefIndex, draft: Draft) -> None:
    """Raises ``ConstraintError`` naming a reference on a cycle that stays at one value."""
    done: set[str] = set()
    for start in list(index.bases):
        if start in done:
            continue
        on_path = {start}
        stack = [(start, _next(index, draft, start))]
        while stack:
            where, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                stack.pop()
                on_path.discard(where)
                done.add(where)
                continue
            target, reference = step
            if target in on_path:
                at = reference or where
                raise ConstraintError(
                    f"the reference at {location(at)} leads back to {location(target)} "
                    "without going into the value, so checking a value against it never ends"
                )
            if target not in done:
                on_path.add(target)
                stack.append((target, _next(index, draft, target)))


def _next(index: RefIndex, draft: Draft, where: str) -> Iterator[tuple[str, str | None]]:
    """The schemas applied to the same value as the one at ``where``, each with the
    pointer of the reference that leads there (None for a subschema)."""
    try:
        schema: Any = index.lookup(where)
    except ConstraintError:
        return
    if not isinstance(schema, dict):
        return
    for keyword in _REFERENCES:
        ref = schema.get(keyword)
        if isinstance(ref, str) and (keyword == "$ref" or keyword in draft.keywords):
            target = _resolved(index, ref, where)
            if target is not None:
                yield target, f"{where}/{escape_token(keyword)}"
    if draft.ref_hides_siblings and "$ref" in schema:
        return
    for keyword in _IN_PLACE_ONE:
        if keyword in schema and keyword in draft.keywords:
            yield f"{where}/{keyword}", None
    for keyword in _IN_PLACE_LISTS:
        listed = schema.get(keyword)
        if keyword in draft.keywords and isinstance(listed, list):
            yield from ((f"{where}/{keyword}/{i}", None) for i in range(len(listed)))
    for keyword in _IN_PLACE_MAPS:
        mapping = schema.get(keyword)
        if keyword in draft.keywords and isinstance(mapping, dict):
            for name, sub in mapping.items():
                if isinstance(sub, (dict, bool)):
                    yield f"{where}/{keyword}/{escape_token(name)}", None


def _resolved(index: RefIndex, ref: str, where: str) -> str | None:
    """The pointer ``ref`` names; None where it has none here (reported where it is compiled)."""
    try:
        return index.resolve(ref, where)
    except (RemoteRef, ConstraintError):
        return None
