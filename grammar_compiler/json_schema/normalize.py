"""Normalization: a schema into ``Node``s, composition merged, each keyword enforced or reported.

``Compiler.node`` reads one subschema; ``$ref`` targets become named
definitions (recursion kept); ``allOf``, ``$ref`` siblings and
``anyOf``/``oneOf`` are merged into one node or a union of branches;
``if``/``then``/``else``, the dependency keywords, ``contains``, an
overlapping ``oneOf`` and ``not`` are rewritten into branches (see their
modules). A keyword that cannot be enforced is refused (strict) or recorded
in ``not_enforced`` (best effort); a keyword that is not one of the draft's is
an annotation, dropped and recorded as ignored (never refused). ``report``
sums it up as a ``ConstraintReport``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import referencing.exceptions
from jsonschema.protocols import Validator

from grammar_compiler import bounded_regex, ecma_regex
from grammar_compiler.canonical import ConstraintReport, KeywordAt
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_judge import JUDGED_FORMATS, validator_for
from grammar_compiler.json_schema import conditionals, contains, dependencies, exclusive_one_of
from grammar_compiler.json_schema.branching import alternatives
from grammar_compiler.json_schema.complement import (
    Complements,
    intersected,
    joined_regexes,
    unwritable,
)
from grammar_compiler.json_schema.drafts import Draft
from grammar_compiler.json_schema.dynamic_scope import DynamicScope
from grammar_compiler.json_schema.exclusive import first_overlap
from grammar_compiler.json_schema.keywords import (
    ANNOTATIONS,
    COMPOSITION,
    CONTENT_ASSERTIONS,
    content_pattern,
    ignored_note,
)
from grammar_compiler.json_schema.nodes import (
    KINDS,
    Bound,
    Node,
    Regex,
    Unmergeable,
    children,
    constrained_kinds,
    declared_kinds,
    effective_kinds,
    min_optional,
    never,
    tighter_lower,
    tighter_upper,
    type_kinds,
)
from grammar_compiler.json_schema.numbers import (
    FORMAT_RANGES,
    DecimalStep,
    combined_step,
    guard_numbers,
)
from grammar_compiler.json_schema.pointers import escape_token, location
from grammar_compiler.json_schema.ref_cycles import refuse_in_place_cycles
from grammar_compiler.json_schema.refs import RefIndex, RemoteRef, references_in
from grammar_compiler.json_schema.size import MAX_OPTIONAL_PROPERTIES
from grammar_compiler.regex_automaton import TextCounts
from grammar_compiler.regex_emit import always_extendable, finite_texts

MAX_BRANCHES = 1000
"""Branches of one anyOf/oneOf (nested unions flattened). A plain union's cost grows with
its branches, not their pairs: a tagged union of 4-property objects compiled (xgrammar,
cold, 2 loaded cores) in 0.4 / 1.5 / 4-7 s for 200 / 500 / 1000 members on the
4096-token demo vocabulary, 4-10 / 23 / 46 s on a 77k-token one; a 5000-property object,
which ``MAX_PROPERTIES`` allows, took 5.6 and 67 s."""
MAX_PRODUCT_BRANCHES = 64
"""Branches of a union distributed into another union (``allOf`` of unions, a union
beside a union): products multiply, so they keep the old bound."""
MAX_DISTRIBUTED_SUBSCHEMAS = 10_000
"""Subschemas a union may have once the keywords beside it are copied into each branch:
about as many as a document of ``MAX_SCHEMA_BYTES`` holds, so distribution never costs
xgrammar more than the largest document does."""


class Compiler:
    """Normalizes one document into nodes, then has them rendered for xgrammar."""

    def __init__(
        self, document: Any, draft: Draft, strict: bool, *, decoder_guard: bool = False
    ) -> None:
        """``decoder_guard``: the schema goes to the decoder whole (not inside a
        grammar), whose guard keeps an object's names and a unique array's
        items apart (``engine/json_repeats.py``)."""
        self.document = document
        self.draft = draft
        self.strict = strict
        self.decoder_guard = decoder_guard
        self.guard_numbers = guard_numbers(document)
        self.index = RefIndex(document, draft)
        refuse_in_place_cycles(self.index, draft)
        self.validator = validator_for(document, draft.validator_class)
        self.definitions: dict[str, Node] = {}
        self._names: dict[tuple[str, DynamicScope | None], str] = {}  # target -> definition
        self._scope = DynamicScope(self.index.bases[""]) if self.index.dynamic else None
        self._in_progress: set[str] = set()
        self._not_enforced: dict[tuple[str, str], KeywordAt] = {}
        self._ignored: dict[tuple[str, str], KeywordAt] = {}
        self._read_keywords: dict[tuple[str, str], None] = {}  # (keyword, where) that constrain
        self._views: dict[int, tuple[dict, dict]] = {}  # id(schema) -> (schema, its view)
        self._checks: dict[int, tuple[frozenset[str] | None, Validator]] = {}
        self._synthetic: dict[int, Any] = {}
        self.losses = 0  # values a merge had to leave out (``joined_regexes``)
        self.subsets: dict[tuple[str, str], str] = {}  # (keyword, where) -> what its rewrite loses
        self._lossy_definitions: set[str] = set()  # built while values were lost (``loss_mark``)
        self.optional_cap = MAX_OPTIONAL_PROPERTIES  # optional properties an object writes (size)
        self.uses_unevaluated = '"unevaluated' in json.dumps(document)  # (a safe overestimate)
        self._union_labels: dict[int, tuple[Node, str]] = {}
        self._subschema_counts: dict[int, tuple[Node, int]] = {}

    @staticmethod
    def value_key(value: Any) -> str:
        """Equal JSON values (as jsonschema compares them) get equal keys."""
        return value_key(value)

    @property
    def not_enforced(self) -> list[str]:
        return [str(item) for item in self._not_enforced.values()]

    def report(self) -> ConstraintReport:
        """Enforced: the constraining keywords read, less those ignored or not enforced.

        A keyword reported where it was not read (a node merged from several
        subschemas is reported at the first one's pointer) is taken off a
        reading of it below that pointer, else off any reading of it.
        """
        readings = dict(self._read_keywords)
        for keyword, where in (*self._ignored, *self._not_enforced):
            if (keyword, where) in readings:
                del readings[(keyword, where)]
                continue
            same = [(k, w) for k, w in readings if k == keyword]
            below = [(k, w) for k, w in same if w.startswith(where)]
            if below or same:
                del readings[(below or same)[0]]
        enforced = Counter(keyword for keyword, _ in readings)
        return ConstraintReport(
            enforced=tuple(sorted(enforced.items())),
            ignored=tuple(self._ignored.values()),
            not_enforced=tuple(self._not_enforced.values()),
            subsets=tuple(KeywordAt(k, where, why) for (k, where), why in self.subsets.items()),
        )

    # -- reporting -------------------------------------------------------

    def unenforceable(self, keyword: str, where: str, why: str = "") -> None:
        """Strict: refuse. Best effort: remember, and let the caller drop the keyword."""
        message = f"keyword '{keyword}' at {location(where)} cannot be enforced during generation"
        if why:
            message += f": {why}"
        if self.strict:
            raise ConstraintError(message)
        self._not_enforced.setdefault((keyword, where), KeywordAt(keyword, where, why))

    def subset(self, keyword: str, where: str, why: str) -> None:
        """A rewrite enforces part of what ``keyword`` allows here: sound, but values are lost.

        Remembered so that a schema left with no value at all is refused
        naming that keyword, not just called unsatisfiable.
        """
        self.subsets.setdefault((keyword, where), why)

    def loss_mark(self) -> tuple[int, int]:
        """Changes whenever a node built from here on leaves out values its schema allows."""
        return len(self.subsets), self.losses

    def lossy(self, node: Node, mark: tuple[int, int]) -> bool:
        """Whether ``node``, built since ``mark``, may match less than its schema.

        Values were lost while building it, or it reaches a definition
        built that way (earlier, so the mark did not see it).
        """
        if self.loss_mark() != mark:
            return True
        if not self._lossy_definitions:  # the common case: nothing to look for
            return False
        seen: set[str] = set()
        stack = [node]
        while stack:
            current = stack.pop()
            if current.ref is not None:
                if current.ref in self._lossy_definitions:
                    return True
                if current.ref not in seen and current.ref in self.definitions:
                    seen.add(current.ref)
                    stack.append(self.definitions[current.ref])
            stack.extend(children(current))
        return False

    def ignore(self, keyword: str, where: str, why: str) -> None:
        """An annotation the compiler drops (it constrains nothing): reported, never refused."""
        self._ignored.setdefault((keyword, where), KeywordAt(keyword, where, why))

    def constraining(self, key: str) -> bool:
        """Whether ``key`` is a keyword of the draft that constrains values."""
        return key in self.draft.keywords and key not in ANNOTATIONS

    def read(self, schema: dict, where: str, *, enforced: bool = True) -> dict:
        """The keywords of ``schema`` that its draft reads; every other one is reported as ignored.

        JSON Schema's own annotations, the draft's id keyword and ``x-``
        extensions are dropped silently. ``enforced``: the schema is compiled
        as a whole, so its constraining keywords count as read (the report's
        ``enforced``) and those that cannot be enforced are reported.
        """
        known = self.draft.keywords | ANNOTATIONS | {self.draft.id_keyword}
        for key, value in schema.items():
            if key not in known and not key.startswith("x-"):
                self.ignore(key, where, ignored_note(key, value, self.draft))
        cached = self._views.get(id(schema))
        if cached is None:
            view = {key: value for key, value in schema.items() if key in known}
            cached = self._views[id(schema)] = (schema, view if len(view) < len(schema) else schema)
        view = cached[1]
        if not enforced:
            return view
        hidden = "$ref" in view and self.draft.ref_hides_siblings
        for key in ("$ref",) if hidden else view:
            if self.constraining(key):
                self._read_keywords.setdefault((key, where), None)
        if hidden:
            return view  # the siblings are ignored (``_report_hidden_siblings``)
        if self.draft.asserts_content and not ("enum" in view or "const" in view):
            for key in (key for key in CONTENT_ASSERTIONS if key in view):
                if key != "contentEncoding" or content_pattern(view) is None:
                    self.unenforceable(key, where, CONTENT_ASSERTIONS[key])
        return view

    # -- schemas ---------------------------------------------------------

    def node(self, schema: Any, where: str) -> Node:
        if self._scope is None or where not in self.index.bases:
            return self._node(schema, where)
        outer, self._scope = self._scope, self._scope.within(self.index.bases[where])
        try:
            return self._node(schema, where)
        finally:
            self._scope = outer

    def _node(self, schema: Any, where: str) -> Node:
        if schema is True:
            return Node(where=where)
        if schema is False:
            return never(f"the schema at {location(where)} is false", where)
        schema = self.read(schema, where)
        if "$ref" in schema and self.draft.ref_hides_siblings:
            self._report_hidden_siblings(schema, where)
            return self._ref(schema["$ref"], where)
        if "enum" in schema or "const" in schema:
            return self._enum(schema, where)
        parts = [self._own(schema, where)]
        if "$ref" in schema:
            parts.append(self._ref(schema["$ref"], where))
        if "$dynamicRef" in schema:
            parts.append(self._ref(schema["$dynamicRef"], where, "$dynamicRef"))
        if "$recursiveRef" in schema:
            parts.append(self._recursive_ref(schema["$recursiveRef"], where))
        parts += [
            self.node(sub, f"{where}/allOf/{i}") for i, sub in enumerate(schema.get("allOf", ()))
        ]
        if "anyOf" in schema:
            parts.append(self._any_of(schema["anyOf"], where))
        if "oneOf" in schema:
            parts.append(self._one_of(schema["oneOf"], where))
        if "not" in schema:
            parts.append(self._not(schema["not"], where))
        result = parts[0]
        for part in parts[1:]:
            result = self.merge(result, part, where)
        result = conditionals.enforce(self, schema, result, where)
        result = dependencies.enforce(self, schema, result, where)
        result = contains.enforce(self, schema, result, where)
        return self._close_unevaluated(schema, result, where)

    def _report_hidden_siblings(self, schema: dict, where: str) -> None:
        for key in schema:
            if key != "$ref" and self.constraining(key):
                self.ignore(
                    key,
                    where,
                    f"{self.draft.name} ignores keywords next to $ref (to apply them, put the "
                    "$ref and them in allOf)",
                )

    def _enum(self, schema: dict, where: str) -> Node:
        """Allowed values, already checked against every other keyword of the schema."""
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        origins = ((schema, where),)
        kept = self.filter_values(values, origins, where)
        if not kept:
            return never(f"no value of the enum/const at {location(where)} is valid there", where)
        return Node(where=where, enum=tuple(kept), origins=origins)

    def filter_values(
        self, values: Iterable[Any], origins: Iterable[tuple[Any, str]], where: str
    ) -> list:
        """The distinct values valid against every origin, by jsonschema."""
        origins = tuple(origins)
        kept, seen = [], set()
        for value in values:
            key = value_key(value)
            if key not in seen:
                seen.add(key)
                if all(self._valid(value, schema, where) for schema, _ in origins):
                    kept.append(value)
        return kept

    def _valid(self, value: Any, schema: Any, where: str) -> bool:
        check = self._checks.get(id(schema))
        if check is None:
            check = self._checks[id(schema)] = self._check_for(schema)
        listed, validator = check
        if listed is not None and value_key(value) not in listed:
            return False
        try:
            return validator.is_valid(value)
        except referencing.exceptions.Unresolvable as err:
            raise ConstraintError(f"unresolvable $ref near {location(where)}: {err}") from None

    def _check_for(self, schema: Any) -> tuple[frozenset[str] | None, Validator]:
        """The values ``enum``/``const`` list (as ``value_key``s) and a validator for the rest.

        jsonschema compares a value with every listed one, so filtering an
        enum against its own schema took time quadratic in its length (a
        minute for 10,000 values); a set lookup gives the same answer (keys
        are equal exactly when jsonschema calls the values equal).
        """
        lists = isinstance(schema, dict) and ("enum" in schema or "const" in schema)
        if not lists or ("$ref" in schema and self.draft.ref_hides_siblings):
            return None, self.validator.evolve(schema=schema)
        keys = [{value_key(value) for value in schema.get("enum", ())}] if "enum" in schema else []
        if "const" in schema:
            keys.append({value_key(schema["const"])})
        rest = {key: value for key, value in schema.items() if key not in ("enum", "const")}
        return frozenset(set.intersection(*keys)), self.validator.evolve(schema=rest)

    def _ref(self, ref: str, where: str, keyword: str = "$ref") -> Node:
        try:
            target = self.index.resolve(ref, where)
            scope = None
            if self._scope is not None:
                target, scope = self._dynamic_target(ref, target, where, keyword)
        except RemoteRef:
            self.unenforceable(
                keyword, where, f"remote reference {ref!r}; only references into this schema work"
            )
            return Node(where=where)
        return self._definition(target, scope, ref, where)

    def _dynamic_target(
        self, ref: str, target: str, where: str, keyword: str
    ) -> tuple[str, DynamicScope]:
        """Where a reference goes, and the scope it leaves there, in a document with
        dynamic anchors (``dynamic_scope``)."""
        assert self._scope is not None
        uri, fragment = self.index.locate(ref, where)
        scope = self._scope.after_lookup(uri, self.index)
        if (uri, fragment) not in self.index.dynamic_anchors:
            return target, scope
        chosen = scope.dynamic_anchor(fragment)
        if chosen is None or chosen == uri:
            return target, scope
        target = self.index.anchors[(chosen, fragment)]
        anchored = self.index.lookup(target)
        own_id = isinstance(anchored, dict) and isinstance(anchored.get("$id"), str)
        if not own_id and self.index.bases[target] != uri and references_in(anchored):
            # referencing reads the references there against the first resource's URI
            self.unenforceable(
                keyword,
                where,
                f"it resolves to the dynamic anchor at {location(target)}, inside another "
                "resource, whose own references jsonschema would resolve against this one's URI",
            )
        return target, scope.within(self.index.bases[target])

    def _recursive_ref(self, ref: Any, where: str) -> Node:
        """2019-09's ``$recursiveRef`` (always ``"#"``): the resource's root, or an outer one."""
        if ref != "#" or self._scope is None:
            return self._ref(ref, where, "$recursiveRef")
        base = self.index.bases[where]
        uri = self._scope.recursive if base in self.index.recursive_roots else None
        uri = uri or base
        return self._definition(
            self.index.resources[uri], self._scope.after_lookup(uri, self.index), ref, where
        )

    def _definition(self, target: str, scope: DynamicScope | None, ref: str, where: str) -> Node:
        """A reference to the definition compiled from ``target`` (read in ``scope``)."""
        schema = self.index.lookup(target, ref, where)
        if scope is not None:
            scope = scope.within(self.index.bases[target]).settled(self.index, target)
        name = self._names.get((target, scope))
        if name is None:
            name = self._names[(target, scope)] = self._new_name(target)
            self._in_progress.add(name)
            outer, self._scope = self._scope, scope
            mark = self.loss_mark()
            try:
                self.definitions[name] = self.node(schema, target)
            finally:
                self._scope = outer
            if self.loss_mark() != mark:
                self._lossy_definitions.add(name)
            self._in_progress.discard(name)
        return Node(where=where, ref=name, origins=((schema, target),))

    def target_of(self, name: str) -> str:
        return next(target for (target, _), known in self._names.items() if known == name)

    def _new_name(self, target: str) -> str:
        last = target.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        stem = re.sub(r"[^A-Za-z0-9_]", "_", unquote(last)) or "root"
        name, number = stem, 2
        while name in self._names.values():
            name, number = f"{stem}_{number}", number + 1
        return name

    def _any_of(self, branches: list, where: str) -> Node:
        nodes = [self.node(sub, f"{where}/anyOf/{i}") for i, sub in enumerate(branches)]
        return self._union(nodes, where, (({"anyOf": branches}, where),))

    def _one_of(self, branches: list, where: str) -> Node:
        nodes, partial = [], {}
        for i, sub in enumerate(branches):
            mark = self.loss_mark()
            nodes.append(self.node(sub, f"{where}/oneOf/{i}"))
            if self.lossy(nodes[-1], mark):
                partial[i] = declared_kinds(sub)
        nodes = exclusive_one_of.without_shared_kinds(self, nodes, where)
        overlapping = first_overlap(self, nodes, partial)
        if overlapping is not None:
            rewritten = exclusive_one_of.rewrite(self, branches, nodes, where, partial)
            if isinstance(rewritten, str):
                self.unenforceable(
                    "oneOf",
                    where,
                    f"branches {overlapping[0]} and {overlapping[1]} may both match and xgrammar "
                    f"cannot exclude that ({rewritten})",
                )
            else:
                nodes = rewritten
        return self._union(nodes, where, (({"oneOf": branches}, where),), "oneOf")

    def _union(
        self, nodes: Iterable[Node], where: str, origins: tuple, keyword: str = "anyOf"
    ) -> Node:
        flat: list[Node] = []
        for node in nodes:
            if not node.never:
                flat.extend(node.any_of if node.any_of is not None else (node,))
        if not flat:
            return never(f"no branch of the anyOf/oneOf at {location(where)} can match", where)
        if len(flat) > MAX_BRANCHES:
            raise Unmergeable(keyword, f"it would need more than {MAX_BRANCHES} branches", where)
        if len(flat) == 1:
            return replace(flat[0], origins=_joined(flat[0].origins, origins))
        return Node(where=where, any_of=tuple(flat), origins=origins)

    def _not(self, schema: Any, where: str) -> Node:
        """The terms of the complement of the schema (``complement``): exact for the keywords
        it lists, else the part it can express; refused where that is nothing."""
        rejected = Complements(self).of(schema, f"{where}/not")
        if not rejected.terms:
            if rejected.exact:
                return never(f"the 'not' at {location(where)} excludes every value", where)
            self.unenforceable("not", where, "the values its schema rejects cannot be expressed")
            return Node(where=where)
        if not rejected.exact:
            self.subset("not", where, "the values its schema rejects can be expressed only in part")
        origins = ((self.synthetic({"not": schema}), where),)
        try:
            return alternatives(self, rejected.terms, where, "not", origins)
        except Unmergeable as problem:
            self.unenforceable("not", where, problem.why)
            return Node(where=where)

    def _close_unevaluated(self, schema: dict, node: Node, where: str) -> Node:
        """``unevaluatedProperties/Items: false`` closes what the merged schema declares."""
        composed = any(key in schema for key in COMPOSITION)
        for keyword in ("unevaluatedProperties", "unevaluatedItems"):
            value = schema.get(keyword, True)
            if value is True:
                continue
            if value is not False and composed:
                self.unenforceable(keyword, where, "a schema here works only without composition")
                continue
            rest = self.node(value, f"{where}/{keyword}")
            try:
                node = self._apply_unevaluated(node, keyword, rest)
            except Unmergeable as problem:
                self.unenforceable(keyword, where, problem.why)
        return node

    def _apply_unevaluated(self, node: Node, keyword: str, rest: Node) -> Node:
        """``rest`` for what no user subschema evaluates: undeclared names and items, and
        those only a rewrite's complement declares (``synthetic``)."""
        if node.ref is not None:  # first: the definition may be a union
            node = self.deref(node)
        if node.never or node.enum is not None:
            return node
        if node.any_of is not None:
            branches = tuple(self._apply_unevaluated(b, keyword, rest) for b in node.any_of)
            return replace(node, any_of=branches)
        if keyword == "unevaluatedProperties":
            properties = {
                name: sub if self._evaluated(sub) else self._merge(sub, rest, node.where)
                for name, sub in node.properties.items()
            }
            node = replace(node, properties=properties)
            if node.additional is None and not node.pattern_properties:
                return replace(node, additional=rest)
            return node
        prefix = tuple(
            item if self._evaluated(item) else self._merge(item, rest, node.where)
            for item in node.prefix
        )
        if node.items is None:
            return replace(node, prefix=prefix, items=rest)
        if not self._evaluated(node.items):
            return replace(node, prefix=prefix, items=self._merge(node.items, rest, node.where))
        return replace(node, prefix=prefix)

    def _evaluated(self, node: Node) -> bool:
        """Whether a user's subschema applies to this property or item (no origins: ``true``)."""
        if node.any_of is not None:
            return all(self._evaluated(branch) for branch in node.any_of)
        return not node.origins or any(id(s) not in self._synthetic for s, _ in node.origins)

    def _own(self, schema: dict, where: str) -> Node:
        """The node for the keywords that constrain values directly (no composition)."""
        node = Node(where=where, origins=((schema, where),))
        if "type" in schema:
            node = replace(node, kinds=type_kinds(schema["type"]))
        node = self._own_string(schema, where, node)
        node = self._own_number(schema, where, node)
        if "format" in schema:
            node = self._format(schema["format"], where, node)
        node = self._own_array(schema, where, node)
        return self._own_object(schema, where, node)

    def _own_string(self, schema: dict, where: str, node: Node) -> Node:
        regexes = []
        if "pattern" in schema:
            try:
                regex = ecma_regex.parse_pattern(schema["pattern"])
            except ecma_regex.PatternError as err:
                at = f" (character {err.position})" if err.position is not None else ""
                if self.strict:
                    raise ConstraintError(
                        f"pattern at {location(where)}: {err.message}{at}", position=err.position
                    ) from None
                # A valid regex (the metaschema check read it) that cannot be
                # generated: best effort drops it, as any keyword it cannot keep.
                self.unenforceable("pattern", where, f"{err.message}{at}")
            else:
                regexes.append(Regex(regex, "pattern", where))
        encoded = content_pattern(schema) if self.draft.asserts_content else None
        if encoded is not None:
            regexes.append(Regex(ecma_regex.parse_pattern(encoded), "contentEncoding", where))
        return replace(
            node,
            min_length=int(schema.get("minLength", 0)),
            max_length=_optional_int(schema.get("maxLength")),
            regexes=tuple(regexes),
        )

    def _format(self, name: str, where: str, node: Node) -> Node:
        """``format``: one of the string formats below is a regex; unknown names are annotations.

        Every name a draft defines or the judge checks has a regex (a subset
        where the format's whole language cannot be written: ``iri`` as
        URIs, ``regex`` as the regexes both dialects read alike); any other
        name (``phone``, ``URI``, OpenAPI's ``float``, ``byte``, ...) is an
        annotation: JSON Schema and the judge ignore formats they do not
        know. Formats enforced another way (numeric ranges) belong here,
        before the annotation case.
        """
        if name in ecma_regex.FORMATS:
            regex = Regex(ecma_regex.format_node(name), "format", where)
            return replace(node, regexes=(*node.regexes, regex))
        if name in FORMAT_RANGES:  # ranges, read by _own_number
            return node
        note = f"format {name!r} is not one this service checks, so it is an annotation"
        if isinstance(name, str) and name.lower() in JUDGED_FORMATS:
            note += f" (format names are case-sensitive: {name.lower()!r} is checked)"
        self.ignore("format", where, note)
        return node

    def _own_number(self, schema: dict, where: str, node: Node) -> Node:
        if self.draft.boolean_exclusive:
            lower, upper = self._draft_04_bounds(schema, where)
        else:
            lower = tighter_lower(
                _bound(schema, "minimum", False), _bound(schema, "exclusiveMinimum", True)
            )
            upper = tighter_upper(
                _bound(schema, "maximum", False), _bound(schema, "exclusiveMaximum", True)
            )
        if schema.get("format") in FORMAT_RANGES:
            low, high = FORMAT_RANGES[schema["format"]]
            lower, upper = tighter_lower(lower, (low, False)), tighter_upper(upper, (high, False))
        node = replace(node, minimum=lower, maximum=upper)
        step = schema.get("multipleOf")
        if step is None:
            return node
        if float(step).is_integer():
            return replace(node, multiple_of=int(step))
        decimal = DecimalStep.of(step)
        if not decimal.exact_for_integers():
            self.unenforceable(
                "multipleOf",
                where,
                f"{step!r} is not exactly a binary fraction, and which numbers pass the "
                "floating-point division validators use cannot be predicted",
            )
            return node
        integer_step = decimal.integer_step
        return replace(
            node,
            multiple_of=None if integer_step == 1 else integer_step,
            decimal_step=decimal.value,
        )

    def _draft_04_bounds(self, schema: dict, where: str) -> tuple[Bound | None, Bound | None]:
        """Draft-04's ``exclusiveMinimum: true`` makes ``minimum`` exclusive (likewise maximum)."""
        bounds = []
        for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if exclusive in schema and bound not in schema:
                self.ignore(exclusive, where, f"it modifies {bound}, which is absent")
            bounds.append(_bound(schema, bound, schema.get(exclusive) is True))
        return bounds[0], bounds[1]

    def _own_array(self, schema: dict, where: str, node: Node) -> Node:
        raw_items = schema.get("items")
        items: Node | None = None
        if self.draft.tuple_items and isinstance(raw_items, list):
            prefix = [self.node(sub, f"{where}/items/{i}") for i, sub in enumerate(raw_items)]
            if "additionalItems" in schema:
                items = self.node(schema["additionalItems"], f"{where}/additionalItems")
        else:
            if "additionalItems" in schema:  # a keyword of the draft, without an items array
                self.ignore("additionalItems", where, "it applies only next to an items array")
            prefix = [
                self.node(sub, f"{where}/prefixItems/{i}")
                for i, sub in enumerate(schema.get("prefixItems", ()))
            ]
            if raw_items is not None:
                items = self.node(raw_items, f"{where}/items")
        max_items = _optional_int(schema.get("maxItems"))
        min_items = int(schema.get("minItems", 0))
        unique = schema.get("uniqueItems") is True and (max_items is None or max_items > 1)
        distinct = None if prefix else distinct_values(self.definition_of(items))
        if unique and self.decoder_guard and distinct is None and not prefix:
            kept = self._kept_apart(items, where, min_items, max_items)
            if kept is None:
                kept = self._one_branch_kept_apart(items, where, min_items, max_items)
            if kept is not None:
                items, max_items, distinct = kept
        if unique and self.decoder_guard and prefix:
            tail = None if items is None else self.definition_of(items)
            if _tuple_kept_apart([self.definition_of(node) for node in prefix], tail):
                distinct = math.inf
        if unique and (not self.decoder_guard or distinct is None):
            if self.strict and min_items <= 1:
                # One item is always unique: strict keeps its promise with a
                # subset rather than refusing the whole schema over one array.
                # Best effort keeps the whole array and lists the keyword.
                max_items = 1
                why = f"{_UNIQUE_ITEMS_WHY[self.decoder_guard]}; so at most one item is written"
                self.subset("uniqueItems", where, why)
            else:
                self.unenforceable("uniqueItems", where, _UNIQUE_ITEMS_WHY[self.decoder_guard])
            unique = False
        elif unique and distinct is not None and distinct < min_items:
            self.unenforceable(
                "uniqueItems",
                where,
                f"{min_items} items must differ, and they take {distinct} values",
            )
            unique = False
        return replace(
            node,
            prefix=tuple(prefix),
            items=items,
            min_items=min_items,
            max_items=max_items,
            unique=unique,
        )

    def _kept_apart(
        self, items: Node | None, where: str, min_items: int, max_items: int | None
    ) -> tuple[Node | None, int | None, float] | None:
        """A unique array's items the decoder keeps apart though their values are
        too many to list: the items as written, the array's ``maxItems`` and how
        many items can differ; None where the decoder cannot keep them apart."""
        found = self.definition_of(items)
        if (listed := _listed_strings(found)) is not None:
            return listed, max_items, len(listed.enum or ())  # kept apart as listed values
        if bounded_strings(found, min_items):
            if max_items is None or max_items > MAX_BOUNDED_UNIQUE_ITEMS:
                max_items = MAX_BOUNDED_UNIQUE_ITEMS
                self.subset("uniqueItems", where, _BOUNDED_UNIQUE_WHY)
            return items, max_items, math.inf
        if (counts := counted_strings(found)) is not None:
            return items, max_items, counts.total()
        if anchored := self._anchored_objects(items, where, min_items, max_items):
            return anchored
        if _plain_integers(found):
            return items, max_items, _integer_span(found) or math.inf
        if (scalars := _scalar_items(found, where)) is None:
            return None
        if effective_kinds(scalars) != _kinds_written(found):
            self.subset("uniqueItems", where, _SCALAR_ITEMS_WHY)
        if items is None:  # no user's schema evaluates these items (unevaluatedItems)
            scalars = replace(scalars, origins=((self.synthetic({}), where),))
        return scalars, max_items, math.inf

    def _one_branch_kept_apart(
        self, items: Node | None, where: str, min_items: int, max_items: int | None
    ) -> tuple[Node | None, int | None, float] | None:
        """Items of a union (``anyOf: [{type: string}, {$ref: Rule}]``) the decoder
        cannot keep apart as a whole: the first alternative it can, with at least
        two values (and ``minItems``), written alone (a subset), since several
        items of one alternative say more than the one item of any that strict
        mode would write otherwise."""
        found = self.definition_of(items)
        if found is None or found.any_of is None:
            return None
        for index, branch in enumerate(found.any_of):
            distinct = distinct_values(self.definition_of(branch))
            kept = (
                (branch, max_items, distinct)
                if distinct is not None
                else self._kept_apart(branch, where, min_items, max_items)
            )
            if kept is None or kept[2] < max(min_items, 2):
                continue
            note = (
                f"only alternative {index} of its items' {len(found.any_of)} is written, "
                "the first whose items the decoder can keep apart"
            )
            earlier = self.subsets.pop(("uniqueItems", where), None)
            self.subset("uniqueItems", where, note + (f"; {earlier}" if earlier else ""))
            return kept
        return None

    def _anchored_objects(
        self, items: Node | None, where: str, min_items: int, max_items: int | None
    ) -> tuple[Node, int | None, float] | None:
        """A unique array's objects kept apart by one member (``unique_anchor``):
        the items as written, the array's ``maxItems`` and how many items can
        differ; None where the objects have no such member. Reported as a
        subset: two items that differ only after the anchor are not both written."""
        original = self.definition_of(items)
        meant = _objects_meant(original)
        if meant is None:
            return None
        untyped, why = meant is not original, ""
        anchor = unique_anchor(meant, min_items)
        if anchor is None and (anchor := unique_anchor(meant, min_items, optional=True)):
            meant = replace(meant, required=meant.required | {anchor})
            why = f"; {anchor!r} is written in every item"
        if anchor is None:
            return None
        why = (
            f"items are kept apart by {anchor!r} and the members before it: two that "
            f"differ only after it are not both written{why}"
        )
        if untyped:
            why += "; items without type are written as the objects their keywords describe"
        member = meant.properties[anchor]
        distinct: float = math.inf  # the values the anchor takes
        if (integers := _as_integers(member)) is not None:
            if integers is not member:
                meant = replace(meant, properties={**meant.properties, anchor: integers})
                why += f"; {anchor!r} is written as an integer"
            distinct = _integer_span(integers) or math.inf
        elif bounded_strings(member, min_items):
            if max_items is None or max_items > MAX_BOUNDED_UNIQUE_ITEMS:
                max_items = MAX_BOUNDED_UNIQUE_ITEMS
                why += f"; {anchor!r} is of bounded length, so at most {max_items} items"
        elif (counts := counted_anchor(meant, anchor)) is not None:
            distinct = counts.total() if counts.total() < ecma_regex.COUNT_CAP else math.inf
        if distinct < math.inf and (max_items is None or max_items > distinct):
            max_items = int(distinct)
            why += f"; {anchor!r} takes {max_items} values, so at most {max_items} items"
        self.subset("uniqueItems", where, why)
        return (items if meant is original else meant), max_items, distinct

    def definition_of(self, node: Node | None) -> Node | None:
        """The node a ``$ref`` names (``items: {$ref: "#/$defs/Color"}``), where it
        is already built; the node itself otherwise."""
        if node is None or node.ref is None:
            return node
        try:
            return self.deref(node)
        except (Unmergeable, KeyError):  # recursive, or not built yet
            return node

    def _own_object(self, schema: dict, where: str, node: Node) -> Node:
        patterns = tuple(
            (pattern, self.node(sub, f"{where}/patternProperties/{escape_token(pattern)}"))
            for pattern, sub in schema.get("patternProperties", {}).items()
        )
        properties = {}
        for name, sub in schema.get("properties", {}).items():
            prop = self.node(sub, f"{where}/properties/{escape_token(name)}")
            for pattern, pattern_node in patterns:
                if pattern_covers(pattern, name, where):
                    prop = self.merge(prop, pattern_node, where)
            properties[name] = prop
        additional = None
        if "additionalProperties" in schema:
            additional = self.node(schema["additionalProperties"], f"{where}/additionalProperties")
        names = None
        if "propertyNames" in schema:
            names = self.node(schema["propertyNames"], f"{where}/propertyNames")
        return replace(
            node,
            properties=properties,
            required=frozenset(schema.get("required", ())),
            additional=additional,
            pattern_properties=patterns,
            property_names=names,
            min_properties=int(schema.get("minProperties", 0)),
            max_properties=_optional_int(schema.get("maxProperties")),
        )

    # -- combining -------------------------------------------------------

    def deref(self, node: Node) -> Node:
        """The definition a ref node names; impossible while that definition is being built."""
        seen = set()
        while node.ref is not None:
            if node.ref in self._in_progress or node.ref in seen:
                raise Unmergeable(
                    "$ref",
                    f"the recursive $ref to {node.ref!r} cannot be combined with other keywords",
                    node.where,
                )
            seen.add(node.ref)
            extra = node.origins
            node = self.definitions[node.ref]
            node = replace(node, origins=_joined(node.origins, extra))
        return node

    def merge(self, a: Node, b: Node, where: str) -> Node:
        """Both must hold. Best effort keeps ``a`` where they cannot be expressed together."""
        try:
            return self._merge(a, b, where)
        except Unmergeable as problem:
            keyword, at = problem.keyword, where
            label = next(filter(None, map(self._union_labels.get, (id(b), id(a)))), None)
            if keyword == "anyOf" and label is not None:  # a union a rewrite made
                keyword, at = label[1], label[0].where
            self.unenforceable(keyword, at, problem.why)
            return a

    def both(self, a: Node, b: Node, where: str) -> Node:
        """Both must hold; ``Unmergeable`` where they cannot be expressed together."""
        return self._merge(a, b, where)

    def synthetic(self, schema: Any) -> Any:
        """An origin schema a rewrite made to describe its node.

        Kept alive (``_checks`` is keyed by id) and known as made here: what
        only such a node declares counts as unevaluated (``_apply_unevaluated``).
        """
        self._synthetic[id(schema)] = schema
        return schema

    def label_union(self, node: Node, keyword: str) -> Node:
        """Names the keyword whose rewrite made this union, for messages about combining it."""
        self._union_labels[id(node)] = (node, keyword)
        return node

    def _merge(self, a: Node, b: Node, where: str) -> Node:
        if a.never:
            return a
        if b.never:
            return b
        origins = _joined(a.origins, b.origins)
        if a.enum is not None or b.enum is not None:
            values = a.enum if a.enum is not None else b.enum
            kept = self.filter_values(values, origins, where)
            if not kept:
                return never(f"no enum/const value at {location(where)} satisfies the rest", where)
            return Node(where=a.where, enum=tuple(kept), origins=origins)
        if not b.constrains():
            return replace(a, origins=origins)
        if not a.constrains():
            return replace(b, origins=origins)
        if a.ref is not None and a.ref == b.ref:
            return replace(a, origins=origins)
        if a.ref is not None or b.ref is not None:
            return self._merge(self.deref(a), self.deref(b), where)
        if a.any_of is not None or b.any_of is not None:
            return self._merge_branches(a, b, where)
        kinds = a.kinds if b.kinds is None else b.kinds if a.kinds is None else a.kinds & b.kinds
        regexes = joined_regexes(a.regexes, b.regexes)
        merged = Node(
            where=a.where,
            kinds=kinds,
            min_length=max(a.min_length, b.min_length),
            max_length=min_optional(a.max_length, b.max_length),
            regexes=regexes or (),
            minimum=tighter_lower(a.minimum, b.minimum),
            maximum=tighter_upper(a.maximum, b.maximum),
            multiple_of=_combine_steps(a.multiple_of, b.multiple_of),
            decimal_step=combined_step(a.decimal_step, b.decimal_step),
            **self._merge_arrays(a, b, where),
            **self._merge_objects(a, b, where),
            origins=origins,
        )
        if regexes is None:  # a complement's exclusion and a pattern: strings are left out
            self.losses += 1
            return replace(merged, kinds=effective_kinds(merged) - {"string"})
        return merged

    def _merge_branches(self, a: Node, b: Node, where: str) -> Node:
        left = a.any_of if a.any_of is not None else (a,)
        right = b.any_of if b.any_of is not None else (b,)
        self._check_distribution(left, right, where)
        branches = [self._merge(x, y, where) for x in left for y in right]
        return self._union(branches, where, _joined(a.origins, b.origins))

    def _check_distribution(
        self, left: tuple[Node, ...], right: tuple[Node, ...], where: str
    ) -> None:
        """Refuses a merge of unions whose result is too large, before building it."""
        count = len(left) * len(right)
        if len(left) > 1 and len(right) > 1 and count > MAX_PRODUCT_BRANCHES:
            raise Unmergeable(
                "anyOf",
                f"combining it with another union needs {count} branches "
                f"(at most {MAX_PRODUCT_BRANCHES})",
                where,
            )
        if count > MAX_BRANCHES:
            raise Unmergeable(
                "anyOf",
                f"combining it with other keywords needs over {MAX_BRANCHES} branches",
                where,
            )
        # Each merged branch has at most the subschemas of both parts, roots shared.
        sizes = [sum(map(self._subschemas, side)) for side in (left, right)]
        total = len(right) * sizes[0] + len(left) * sizes[1] - count
        if total > MAX_DISTRIBUTED_SUBSCHEMAS:
            raise Unmergeable(
                "anyOf",
                f"copying the keywords beside it into its {count} branches makes {total} "
                f"subschemas (at most {MAX_DISTRIBUTED_SUBSCHEMAS})",
                where,
            )

    def _subschemas(self, node: Node) -> int:
        """Nodes in ``node``'s tree as rendered (shared parts once per use), remembered per node.

        The node is kept with its count, so its id is not reused by another.
        """
        known = self._subschema_counts.get(id(node))
        if known is None:
            count = 1 + sum(map(self._subschemas, children(node)))
            known = self._subschema_counts[id(node)] = (node, count)
        return known[1]

    def _merge_arrays(self, a: Node, b: Node, where: str) -> dict:
        prefix = tuple(
            self._merge_optional(a.item_at(i), b.item_at(i), where) or Node(where=where)
            for i in range(max(len(a.prefix), len(b.prefix)))
        )
        return {
            "prefix": prefix,
            "items": self._merge_optional(a.items, b.items, where),
            "min_items": max(a.min_items, b.min_items),
            "max_items": min_optional(a.max_items, b.max_items),
            "unique": a.unique or b.unique,
        }

    def _merge_objects(self, a: Node, b: Node, where: str) -> dict:
        properties = {}
        for name in [*a.properties, *(n for n in b.properties if n not in a.properties)]:
            left = a.properties.get(name) or self.undeclared(a, name)
            right = b.properties.get(name) or self.undeclared(b, name)
            properties[name] = self._merge(left, right, where)
        return {
            "properties": properties,
            "required": a.required | b.required,
            "additional": self._merge_optional(a.additional, b.additional, where),
            "pattern_properties": self._patterns_beside(a, b, where)
            + self._patterns_beside(b, a, where),
            "property_names": self._merge_optional(a.property_names, b.property_names, where),
            "min_properties": max(a.min_properties, b.min_properties),
            "max_properties": min_optional(a.max_properties, b.max_properties),
        }

    def _patterns_beside(self, node: Node, other: Node, where: str) -> tuple[tuple[str, Node], ...]:
        """``node``'s patternProperties where ``other`` holds too.

        A name one of them matches is not declared in ``other`` (declared
        names are merged as properties), so ``other`` asks its
        ``additionalProperties`` of it unless one of its own patterns
        matches it; asking it always is more than needed there (a subset).
        """
        if other.additional is None or not node.pattern_properties:
            return node.pattern_properties
        if other.pattern_properties:
            self.subset(
                "patternProperties",
                where,
                "a name both schemas' patterns match is held to additionalProperties too",
            )
        return tuple(
            (pattern, self._merge(sub, other.additional, where))
            for pattern, sub in node.pattern_properties
        )

    def _merge_optional(self, a: Node | None, b: Node | None, where: str) -> Node | None:
        if a is None or b is None:
            return a or b
        return self._merge(a, b, where)

    def undeclared(self, node: Node, name: str) -> Node:
        """What a property not in ``properties`` must satisfy: its patterns', else additional."""
        matching = [
            sub
            for pattern, sub in node.pattern_properties
            if pattern_covers(pattern, name, node.where)
        ]
        if not matching:
            return node.additional or Node(where=node.where)
        result = matching[0]
        for sub in matching[1:]:
            result = self.merge(result, sub, node.where)
        return result

    def disjoint(self, a: Node, b: Node) -> bool:
        """Whether no value can match both (False when unsure)."""
        try:
            a, b = self.deref(a), self.deref(b)
        except Unmergeable:
            return False
        if a.never or b.never:
            return True
        for one, other in ((a, b), (b, a)):
            if one.any_of is not None:
                return all(self.disjoint(branch, other) for branch in one.any_of)
        for one, other in ((a, b), (b, a)):
            if one.enum is not None:
                return not self.filter_values(one.enum, other.origins, other.where)
        shared = effective_kinds(a) & effective_kinds(b)
        return all(self._disjoint_within(kind, a, b) for kind in shared)

    def _disjoint_within(self, kind: str, a: Node, b: Node) -> bool:
        if kind in ("integer", "fraction"):
            return _ranges_apart(a, b)
        if kind != "object":
            return False
        for name in a.required & b.required:
            left = a.properties.get(name) or self.undeclared(a, name)
            right = b.properties.get(name) or self.undeclared(b, name)
            if self.disjoint(left, right):
                return True
        return False


def _joined(a: tuple, b: tuple) -> tuple:
    """Origins of both, each subschema once."""
    present = {id(schema) for schema, _ in a}
    return a + tuple(origin for origin in b if id(origin[0]) not in present)


def _ranges_apart(a: Node, b: Node) -> bool:
    def below(upper: Bound | None, lower: Bound | None) -> bool:
        if upper is None or lower is None:
            return False
        return upper[0] < lower[0] or (upper[0] == lower[0] and (upper[1] or lower[1]))

    return below(a.maximum, b.minimum) or below(b.maximum, a.minimum)


def value_key(value: Any) -> str:
    """Equal JSON values (1 and 1.0 included, true and 1 not) get equal keys."""
    return json.dumps(_numbers_normalized(value), sort_keys=True)


def _numbers_normalized(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_numbers_normalized(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers_normalized(v) for k, v in value.items()}
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _bound(schema: dict, keyword: str, exclusive: bool) -> Bound | None:
    value = schema.get(keyword)
    return None if value is None else (value, exclusive)


def _combine_steps(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return a or b
    return math.lcm(a, b)


def pattern_covers(pattern: str, name: str, where: str) -> bool:
    """Whether a ``patternProperties`` pattern covers a property name (``bounded_regex``)."""
    try:
        return bounded_regex.search(pattern, name) is not None
    except TimeoutError:
        raise ConstraintError(
            f"keyword 'patternProperties' at {location(where)}: the pattern {pattern!r} took "
            f"too long to test against the property name {name!r} (it backtracks "
            "catastrophically); write it without nested or overlapping repetition"
        ) from None


MAX_BOUNDED_UNIQUE_ITEMS = 93
"""The most items a unique array of free strings of bounded length holds (or
of objects kept apart by one, ``unique_anchor``).

The decoder keeps a taken string from being written again, and where a taken
one is as long as the strings may be, it keeps out its last characters too
(only the closing quote could follow them; ``engine.json_repeats``). A
string being written is then cornered only where it cannot end (too short,
or taken) and each of the 93 printable ASCII characters a JSON string holds
unescaped (every byte-level vocabulary has them as tokens) would make it a
taken string of the maximum length: 93 taken items. With at most 93 items,
at most 92 are taken while one is written."""
_BOUNDED_UNIQUE_WHY = (
    f"a unique array of strings of bounded length holds at most {MAX_BOUNDED_UNIQUE_ITEMS} "
    "items, which the decoder can always keep apart"
)

_UNIQUE_ITEMS_WHY = {
    True: "xgrammar ignores it, and the decoder keeps apart only items it can always keep "
    "apart: listed values, a range's integers (no multipleOf), strings without maxLength "
    "whose pattern or format can always go on, strings of maxLength alone (at most "
    f"{MAX_BOUNDED_UNIQUE_ITEMS} items) or of one pattern or format whose strings it can "
    "count, other scalars (kept to strings, integers, booleans and null), or objects with a "
    "member (written in every item) that is a string that can always go on, of maxLength "
    "alone, or of one pattern or format it can count, or a number of a range (no multipleOf)",
    False: "xgrammar ignores it, and the decoder keeps items apart only for a schema "
    "given whole (response_format, json_schema) or a tool's parameters, not one inside a "
    "grammar",
}
UNIQUE_COUNTED = "x-unique-items-counted"
"""The keyword of a rendered unique array of strings of one pattern that the
decoder keeps apart by counting (``counted_strings``); xgrammar ignores it."""
UNIQUE_BY = "x-unique-items-by"
"""The keyword of a rendered unique array of objects naming the member that
keeps its items apart (``unique_anchor``); xgrammar ignores it, the decoder
reads it."""
MAX_LISTED_INTEGERS = 256
"""Integers in a range this small are kept apart as listed values (``engine.json_repeats``)."""


MAX_LISTED_STRINGS = 1024
"""Strings a bounded pattern may match for a unique array's items to be listed."""


def _plain_string(node: Node) -> bool:
    """A string schema of lengths and regexes only (no enum, no other kind's keyword)."""
    rest = replace(node, min_length=0, max_length=None, regexes=())
    return node.kinds == {"string"} and rest == Node(
        where=node.where, kinds=node.kinds, origins=node.origins
    )


def bounded_strings(node: Node | None, min_items: int) -> bool:
    """Whether items are free strings of bounded length (``maxLength`` alone, no
    pattern or format), enough of them kept apart for ``min_items``
    (``MAX_BOUNDED_UNIQUE_ITEMS``)."""
    return (
        node is not None
        and _plain_string(node)
        and node.max_length is not None
        and node.max_length >= 1
        and not node.regexes
        and min_items <= MAX_BOUNDED_UNIQUE_ITEMS
    )


def counted_strings(node: Node | None) -> TextCounts | None:
    """Strings of one pattern or format (and lengths), counted from each start as
    the decoder counts them (``UNIQUE_COUNTED``); None where the automaton would
    be too large. A unique array of them is kept apart by refusing each start
    every ending of which is taken (``engine.json_repeats``): ``date``,
    ``uuid``, ``^[A-Z]{3}$``, ``^[a-z]+\\.com$``."""
    if node is None or not _plain_string(node) or len(node.regexes) != 1:
        return None
    if unwritable(node.regexes):
        return None
    bounded = ecma_regex.restrict_length(node.regexes[0].node, node.min_length, node.max_length)
    return None if bounded is None else ecma_regex.pattern_counts(ecma_regex.to_xgrammar(bounded))


def _listed_strings(node: Node | None) -> Node | None:
    """Strings of one pattern or format (and lengths) that are few enough to list
    (``^[A-Z]{2}$``: 676), as an enum; None otherwise."""
    if node is None or not _plain_string(node) or len(node.regexes) != 1:
        return None
    if unwritable(node.regexes):
        return None
    texts = finite_texts(node.regexes[0].node, MAX_LISTED_STRINGS)
    if texts is None:
        return None
    high = math.inf if node.max_length is None else node.max_length
    kept = tuple(text for text in texts if node.min_length <= len(text) <= high)
    return Node(where=node.where, enum=kept, origins=node.origins) if kept else None


def distinct_values(node: Node | None) -> float | None:
    """How many distinct items an array of ``node`` can hold, where the decoder
    keeps its items apart exactly (``engine.json_repeats``); None where it does
    not. Listed values (the decoder stops a taken one as soon as writing it is
    certain) and strings without a maximum length whose pattern or format
    lets every start go on in endless ways (a taken one can always be made
    longer: ``^[a-z0-9-]+$``, ``uri``) never corner the decoder; a bounded
    string (``^[A-Z]{2}$``, ``date``) or a number could be forced to end as
    a taken value."""
    if node is None or node.ref is not None or node.prefix:
        return None
    if node.enum is not None:
        plain = all(value is None or isinstance(value, (str, int)) for value in node.enum)
        return len(node.enum) if plain else None
    if node.any_of is not None:
        counts = [distinct_values(branch) for branch in node.any_of]
        if any(count is None or count == math.inf for count in counts):
            return None
        return sum(count for count in counts if count is not None)
    if node.kinds is None:
        return None
    if node.kinds <= {"boolean", "null"}:
        return ("boolean" in node.kinds) * 2 + ("null" in node.kinds)
    if node.kinds == {"string"}:
        unbounded = node.max_length is None and _plain_string(node)
        regexes = intersected(node.regexes)
        extendable = regexes is not None and not unwritable(regexes)
        extendable = extendable and all(always_extendable(regex.node) for regex in regexes)
        return math.inf if unbounded and extendable else None
    if node.kinds == {"integer"}:
        span = _integer_span(node)
        return span if span is not None and span <= MAX_LISTED_INTEGERS else None
    return None


def unique_anchor(node: Node | None, min_items: int = 0, *, optional: bool = False) -> str | None:
    """The member that keeps a unique array's objects apart, if they have one:
    required, and a string that can always go on (``distinct_values``), else
    a free string of bounded length (``bounded_strings``: the array then
    holds at most ``MAX_BOUNDED_UNIQUE_ITEMS``), else a string of one pattern
    or format the decoder counts (``counted_strings``: a ``date`` or ``uuid``
    id; the array then holds at most as many items as it has values), else
    an integer of a range (``_as_integers``: a number is written as one).
    With ``optional``, such a member that is not required, which the
    array's items are then written with (where ``maxProperties`` leaves room
    for it). Two objects that differ in it, or in the members written before
    it, differ; so the decoder refuses to end that member where the object
    so far would match a taken item's, and it can always be made longer,
    ended otherwise or started otherwise instead (``engine.json_repeats``).
    The grammar writes members in their declared order, so equal objects
    write the same members before it."""
    if node is None or node.ref is not None or node.any_of is not None or node.enum is not None:
        return None
    if effective_kinds(node) != {"object"}:
        return None
    if optional and node.max_properties is not None and node.max_properties <= len(node.required):
        return None  # no room for one more member in every item
    required = [
        (name, member)
        for name, member in node.properties.items()
        if (name in node.required) != optional and member.never is None
    ]
    for name, member in required:
        if member.kinds == {"string"} and distinct_values(member) == math.inf:
            return name
    for name, member in required:
        if bounded_strings(member, min_items):
            return name
    for name, member in required:
        counts = counted_strings(member) if member.kinds == {"string"} else None
        if counts is not None and counts.total() > 0:
            return name
    for name, member in required:
        if (integers := _as_integers(member)) is not None and _integer_span(integers) != 0:
            return name
    return None


def _as_integers(node: Node) -> Node | None:
    """A range's integers (``_plain_integers``), numbers of a range written as
    integers, or None: an anchor the decoder keeps apart as it keeps a unique
    array's integers."""
    if node.kinds == {"integer", "fraction"}:
        node = replace(node, kinds=frozenset({"integer"}))
    return node if _plain_integers(node) else None


def counted_anchor(node: Node, anchor: str) -> TextCounts | None:
    """The anchor's strings counted (``counted_strings``), where it is neither a
    string that can always go on nor one of ``maxLength`` alone: the decoder
    then keeps items apart by counting (``UNIQUE_COUNTED`` beside ``UNIQUE_BY``)."""
    member = node.properties[anchor]
    if distinct_values(member) == math.inf or bounded_strings(member, 0):
        return None
    return counted_strings(member)


_KEPT_APART = frozenset({"string", "integer", "boolean", "null"})
_SCALAR_ITEMS_WHY = (
    "its items are kept to strings, integers, booleans and null (numbers to integers), "
    "which the decoder can keep apart"
)


def _kinds_written(node: Node | None) -> frozenset[str]:
    """The kinds the renderer writes for ``node`` (absent: any)."""
    if node is None:
        return frozenset(KINDS)
    return effective_kinds(node)


def _objects_meant(node: Node | None) -> Node | None:
    """Items without ``type`` whose keywords all concern objects, as objects only.

    They allow every other kind too, which a unique array's decoder cannot
    keep apart from its objects; objects are what such items mean. Other
    nodes are returned as they are.
    """
    if node is None or node.kinds is not None or node.ref is not None or node.any_of is not None:
        return node
    if node.enum is not None or constrained_kinds(node) != {"object"}:
        return node
    return replace(node, kinds=frozenset({"object"}))


def _scalar_items(node: Node | None, where: str) -> Node | None:
    """A unique array's items of any value or of scalar kinds, narrowed to what
    the decoder keeps apart: strings that can always go on, a range's
    integers (fractions dropped: ``1.0`` is ``1``, and their spellings differ),
    booleans and null (each certain from its first letter). None where the
    items constrain anything else."""
    if node is None or not node.constrains():
        return Node(where=where, kinds=_KEPT_APART)
    if node.ref is not None or node.any_of is not None or node.enum is not None:
        return None
    written = _kinds_written(node)
    kept = (written & _KEPT_APART) | ({"integer"} if "fraction" in written else set())
    if not kept:
        return None
    if {"array", "object"} & written and replace(node, kinds=None) != Node(
        where=node.where, origins=node.origins, **_scalar_fields(node)
    ):
        return None  # an array or object keyword: those items mean more than scalars
    if node.multiple_of or node.decimal_step:
        return None
    if "string" in kept:
        strings = Node(where=node.where, kinds=frozenset({"string"}), **_string_fields(node))
        if distinct_values(strings) != math.inf:
            return None
    return replace(node, kinds=frozenset(kept))


def _string_fields(node: Node) -> dict[str, Any]:
    return {"min_length": node.min_length, "max_length": node.max_length, "regexes": node.regexes}


def _scalar_fields(node: Node) -> dict[str, Any]:
    return {
        **_string_fields(node),
        "minimum": node.minimum,
        "maximum": node.maximum,
        "multiple_of": node.multiple_of,
        "decimal_step": node.decimal_step,
    }


def _tuple_kept_apart(prefix: list[Node | None], tail: Node | None) -> bool:
    """Whether the decoder keeps a unique tuple's items apart: each position
    holds strings that can always go on, or booleans and null, more of them
    than the positions before it (so earlier items cannot take them all);
    further items are strings that can always go on, or none (no ``items``
    after a prefix closes the tuple as rendered, as ``items: false`` does)."""
    for index, node in enumerate(prefix):
        literals = _literal_count(node)
        if literals is None and not _open_strings(node):
            return False
        if literals is not None and literals <= index:
            return False
    return tail is None or tail.never is not None or _open_strings(tail)


def _literal_count(node: Node | None) -> int | None:
    """How many values a schema of booleans and null alone allows; None for any other."""
    if (
        node is None
        or node.kinds is None
        or not node.kinds
        or not node.kinds <= {"boolean", "null"}
    ):
        return None
    if replace(node, kinds=None) != Node(where=node.where, origins=node.origins):
        return None
    return 2 * ("boolean" in node.kinds) + ("null" in node.kinds)


def _open_strings(node: Node | None) -> bool:
    return node is not None and node.kinds == {"string"} and distinct_values(node) == math.inf


def _plain_integers(node: Node | None) -> bool:
    """Integers of a range (or all of them) and nothing else: the decoder keeps
    such items apart by refusing to start writing one whose every way of
    ending is taken (``engine.json_repeats``), which it can count."""
    if node is None or node.kinds != {"integer"}:
        return False
    rest = replace(node, minimum=None, maximum=None)
    return rest == Node(where=node.where, kinds=node.kinds, origins=node.origins)


def _integer_span(node: Node) -> int | None:
    """How many integers lie between the node's bounds (None: unbounded or stepped)."""
    if node.minimum is None or node.maximum is None or node.multiple_of or node.decimal_step:
        return None
    (low, low_open), (high, high_open) = node.minimum, node.maximum
    first = math.floor(low) + 1 if low_open or low != math.floor(low) else int(low)
    last = math.ceil(high) - 1 if high_open or high != math.ceil(high) else int(high)
    return max(0, last - first + 1)
