"""Where 2019-09's and 2020-12's dynamic references lead, the way the judge follows them.

Why: ``$dynamicRef`` (and 2019-09's ``$recursiveRef``) resolve to a
schema chosen by the resources the evaluation came through, which is how
the 2020-12 metaschema ties its vocabularies together and how a generic
"list of T" is written. The compiler must pick the same schema as the
judge (jsonschema, through ``referencing``), so this follows referencing's
rules rather than the specification's prose where they differ:

* the dynamic scope grows only by lookups: a reference pushes the resource
  it was read in, the first one always, later ones when they leave that
  resource; entering an embedded resource by nesting pushes nothing, and a
  document without an id pushes nothing at all;
* a reference (``$ref`` too) whose fragment names a ``$dynamicAnchor``
  resolves to the outermost resource in scope with that dynamic anchor;
* ``$recursiveRef`` from a resource whose root has ``$recursiveAnchor:
  true`` goes to the outermost resource of the unbroken run of such
  resources innermost in scope.

A ``DynamicScope`` keeps only what those choices read, so compiling a
subschema once per scope it is reached with terminates.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grammar_compiler.json_schema.refs import RefIndex


@dataclass(frozen=True)
class DynamicScope:
    """The resource being read and what the lookups before it leave for dynamic references."""

    base: str
    looked_up: bool = False  # a lookup pushed a resource (referencing's scope is not empty)
    anchors: tuple[tuple[str, str], ...] = ()  # dynamic anchor -> outermost resource with it
    recursive: str | None = None  # outermost resource of the innermost $recursiveAnchor run

    def within(self, base: str) -> DynamicScope:
        """Reading on into a nested subschema, which may be a resource of its own."""
        return self if base == self.base else replace(self, base=base)

    def after_lookup(self, uri: str, index: RefIndex) -> DynamicScope:
        """The scope a reference into the resource ``uri`` leaves its target in."""
        if not self.base or (self.looked_up and uri == self.base):
            return self.within(uri)
        return self._base_pushed(index).within(uri)

    def settled(self, index: RefIndex, target: str) -> DynamicScope:
        """The scope as the references under ``target`` see it, so that scopes that
        lead every one of them to the same place compile ``target`` once.

        From a resource with an id, the first lookup pushes it (referencing), and
        pushing it changes no reference that starts in it: its dynamic anchors
        join the scope, where they only stand in for its own anchors (the
        default); a resource with ``$recursiveAnchor`` starts or extends the run
        a ``$recursiveRef`` in it reads (so no run is the same as a run of it
        alone), one without ends it (unread there). Not done where a resource
        nested under ``target`` starts a scope of its own without a push.
        """
        nested = any(where.startswith(target + "/") for where in index.resources.values())
        if not self.base or nested:
            return self
        return self._base_pushed(index)

    def _base_pushed(self, index: RefIndex) -> DynamicScope:
        """The scope once a lookup has pushed the resource being read."""
        anchors = dict(self.anchors)
        for resource, name in sorted(index.dynamic_anchors):
            if resource == self.base:
                anchors.setdefault(name, resource)  # an outer resource's anchor wins
        recursive = (self.recursive or self.base) if self.base in index.recursive_roots else None
        return DynamicScope(self.base, True, tuple(sorted(anchors.items())), recursive)

    def dynamic_anchor(self, name: str) -> str | None:
        """The resource whose ``$dynamicAnchor`` ``name`` a reference to that anchor reaches."""
        return dict(self.anchors).get(name)
