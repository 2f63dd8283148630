"""Random TypeScript types compiled as ``/v1/completion/typed`` does, judged by ``tsc``.

``python -m bench.typescript_fuzz --seed 1 --types 60`` (about a minute; needs
the pinned ``tsc`` that ``scripts/setup.sh`` installs for the tests)

The service translates TypeScript into a JSON Schema itself and judges each
output with that schema, so a mistranslation would judge itself right. Here
the real compiler is the judge: each random source (interfaces, aliases,
enums, generics, unions and intersections, tuples, index signatures,
template literal types, ``Partial``/``Pick``/``Omit``/``Record``,
``keyof``, indexed access, conditional types, ``Exclude``/``Extract``,
``ReturnType``/``Parameters`` of declared functions and function types, a
tuple's ``length``,
homomorphic mapped types like ``DeepPartial``, key remapping with ``as``,
``typeof`` of ``as const`` values) is compiled; what compiles is
walked at random through xgrammar with the decoder's repeat guard, and
``tsc --strict`` type-checks every walk as the initializer of a constant of
the type (unsound: the service could write it, TypeScript refuses it).
Each walk is then mutated (a member dropped, added or changed, an element
added or removed, a value swapped) and both sides asked again: a mutant
only ``tsc`` takes is incomplete (a value the service can never write: a
subset, less serious), one only xgrammar takes is unsound. A walk the
service's own judge refuses is a finding too.

Not generated, because the translation departs from ``tsc`` on them by
design (docs/json_schema_and_typescript.md): ``Date`` (a date-time string),
branded primitives, string enums (``tsc`` takes no string literal for
``E.A``; JSON can only carry its value), the empty object type ``{}``
(closed here). Known subsets, counted as incomplete: a union of object
types takes a member of another branch in ``tsc`` (excess property checks
look at the whole union), the service's branches are closed; properties
are written in their declared order (a mutant only adds a name no type
declares). Still drawn, and a known divergence when met: a numeric enum's
member intersected with a number literal (``{ k: E } & { k: 0 }``), which
``tsc`` keeps apart (``E.P & 0`` is never) while the translation reads an
enum as its values; and a literal ``tsc`` widens in an object literal
written against an intersection with an index signature (it then refuses
``{"name": "tags"}`` as ``{ name: string }``). Exits 1 on an unsound case or
a crash.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from typing import Any

from bench.differential import Findings
from bench.json_grammar import JsonGrammar, raw_compiler
from bench.tsc import TSC, type_check
from grammar_compiler import compile_typescript

_HELPERS = {
    "DeepPartial": "type DeepPartial<T> = { [K in keyof T]?: DeepPartial<T[K]> };",
    "DeepRequired": "type DeepRequired<T> = { [K in keyof T]-?: DeepRequired<T[K]> };",
    "Nullable": "type Nullable<T> = { [K in keyof T]: T[K] | null };",
    "Box": "interface Box<T, U = string> { value: T; note?: U }",
    "Kind": "type Kind<T> = T extends string ? 'text' : T extends number ? 'num' : 'other';",
    "ElementOf": "type ElementOf<T> = T extends readonly (infer E)[] ? E : never;",
}
_LITERALS = ('"a"', '"b"', '"x-1"', "0", "1", "2.5", "-3", "true", "false")
_NAMES = ("id", "name", "kind", "tags", "n", "meta")
_SWAPS: tuple[Any, ...] = (0, 1, -2.5, "", "a", "b", True, False, None, [], {}, {"id": 1}, ["a"])


@dataclass
class _Source:
    """The declarations drawn for one case, and the helpers they use."""

    declarations: list[str] = field(default_factory=list)
    helpers: set[str] = field(default_factory=set)
    objects: list[str] = field(default_factory=list)  # names of declared object types
    unions: list[str] = field(default_factory=list)  # names of declared tagged unions
    members: dict[str, list[str]] = field(default_factory=dict)  # their member names

    def text(self, root: str) -> str:
        helpers = [_HELPERS[name] for name in sorted(self.helpers)]
        return "\n".join([*helpers, *self.declarations, f"type Root = {root};"])


class _Drawer:
    """Draws one source: a few declarations, each using those before it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.source = _Source()

    def draw(self) -> str:
        if self.rng.random() < 0.5:
            values = self.rng.choice(("0 | 1 | 2", "3 | 5 | 8"))
            members = ", ".join(
                f"{k} = {v.strip()}"
                for k, v in zip(("P", "Q", "R"), values.split("|"), strict=False)
            )
            self.source.declarations.append(f"enum E {{ {members} }}")
        for index in range(self.rng.randint(1, 3)):
            self._declare(f"T{index}")
        if self.rng.random() < 0.3:
            self._declare_tagged_union()
        return self.source.text(self.type(3))

    def _declare(self, name: str) -> None:
        """An object type as an interface (perhaps extending one before it), an
        alias, a class of fields, or an interface in a namespace."""
        members = self._members(2, self_name=name)
        names = [_member_name(m) for m in members]
        body = "; ".join(members)
        form = self.rng.choice(("interface", "alias", "extends", "class", "namespace"))
        referenced = name
        if form == "extends" and self.source.objects:
            base = self.rng.choice(self.source.objects)
            names = list(dict.fromkeys(self.source.members[base] + names))
            self.source.declarations.append(f"interface {name} extends {base} {{ {body} }}")
        elif form == "alias":
            self.source.declarations.append(f"type {name} = {{ {body} }};")
        elif form == "class":
            fields = "; ".join(m if "?" in m.split(":")[0] else _definite(m) for m in members)
            self.source.declarations.append(f"class {name} {{ {fields} }}")
        elif form == "namespace":
            referenced = f"N{name}.{name}"
            self.source.declarations.append(
                f"namespace N{name} {{ export interface {name} {{ {body} }} }}"
            )
        else:
            self.source.declarations.append(f"interface {name} {{ {body} }}")
        self.source.members[referenced] = names
        self.source.objects.append(referenced)

    def _declare_tagged_union(self) -> None:
        """A union of object types told apart by a literal ``kind``."""
        options = [
            f'{{ kind: "{tag}"; {"; ".join(self._members(1, leaving_out="kind"))} }}'
            for tag in self.rng.sample(("a", "b", "c"), self.rng.randint(2, 3))
        ]
        self.source.declarations.append(f"type U = {' | '.join(options)};")
        self.source.unions.append("U")

    def _members(
        self, depth: int, self_name: str | None = None, leaving_out: str = ""
    ) -> list[str]:
        names = self.rng.sample([n for n in _NAMES if n != leaving_out], self.rng.randint(1, 4))
        members = []
        for name in names:
            optional = "?" if self.rng.random() < 0.3 else ""
            if self_name is not None and self.rng.random() < 0.15:
                value = self.rng.choice((f"{self_name}[]", f"{self_name} | null"))
                optional = "?" if value.endswith("null") else optional
            else:
                value = self.type(depth)
            if optional and self.rng.random() < 0.2:
                value = f"{value} | undefined"
            readonly = "readonly " if self.rng.random() < 0.1 else ""
            members.append(f"{readonly}{name}{optional}: {value}")
        return members

    def type(self, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.25:
            return self._leaf()
        return self.rng.choice(self._composites)(self, depth - 1)

    def _leaf(self) -> str:
        choices = ["string", "number", "boolean", "null", *_LITERALS]
        if "enum E" in " ".join(self.source.declarations):
            choices += ["E", "E.P"]
        if self.source.objects:
            choices += self.source.objects
        choice = self.rng.choice(choices)
        return choice

    def _object_name(self, depth: int) -> tuple[str, list[str]]:
        if self.source.objects and self.rng.random() < 0.7:
            name = self.rng.choice(self.source.objects)
            return name, self.source.members[name]
        members = self._members(depth)
        return "{ " + "; ".join(members) + " }", [_member_name(m) for m in members]

    def _object(self, depth: int) -> str:
        roll = self.rng.random()
        if roll < 0.15:  # an index signature alone: its type is every member's
            return f"{{ [key: string]: {self.type(depth)} }}"
        members = self._members(depth)
        if roll < 0.25:  # beside members, it must take their types: any does
            members.append("[key: string]: any")
        return "{ " + "; ".join(members) + " }"

    def _array(self, depth: int) -> str:
        inner = self.type(depth)
        return self.rng.choice((f"({inner})[]", f"Array<{inner}>", f"readonly ({inner})[]"))

    def _tuple(self, depth: int) -> str:
        parts = [self.type(depth) for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.3:
            parts[-1] += "?"
        elif self.rng.random() < 0.3:
            parts.append(f"...({self.type(depth)})[]")
        written = "[" + ", ".join(parts) + "]"
        return f'{written}["length"]' if self.rng.random() < 0.15 else written

    def _signature(self, depth: int) -> str:
        """A type read off a signature: ``ReturnType``/``Parameters`` of a declared
        function or a function type."""
        index = len(self.source.declarations)
        count = self.rng.randint(0, 3)
        required = self.rng.randint(0, count)
        parameters = [
            f"p{i}{'' if i < required else '?'}: {self.type(depth)}" for i in range(count)
        ]
        if self.rng.random() < 0.3:
            parameters.append(f"...rest: ({self.type(depth)})[]")
        written = ", ".join(parameters)
        returned = self.type(depth)
        if self.rng.random() < 0.5:
            self.source.declarations.append(f"declare function f{index}({written}): {returned};")
            target = f"typeof f{index}"
        else:
            self.source.declarations.append(f"type F{index} = ({written}) => {returned};")
            target = f"F{index}"
        choices = [f"ReturnType<{target}>", f"Parameters<{target}>"]
        if count:
            choices.append(f"Parameters<{target}>[0]")
        return self.rng.choice(choices)

    def _union(self, depth: int) -> str:
        return " | ".join(f"({self.type(depth)})" for _ in range(self.rng.randint(2, 3)))

    def _intersection(self, depth: int) -> str:
        first, _ = self._object_name(depth)
        return f"{first} & {self._object(depth)}"

    def _utility(self, depth: int) -> str:
        name, members = self._object_name(depth)
        picked = " | ".join(f'"{m}"' for m in self.rng.sample(members, 1))
        choices = [f"Partial<{name}>", f"Required<{name}>", f"Readonly<{name}>"]
        choices.append(f"Pick<{name}, {picked}>")
        if len(set(members)) > 1:  # Omit of every member is {}, closed here by design
            choices.append(f"Omit<{name}, {picked}>")
        return self.rng.choice(choices)

    def _record(self, depth: int) -> str:
        keys = self.rng.choice(('"k1" | "k2"', "string", "`x-${number}`", '"k1"', "number"))
        return f"Record<{keys}, {self.type(depth)}>"

    def _renamed(self, depth: int) -> str:
        name, _ = self._object_name(depth)
        rename = self.rng.choice(
            ("`get${Capitalize<K & string>}`", 'Exclude<K, "id">', "Uppercase<K & string>")
        )
        return f"{{ [K in keyof {name} as {rename}]: ({name})[K] }}"

    def _constant(self, depth: int) -> str:
        """A type read off a written value: ``typeof`` a constant ``as const``."""
        index = len(self.source.declarations)
        value = self.rng.choice(
            ('{ a: 1, b: "x", c: [true, null] }', '["s", "m", "l"]', '{ on: "ON", off: "OFF" }')
        )
        self.source.declarations.append(f"const C{index} = {value} as const;")
        if value.startswith("["):
            return f"(typeof C{index})[number]"
        return self.rng.choice(
            (f"(typeof C{index})[keyof typeof C{index}]", f"keyof typeof C{index}")
        )

    def _tagged(self, depth: int) -> str:
        if not self.source.unions:
            return self._union(depth)
        union = self.source.unions[0]
        return self.rng.choice(
            (
                union,
                f'Extract<{union}, {{ kind: "a" }}>',
                f'Exclude<{union}, {{ kind: "b" }}>',
                f'({union})["kind"]',
                f'Pick<{union}, "kind">',
                f"Partial<{union}>",
                f"keyof {union}",
                f"({union})[]",
            )
        )

    def _keys(self, depth: int) -> str:
        name, members = self._object_name(depth)
        if self.rng.random() < 0.5:
            return f"keyof {name}"
        return f'({name})["{self.rng.choice(members)}"]'

    def _template(self, depth: int) -> str:
        hole = self.rng.choice(("number", "string", '"a" | "b"', "boolean", "E"))
        if hole == "E" and "enum E" not in " ".join(self.source.declarations):
            hole = "number"
        return self.rng.choice((f"`id-${{{hole}}}`", f"`${{{hole}}}px`", f"`v${{{hole}}}.x`"))

    def _filter(self, depth: int) -> str:
        union = " | ".join(
            self.rng.sample(_LITERALS, 3) + ["string", "null"][: self.rng.randint(0, 2)]
        )
        return self.rng.choice(
            (
                f"Exclude<{union}, {self.rng.choice(_LITERALS)}>",
                f"Extract<{union}, string>",
                f"NonNullable<{union}>",
            )
        )

    def _generic(self, depth: int) -> str:
        helper = self.rng.choice(sorted(_HELPERS))
        self.source.helpers.add(helper)
        if helper in ("DeepPartial", "DeepRequired", "Nullable"):
            name, _ = self._object_name(depth)
            return f"{helper}<{name}>"
        if helper == "ElementOf":
            return f"ElementOf<({self.type(depth)})[]>"
        return f"{helper}<{self.type(depth)}>"

    _composites = (
        _object,
        _array,
        _tuple,
        _union,
        _intersection,
        _utility,
        _record,
        _keys,
        _template,
        _filter,
        _generic,
        _renamed,
        _constant,
        _tagged,
        _signature,
    )


def _definite(member: str) -> str:
    """A class field written with ``!`` (strict mode wants an initializer otherwise)."""
    name, value = member.split(":", 1)
    return f"{name}!:{value}"


def _member_name(member: str) -> str:
    """``id`` of ``readonly id?: string``."""
    return member.removeprefix("readonly ").split("?")[0].split(":")[0]


def _mutants(text: str, rng: random.Random, count: int) -> list[str]:
    """``count`` texts near ``text``: one edit each, written as xgrammar writes JSON."""
    found = []
    for _ in range(count):
        value = json.loads(text)
        mutated = _mutate(value, rng)
        found.append(json.dumps(mutated, ensure_ascii=False))
    return list(dict.fromkeys(m for m in found if m != text and _encodable(m)))


def _encodable(text: str) -> bool:
    """Whether ``text`` can be written to the file ``tsc`` reads (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _mutate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict) and value and rng.random() < 0.6:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.3:
            return {k: v for k, v in value.items() if k != key}
        if roll < 0.45:  # a name no type declares: one it does would be out of order
            return {**value, "zz": rng.choice(_SWAPS)}
        return {**value, key: _mutate(value[key], rng)}
    if isinstance(value, list) and value and rng.random() < 0.6:
        roll = rng.random()
        if roll < 0.25:
            return value[:-1]
        if roll < 0.5:
            return [*value, rng.choice(value)]
        index = rng.randrange(len(value))
        return [*value[:index], _mutate(value[index], rng), *value[index + 1 :]]
    if isinstance(value, dict) and rng.random() < 0.5:
        return {**value, "zz": rng.choice(_SWAPS)}
    return rng.choice(_SWAPS)


@dataclass
class _Case:
    source: str
    texts: list[str]
    walked: int  # the first texts are walks (must be taken), the rest mutants
    accepted: list[bool]


def _judged_by_tsc(cases: list[_Case]) -> tuple[list[set[int]], list[str]]:
    """For each case, the indices of its texts ``tsc`` refuses; and the cases
    whose declarations ``tsc`` itself refuses (the generator's mistake)."""
    lines: list[str] = []
    owner: dict[int, tuple[int, int]] = {}
    declaration_lines: dict[int, int] = {}
    for number, case in enumerate(cases):
        lines.append(f"namespace F{number} {{")
        for line in case.source.splitlines():
            declaration_lines[len(lines) + 1] = number
            lines.append(f"export {line}")
        for index, text in enumerate(case.texts):
            owner[len(lines) + 1] = (number, index)
            lines.append(f"const judged{index}: Root = {text};")
        lines.append("}")
    checked = type_check("\n".join(lines) + "\n", timeout=600)
    refused: list[set[int]] = [set() for _ in cases]
    broken: dict[int, str] = {}
    for number, message in checked.errors:
        if number in owner:
            case, index = owner[number]
            refused[case].add(index)
        elif number in declaration_lines:
            broken.setdefault(declaration_lines[number], message)
    return refused, [broken.get(i, "") for i in range(len(cases))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--types", type=int, default=60)
    parser.add_argument("--walks", type=int, default=12)
    parser.add_argument("--mutants", type=int, default=24)
    parser.add_argument("--show-refused", action="store_true")
    args = parser.parse_args(argv)
    if not TSC.exists():
        print(f"{TSC} is missing: run scripts/setup.sh", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    compiler = raw_compiler()
    findings = Findings()
    cases: list[_Case] = []
    for _ in range(args.types):
        source = _Drawer(rng).draw()
        constraint = findings.compile(source, lambda s=source: compile_typescript(s, "Root"))
        if constraint is None:
            continue
        grammar = JsonGrammar(compiler, constraint.value)
        try:
            walks, _ = grammar.walks(args.walks, rng.randrange(1 << 30))
        except AssertionError as stuck:
            findings.crashed.append((source, f"dead end: {stuck}"))
            continue
        for text in walks:
            if constraint.judge(text) is not None:
                findings.crashed.append((source, f"own judge refuses its walk {text!r}"))
        mutants = [m for text in walks for m in _mutants(text, rng, 2)][: args.mutants]
        texts = list(dict.fromkeys(t for t in walks + mutants if _encodable(t)))
        accepted = [grammar.accepts(text) for text in texts]
        cases.append(_Case(source, texts, len(dict.fromkeys(walks)), accepted))
    refused, broken = _judged_by_tsc(cases) if cases else ([], [])
    ignored = 0
    for case, refused_here, problem in zip(cases, refused, broken, strict=True):
        if problem:
            ignored += 1
            continue
        for index, text in enumerate(case.texts):
            taken = index not in refused_here
            if case.accepted[index] != taken:
                findings.disagreement(case.source, text, accepted=case.accepted[index])
    findings.print(show_refused=args.show_refused, shown=lambda s, d: f"{d}\n{s}\n")
    print(findings.summary() + f"; {ignored} sources tsc itself refused (skipped)")
    return 1 if findings.unsound or findings.crashed else 0


if __name__ == "__main__":
    sys.exit(main())
