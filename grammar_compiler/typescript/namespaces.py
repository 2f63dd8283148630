"""Names inside namespaces: ``namespace API { export interface User {...} }`` used as ``API.User``.

The parser gives each declaration inside a namespace its qualified name
(``API.User``, ``Store.Models.Item``) and remembers the namespace it was
written in. Which declaration a written name means is known only once the
whole source is read (a namespace may come after its use), so this pass
runs then: inside ``API``, ``User`` is ``API.User`` when that is declared
(the innermost namespace first, as TypeScript looks names up); outside,
``API.User`` is written qualified. A dotted name that is no declaration
stays an enum member (``API.Role.Admin``: the member ``Admin`` of the enum
``API.Role``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from grammar_compiler.typescript.syntax import Declaration, Reference
from grammar_compiler.typescript.tokens import Token


def qualify_references(types: Mapping[str, Declaration]) -> None:
    """Rewrites every reference in ``types``' declarations to the declaration it names."""
    for declaration in types.values():
        qualified = functools.partial(
            _qualified,
            scopes=_scopes(declaration.scope),
            types=types,
            parameters={p.name for p in declaration.parameters},
        )
        declaration.body = _mapped(declaration.body, qualified)
        declaration.extends = tuple(_mapped(base, qualified) for base in declaration.extends)
        declaration.parameters = tuple(
            dataclasses.replace(p, default=_mapped(p.default, qualified))
            for p in declaration.parameters
        )


def _scopes(scope: str) -> list[str]:
    """``"A.B"`` -> ``["A.B.", "A.", ""]``: the prefixes a name is looked up under."""
    parts = scope.split(".") if scope else []
    return [".".join(parts[:n]) + "." for n in range(len(parts), 0, -1)] + [""]


def _qualified(
    reference: Reference,
    scopes: list[str],
    types: Mapping[str, Declaration],
    parameters: set[str],
) -> Reference:
    if reference.name in parameters and reference.member is None:
        return reference
    written = reference.name if reference.member is None else f"{reference.name}.{reference.member}"
    for prefix in scopes:
        if prefix + written in types:
            return Reference(prefix + written, reference.arguments, reference.token)
    if reference.member is not None:
        for prefix in scopes:
            if prefix + reference.name in types:
                return dataclasses.replace(reference, name=prefix + reference.name)
    return reference


def _mapped(node: Any, qualified: Callable[[Reference], Reference]) -> Any:
    """``node`` with each reference inside it (at any depth) passed through ``qualified``."""
    if isinstance(node, tuple):
        return tuple(_mapped(item, qualified) for item in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, (Token, type)):
        return node
    changes = {
        f.name: _mapped(getattr(node, f.name), qualified)
        for f in dataclasses.fields(node)
        if f.name != "token"
    }
    rebuilt = dataclasses.replace(node, **changes)
    return qualified(rebuilt) if isinstance(rebuilt, Reference) else rebuilt
