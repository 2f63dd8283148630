"""Complements: nodes that match only values a schema rejects.

xgrammar has no negation, yet three keywords need one: ``if``/``then``/``else``
(the values the ``if`` rejects get the ``else``), a ``oneOf`` whose branches
overlap (each branch minus what the others accept) and ``maxContains`` (items
that ``contains`` rejects). A schema is the conjunction of its keywords, so
its complement is the union, over its keywords, of what each keyword alone
rejects. Each piece is a *term*: a ``Node`` whose origin schema describes
exactly what it matches (enum values merged with it are filtered against
that, and ``unevaluated*`` knows it was made here, see
``Compiler.synthetic``).

Keywords with an exact complement:

* ``type``: the other kinds;
* ``const``/``enum``: the kinds no listed value has, the other boolean,
  strings other than the listed ones (a regex over their trie), numbers in
  the open intervals around the listed ones; objects and arrays other than
  listed ones have no term;
* ``required``: per name, objects without it (``properties: {name: false}``);
* ``properties``: per property, objects where it is present with a value
  in a term of its schema's complement;
* ``minimum``/``maximum``/``exclusive*``, ``minLength``/``maxLength``,
  ``minItems``/``maxItems``: the opposite range, of that kind only;
* ``not``: its schema; ``allOf``: the union of the members' complements;
  ``anyOf``: their intersection (bounded); ``$ref``: the target's;
* ``dependentRequired``/``dependentSchemas``/``dependencies``: the trigger
  present and a name absent (or a term of its schema's complement);
* annotations and keywords the draft does not know constrain nothing, so
  they add no term.

Other keywords (``pattern``, ``format``, ``multipleOf``, ``items``, ...)
add no term: the union is then a subset of the complement, which keeps
generation sound but may leave valid values out; ``lost`` says of which
kinds (strings for a ``pattern``, objects for ``additionalProperties``...).
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from jsonschema.protocols import Validator

from grammar_compiler import ecma_regex, regex_automaton
from grammar_compiler.code_points import complement, minus, normalize
from grammar_compiler.json_schema.keywords import ANNOTATIONS
from grammar_compiler.json_schema.nodes import (
    KINDS,
    Node,
    Regex,
    Unmergeable,
    kind_of,
    never,
    type_kinds,
)
from grammar_compiler.json_schema.pointers import escape_token
from grammar_compiler.json_schema.refs import RemoteRef

if TYPE_CHECKING:
    from collections.abc import Callable

    from grammar_compiler.json_schema.normalize import Compiler

MAX_TERMS = 32
"""Terms one complement keeps; past that the rest are left out (a subset)."""
NUMBERS = frozenset({"integer", "fraction"})
COMPLEMENT_REGEX = "complement of"
"""How the regexes made here are labelled (``Regex.keyword`` starts with it)."""
_ANY_CHARACTER = ecma_regex.any_string(1, 1).item.ranges
"""What a generated string may hold (nothing JSON escapes, no surrogates)."""
_SAFE_INSIDE_NOT = frozenset(
    {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    | {"minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "multipleOf"}
)
"""Keywords that evaluate no property or item: a ``not`` of them can be a term as it is."""


_PLAIN = minus(((0x20, 0x7E),), ((0x22, 0x22), (0x5C, 0x5C)))
_PLAIN_TEXT = ecma_regex.Repeat(ecma_regex.Chars(_PLAIN), 0, None)
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_FORMAT_CHARACTERS = {
    "date": string.digits + "-",
    "time": string.digits + ":.+-Zz",
    "date-time": string.digits + ":.+-ZzTt",
    "duration": string.digits + "PYMWDTHS",
    "ipv4": string.digits + ".",
    "hostname": string.ascii_letters + string.digits + ".-",
    "idn-hostname": string.ascii_letters + string.digits + ".-",
}
"""Per format, every plain character its values may hold, as the judge checks it."""
_FORMAT_NEEDS = {"email": "@", "uri": ":", "date-time": "Tt", "time": ":", "date": "-"}
"""Per format, characters each of its values holds one of (an email's "@", a URI
scheme's ":", the "T" between a date and a time)."""


def _not_of_format(name: Any) -> list[ecma_regex.Node]:
    """Plain strings no value of the format is (a subset of them): those lacking
    what it needs, those holding a character it never has."""
    nodes = []
    if name in _FORMAT_NEEDS:
        lacking = minus(_PLAIN, normalize((ord(c), ord(c)) for c in _FORMAT_NEEDS[name]))
        nodes.append(ecma_regex.Repeat(ecma_regex.Chars(lacking), 0, None))
    if name in _FORMAT_CHARACTERS:
        allowed = normalize((ord(c), ord(c)) for c in _FORMAT_CHARACTERS[name])
        outside = ecma_regex.Chars(minus(_PLAIN, allowed))
        nodes.append(ecma_regex.Seq((_PLAIN_TEXT, outside, _PLAIN_TEXT)))
    return nodes


@dataclass(frozen=True)
class NotMatching(Regex):
    """The plain strings (``_PLAIN``) that ``node`` does not match: applied by
    ``intersected`` as a difference, never written as it is."""


@dataclass(frozen=True)
class Exclusion(Regex):
    """The regex of the strings other than ``strings`` (see ``other_than``)."""

    strings: tuple[str, ...] = ()


def joined_regexes(a: tuple[Regex, ...], b: tuple[Regex, ...]) -> tuple[Regex, ...] | None:
    """The regexes of both, as one where that can be written (``intersected``). None
    where a complement's regex meets another that cannot be joined with it, or no
    string matches both: the strings are left out."""
    regexes = a + tuple(regex for regex in b if regex not in a)
    exclusions = [regex for regex in regexes if isinstance(regex, Exclusion)]
    if len(exclusions) == len(regexes) > 1:  # listed strings: one trie, cheaper than automata
        strings = tuple(sorted({text for exclusion in exclusions for text in exclusion.strings}))
        return (replace(exclusions[0], node=other_than(strings), strings=strings),)
    joined = intersected(regexes)
    if joined is None or (len(joined) > 1 and any(_is_complement(r) for r in joined)):
        return None
    return joined


def unwritable(regexes: tuple[Regex, ...]) -> bool:
    """Whether ``intersected`` left a ``NotMatching``, whose node is not what it allows."""
    return any(isinstance(regex, NotMatching) for regex in regexes)


def intersected(regexes: tuple[Regex, ...]) -> tuple[Regex, ...] | None:
    """One regex for all of them (``regex_automaton``), labelled as the first: xgrammar
    takes one per string. The regexes as they are where that would be too large
    (a ``NotMatching`` among them can then not be written: callers refuse it);
    None where no string matches them all."""
    matching = [regex for regex in regexes if not isinstance(regex, NotMatching)]
    if len(matching) == len(regexes) < 2:
        return regexes
    node: ecma_regex.Node | None = matching[0].node if matching else _PLAIN_TEXT
    try:
        for regex in matching[1:]:
            node = regex_automaton.intersection(node, regex.node)
            if node is None:
                return None
        for regex in regexes:
            if isinstance(regex, NotMatching):
                node = regex_automaton.difference(node, regex.node)
                if node is None:
                    return None
    except regex_automaton.TooComplex:
        return regexes
    return (Regex(node, regexes[0].keyword, regexes[0].where),)


def _is_complement(regex: Regex) -> bool:
    return regex.keyword.startswith(COMPLEMENT_REGEX)


@dataclass(frozen=True)
class Complement:
    """Terms whose union is a schema's complement, less values of the ``lost`` kinds."""

    terms: tuple[Node, ...]
    lost: frozenset[str] = frozenset()

    @property
    def exact(self) -> bool:
        return not self.lost

    def __or__(self, other: Complement) -> Complement:
        return Complement(self.terms + other.terms, self.lost | other.lost)


NOTHING = Complement(())
"""The complement of a schema every value satisfies."""
ALL_KINDS = frozenset(KINDS)
_KINDS_OF = {
    **dict.fromkeys(("pattern", "format"), frozenset({"string"})),
    "multipleOf": NUMBERS,
    **dict.fromkeys(
        ("items", "prefixItems", "additionalItems", "contains", "uniqueItems", "unevaluatedItems"),
        frozenset({"array"}),
    ),
    **dict.fromkeys(
        (
            *("additionalProperties", "patternProperties", "propertyNames"),
            *("minProperties", "maxProperties", "unevaluatedProperties"),
        ),
        frozenset({"object"}),
    ),
}
"""The kinds of values a keyword constrains, where its complement has no term."""


def unknown(kinds: frozenset[str] = ALL_KINDS) -> Complement:
    """No term: the complement's values of these kinds cannot be expressed."""
    return Complement((), kinds)


class Complements:
    """Builds complements for one compiler (its draft, ``$ref`` index and merging)."""

    def __init__(self, compiler: Compiler) -> None:
        self.compiler = compiler
        self._open_refs: set[str] = set()
        self._keywords: dict[str, Callable[[Any, dict, str], Complement]] = {
            "type": self._type,
            "enum": lambda value, _, where: self._values(value, "enum", where),
            "const": lambda value, _, where: self._values([value], "const", where),
            "required": self._required,
            "properties": self._properties,
            "minimum": self._minimum,
            "maximum": self._maximum,
            "exclusiveMinimum": self._exclusive_minimum,
            "exclusiveMaximum": self._exclusive_maximum,
            "pattern": self._pattern,
            "format": self._format,
            "minLength": lambda n, _, where: self._at_most("string", "minLength", n, where),
            "maxLength": lambda n, _, where: self._at_least("string", "maxLength", n, where),
            "minItems": lambda n, _, where: self._at_most("array", "minItems", n, where),
            "maxItems": lambda n, _, where: self._at_least("array", "maxItems", n, where),
            "not": self._not,
            "allOf": self._all_of,
            "anyOf": self._any_of,
            "$ref": lambda ref, _, where: self._ref(ref, where),
            "dependentRequired": self._dependent_required,
            "dependentSchemas": self._dependent_schemas,
            "dependencies": self._dependencies,
            "contains": self._contains,
            "prefixItems": self._prefix_items,
            "items": self._items,
        }

    def of(self, schema: Any, where: str) -> Complement:
        if schema is True:
            return NOTHING
        if schema is False:
            return Complement((self._term(where, {}),))
        if "$ref" in schema and self.compiler.draft.ref_hides_siblings:
            return self._ref(schema["$ref"], where)
        result = NOTHING
        # The draft's reading: annotations (reported as ignored there) constrain nothing.
        view = self.compiler.read(schema, where, enforced=False)
        for key, value in view.items():
            if not self.compiler.constraining(key):
                continue
            handler = self._keywords.get(key)
            if handler is None:
                result = result | unknown(_KINDS_OF.get(key, ALL_KINDS))
            else:
                result = result | handler(value, schema, where)
            if len(result.terms) > MAX_TERMS:
                return Complement(result.terms[:MAX_TERMS], ALL_KINDS)
        return result

    def _term(self, where: str, origin: Any, **fields: Any) -> Node:
        """A node matching exactly what ``origin`` (a schema made here) does."""
        return Node(where=where, origins=((self.compiler.synthetic(origin), where),), **fields)

    # -- keywords --------------------------------------------------------

    def _type(self, declared: Any, _schema: dict, where: str) -> Complement:
        kinds = frozenset(KINDS) - type_kinds(declared)
        if not kinds:
            return NOTHING
        return Complement((self._term(where, {"not": {"type": declared}}, kinds=kinds),))

    def _values(self, values: list, keyword: str, where: str) -> Complement:
        """Values other than the listed ones, kind by kind."""
        listed = {kind_of(value) for value in values}
        terms = []
        untouched = frozenset(KINDS) - listed - (NUMBERS if listed & NUMBERS else frozenset())
        if untouched:
            terms.append(self._term(where, {"type": _type_names(untouched)}, kinds=untouched))
        booleans = {value for value in values if isinstance(value, bool)}
        if len(booleans) == 1:
            other = not booleans.pop()
            terms.append(self._term(where, {"enum": [other]}, enum=(other,)))
        strings = sorted({value for value in values if isinstance(value, str)})
        if strings:
            label = f"{COMPLEMENT_REGEX} {keyword}"
            regex = Exclusion(other_than(strings), label, where, tuple(strings))
            origin = {"type": "string", "not": {"enum": strings}}
            terms.append(self._term(where, origin, kinds=frozenset({"string"}), regexes=(regex,)))
        numbers = [value for value in values if kind_of(value) in NUMBERS]
        result = Complement(tuple(terms), listed & {"array", "object"})
        return result | self._outside(numbers, where) if numbers else result

    def _pattern(self, pattern: Any, _schema: dict, where: str) -> Complement:
        """Strings the pattern does not match, over ``_PLAIN`` (printable ASCII but
        ``"`` and ``\\``), where the pattern's regex is exact: there the
        dialects agree and nothing JSON escapes is left out. A lookaround's
        count may be folded in as a subset, so such patterns are left out."""
        strings = frozenset({"string"})
        if not isinstance(pattern, str) or _LOOKAROUND.search(pattern):
            return unknown(strings)
        try:
            node = ecma_regex.parse_pattern(pattern)
        except ecma_regex.PatternError:
            return unknown(strings)
        return self._strings_outside(node, "pattern", pattern, where)

    def _format(self, name: Any, _schema: dict, where: str) -> Complement:
        """Strings no value of the format can be, as the judge checks it
        (``_not_of_format``); other formats (the numeric ones, those with
        readings too loose to cut by character) keep their complement unknown."""
        nodes = _not_of_format(name)
        if not nodes:
            return unknown(_KINDS_OF["format"] | NUMBERS)
        result = NOTHING
        for node in nodes:
            result = result | self._strings_outside(node, "format", name, where, complement=False)
        return result

    def _strings_outside(
        self, node: ecma_regex.Node, keyword: str, value: str, where: str, *, complement=True
    ) -> Complement:
        """A term of the plain strings outside ``node`` (``complement``: applied
        where it meets other regexes, ``intersected``) or in it."""
        strings = frozenset({"string"})
        label = f"{COMPLEMENT_REGEX} {keyword}"
        regex = NotMatching(node, label, where) if complement else Regex(node, label, where)
        origin = {"type": "string", "not": {keyword: value}}
        term = self._term(where, origin, kinds=strings, regexes=(regex,))
        return Complement((term,), strings)

    def _outside(self, numbers: list, where: str) -> Complement:
        """Numbers in the open intervals below, between and above the listed ones."""
        points = sorted(set(numbers))
        exact = len(points) < MAX_TERMS  # else only the numbers below and above them all
        terms = [self._below(points[0], where), self._above(points[-1], where)]
        for low, high in itertools.pairwise(points) if exact else ():
            origin = {"type": "number", "not": {"anyOf": [{"maximum": low}, {"minimum": high}]}}
            terms.append(
                self._term(where, origin, kinds=NUMBERS, minimum=(low, True), maximum=(high, True))
            )
        return Complement(tuple(terms), frozenset() if exact else NUMBERS)

    def _below(self, bound: float, where: str, *, inclusive: bool = False) -> Node:
        origin = {"maximum": bound} if inclusive else {"not": {"minimum": bound}}
        return self._term(
            where, {"type": "number", **origin}, kinds=NUMBERS, maximum=(bound, not inclusive)
        )

    def _above(self, bound: float, where: str, *, inclusive: bool = False) -> Node:
        origin = {"minimum": bound} if inclusive else {"not": {"maximum": bound}}
        return self._term(
            where, {"type": "number", **origin}, kinds=NUMBERS, minimum=(bound, not inclusive)
        )

    def _minimum(self, bound: Any, schema: dict, where: str) -> Complement:
        exclusive = schema.get("exclusiveMinimum") is True  # draft-04's flag
        return Complement((self._below(bound, where, inclusive=exclusive),))

    def _maximum(self, bound: Any, schema: dict, where: str) -> Complement:
        exclusive = schema.get("exclusiveMaximum") is True
        return Complement((self._above(bound, where, inclusive=exclusive),))

    def _exclusive_minimum(self, bound: Any, _schema: dict, where: str) -> Complement:
        if isinstance(bound, bool):
            return NOTHING  # draft-04's flag, read with minimum
        return Complement((self._below(bound, where, inclusive=True),))

    def _exclusive_maximum(self, bound: Any, _schema: dict, where: str) -> Complement:
        if isinstance(bound, bool):
            return NOTHING
        return Complement((self._above(bound, where, inclusive=True),))

    def _at_most(self, kind: str, keyword: str, count: Any, where: str) -> Complement:
        """The complement of a lower count (minLength, minItems): fewer, of that kind."""
        count = int(count)
        if count == 0:
            return NOTHING
        field = {"string": "max_length", "array": "max_items"}[kind]
        origin = {"type": kind, "not": {keyword: count}}
        fields = {field: count - 1, "kinds": frozenset({kind})}
        return Complement((self._term(where, origin, **fields),))

    def _at_least(self, kind: str, keyword: str, count: Any, where: str) -> Complement:
        """The complement of an upper count (maxLength, maxItems): more, of that kind."""
        count = int(count)
        field = {"string": "min_length", "array": "min_items"}[kind]
        origin = {"type": kind, "not": {keyword: count}}
        fields = {field: count + 1, "kinds": frozenset({kind})}
        return Complement((self._term(where, origin, **fields),))

    def _contains(self, wanted: Any, schema: dict, where: str) -> Complement:
        """Arrays with fewer matches than ``minContains`` (as: none), or more than
        ``maxContains`` (as: that many and one, first)."""
        low, high = contains_counts(self.compiler, schema)
        arrays = frozenset({"array"})
        keys = ("contains", "minContains", "maxContains")
        origin = {"not": {key: schema[key] for key in keys if key in schema}}
        if high is not None and high < low:  # no array satisfies it
            return Complement((self._term(where, origin, kinds=arrays),))
        result = NOTHING
        at = f"{where}/contains"
        if low > 0:
            rejected = self.of(wanted, at)
            items = self._union(rejected.terms, {"not": wanted}, at)
            none = self._term(where, origin, kinds=arrays, items=items)
            result = Complement((none,), arrays if rejected.lost or low > 1 else frozenset())
        if high is not None:
            result = result | unknown(arrays)
            # its matches count as evaluated only where contains holds, not here
            if high < MAX_TERMS and not self.compiler.uses_unevaluated:
                first = (self.compiler.node(wanted, at),) * (high + 1)
                more = self._term(where, origin, kinds=arrays, prefix=first, min_items=high + 1)
                result = result | Complement((more,))
        return result

    def _union(self, terms: tuple[Node, ...], origin: Any, where: str) -> Node:
        """Any of ``terms``; ``origin`` describes them all (an enum merged with a union is
        filtered against the union's origins only)."""
        if not terms:
            return never("no value is left", where)
        if len(terms) == 1:
            return terms[0]
        return Node(where=where, any_of=terms, origins=((self.compiler.synthetic(origin), where),))

    def _prefix_items(self, items: list, _schema: dict, where: str) -> Complement:
        return self._positions(items, f"{where}/prefixItems")

    def _items(self, items: Any, schema: dict, where: str) -> Complement:
        """A list (before 2020-12) is read as prefixItems. A schema: some item after the
        prefix that it rejects, taken as the first one (a subset)."""
        if isinstance(items, list):
            return self._positions(items, f"{where}/items")
        skipped = 0 if self.compiler.draft.tuple_items else len(schema.get("prefixItems", ()))
        rejected = self.of(items, f"{where}/items")
        terms = tuple(self._failing_at(skipped, term, where) for term in rejected.terms)
        return Complement(terms, frozenset({"array"}))

    def _positions(self, items: list, where: str) -> Complement:
        """Arrays with an item its position's schema rejects."""
        result = NOTHING
        for index, sub in enumerate(items):
            rejected = self.of(sub, f"{where}/{index}")
            terms = tuple(self._failing_at(index, term, where) for term in rejected.terms)
            result = result | Complement(terms, _arrays_if(rejected.lost))
        return result

    def _failing_at(self, index: int, item: Node, where: str) -> Node:
        """Arrays reaching position ``index``, holding there a value ``item`` matches."""
        anything = self._term(where, {})
        key = "items" if self.compiler.draft.tuple_items else "prefixItems"
        origin = {"type": "array", "minItems": index + 1, key: [{}] * index + [describe(item)]}
        return self._term(
            where,
            origin,
            kinds=frozenset({"array"}),
            prefix=(anything,) * index + (item,),
            min_items=index + 1,
        )

    def _required(self, names: list, _schema: dict, where: str) -> Complement:
        return Complement(tuple(self._absent(name, where) for name in names))

    def _absent(self, name: str, where: str, **fields: Any) -> Node:
        """Objects without ``name`` (and with ``fields``)."""
        gone = never(f"property {name!r} is absent here", where)
        origin = {"type": "object", "properties": {name: False}}
        if fields.get("required"):
            origin["required"] = sorted(fields["required"])
        return self._term(
            where, origin, kinds=frozenset({"object"}), properties={name: gone}, **fields
        )

    def _properties(self, properties: dict, _schema: dict, where: str) -> Complement:
        result = NOTHING
        for name, sub in properties.items():
            inner = self.of(sub, f"{where}/properties/{escape_token(name)}")
            terms = tuple(self._with_property(name, term, where) for term in inner.terms)
            result = result | Complement(terms, _objects_if(inner.lost))
        return result

    def _with_property(self, name: str, value: Node, where: str) -> Node:
        """Objects that have ``name``, with a value ``value`` matches."""
        origin = {"type": "object", "required": [name], "properties": {name: describe(value)}}
        return self._term(
            where,
            origin,
            kinds=frozenset({"object"}),
            properties={name: value},
            required=frozenset({name}),
        )

    def _not(self, negated: Any, _schema: dict, where: str) -> Complement:
        """``not S`` fails where S holds. What S declares never counts as evaluated, so where
        ``unevaluated*`` may look, only an S that declares nothing is taken."""
        simple = isinstance(negated, bool) or set(negated) <= _SAFE_INSIDE_NOT | ANNOTATIONS
        if not simple and self.compiler.uses_unevaluated:
            return unknown()
        return Complement((self.compiler.node(negated, f"{where}/not"),))

    def _all_of(self, members: list, _schema: dict, where: str) -> Complement:
        result = NOTHING
        for index, member in enumerate(members):
            result = result | self.of(member, f"{where}/allOf/{index}")
        return result

    def _any_of(self, members: list, _schema: dict, where: str) -> Complement:
        """Every member fails: the terms of their complements, intersected."""
        combined: list[Node] = [Node(where=where)]
        lost = frozenset()
        for index, member in enumerate(members):
            inner = self.of(member, f"{where}/anyOf/{index}")
            merged = [self._both(a, b, where) for a in combined for b in inner.terms]
            # missing: what one side lacks, of the kinds the other side's complement has
            lost = (lost & _kinds(inner.terms, inner.lost)) | (_kinds(combined, lost) & inner.lost)
            lost |= ALL_KINDS if None in merged else frozenset()
            combined = [node for node in merged if node is not None and not node.never]
            if len(combined) > MAX_TERMS:
                return Complement(tuple(combined[:MAX_TERMS]), ALL_KINDS)
        return Complement(tuple(combined), lost)

    def _both(self, a: Node, b: Node, where: str) -> Node | None:
        try:
            return self.compiler.both(a, b, where)
        except Unmergeable:
            return None

    def _ref(self, ref: str, where: str) -> Complement:
        try:
            target = self.compiler.index.resolve(ref, where)
        except RemoteRef:
            return unknown()
        if target in self._open_refs:  # recursion: stop here
            return unknown()
        self._open_refs.add(target)
        try:
            return self.of(self.compiler.index.lookup(target, ref, where), target)
        finally:
            self._open_refs.discard(target)

    def _dependent_required(self, entries: dict, _schema: dict, where: str) -> Complement:
        terms = tuple(
            self._absent(name, where, required=frozenset({trigger}))
            for trigger, names in entries.items()
            for name in names
            if name != trigger
        )
        return Complement(terms)

    def _dependent_schemas(self, entries: dict, _schema: dict, where: str) -> Complement:
        result = NOTHING
        for trigger, sub in entries.items():
            result = result | self._triggered(trigger, sub, f"{where}/{escape_token(trigger)}")
        return result

    def _triggered(self, trigger: str, sub: Any, where: str) -> Complement:
        """Objects with ``trigger`` that ``sub`` rejects."""
        inner = self.of(sub, where)
        present = self._term(
            where,
            {"type": "object", "required": [trigger]},
            kinds=frozenset({"object"}),
            required=frozenset({trigger}),
        )
        merged = [self._both(present, term, where) for term in inner.terms]
        kept = tuple(node for node in merged if node is not None and not node.never)
        return Complement(kept, _objects_if(inner.lost or None in merged))

    def _dependencies(self, entries: dict, _schema: dict, where: str) -> Complement:
        """draft-04 to -07: a list of names is dependentRequired, a schema dependentSchemas."""
        result = NOTHING
        for trigger, value in entries.items():
            if isinstance(value, list):
                result = result | self._dependent_required({trigger: value}, _schema, where)
            else:
                result = result | self._triggered(
                    trigger, value, f"{where}/dependencies/{escape_token(trigger)}"
                )
        return result


def describe(node: Node) -> Any:
    """A schema matching what ``node`` matches: its origins, all of them."""
    schemas = [schema for schema, _ in node.origins]
    if not schemas:
        return {}
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def other_than(strings: list[str]) -> ecma_regex.Node:
    """A regex for the (generatable) strings not in ``strings``, walking their trie."""
    trie: dict = {}
    for text in strings:
        node = trie
        for character in text:
            node = node.setdefault(character, {})
        node[None] = {}  # the end of a listed string
    return _not_in(trie)


def _not_in(trie: dict) -> ecma_regex.Node:
    """Continuations of the trie's prefix that end outside it."""
    children = {character: sub for character, sub in trie.items() if character is not None}
    listed = normalize((ord(c), ord(c)) for c in children)
    others = normalize(_intersect(_ANY_CHARACTER, complement(listed)))
    options: list[ecma_regex.Node] = []
    if others:
        rest = ecma_regex.Repeat(ecma_regex.Chars(_ANY_CHARACTER), 0, None)
        options.append(ecma_regex.Seq((ecma_regex.Chars(others), rest)))
    for character, sub in sorted(children.items()):
        if _intersect(_ANY_CHARACTER, ((ord(character), ord(character)),)):
            step = ecma_regex.Chars(((ord(character), ord(character)),))
            options.append(ecma_regex.Seq((step, _not_in(sub))))
    body = options[0] if len(options) == 1 else ecma_regex.Alt(tuple(options))
    return body if None in trie else ecma_regex.Repeat(body, 0, 1)


def _intersect(a: tuple, b: tuple) -> tuple:
    return complement(normalize(complement(a) + complement(b)))


def _kinds(terms: Any, lost: frozenset[str]) -> frozenset[str]:
    """The kinds a complement's values may have: its terms' and those it lost."""
    kinds = set(lost)
    for term in terms:
        if term.any_of is not None:
            kinds |= _kinds(term.any_of, frozenset())
        elif term.enum is not None:
            kinds |= {kind_of(value) for value in term.enum}
        elif not term.never:
            kinds |= ALL_KINDS if term.kinds is None or term.ref is not None else term.kinds
    return frozenset(kinds)


def contains_counts(compiler: Compiler, schema: dict) -> tuple[int, int | None]:
    """``minContains`` and ``maxContains`` (None: no bound) as the draft reads them."""
    if not _counts_matches(compiler.draft.validator_class):
        return 1, None  # before 2019-09: at least one
    high = schema.get("maxContains")
    return int(schema.get("minContains", 1)), None if high is None else int(high)


@functools.cache
def _counts_matches(validator_class: type[Validator]) -> bool:
    """Whether the draft reads minContains/maxContains (2019-09 on)."""
    return validator_class({"contains": True, "minContains": 0}).is_valid([])


def _arrays_if(lost: Any) -> frozenset[str]:
    return frozenset({"array"}) if lost else frozenset()


def _objects_if(lost: Any) -> frozenset[str]:
    """What a term inside an object's property (or schema) losing values loses: objects."""
    return frozenset({"object"}) if lost else frozenset()


def _type_names(kinds: frozenset[str]) -> list[str]:
    """``type`` names for kinds holding both number kinds or neither."""
    names = sorted(kinds - NUMBERS)
    return [*names, "number"] if kinds & NUMBERS else names
