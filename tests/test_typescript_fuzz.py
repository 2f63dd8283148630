"""Any TypeScript source compiles or is refused with a ConstraintError, never another exception.

The frontend turns a ``ConstraintError`` into a 400 and anything else into a
500, so this is the property behind "no input yields a 5xx" for the typed
endpoint. Sources are generated from the grammar of the supported subset
and a little beyond it (unknown names, wrong argument counts, ``undefined``
in the wrong place, programs): random nesting, unions, intersections,
arrays and tuples, optional members, references, generics with defaults,
literal types, and sizes on either side of the limits (nesting 64, union
branches 64, optional properties 100, generic expansions without end).
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammar_compiler import ConstraintError, compile_typescript
from grammar_compiler.canonical import CanonicalConstraint

NAMES = ("A", "B", "Box", "Pair", "Node", "E")
PARAMETERS = ("T", "U")
KEYWORDS = ("string", "number", "boolean", "null", "any", "unknown", "object", "Date", "undefined")

literals = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6).map(json.dumps),
    st.integers(-(2**60), 2**60).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(("true", "false", "0x1F", "1e308", "-0", "E.X", "E.Y")),
)
member_names = st.one_of(
    st.integers(0, 30).map(lambda i: f"m{i}"),
    st.text(max_size=4).map(json.dumps),
    st.sampled_from(("readonly", "kind", "type", "0", "1.5")),
)


def _leaves(parameters: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(KEYWORDS),
        literals,
        st.sampled_from(NAMES + parameters + ("Missing",)),
    )


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    members = st.tuples(st.sampled_from(("", "readonly ")), member_names, st.booleans(), inner)
    member = members.map(lambda m: f"{m[0]}{m[1]}{'?' if m[2] else ''}: {m[3]}")
    tuple_element = st.tuples(inner, st.sampled_from(("", "", "", "?"))).map("".join)
    return st.one_of(
        inner.map(lambda t: f"{t}[]"),
        inner.map(lambda t: f"readonly ({t})[]"),
        inner.map(lambda t: f"Array<{t}>"),
        st.lists(tuple_element, max_size=4).map(lambda e: f"[{', '.join(e)}]"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, ...{t[1]}[]]"),
        st.tuples(st.lists(member, max_size=4), st.one_of(st.none(), inner)).map(
            lambda t: "{ " + "; ".join(t[0] + ([f"[key: string]: {t[1]}"] if t[1] else [])) + " }"
        ),
        st.lists(inner, min_size=2, max_size=5).map(" | ".join),
        st.lists(inner, min_size=2, max_size=3).map(" & ".join),
        inner.map(lambda t: f"({t})"),
        inner.map(lambda t: f"Record<string, {t}>"),
        st.tuples(st.sampled_from(("Partial", "Required", "Readonly")), inner).map(
            lambda t: f"{t[0]}<{t[1]}>"
        ),
        st.tuples(st.sampled_from(("Pick", "Omit")), inner, literals).map(
            lambda t: f"{t[0]}<{t[1]}, {t[2]}>"
        ),
        st.tuples(st.sampled_from(NAMES), st.lists(inner, min_size=1, max_size=2)).map(
            lambda t: f"{t[0]}<{', '.join(t[1])}>"
        ),
        st.tuples(inner, _patterns(inner), inner, inner).map(
            lambda t: f"({t[0]} extends {t[1]} ? {t[2]} : {t[3]})"
        ),
        st.tuples(st.sampled_from(("Exclude", "Extract")), inner, inner).map(
            lambda t: f"{t[0]}<{t[1]}, {t[2]}>"
        ),
        st.tuples(inner, st.sampled_from(("K", "`x${K & string}`", "Exclude<K, 'a'>"))).map(
            lambda t: f"{{ [K in keyof ({t[0]}) as {t[1]}]: ({t[0]})[K] }}"
        ),
        inner.map(lambda t: f"{{ [K in keyof ({t})]?: ({t})[K] }}"),
    )


def _patterns(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """What a conditional type's ``extends`` compares with, ``infer`` included."""
    return st.one_of(
        inner,
        st.just("(infer I)[]"),
        inner.map(lambda t: f"{{ kind: infer I; v: {t} }}"),
        st.just("[infer I, ...infer J]"),
        st.just("`${infer I}x`"),
    )


