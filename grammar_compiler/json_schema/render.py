"""Nodes rendered as the JSON Schema subset xgrammar enforces, and xgrammar's check of it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

import xgrammar

from grammar_compiler import ecma_regex
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema.branching import generates_nothing
from grammar_compiler.json_schema.complement import intersected, unwritable
from grammar_compiler.json_schema.nodes import (
    KINDS,
    Bound,
    Node,
    Regex,
    Unmergeable,
    constrained_kinds,
    effective_kinds,
    min_optional,
    tighter_lower,
    tighter_upper,
)
from grammar_compiler.json_schema.normalize import (
    MAX_BOUNDED_UNIQUE_ITEMS,
    UNIQUE_BY,
    UNIQUE_COUNTED,
    Compiler,
    bounded_strings,
    counted_anchor,
    counted_strings,
    distinct_values,
    pattern_covers,
    unique_anchor,
)
from grammar_compiler.json_schema.numbers import FRACTION_LIMIT, SAFE_INTEGER, combined_step
from grammar_compiler.json_schema.pointers import location
from grammar_compiler.regex_lengths import may_lose_lengths

MAX_MULTIPLE_OF = 1024
"""Largest integer step xgrammar enforces (probed: 1025 is ignored)."""
MULTIPLE_OF_RANGE = 10_000
"""With minimum and maximum, xgrammar enforces multipleOf only over fewer integers than this."""
MAX_LISTED_MULTIPLES = 1_000
"""Multiples in a wider range are listed as an enum up to this many."""
MAX_STEP_PIECES = 16
"""Ranges a closed range is cut into where xgrammar steps in each (beyond: those
nearest zero, a subset)."""
STEPPED_SPAN = MAX_STEP_PIECES * (MULTIPLE_OF_RANGE - 1)
"""Integers a closed range too wide to cut whole keeps, in ``MAX_STEP_PIECES`` pieces."""
MAX_FRACTION_SPANS = 8
"""Spans between consecutive integers written for numbers that must not be integers."""
INTEGER_LIMIT = 2**62
"""xgrammar refuses integer bounds beyond int64; bounds are clamped to this."""
_DEAD = object()  # what a listing of multiples returns when none is valid
_INEXPRESSIBLE = object()  # names ``_extra_names`` cannot write
MAX_EXCLUDED_NAMES = 16
"""Declared and forbidden names an open object's ``propertyNames`` may leave out (one
regex spelling them all; xgrammar compiles it in ~10 ms a name on Llama 3's vocabulary
when other names are free); beyond, the object takes no undeclared name (a subset)."""
MAX_LISTED_NAMES = 32
"""Names a ``propertyNames`` enum may list for them to be written as declared optional
properties (``_listed_names``); a longer list stays a ``propertyNames`` enum."""


class Renderer:
    """Turns nodes into the JSON Schema subset xgrammar enforces, dropping what cannot exist.

    Rendering returns None for a node no value can match: an impossible
    optional property, item or branch is dropped, an impossible required one
    makes its parent impossible. Definitions whose recursion never produces
    a finite value count as impossible (a fixpoint before rendering), so
    xgrammar is never handed a grammar that cannot finish.
    """

    def __init__(self, compiler: Compiler) -> None:
        self.compiler = compiler
        self.alive: set[str] = set()
        self._used: list[str] = []
        self.first_contradiction: str | None = None
        self.first_dead_ref: str | None = None  # when the first contradiction is a dead $ref
        self._number_names: dict[str, str] = {}  # shared number schema (JSON) -> its name
        self._number_schemas: dict[str, dict] = {}
        # A string pattern -> each schema rendered with it (a stand-in) and
        # that schema's other types, if any (``_shared_string``).
        self._string_uses: dict[str, list[tuple[dict, dict | None]]] = {}
        self.compiler.synthetic(_STRING)  # the origin that keeps names to strings (_as_string)

    def render_document(self, root: Node) -> dict:
        dead: set[str] = set()
        while True:
            self.alive = self._productive(set(self.compiler.definitions) - dead)
            self._used = []
            self._number_names, self._number_schemas = {}, {}
            self._string_uses = {}
            rendered = self.render(root)
            definitions = self._render_definitions()
            newly_dead = {name for name, value in definitions.items() if value is None}
            if not newly_dead:
                break
            dead |= newly_dead
        if rendered is None:
            raise ConstraintError(f"no JSON value satisfies the schema: {self._explained()}")
        definitions.update(self._number_schemas)
        definitions.update(self._string_definitions())
        return {**rendered, "$defs": definitions} if definitions else rendered

    def _explained(self) -> str:
        """The first contradiction, followed into a dead ``$ref``'s definition: a
        definition may have no value without any recursion (a required property
        of two consts that disagree), and then that is the reason to give."""
        reason = self.first_contradiction or "a $ref recursion never ends"
        ref, seen = self.first_dead_ref, set()
        while ref is not None and ref not in seen:
            seen.add(ref)
            inner = Renderer(self.compiler)
            inner.alive = self.alive
            inner.render(self.compiler.definitions[ref])
            if inner.first_contradiction is None:
                break
            reason, ref = inner.first_contradiction, inner.first_dead_ref
        return reason

    def _render_definitions(self) -> dict[str, Any]:
        definitions: dict[str, Any] = {}
        while self._used:
            name = self._used.pop()
            if name not in definitions:
                definitions[name] = self.render(self.compiler.definitions[name])
        return definitions

    def _productive(self, candidates: set[str]) -> set[str]:
        alive: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name in candidates - alive:
                if self._can_end(self.compiler.definitions[name], alive):
                    alive.add(name)
                    changed = True
        return alive

    def _can_end(self, node: Node | None, alive: set[str]) -> bool:
        """Whether some finite value matches, if only ``alive`` definitions have one."""
        if node is None:
            return True
        if node.never:
            return False
        if node.ref is not None:
            return node.ref in alive
        if node.any_of is not None:
            return any(self._can_end(branch, alive) for branch in node.any_of)
        if node.enum is not None:
            return True
        for kind in effective_kinds(node):
            if kind == "array":
                needed = (node.item_at(i) for i in range(node.min_items))
            elif kind == "object":
                needed = (
                    node.properties.get(name) or self.compiler.undeclared(node, name)
                    for name in node.required
                )
            else:
                return True
            if all(self._can_end(sub, alive) for sub in needed):
                return True
        return False

    def _dead(self, reason: str) -> None:
        if self.first_contradiction is None:
            self.first_contradiction = reason

    def render(self, node: Node) -> dict | None:
        if node.never:
            self._dead(node.never)
            return None
        if node.ref is not None:
            if node.ref not in self.alive:
                definition = self.compiler.definitions[node.ref]
                target = location(self.compiler.target_of(node.ref))
                if self.first_contradiction is None and not definition.never:
                    self.first_dead_ref = node.ref
                self._dead(definition.never or f"the $ref recursion through {target} never ends")
                return None
            self._used.append(node.ref)
            return {"$ref": f"#/$defs/{node.ref}"}
        if node.any_of is not None:
            branches = [b for b in map(self.render, node.any_of) if b is not None]
            if not branches:
                return None
            return branches[0] if len(branches) == 1 else {"anyOf": branches}
        if node.enum is not None:
            return _enum_schema(node.enum)
        return self._render_kinds(node)

    def _render_kinds(self, node: Node) -> dict | None:
        if node.kinds is None and not constrained_kinds(node):
            return {}
        kinds = effective_kinds(node)
        types, keywords, alternatives = [], {}, []
        open_object = False
        for kind in KINDS:
            if kind in kinds and kind != "fraction":
                rendered = self._kind(kind, node, with_fraction="fraction" in kinds)
                if rendered is None:
                    continue
                if rendered[0] == "alternative":
                    alternatives.append(rendered[1])
                else:
                    types.append(rendered[0])
                    keywords.update(rendered[1])
                    open_object = open_object or rendered == ("object", {})
        if open_object and keywords:
            # An object with no keyword of its own is open, but strict xgrammar
            # closes it beside another kind's keyword ({"type": ["object",
            # "array"], "items": {}} would only ever write {}).
            keywords["additionalProperties"] = True
        if types:
            schema = {"type": types[0] if len(types) == 1 else types, **keywords}
            if "string" in types and "pattern" in keywords:
                schema = self._shared_string(schema, types)
            alternatives.append(schema)
        if "fraction" in kinds and "integer" not in kinds:
            alternatives.extend(self._fractions_only(node))
        if not alternatives:
            self._dead(f"no type allowed at {location(node.where)} can be satisfied")
            return None
        return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}

    def _kind(self, kind: str, node: Node, *, with_fraction: bool) -> tuple[str, dict] | None:
        if kind in ("null", "boolean"):
            return kind, {}
        if kind == "integer":
            return self._number(node, with_fraction=with_fraction)
        render = {"string": self._string, "array": self._array, "object": self._object}[kind]
        keywords = render(node)
        return None if keywords is None else (kind, keywords)

    def _string(self, node: Node) -> dict | None:
        low, high = node.min_length, node.max_length
        if high is not None and low > high:
            self._dead(f"minLength {low} > maxLength {high} at {location(node.where)}")
            return None
        if not node.regexes:
            if not low and high is None:
                return {}
            return {"pattern": ecma_regex.to_xgrammar(ecma_regex.any_string(low, high))}
        regexes = intersected(node.regexes)
        if regexes is None:
            self._dead(f"no string at {location(node.where)} matches all its patterns and formats")
            return None
        if unwritable(regexes):
            self.compiler.unenforceable(
                "not", node.where, "the strings a pattern rejects cannot be written as one regex"
            )
            regexes = tuple(regex for regex in regexes if not unwritable((regex,)))
            if not regexes:
                return self._string(replace(node, regexes=()))
        regex = regexes[0]
        for other in regexes[1:]:
            self.compiler.unenforceable(
                other.keyword,
                other.where,
                f"it must hold together with the {regex.label()}, and xgrammar takes one regex",
            )
        bounded = ecma_regex.restrict_length(regex.node, low, high)
        if bounded is None:
            shortest, longest = ecma_regex.length_bounds(regex.node)
            if max(shortest, low) > min(_cap(longest), _cap(high)):
                self._dead(f"no string of the allowed lengths matches the {regex.label()}")
                return None
            self.compiler.unenforceable(
                "minLength" if low else "maxLength",
                node.where,
                f"it cannot be folded into the {regex.label()}",
            )
            bounded = regex.node
        elif bounded != regex.node and may_lose_lengths(regex.node):
            self.compiler.subset(
                "maxLength" if high is not None else "minLength",
                node.where,
                f"the length is shared between the parts of the {regex.label()}, so some "
                "strings of an allowed length are not generated",
            )
        return {"pattern": ecma_regex.to_xgrammar(bounded)}

    def _number(self, node: Node, *, with_fraction: bool) -> tuple[str, Any] | None:
        """("integer" or "number", keywords), or ("alternative", schema): a listing or a
        shared range definition."""
        if with_fraction and node.decimal_step is not None:
            listed = self._listed_multiples(node)
            if listed is not None:
                return None if listed is _DEAD else ("alternative", listed)
            self.compiler.subset(
                "multipleOf",
                node.where,
                f"only its integer multiples are written: the range is open or holds more "
                f"than {MAX_LISTED_MULTIPLES} multiples of {float(node.decimal_step):g}",
            )
        if not with_fraction or node.multiple_of is not None or node.decimal_step is not None:
            return self._integer(node)
        if node.minimum and node.maximum and not _ranges_overlap(node.minimum, node.maximum):
            self._dead(f"the number range at {location(node.where)} is empty")
            return None
        if self.compiler.guard_numbers and not _within_fraction_limit(node):
            return self._guarded_number(node)
        keywords = _range_keywords(node.minimum, node.maximum)
        return self._maybe_shared("number", keywords)

    def _fractions_only(self, node: Node) -> list[dict]:
        """Numbers that are not integers (``number`` without ``integer``: ``not:
        {type: integer}``, a ``oneOf`` of both), which xgrammar's ``number``
        cannot say: ranges strictly between consecutive integers, a subset of
        at most ``MAX_FRACTION_SPANS`` of them from the lower bound (else
        around zero)."""
        if node.multiple_of is not None or node.decimal_step is not None:
            self.compiler.unenforceable(
                "multipleOf", node.where, "numbers that are not integers cannot take a step"
            )
            return []
        low, high = node.minimum, node.maximum
        if low is not None:
            first = math.floor(low[0])
        elif high is not None:
            first = math.ceil(high[0]) - MAX_FRACTION_SPANS
        else:
            first = -(MAX_FRACTION_SPANS // 2)
        spans = []
        for start in range(first, first + MAX_FRACTION_SPANS):
            lower = tighter_lower(low, (start, True))
            upper = tighter_upper(high, (start + 1, True))
            if _ranges_overlap(lower, upper):
                spans.append({"type": "number", **_range_keywords(lower, upper)})
        whole = low is not None and high is not None and high[0] <= first + MAX_FRACTION_SPANS
        if spans and not whole:
            self.compiler.subset("type", node.where, "numbers that are not integers, near zero")
        return spans

    def _guarded_number(self, node: Node) -> tuple[str, Any] | None:
        """Safe integers, or fractions within ``FRACTION_LIMIT``; the user's range if neither."""
        alternatives = []
        integers = _integer_range(node)
        if integers is not None:
            low, high = _guarded_integers(*integers, force=False)
            if low is not None and high is not None and low <= high:
                alternatives.append(
                    self._shared({"type": "integer", "minimum": low, "maximum": high})
                )
        lower = tighter_lower(node.minimum, (-FRACTION_LIMIT, True))
        upper = tighter_upper(node.maximum, (FRACTION_LIMIT, True))
        if _ranges_overlap(lower, upper):
            alternatives.append({"type": "number", **_range_keywords(lower, upper)})
        if not alternatives:  # the user's range lies beyond the guard: theirs stands
            return self._maybe_shared("number", _range_keywords(node.minimum, node.maximum))
        shared = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
        return "alternative", self._shared(shared)

    def _integer(self, node: Node) -> tuple[str, Any] | None:
        bounds = _integer_range(node)
        if bounds is None:
            self._dead(f"no integer lies in the range at {location(node.where)}")
            return None
        low, high = bounds
        step = node.multiple_of
        # Integers past 2**53 are rounded before the judge divides them by a step above 1.
        unsafe_step = node.decimal_step is not None and node.decimal_step > 1
        native_unbounded = step not in (None, 1) and low is None and high is None
        if unsafe_step or (self.compiler.guard_numbers and not native_unbounded):
            low, high = _guarded_integers(low, high, force=unsafe_step)
            if low is not None and high is not None and low > high:
                self._dead(f"no integer below 2**53 lies in the range at {location(node.where)}")
                return None
        if (low or 0) > INTEGER_LIMIT or (high or 0) < -INTEGER_LIMIT:
            self.compiler.unenforceable(
                "minimum" if (low or 0) > INTEGER_LIMIT else "maximum",
                node.where,
                f"xgrammar takes integer bounds within +-{INTEGER_LIMIT}",
            )
            low = high = None
        keywords: dict[str, Any] = {}
        if low is not None:
            keywords["minimum"] = max(low, -INTEGER_LIMIT)  # clamped: still a subset
        if high is not None:
            keywords["maximum"] = min(high, INTEGER_LIMIT)
        if step is None or step == 1:
            return self._maybe_shared("integer", keywords)
        if _native_multiple(step, low, high):
            return self._maybe_shared("integer", {**keywords, "multipleOf": step})
        if low is not None and high is not None:
            multiples = range(-(-low // step) * step, high + 1, step)
            if not multiples:
                self._dead(f"no multiple of {step} lies in the range at {location(node.where)}")
                return None
            if len(multiples) <= MAX_LISTED_MULTIPLES:
                return "alternative", {"enum": list(multiples)}
            pieces = _pieces_xgrammar_steps(step, low, high)
            both_given = node.minimum is not None and node.maximum is not None
            if not pieces and step <= MAX_MULTIPLE_OF and both_given:
                pieces = _pieces_xgrammar_steps(step, *_nearest_zero(low, high, STEPPED_SPAN))
                self.compiler.subset(
                    "multipleOf",
                    node.where,
                    f"the multiples among the {STEPPED_SPAN} integers of the range nearest "
                    "zero: xgrammar steps only within ranges under "
                    f"{MULTIPLE_OF_RANGE} apart, {MAX_STEP_PIECES} of them here",
                )
            if pieces:
                return "alternative", {
                    "anyOf": [
                        {"type": "integer", "minimum": a, "maximum": b, "multipleOf": step}
                        for a, b in pieces
                    ]
                }
        window = _multiples_window(step, low, high, node)
        if window is not None:
            self.compiler.subset(
                "multipleOf", node.where, f"multiples within {MULTIPLE_OF_RANGE} of the bound"
            )
            low, high = window
            return self._maybe_shared(
                "integer", {"minimum": low, "maximum": high, "multipleOf": step}
            )
        nearest = _nearest_multiples(step, low, high, node)
        if nearest:
            nearest = self.compiler.filter_values(nearest, node.origins, node.where)
        if nearest:
            self.compiler.subset(
                "multipleOf",
                node.where,
                f"the {MAX_LISTED_MULTIPLES} multiples nearest the bound (zero without one), "
                f"listed: xgrammar enforces steps up to {MAX_MULTIPLE_OF}",
            )
            return "alternative", {"enum": nearest}
        self.compiler.unenforceable(
            "multipleOf",
            node.where,
            f"no multiple of {step} in the range is one the judge takes: it divides doubles, "
            "exact only below 2**53",
        )
        return self._maybe_shared("integer", keywords)

    def _listed_multiples(self, node: Node) -> dict | object | None:
        """A non-integer step's multiples in a bounded range, those the judge accepts.

        None when the range is open or holds more than ``MAX_LISTED_MULTIPLES``
        (integer multiples are generated instead); ``_DEAD`` when none is valid.
        """
        if node.minimum is None or node.maximum is None or node.decimal_step is None:
            return None
        step = combined_step(node.decimal_step, node.multiple_of and Fraction(node.multiple_of))
        first = math.ceil(_as_written(node.minimum[0]) / step)
        last = math.floor(_as_written(node.maximum[0]) / step)
        if last - first + 1 > MAX_LISTED_MULTIPLES:
            return None
        values = [_json_number(k * step) for k in range(first, last + 1)]
        kept = self.compiler.filter_values(values, node.origins, node.where)
        if not kept:
            self._dead(
                f"no multiple of {float(step):g} in the range at {location(node.where)} "
                "passes the judge's floating-point division"
            )
            return _DEAD
        return _enum_schema(tuple(kept))

    def _maybe_shared(self, kind: str, keywords: dict) -> tuple[str, Any]:
        """A bounded number is a range grammar xgrammar builds at some cost per copy
        (tenths of a second on a large vocabulary), so each distinct one is a shared
        definition; a plain one stays inline."""
        if "minimum" not in keywords and "maximum" not in keywords:
            return kind, keywords
        return "alternative", self._shared({"type": kind, **keywords})

    def _shared_string(self, schema: dict, types: list[str]) -> dict:
        """A stand-in for a schema whose strings take a pattern: where the
        pattern is used more than once, its strings become a reference to one
        definition (beside the schema's other types, ``anyOf``); where used
        once, it stays as it is (``_string_definitions`` decides once
        everything is rendered).

        Why: xgrammar 0.2.8 builds every inline copy of a pattern holding a
        negated class again (what a string's characters under maxLength
        become, ``grammar_compiler/regex_emit.py``), where a referenced
        definition is built once. A schema with 41 string fields of maxLength
        80 among 197 patterns compiled in 20 s with Llama 3's vocabulary
        (2.1 s before its strings were negated classes); 0.6 s shared.
        """
        others = [kind for kind in types if kind != "string"]
        other_types = None
        if others:
            rest = {key: value for key, value in schema.items() if key not in ("type", "pattern")}
            other_types = {"type": others[0] if len(others) == 1 else others, **rest}
        self._string_uses.setdefault(schema["pattern"], []).append((schema, other_types))
        return schema

    def _string_definitions(self) -> dict[str, dict]:
        """Points the stand-ins of each repeated pattern at one new definition."""
        definitions: dict[str, dict] = {}
        for pattern, uses in self._string_uses.items():
            if len(uses) < 2:
                continue
            taken = {*self.compiler.definitions, *self._number_schemas, *definitions}
            name = _free_name("string", taken)
            definitions[name] = {"type": "string", "pattern": pattern}
            reference = {"$ref": f"#/$defs/{name}"}
            for stand_in, other_types in uses:
                stand_in.clear()
                if other_types is None:
                    stand_in.update(reference)
                else:
                    stand_in["anyOf"] = [dict(reference), other_types]
        return definitions

    def _shared(self, schema: dict) -> dict:
        key = json.dumps(schema, sort_keys=True)
        name = self._number_names.get(key)
        if name is None:
            name = _free_name("number", {*self.compiler.definitions, *self._number_schemas})
            self._number_names[key] = name
            self._number_schemas[name] = schema
        return {"$ref": f"#/$defs/{name}"}

    def _array(self, node: Node) -> dict | None:
        prefix: list[Any] = []
        items: Any = None
        for item in node.prefix:
            rendered = self.render(item)
            if rendered is None:
                items = False  # no array can reach this position
                break
            prefix.append(rendered)
        if items is None and node.items is not None:
            rendered = self.render(node.items)
            items = False if rendered is None else rendered
        max_items = min_optional(node.max_items, len(prefix) if items is False else None)
        if max_items is not None and max_items < len(prefix):
            prefix, items = prefix[:max_items], False
        if max_items is not None and node.min_items > max_items:
            self._dead(f"the array at {location(node.where)} cannot have {node.min_items} items")
            return None
        keywords: dict[str, Any] = {}
        if prefix:
            keywords["prefixItems"] = prefix
        if items is None and (node.min_items > len(prefix) or not prefix):
            # Strict xgrammar reads a missing "items" as "no further items" once
            # the array has any other keyword ({"type": "array", "maxItems": 3}
            # would only ever be []); minItems would contradict it. The schema
            # allows any value there. (After a prefix, the tuple stays closed.)
            items = {}
        if items is not None:
            keywords["items"] = items
        if node.min_items:
            keywords["minItems"] = node.min_items
        if max_items is not None:
            keywords["maxItems"] = max_items
        if node.unique and (max_items is None or max_items > 1) and node.prefix:
            keywords.update(self._unique_positions(node))
        elif node.unique and (max_items is None or max_items > 1):
            keywords["uniqueItems"] = True  # xgrammar ignores it; the decoder reads it
            item = self.compiler.definition_of(node.items)
            if distinct_values(node.items) is None:  # not kept apart as listed or open values
                if (anchor := unique_anchor(item, node.min_items)) is not None:
                    keywords[UNIQUE_BY] = anchor
                    assert item is not None
                    if counted_anchor(item, anchor) is not None:
                        keywords[UNIQUE_COUNTED] = True
                elif counted_strings(item) is not None:
                    keywords[UNIQUE_COUNTED] = True
        return keywords

    def _unique_positions(self, node: Node) -> dict[str, Any]:
        """A unique tuple's keywords. Scalar positions the decoder keeps apart
        (``_tuple_kept_apart``); a tuple the compiler made of a unique array's
        objects (``contains`` puts its matches first) keeps their anchor in
        every position. Objects without one common anchor could not be kept
        apart: refused (left out, best effort)."""
        positions = [*node.prefix, *([node.items] if node.items is not None else [])]
        objects = [
            found
            for position in positions
            if (found := self.compiler.definition_of(position)) is not None
            and "object" in effective_kinds(found)
        ]
        if not objects:
            return {"uniqueItems": True}
        anchors = {unique_anchor(found, node.min_items) for found in objects}
        anchor = anchors.pop() if len(anchors) == 1 else None
        if anchor is None or len({_anchor_values(found, anchor) for found in objects}) > 1:
            # (the decoder reads the anchor's values from the first position)
            why = "its objects have no one member that keeps them apart alike in every position"
            self.compiler.unenforceable("uniqueItems", node.where, why)
            return {}
        keywords: dict[str, Any] = {"uniqueItems": True, UNIQUE_BY: anchor}
        if counted_anchor(objects[0], anchor) is not None:
            keywords[UNIQUE_COUNTED] = True
        return keywords

    def _object(self, node: Node) -> dict | None:
        name_ok = self._name_check(node)
        properties: dict[str, Any] = {}
        required: list[str] = []
        forbidden: list[str] = []  # declared names no value can have: never written as extras
        left_out = self._optional_left_out(node)
        names = [*node.properties, *_undeclared_required(node)]
        listed = self._listed_names(node)
        if listed is not None:
            names += [name for name in listed if name not in names]
        for name in names:
            sub = node.properties.get(name) or self.compiler.undeclared(node, name)
            rendered = self.render(sub) if name_ok(name) and name not in left_out else None
            if rendered is None:
                if name in node.required:
                    self._dead(f"required property {name!r} at {location(node.where)} cannot exist")
                    return None
                if name_ok(name):
                    forbidden.append(name)
                continue
            properties[name] = rendered
            if name in node.required:
                required.append(name)
        keywords: dict[str, Any] = {}
        if properties:
            keywords["properties"] = properties
        if required:
            keywords["required"] = required
        if listed is not None:  # every name it may take is declared now
            keywords["additionalProperties"] = False
            return self._property_counts(node, keywords, len(required), len(properties))
        additional = self._additional(node)
        # Extra keys never take a forbidden name, nor, under propertyNames (beside
        # which xgrammar no longer keeps declared names out of the extra keys), a
        # declared one.
        pattern_names = None
        if node.pattern_properties and not forbidden and not _pattern_named(node, properties):
            pattern_names = self._pattern_names(node)
        if pattern_names is not None:
            keywords["propertyNames"], keywords["additionalProperties"] = pattern_names
            if additional is not False:
                self.compiler.subset(
                    "patternProperties", node.where, "no undeclared name that misses the patterns"
                )
            return self._property_counts(node, keywords, len(required), None)
        if additional is not None:
            keywords["additionalProperties"] = additional
        # Strict reading: an object that declares properties takes no others unless
        # additionalProperties says so; one that only requires names declares none.
        declares = any(name in node.properties for name in properties)
        open_ended = additional is not False and (additional is not None or not declares)
        if node.pattern_properties and open_ended and not forbidden:
            additional = self._names_either_way(node)
            keywords["additionalProperties"] = additional
            open_ended = additional is not False
        if open_ended and (left_out or (forbidden and node.pattern_properties)):
            # Names left out (their schemas unwritten) or forbidden beside patterns
            # whose values were not merged: no extra keys at all.
            keywords["additionalProperties"] = False
            open_ended = False
        if open_ended and (forbidden or node.property_names is not None):
            taken = [*properties, *forbidden]
            names = _INEXPRESSIBLE
            if len(taken) <= MAX_EXCLUDED_NAMES:
                names = self._extra_names(node, taken)
            if names is _INEXPRESSIBLE:
                self.compiler.subset("properties", node.where, "no undeclared name")
            if isinstance(names, dict):
                keywords["propertyNames"] = names
            else:  # (None: no name is possible)
                keywords["additionalProperties"] = False
                open_ended = False
        most = None if open_ended else len(properties)
        counted = self._property_counts(node, keywords, len(required), most)
        if counted and open_ended and "additionalProperties" not in counted:
            # Strict xgrammar reads a missing additionalProperties as false once
            # the object has any other keyword: {"type": "object",
            # "maxProperties": 3} would only ever be {}.
            counted["additionalProperties"] = True
        return counted

    def _listed_names(self, node: Node) -> tuple[str, ...] | None:
        """The names a ``propertyNames`` enum or const lists (``Dict[Literal["a",
        "b"], int]`` in pydantic, a record of an enum in zod), where there are
        few: the caller declares each as an optional property of the schema
        ``patternProperties`` or ``additionalProperties`` gives it and closes
        the object. The same values; but xgrammar then writes each name at
        most once without the decoder's guard (tools, Lark's ``%json``), and
        ``minProperties`` counts declared names, which no writer can corner
        into a repeat."""
        if node.property_names is None:
            return None
        try:
            names = self._as_string(node.property_names)
        except Unmergeable:
            return None
        if names.enum is None or len(names.enum) > MAX_LISTED_NAMES:
            return None
        return names.enum

    def _extra_names(self, node: Node, taken: list[str]) -> Any:
        """``propertyNames`` for an open object's undeclared names: strings its own
        ``propertyNames`` allows, other than ``taken`` (the declared names, which
        xgrammar no longer keeps out of the extra keys once ``propertyNames`` is
        there, and the forbidden ones); None where no name is possible,
        ``_INEXPRESSIBLE`` where the names cannot be written, or not cheaply: a
        length bound makes each left-out name a copy of a bounded repeat of
        every character, which xgrammar compiles slowly on a large vocabulary
        (seconds for eight names within 40 characters on Llama 3's)."""
        where = f"{node.where}/propertyNames"
        schema: dict[str, Any] = {"type": "string"}
        if taken:
            schema["not"] = {"enum": taken}
        try:
            names = self.compiler.node(self.compiler.synthetic(schema), where)
            if node.property_names is not None:
                allowed = self._as_string(node.property_names)
                if taken and _length_bounded(allowed):
                    return _INEXPRESSIBLE
                names = self.compiler.both(names, allowed, where)
        except (ConstraintError, Unmergeable):
            return _INEXPRESSIBLE
        return self.render(names)

    def _optional_left_out(self, node: Node) -> frozenset[str]:
        """The optional properties past the first ``optional_cap`` (declared
        order; ``size.optional_property_cap``), which are not written:
        xgrammar's compile time grows with the square of an object's optional
        properties. Leaving some out is a subset (an object never needs
        them), where refusing would lose the config-file schemas that declare
        hundreds of options."""
        optional = [name for name in node.properties if name not in node.required]
        cap = self.compiler.optional_cap
        if len(optional) <= cap:
            return frozenset()
        self.compiler.subset(
            "properties",
            node.where,
            f"only the first {cap} of its {len(optional)} optional properties are written",
        )
        return frozenset(optional[cap:])

    def _pattern_names(self, node: Node) -> tuple[dict, Any] | None:
        """``propertyNames`` and ``additionalProperties`` that write undeclared
        names matching ``patternProperties`` (and ``propertyNames``), each
        value valid against every pattern's schema; None where that cannot be
        expressed or no such name or value exists.

        xgrammar checks ``propertyNames`` on undeclared keys only, so declared
        properties keep their own schemas; beside it, xgrammar may also write
        a declared name as an extra key, so the caller asks for these only
        when no pattern covers a declared name (``_pattern_named``).
        A name matching one pattern needs only that pattern's schema; every
        name gets all of them, a subset where they differ. Names matching no
        pattern, which ``additionalProperties`` decides, are not written.
        """
        # A search for any of the patterns: their alternation, top-level
        # alternatives each (where the translation keeps their anchors).
        joined = "|".join(pattern for pattern, _ in node.pattern_properties)
        where = f"{node.where}/patternProperties"
        try:
            names = self.compiler.node(
                self.compiler.synthetic({"type": "string", "pattern": joined}), where
            )
            if node.property_names is not None:
                names = self.compiler.both(names, self._as_string(node.property_names), where)
            values = node.pattern_properties[0][1]
            for _, schema in node.pattern_properties[1:]:
                values = self.compiler.both(values, schema, where)
        except (ConstraintError, Unmergeable):
            return None
        rendered_names = self.render(names)
        rendered_values = self.render(values)
        if rendered_names is None or rendered_values is None:
            return None
        return rendered_names, True if rendered_values == {} else rendered_values

    def _names_either_way(self, node: Node) -> Any:
        """``additionalProperties`` for undeclared names that may or may not
        match a ``patternProperties`` pattern: values valid against
        ``additionalProperties`` and every pattern's schema at once, so any
        name xgrammar writes is right whichever applies; False (no undeclared
        name) where no such value exists or it cannot be expressed.

        Why: which names miss every pattern is a complement xgrammar's
        ``propertyNames`` cannot say, so the name is left free and the value
        made to fit both readings.
        """
        where = f"{node.where}/patternProperties"
        values = node.additional if node.additional is not None else Node(where=where)
        try:
            for _, schema in node.pattern_properties:
                values = self.compiler.both(values, schema, where)
        except (ConstraintError, Unmergeable):
            values = None
        rendered = None if values is None else self.render(values)
        if rendered is None:
            self.compiler.subset(
                "patternProperties", node.where, "no undeclared name: no value fits every pattern"
            )
            return False
        self.compiler.subset(
            "patternProperties", node.where, "undeclared values fit every pattern's schema"
        )
        return True if rendered == {} else rendered

    def _additional(self, node: Node) -> Any:
        if node.additional is None:
            return None
        rendered = self.render(node.additional)
        if rendered is None:
            return False
        return True if rendered == {} else rendered

    def _as_string(self, names: Node) -> Node:
        """``propertyNames`` as the strings it allows, a ``$ref`` followed and an ``anyOf``
        distributed (an enum's other values left out: a name is a string).

        Raises:
            Unmergeable: where that cannot be expressed.
        """
        strings = Node(
            where=names.where, kinds=frozenset({"string"}), origins=((_STRING, names.where),)
        )
        return self.compiler.both(names, strings, names.where)

    def _name_check(self, node: Node):
        """Whether ``propertyNames`` lets a declared name through: by the schemas it came
        from, and none where it allows no string at all (merged to nothing, it keeps no
        schema to ask)."""
        if node.property_names is None:
            return lambda name: True
        try:
            no_names = generates_nothing(self.compiler, self._as_string(node.property_names))
        except Unmergeable:
            no_names = False
        if no_names:
            return lambda name: False
        origins = node.property_names.origins
        return lambda name: bool(self.compiler.filter_values([name], origins, node.where))

    def _bounded_names(self, node: Node) -> bool:
        """Whether an open object's undeclared names are all strings of
        ``maxLength`` alone (``propertyNames: {maxLength: 8}``, no pattern),
        which the decoder keeps apart as it keeps such strings in a unique
        array: a taken name as long as names may be is kept out before its
        quote (``engine/json_repeats.py``), so at most 93 never corner it."""
        if node.pattern_properties or node.property_names is None:
            return False
        try:
            return bounded_strings(self._as_string(node.property_names), 0)
        except Unmergeable:
            return False

    def _endless_names(self, node: Node) -> bool:
        """Whether every undeclared name the object may take can always be made
        longer (``distinct_values``): ``propertyNames`` and each pattern."""
        try:
            names = [] if node.property_names is None else [self._as_string(node.property_names)]
        except Unmergeable:
            return False
        for pattern, _ in node.pattern_properties:
            try:
                regex = Regex(ecma_regex.parse_pattern(pattern), "pattern", node.where)
            except ecma_regex.PatternError:
                return False
            names.append(Node(where=node.where, kinds=frozenset({"string"}), regexes=(regex,)))
        return all(distinct_values(name) == math.inf for name in names)

    def _property_counts(
        self, node: Node, keywords: dict, required: int, most: int | None
    ) -> dict | None:
        low, high = node.min_properties, node.max_properties
        if (high is not None and high < required) or (most is not None and low > most):
            self._dead(f"the property counts at {location(node.where)} cannot be met")
            return None
        bounded = most is None and self.compiler.decoder_guard and self._bounded_names(node)
        if bounded and low <= MAX_BOUNDED_UNIQUE_ITEMS:
            if high is None or high > MAX_BOUNDED_UNIQUE_ITEMS:
                high = MAX_BOUNDED_UNIQUE_ITEMS
                self.compiler.subset(
                    "propertyNames",
                    node.where,
                    f"names of maxLength alone: at most {high} of them, which the decoder "
                    "can always keep apart",
                )
        else:
            bounded = False
        if low > required:
            # One member is one distinct name. Past that, names that can always
            # be made new (free, or of a pattern that can always go on) are kept
            # apart by the decoder's guard, as are up to 93 names of maxLength
            # alone; a name bound to end otherwise could be cornered.
            endless = self.compiler.decoder_guard and self._endless_names(node)
            free_names = low <= 1 or bounded or endless
            if most is None and not free_names:
                kept_apart = (
                    "only names that can always go on"
                    if self.compiler.decoder_guard
                    else "free names only in a schema given whole"
                )
                self.compiler.unenforceable(
                    "minProperties",
                    node.where,
                    "xgrammar may repeat an undeclared property name, which counts once "
                    f"(the decoder keeps apart {kept_apart})",
                )
            else:
                keywords["minProperties"] = low
        if high is not None and (most is None or high < most):
            keywords["maxProperties"] = high
        return keywords


def _anchor_values(item: Node, anchor: str) -> tuple:
    """What a unique tuple's object lets its anchor be, as far as the decoder
    counts or bounds it: positions of a tuple a rewrite made (``contains``
    first, an exclusive ``oneOf``) may narrow it in one position only."""
    member = item.properties[anchor]
    patterns = tuple(ecma_regex.to_xgrammar(regex.node) for regex in member.regexes)
    return (
        member.ref,
        member.kinds,
        None if member.enum is None else json.dumps(member.enum, sort_keys=True),
        patterns,
        member.min_length,
        member.max_length,
        member.minimum,
        member.maximum,
        member.multiple_of,
    )


def _undeclared_required(node: Node) -> list[str]:
    """The required names ``properties`` does not declare, in the order the schemas
    that require them list them (xgrammar writes members in this order: the schema
    author's order reads more naturally to a model than the alphabet)."""
    wanted = node.required - node.properties.keys()
    ordered: dict[str, None] = {}
    for schema, _ in node.origins:
        listed = schema.get("required") if isinstance(schema, dict) else None
        if isinstance(listed, list):
            ordered.update((name, None) for name in listed if name in wanted)
    return [*ordered, *sorted(wanted - ordered.keys())]


def _length_bounded(strings: Node) -> bool:
    """Whether a string node (no union) caps the length of its strings."""
    if strings.any_of is not None or strings.ref is not None or strings.enum is not None:
        return True  # (not a plain string schema: treated as bounded, the cheap answer)
    return strings.max_length is not None or any(
        ecma_regex.length_bounds(regex.node)[1] is not None for regex in strings.regexes
    )


def _pattern_named(node: Node, declared: dict[str, Any]) -> bool:
    """Whether a ``patternProperties`` pattern covers a declared property name."""
    return any(
        pattern_covers(pattern, name, node.where)
        for pattern, _ in node.pattern_properties
        for name in declared
    )


def _enum_schema(values: tuple[Any, ...]) -> dict:
    """The values as xgrammar should offer them.

    xgrammar writes an enum's fractional numbers with 17 digits (0.07 only as
    0.070000000000000007), so those become ranges [v, v], which let 0.07 be
    written as 0.07.
    """
    fractions = [v for v in values if _plain_fraction(v)]
    alternatives = [{"type": "number", "minimum": v, "maximum": v} for v in fractions]
    rest = [v for v in values if not _plain_fraction(v)]
    if rest:
        alternatives.insert(0, {"enum": rest})
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def _plain_fraction(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer() and "e" not in repr(value)


_STRING = {"type": "string"}
"""What a property name is, as the origin ``_as_string`` filters enum values with."""


def _cap(value: int | None) -> float:
    return math.inf if value is None else value


def _ranges_overlap(low: Bound | None, high: Bound | None) -> bool:
    if low is None or high is None:
        return True
    return low[0] < high[0] or (low[0] == high[0] and not low[1] and not high[1])


def _range_keywords(low: Bound | None, high: Bound | None) -> dict[str, Any]:
    keywords = {}
    for bound, inclusive, exclusive in (
        (low, "minimum", "exclusiveMinimum"),
        (high, "maximum", "exclusiveMaximum"),
    ):
        if bound is not None:
            keywords[exclusive if bound[1] else inclusive] = bound[0]
    return keywords


def _within_fraction_limit(node: Node) -> bool:
    """Whether the user's own range keeps a number within the guard's +-FRACTION_LIMIT."""
    low, high = node.minimum, node.maximum
    return (
        low is not None
        and high is not None
        and low[0] >= -FRACTION_LIMIT
        and high[0] <= FRACTION_LIMIT
    )


def _integer_range(node: Node) -> tuple[int | None, int | None] | None:
    """The node's bounds as integers (None: open), or None if no integer lies between."""
    low = None if node.minimum is None else _integer_above(*node.minimum)
    high = None if node.maximum is None else _integer_below(*node.maximum)
    if low is not None and high is not None and low > high:
        return None
    return low, high


def _guarded_integers(
    low: int | None, high: int | None, *, force: bool
) -> tuple[int | None, int | None]:
    """The range within +-SAFE_INTEGER; the user's own if that leaves nothing, unless forced."""
    guarded_low = -SAFE_INTEGER if low is None else max(low, -SAFE_INTEGER)
    guarded_high = SAFE_INTEGER if high is None else min(high, SAFE_INTEGER)
    if guarded_low > guarded_high and not force:
        return low, high
    return guarded_low, guarded_high


def _as_written(bound: float) -> Fraction:
    """A bound as the decimal the schema spells (0.1 as 1/10, not the double's value)."""
    return Fraction(Decimal(repr(bound)))


def _json_number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def _free_name(stem: str, taken: set[str]) -> str:
    number = 1
    while f"{stem}_{number}" in taken:
        number += 1
    return f"{stem}_{number}"


def _multiples_window(
    step: int, low: int | None, high: int | None, node: Node
) -> tuple[int, int] | None:
    """For an open side (``minimum: 0`` alone, the guard's bound on the other),
    the part of the range xgrammar enforces a step in: ``MULTIPLE_OF_RANGE``
    from the bound the schema gives (from zero with neither), holding a
    multiple; None when the step is beyond xgrammar or the range is closed."""
    if step > MAX_MULTIPLE_OF or low is None or high is None:
        return None
    width = MULTIPLE_OF_RANGE - 1
    if node.minimum is not None and node.maximum is not None:
        return None  # both bounds given, far apart: not a guess to make here
    if node.minimum is not None:
        window = (low, min(high, low + width))
    elif node.maximum is not None:
        window = (max(low, high - width), high)
    else:
        window = (max(low, -(width // 2)), min(high, width // 2))
    first = -(-window[0] // step) * step
    return window if first <= window[1] else None


def _pieces_xgrammar_steps(step: int, low: int, high: int) -> list[tuple[int, int]]:
    """A closed range too wide for xgrammar's step (``0`` to ``100000`` by 3) cut
    into ranges under ``MULTIPLE_OF_RANGE`` apart, where it does step: exact,
    up to ``MAX_STEP_PIECES`` of them (else none)."""
    width = MULTIPLE_OF_RANGE - 1
    if step > MAX_MULTIPLE_OF or (high - low) // width + 1 > MAX_STEP_PIECES:
        return []
    return [(start, min(start + width - 1, high)) for start in range(low, high + 1, width)]


def _nearest_multiples(step: int, low: int | None, high: int | None, node: Node) -> list[int]:
    """For a step beyond xgrammar (``multipleOf: 86400``) over a range too wide
    to list: the ``MAX_LISTED_MULTIPLES`` multiples nearest the one bound the
    schema gives (nearest zero with two or none), within the range and the
    safe integers (the judge divides doubles)."""
    low = -SAFE_INTEGER if low is None else max(low, -SAFE_INTEGER)
    high = SAFE_INTEGER if high is None else min(high, SAFE_INTEGER)
    first, last = -(-low // step), high // step  # the range's multiples are k * step
    if first > last:
        return []
    count = MAX_LISTED_MULTIPLES
    if node.minimum is not None and node.maximum is None:
        last = min(last, first + count - 1)
    elif node.maximum is not None and node.minimum is None:
        first = max(first, last - count + 1)
    else:
        first, last = _nearest_zero(first, last, count)
    return [k * step for k in range(first, last + 1)]


def _nearest_zero(low: int, high: int, count: int) -> tuple[int, int]:
    """The ``count`` integers of ``low..high`` nearest zero (all of them if fewer).

    Why zero: with both bounds given far apart, neither bound says where the
    values people mean lie, and the small ones are the likelier (an amount in
    cents from 0 to 10**8: up to 1,599.84 rather than from 999,998.40)."""
    if high - low < count:
        return low, high
    if low >= 0:
        return low, low + count - 1
    if high <= 0:
        return high - count + 1, high
    start = max(low, min(-(count // 2), high - count + 1))
    return start, start + count - 1


def _native_multiple(step: int, low: int | None, high: int | None) -> bool:
    """Whether xgrammar itself enforces multipleOf here (probed on 0.2.8)."""
    if step > MAX_MULTIPLE_OF:
        return False
    if low is None and high is None:
        return True
    return low is not None and high is not None and high - low < MULTIPLE_OF_RANGE


def _integer_above(value: float, exclusive: bool) -> int:
    return math.floor(value) + 1 if exclusive else math.ceil(value)


def _integer_below(value: float, exclusive: bool) -> int:
    return math.ceil(value) - 1 if exclusive else math.floor(value)


def confirm_with_xgrammar(value: str) -> None:
    try:
        xgrammar.Grammar.from_json_schema(value, any_whitespace=False, strict_mode=True)
    except (RuntimeError, ValueError) as err:
        reason = re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", str(err).strip())
        raise ConstraintError(f"schema not accepted by xgrammar: {reason}") from None
