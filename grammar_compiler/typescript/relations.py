"""Conditional types, and the question they ask: is one type assignable to another?

``T extends U ? X : Y`` picks a branch by whether ``T`` is assignable to
``U``; ``Extract`` and ``Exclude`` filter a union by the same question.
Since generics are instantiated with their arguments before a schema is
built, every conditional type reaching here has concrete types on both
sides, and the answer is computed, not guessed:

* literals against literals, primitives, template literal types (by the
  template's pattern) and ``{}``; primitives against primitives;
* arrays and tuples element by element; object types member by member
  (TypeScript's structural rule: every required member of the target is in
  the source, with an assignable type; an optional one, if present, too);
* unions on either side (every member of the source, some member of the
  target), ``any``/``unknown``/``never`` as TypeScript treats them;
* ``infer U`` in the pattern binds what stands at its place.

A conditional whose check is a type parameter alone distributes over a
union argument (``NonString<string | number>`` is ``NonString<string> |
NonString<number>``), ``boolean`` counting as ``true | false``. What this
reader cannot decide (two different template literal types, functions) is
refused at the conditional, never guessed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.generics import substitute
from grammar_compiler.typescript.signatures import is_signature, same_kind
from grammar_compiler.typescript.syntax import (
    ArrayType,
    Conditional,
    Infer,
    Intersection,
    Keyword,
    Literal,
    MappedType,
    ObjectType,
    ProgramType,
    Reference,
    Signature,
    TemplateType,
    TupleType,
    Union,
)
from grammar_compiler.typescript.tokens import Token, error_at

if TYPE_CHECKING:
    from grammar_compiler.typescript.schema_builder import _SchemaBuilder

MAX_RELATION_DEPTH = 64
"""Nested comparisons (member types of member types, ...) one question may take."""

NEVER = Keyword("never")
_TOP = (Keyword("any"), Keyword("unknown"))
_EMPTY_OBJECT = ObjectType(())
_PRIMITIVE_OF = {bool: "boolean", str: "string", int: "number", float: "number"}
_OBJECT_LIKE = (ObjectType, Intersection, MappedType, Reference)


class Relations:
    """Assignability over one document's declarations (through its schema builder,
    which resolves aliases, enums, members and object shapes)."""

    def __init__(self, builder: _SchemaBuilder) -> None:
        self.builder = builder
        self._assumed: set[tuple[Any, Any]] = set()
        self._depth = 0

    def conditional(self, node: Conditional) -> Any:
        """The type a conditional type stands for (``never`` when no branch is left)."""
        if node.parameter is None:
            chosen = self._branches(node, node.check, {})
        else:
            chosen = []
            for member in self.options(node.check, node.token):
                if member == NEVER:
                    continue  # distributing over never gives never
                bound = {node.parameter: member}
                each = Conditional(
                    member,
                    substitute(node.pattern, bound),
                    substitute(node.when_true, bound),
                    substitute(node.when_false, bound),
                    node.token,
                )
                chosen += self._branches(each, member, {})
        unique = list(dict.fromkeys(chosen))
        if not unique:
            return NEVER
        return unique[0] if len(unique) == 1 else Union(tuple(unique))

    def _branches(self, node: Conditional, check: Any, inferred: dict[str, Any]) -> list[Any]:
        if check == Keyword("any") and node.pattern not in _TOP:
            return [node.when_true, node.when_false]  # TypeScript takes both for any
        if self.assignable(check, node.pattern, node.token, inferred):
            return [substitute(node.when_true, inferred)]
        return [node.when_false]

    def assignable(
        self, source: Any, target: Any, token: Token, inferred: dict[str, Any] | None = None
    ) -> bool:
        """Whether every value of ``source`` is a value of ``target``; ``infer``
        names in ``target`` are bound in ``inferred``.

        Raises:
            ConstraintError: at ``token``, for a comparison this reader does not decide.
        """
        inferred = {} if inferred is None else inferred
        if isinstance(target, Infer):
            known = inferred.get(target.name)
            inferred[target.name] = source if known in (None, source) else Union((known, source))
            return True
        if target in _TOP:
            return True
        self._depth += 1
        try:
            if self._depth > MAX_RELATION_DEPTH:
                raise error_at(token, "a conditional type compares types nested too deeply")
            sources = self.options(source, token)
            if len(sources) != 1:
                return all(self.assignable(s, target, token, inferred) for s in sources)
            source = sources[0]
            if source in (NEVER, Keyword("any")):
                return True
            targets = self.options(target, token)
            if len(targets) != 1:
                for option in targets:
                    trial = dict(inferred)
                    if self.assignable(source, option, token, trial):
                        inferred.update(trial)
                        return True
                return False
            return self._single(source, targets[0], token, inferred)
        finally:
            self._depth -= 1

    def options(self, node: Any, token: Token) -> list[Any]:
        """A type's union members, looking through aliases and enums, with
        ``boolean`` as ``true | false`` (infer stays as it is)."""
        if isinstance(node, Infer):
            return [node]
        found: list[Any] = []
        for member in self.builder.members(node):
            if member == Keyword("boolean"):
                found += [Literal(True), Literal(False)]
            elif not (isinstance(member, Intersection) and self.reduced_to_never(member, token)):
                found.append(self.builder.unaliased(member, token))
        return list(dict.fromkeys(found))

    def reduced_to_never(self, node: Intersection, token: Token) -> bool:
        """Whether TypeScript reads an intersection of object types as ``never``:
        a member required in one of them, of a literal type in one, that no
        value of all of their types for it fits (``{ kind: "a" } & { kind: "b" }``,
        ``{ n: 1 } & { n?: string }``), as its discriminant rule does."""
        parts = [self.builder.unaliased(part, token) for part in node.parts]
        if not all(isinstance(part, _OBJECT_LIKE) for part in parts):
            return False
        shapes = [self.builder.shape(part) for part in parts]
        for name in dict.fromkeys(name for shape in shapes for name in shape.properties):
            holders = [
                part for part, shape in zip(parts, shapes, strict=True) if name in shape.properties
            ]
            if len(holders) < 2 or all(
                shape.properties[name].optional for shape in shapes if name in shape.properties
            ):
                continue
            types = [
                _defined(self.options(self.builder.member_type(part, name, token), token))
                for part in holders
            ]
            literal_sets = [t for t in types if t and all(isinstance(o, Literal) for o in t)]
            if not literal_sets:
                continue
            others = [Union(tuple(t)) if len(t) != 1 else t[0] for t in types if t]
            if not any(
                all(self.assignable(value, other, token) for other in others)
                for value in literal_sets[0]
            ):
                return True
        return False

    def _single(self, source: Any, target: Any, token: Token, inferred: dict[str, Any]) -> bool:
        if same_kind(source, target):
            return self._function(source, target, token, inferred)
        if is_signature(target) and not isinstance(source, ProgramType):
            return False  # data is no function
        for side in (source, target):
            if isinstance(side, ProgramType):
                raise program_refusal(side)
        if isinstance(target, Infer) or target in _TOP:
            return self.assignable(source, target, token, inferred)
        if target == NEVER:
            return False
        if isinstance(target, TemplateType) and _has_infer(target):
            return self._template_inference(source, target, token, inferred)
        if isinstance(source, Literal):
            return self._literal(source, target)
        if isinstance(source, Keyword):
            if isinstance(target, TemplateType):
                return source.name == "string" and target.parts == (Keyword("string"),)
            return source == target or (
                target == _EMPTY_OBJECT and source.name in ("string", "number", "object")
            )
        if isinstance(source, TemplateType):
            if source == target or target in (Keyword("string"), _EMPTY_OBJECT):
                return True
            if isinstance(target, TemplateType):
                raise error_at(token, "a conditional type compares two template literal types")
            return False
        if isinstance(source, (ArrayType, TupleType)):
            return self._sequence(source, target, token, inferred)
        if isinstance(source, _OBJECT_LIKE):
            return self._object(source, target, token, inferred)
        raise error_at(token, "a conditional type here compares types this reader cannot")

    def _template_inference(
        self, source: Any, target: TemplateType, token: Token, inferred: dict[str, Any]
    ) -> bool:
        """A string literal against a template with ``infer`` (``S extends
        `${infer Head},${infer Tail}```), matched as TypeScript matches it: each
        placeholder takes the text up to the first place the text after it
        occurs (one character when two placeholders touch), the last one the
        rest; each match is then a string literal for its placeholder."""
        if isinstance(source, Keyword) and source.name in ("string", "number", "boolean"):
            return False  # not every string has the template's shape
        if not (isinstance(source, Literal) and isinstance(source.value, str)):
            raise error_at(
                token,
                "infer inside a template literal type is read against string literals only",
            )
        texts, placeholders = self._template_pieces(target, token)
        matches = _template_matches(source.value, texts)
        if matches is None:
            return False
        return all(
            self.assignable(Literal(text), placeholder, token, inferred)
            for text, placeholder in zip(matches, placeholders, strict=True)
        )

    def _template_pieces(self, target: TemplateType, token: Token) -> tuple[list[str], list[Any]]:
        """The template's texts around its placeholders (one more text than
        placeholders), literal placeholders (``${D}`` with ``D`` a literal)
        read as text."""
        texts, placeholders = [""], []
        for part in target.parts:
            if isinstance(part, str):
                texts[-1] += part
            elif isinstance(part, Literal) and part.value is not None:
                texts[-1] += self.builder.template_text_of(part)
            elif isinstance(part, Infer) or part == Keyword("string"):
                placeholders.append(part)
                texts.append("")
            else:
                raise error_at(
                    token,
                    "infer inside a template literal type is read beside text, literals and "
                    "string placeholders only",
                )
        return texts, placeholders

    def _function(
        self, source: ProgramType, target: ProgramType, token: Token, inferred: dict[str, Any]
    ) -> bool:
        """A function against a function type (``F extends (...args: any) => infer R``):
        its result against the target's, its parameters against the target's
        (one rest element takes the whole list: ``(...args: infer P)``)."""
        given, wanted = _signature(source), _signature(target)
        if wanted.returns not in (*_TOP, Keyword("void")):
            if given.returns is None:
                raise error_at(
                    source.token,
                    "a conditional type needs this function's return type: write it",
                )
            if not self.assignable(given.returns, wanted.returns, token, inferred):
                return False
        return self._parameter_lists(given.parameters, wanted.parameters, token, inferred)

    def _parameter_lists(
        self, given: TupleType, wanted: TupleType, token: Token, inferred: dict[str, Any]
    ) -> bool:
        """Whether a function taking ``given`` can stand where one taking ``wanted``
        is asked for: it needs no more arguments than are passed, and each
        argument passed fits its parameter (``infer`` in ``wanted`` binds the
        function's own parameter type there)."""
        if len(wanted.elements) == 1 and wanted.elements[0].rest:
            return self.assignable(given, wanted.elements[0].type, token, inferred)
        passed = [e for e in wanted.elements if not e.rest]
        takes = [e for e in given.elements if not e.rest]
        needed = sum(1 for e in takes if not e.optional)
        if needed > len(passed) and not any(e.rest for e in wanted.elements):
            return False
        given_rest = next((e.type for e in given.elements if e.rest), None)
        for position, argument in enumerate(passed):
            if position < len(takes):
                parameter = takes[position].type
            elif given_rest is not None and isinstance(given_rest, ArrayType):
                parameter = given_rest.element
            else:
                return False  # more arguments than the function takes
            if isinstance(argument.type, Infer):
                self.assignable(parameter, argument.type, token, inferred)
            elif not self.assignable(argument.type, parameter, token, inferred):
                return False
        return True

    def _literal(self, source: Literal, target: Any) -> bool:
        if isinstance(target, Literal):
            return source == target
        if source.value is None:
            return False  # null: only null, any and unknown take it
        if isinstance(target, Keyword):
            return target.name == _PRIMITIVE_OF[type(source.value)]
        if isinstance(target, TemplateType):
            text = self.builder.template_text_of(source)
            return re.fullmatch(self.builder.template_pattern(target), text) is not None
        return target == _EMPTY_OBJECT

    def _sequence(
        self, source: ArrayType | TupleType, target: Any, token: Token, inferred: dict[str, Any]
    ) -> bool:
        if target in (Keyword("object"), _EMPTY_OBJECT):
            return True
        if isinstance(target, ArrayType):
            elements = (
                [source.element]
                if isinstance(source, ArrayType)
                else [e.type.element if e.rest else e.type for e in source.elements]
            )
            return all(self.assignable(e, target.element, token, inferred) for e in elements)
        if isinstance(target, TupleType) and isinstance(source, TupleType):
            return self._tuple(source, target, token, inferred)
        return False

    def _tuple(
        self, source: TupleType, target: TupleType, token: Token, inferred: dict[str, Any]
    ) -> bool:
        """Position by position: each target element the source may lack is
        optional there; source elements past the target's fixed ones, and a
        source rest, go to the target's rest element."""
        fixed = [e for e in source.elements if not e.rest]
        wanted = [e for e in target.elements if not e.rest]
        source_rest = next((e.type.element for e in source.elements if e.rest), None)
        target_rest = next((e.type.element for e in target.elements if e.rest), None)
        for position, element in enumerate(wanted):
            if position >= len(fixed):
                if not element.optional:
                    return False
                if source_rest is not None and not self.assignable(
                    source_rest, element.type, token, inferred
                ):
                    return False
                continue
            if fixed[position].optional and not element.optional:
                return False
            if not self.assignable(fixed[position].type, element.type, token, inferred):
                return False
        extra = [e.type for e in fixed[len(wanted) :]]
        if source_rest is not None:
            extra.append(source_rest)
        if extra and target_rest is None:
            return False
        return all(self.assignable(e, target_rest, token, inferred) for e in extra)

    def _object(self, source: Any, target: Any, token: Token, inferred: dict[str, Any]) -> bool:
        if target in (Keyword("object"), _EMPTY_OBJECT):
            return True
        if isinstance(source, Reference) and source.name == "Date":
            return isinstance(target, Reference) and target.name == "Date"
        if not isinstance(target, _OBJECT_LIKE) or (
            isinstance(target, Reference) and target.name == "Date"
        ):
            return False
        key = (source, target)
        if key in self._assumed:
            return True  # a recursive type against itself: assumed, as TypeScript does
        self._assumed.add(key)
        try:
            return self._members_assignable(source, target, token, inferred)
        finally:
            self._assumed.discard(key)

    def _members_assignable(
        self, source: Any, target: Any, token: Token, inferred: dict[str, Any]
    ) -> bool:
        own = self._member_flags(source)
        wanted = self._member_flags(target)
        for name, optional in wanted.items():
            if name is None:
                continue
            if name not in own:
                if optional:
                    continue
                return False
            if own[name] and not optional:
                return False
            found = self.builder.member_type(source, name, token)
            if not self.assignable(
                found, self.builder.member_type(target, name, token), token, inferred
            ):
                return False
        if None in wanted:  # the target's index signature takes every member
            index = self.builder.member_type(target, None, token)
            return all(
                self.assignable(
                    self.builder.member_type(source, name, token), index, token, inferred
                )
                for name in own
            )
        return True

    def _member_flags(self, node: Any) -> dict[str | None, bool]:
        """Member names and whether each is optional (``None``: an index signature)."""
        if isinstance(node, ObjectType):
            flags: dict[str | None, bool] = {m.name: m.optional for m in node.members}
        else:
            shape = self.builder.shape(node)
            flags = {name: p.optional for name, p in shape.properties.items()}
            if shape.additional is not False:
                flags[None] = True
            return flags
        if node.index is not None:
            flags[None] = True
        return flags


def _signature(node: ProgramType) -> Signature:
    if node.signature is None or node.signature.own_parameters:
        raise error_at(node.token, "a conditional type compares a signature not read here")
    return node.signature


def _defined(options: list[Any]) -> list[Any]:
    """A member's types without ``undefined`` (an optional member's own, which a
    required member of the same name leaves out)."""
    return [option for option in options if option != Keyword("undefined")]


def _template_matches(text: str, texts: list[str]) -> list[str] | None:
    """What each placeholder between ``texts`` takes of ``text``, TypeScript's way
    (its ``inferFromLiteralPartsToTemplateLiteral``); None if ``text`` does not fit."""
    first, last = texts[0], texts[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return None
    body = text[len(first) : len(text) - len(last)]
    matches, position = [], 0
    for delimiter in texts[1:-1]:
        if delimiter:
            found = body.find(delimiter, position)
            if found < 0:
                return None
            matches.append(body[position:found])
            position = found + len(delimiter)
        elif position < len(body):
            matches.append(body[position])
            position += 1
        else:
            return None
    return [*matches, body[position:]]


def _has_infer(node: TemplateType) -> bool:
    return any(isinstance(part, Infer) for part in node.parts)


def program_refusal(node: ProgramType) -> ConstraintError:
    """Why a function type, method or accessor has no JSON value, where it is written."""
    return error_at(node.token, f"unsupported construct '{node.construct}' ({node.why})")