LEAVES = _leaves(())
TYPES = st.recursive(LEAVES, _compound, max_leaves=8)
GENERIC_TYPES = st.recursive(_leaves(PARAMETERS), _compound, max_leaves=8)
"""A type expression that may use the type parameters ``T`` and ``U``."""


@st.composite
def _near_limits(draw: st.DrawFn) -> str:
    """Types sized just below or just above a limit."""
    base = draw(st.one_of(LEAVES, _compound(LEAVES)))
    kind = draw(st.sampled_from(("nesting", "tagged", "objects", "optional", "literals")))
    count = draw(st.integers(60, 70))
    if kind == "nesting":
        return "(" * count + base + ")" * count
    if kind == "tagged":
        return " | ".join(f"{{ kind: {i}; v: {base} }}" for i in range(count))
    if kind == "objects":
        return " | ".join(f"{{ k{i}: {base} }}" for i in range(count))
    if kind == "optional":
        return "{ " + "; ".join(f"p{i}?: {base}" for i in range(count + 35)) + " }"
    return " | ".join(json.dumps(f"v{i}") for i in range(count * 20))


@st.composite
def _declaration(draw: st.DrawFn, name: str) -> str:
    if name == "E":
        members = draw(
            st.lists(
                st.sampled_from(("X", "Y = 'y'", "Z = 2", "V = -1.5", "W = 1 << 2")), max_size=3
            )
        )
        return f"enum E {{ {', '.join(dict.fromkeys(members))} }}"
    parameters = PARAMETERS[: draw(st.integers(0, 2))]
    defaulted = draw(st.integers(0, len(parameters)))  # how many of the last have defaults
    written = ", ".join(
        parameter + (f" = {draw(TYPES)}" if i >= len(parameters) - defaulted else "")
        for i, parameter in enumerate(parameters)
    )
    generic = f"<{written}>" if parameters else ""
    types = GENERIC_TYPES if parameters else TYPES
    export = draw(st.sampled_from(("", "export ")))
    if draw(st.integers(0, 3)) == 0:
        extends = draw(st.sampled_from(("", " extends A", " extends Box<string>")))
        members = draw(st.lists(st.tuples(member_names, st.booleans(), types), max_size=4))
        fields = "; ".join(f"{m}{'?' if o else ''}: {t}" for m, o, t in members)
        return f"{export}interface {name}{generic}{extends} {{ {fields} }}"
    body = draw(_near_limits() if draw(st.integers(0, 3)) == 0 else types)
    return f"{export}type {name}{generic} = {body}"


@st.composite
def sources(draw: st.DrawFn) -> tuple[str, str]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    declarations = [draw(_declaration(name)) for name in names]
    extra = draw(
        st.sampled_from(
            (
                *[""] * 16,
                "type Endless<X> = { next: Endless<X[]> }\ntype UsesEndless = Endless<string>",
                "type Wide<X> = { a?: Wide<[X]>; b?: Wide<{ x: X }> }\ntype UsesWide = Wide<1>",
                "export const value = 1",
                "interface WithMethod { run(): void }",
                "namespace N { export type A = B; export namespace M { export type B = A } }",
                "class K { a = 1; b?: A; static c = f(); constructor(public d: B) {} }",
                "class K extends Box<string> { async *g() {} [Symbol.iterator]() {} }",
            )
        )
    )
    chosen = draw(st.sampled_from(names))
    arguments = draw(st.lists(TYPES, max_size=2))
    root = f"type Root = {chosen}<{', '.join(arguments)}>" if arguments else ""
    named = (chosen, "Root", "Root") if arguments else (chosen,)
    type_name = draw(st.sampled_from((*named, "UsesEndless", "Nope", "N.A", "N.M.B", "K")))
    return "\n".join([*declarations, extra, root]), type_name


@given(sources())
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_typescript_compiles_or_is_refused_with_a_constraint_error(
    source_and_name: tuple[str, str],
) -> None:
    source, type_name = source_and_name
    try:
        constraint = compile_typescript(source, type_name)
    except ConstraintError as error:
        assert error.message  # a message a person can act on
        return
    assert isinstance(constraint, CanonicalConstraint) and constraint.value
