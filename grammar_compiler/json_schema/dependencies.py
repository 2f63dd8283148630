"""``dependentRequired``, ``dependentSchemas`` and ``dependencies`` as branches.

A dependency on a trigger property holds exactly when the trigger is absent
(``properties: {trigger: false}``, non-objects included) or when what it
requires holds: the names (``dependentRequired``, a list in
``dependencies``) or the trigger together with the schema
(``dependentSchemas``, a schema in ``dependencies``; with the trigger, so
what the schema declares counts as evaluated only where it applies). So
each dependency doubles the branches, unless the rest of the schema decides
it: a required trigger just adds the requirement, a trigger that cannot
occur drops it.

Several optional triggers multiply: exact branching goes on while the
branches cost xgrammar at most what one object of ``MAX_OPTIONAL_PROPERTIES``
optional properties does (their optional properties, squared and summed:
the compile time grows with the square of each object's), and further
dependencies are enforced as a subset instead of refused:

* names: they become required whenever the trigger may appear (every
  property stays writable; outputs carry the dependents even without the
  trigger), or, where that is impossible, the trigger is left out;
* a schema: the trigger is left out (its schema may declare properties that
  count as evaluated only with the trigger), or, where the trigger is
  required, the schema applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grammar_compiler.json_schema.branching import alternatives, conjoin, generates_nothing
from grammar_compiler.json_schema.nodes import Node, Unmergeable, effective_kinds, never
from grammar_compiler.json_schema.pointers import escape_token
from grammar_compiler.json_schema.size import MAX_OPTIONAL_PROPERTIES

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler

_KEYWORDS = ("dependentRequired", "dependentSchemas", "dependencies")


def enforce(compiler: Compiler, schema: dict, node: Node, where: str) -> Node:
    """``node`` (the rest of ``schema``) with the schema's dependencies."""
    for keyword in _KEYWORDS:  # (node() passes only what the draft reads)
        if keyword not in schema:
            continue
        for trigger, requirement in schema[keyword].items():
            at = f"{where}/{keyword}/{escape_token(trigger)}"
            dependency = _Dependency(compiler, trigger, requirement, at)
            node = dependency.apply(node, keyword, schema, where)
    return node


class _Dependency:
    """One trigger and what it requires, as the branches it may take."""

    def __init__(self, compiler: Compiler, trigger: str, requirement: Any, where: str) -> None:
        self.compiler = compiler
        self.trigger = trigger
        self.names = isinstance(requirement, list)
        gone = never(f"property {trigger!r} is absent here", where)
        self.absent = Node(
            where=where,
            properties={trigger: gone},
            origins=((compiler.synthetic({"properties": {trigger: False}}), where),),
        )
        if self.names:
            names = frozenset(requirement) - {trigger}
            origin = compiler.synthetic({"required": sorted(names)})
            self.needed = Node(where=where, required=names, origins=((origin, where),))
            self.present = self.needed  # overlapping "absent" costs nothing, and is simpler
        else:
            self.needed = compiler.node(requirement, where)
            origin = compiler.synthetic({"required": [trigger]})
            trigger_node = Node(
                where=where, required=frozenset({trigger}), origins=((origin, where),)
            )
            self.present = compiler.merge(self.needed, trigger_node, where)

    def apply(self, node: Node, keyword: str, schema: dict, where: str) -> Node:
        decided = self._decided(node, where)
        if decided is not None:
            return decided
        exact = (self.absent, self.present)
        branches = [conjoin(self.compiler, node, branch, where) for branch in exact]
        if None not in branches:
            try:
                union = alternatives(self.compiler, branches, where, keyword, ((schema, where),))
            except Unmergeable:
                union = None
            if union is not None and _optional_squares(union) <= MAX_OPTIONAL_PROPERTIES**2:
                return union
        compiler = self.compiler
        compiler.subset(keyword, where, f"{self.trigger!r} is enforced as a subset (branch limit)")
        return self._subset(node, where)

    def _decided(self, node: Node, where: str) -> Node | None:
        """The result where the rest of the schema settles the dependency, else None."""
        if node.any_of is not None or node.ref is not None or node.enum is not None:
            return node if node.enum is not None else None  # an enum was filtered by it
        value = node.properties.get(self.trigger) or self.compiler.undeclared(node, self.trigger)
        if generates_nothing(self.compiler, value):
            return node  # the trigger never occurs
        objects_only = effective_kinds(node) == {"object"}
        if self.trigger in node.required and (self.names or objects_only):
            return self.compiler.merge(node, self.needed, where)  # (a schema applies to objects)
        return None

    def _subset(self, node: Node, where: str) -> Node:
        """The first of the choices (module docstring) that can generate something."""
        choices = [self.needed, self.absent] if self.names else [self.absent, self.present]
        merged = [conjoin(self.compiler, node, choice, where) for choice in choices]
        possible = [m for m in merged if m is not None]
        for choice in possible:
            if not generates_nothing(self.compiler, choice):
                return choice
        # nothing fits (the exact union would not either), or nothing could be expressed
        return possible[0] if possible else self.compiler.merge(node, choices[0], where)


def _optional_squares(node: Node) -> int:
    """What the branches cost xgrammar: their optional properties, squared and summed."""
    branches = node.any_of if node.any_of is not None else (node,)
    return sum(len(branch.properties.keys() - branch.required) ** 2 for branch in branches)
