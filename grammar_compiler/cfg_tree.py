"""The tree BNF, GBNF and Lark grammars are read into, and the limits on them.

Each grammar language has its own reader, but they all end up here, so that
one writer produces xgrammar EBNF (``ebnf_writer``) and another, separate one
produces the Lark grammar the judge parses with (``lark_writer``). The tree is
deliberately small: literal text, character sets, rule references, sequence,
choice and bounded or unbounded repetition. Anything a language offers beyond
that is either expanded into these by its reader or rejected there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from grammar_compiler.errors import ConstraintError
from grammar_compiler.shortest import (
    IMPOSSIBLE,
    capped,
    over_limit,
    shortest_by_name,
    times,
    too_long,
)

# Limits that keep one request from costing the service more than a grammar
# could reasonably need; each is named in the error that enforces it.
MAX_GRAMMAR_BYTES = 100_000
"""Largest grammar text, in UTF-8 bytes."""
MAX_RULES = 500
"""Most rules (Lark: rules and terminals) one grammar may define. The judge's
Earley parser is set up in time about quadratic in the rules: a chain of 500
takes about 2 s, of 2000 over a minute."""
MAX_JUDGE_RULES = 1000
"""Most rules the judge's Lark grammar may have once groups and repetitions
are spelled out as helper rules (``lark_writer``, and Lark's own for Lark)."""
MAX_NESTING = 100
"""Deepest nesting of parenthesised groups."""
MAX_ALTERNATIVES = 5000
"""Most alternatives one rule may have, counting those inside its groups."""
MAX_REPEAT = 1000
"""Largest count in a ``{m,n}`` repetition; both judges expand counts into copies."""

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True)
class Text:
    """Exactly this text; the empty text matches the empty string."""

    value: str


@dataclass(frozen=True)
class CharSet:
    """One character from sorted, disjoint inclusive code point ranges (or not from them)."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    """The rule of this name."""

    name: str


@dataclass(frozen=True)
class Sequence:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Choice:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    """``item`` repeated ``low`` to ``high`` times; ``high`` None means unbounded."""

    item: Node
    low: int
    high: int | None


Node = Text | CharSet | Ref | Sequence | Choice | Repeat


@dataclass(frozen=True)
class Verbatim:
    """EBNF written outside the tree, which a rule of the tree stands for.

    ``ebnf`` defines ``root`` and whatever it needs; every name it defines
    contains a ``.``, which the EBNF writer never gives a rule, so nothing
    clashes. A Lark grammar embeds a JSON schema's grammar this way
    (``%json``) and names special tokens (``special_tokens``).
    """

    root: str
    ebnf: str


@dataclass(frozen=True)
class Grammar:
    """Rules by name (every referenced name is defined) and the rule a text must match.

    A rule named in ``verbatim`` is written to EBNF as that verbatim EBNF;
    its body in ``rules`` is a stand-in with the same texts where the tree
    can say so (a special token's text), which every analysis of the tree
    (sizes, productivity) reads instead.
    """

    rules: Mapping[str, Node]
    start: str
    verbatim: Mapping[str, Verbatim] = field(default_factory=dict)


def merge_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, disjoint, non-adjacent ranges covering the same code points."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return tuple(merged)


def sequence_of(items: list[Node]) -> Node:
    """One node for the items (the empty text for none), adjacent literal texts joined."""
    joined: list[Node] = []
    for item in items:
        if joined and isinstance(item, Text) and isinstance(joined[-1], Text):
            joined[-1] = Text(joined[-1].value + item.value)
        else:
            joined.append(item)
    if not joined:
        return Text("")
    return joined[0] if len(joined) == 1 else Sequence(tuple(joined))


def caseless(value: str) -> Node:
    """``value`` with each ASCII letter in either case: what ``re.ASCII |
    re.IGNORECASE`` matches (Lark's ``"..."i``), and ABNF's quoted strings."""
    items: list[Node] = []
    for char in value:
        if char.isascii() and char.isalpha():
            codes = sorted({ord(char.lower()), ord(char.upper())})
            items.append(CharSet(tuple((code, code) for code in codes)))
        else:
            items.append(Text(char))
    return sequence_of(items)


def choice_of(options: list[Node]) -> Node:
    return options[0] if len(options) == 1 else Choice(tuple(options))


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Sequence):
        return node.items
    if isinstance(node, Choice):
        return node.options
    if isinstance(node, Repeat):
        return (node.item,)
    return ()


def references(node: Node) -> Iterator[str]:
    """Names of the rules ``node`` refers to, in order of appearance."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Ref):
            yield current.name
        stack.extend(reversed(children(current)))


def reachable_rules(grammar: Grammar) -> list[str]:
    """The rules a text can involve, start first: writers leave the others out."""
    order = [grammar.start]
    seen = {grammar.start}
    for name in order:
        for used in references(grammar.rules[name]):
            if used not in seen:
                seen.add(used)
                order.append(used)
    return order


def productive_rules(grammar: Grammar) -> set[str]:
    """Rules that can derive some finite text; a start rule outside this set matches nothing.

    A rule is looked at again only when a rule it uses becomes productive, so
    long chains of rules cost linear time.
    """
    users: dict[str, set[str]] = {name: set() for name in grammar.rules}
    for name, body in grammar.rules.items():
        for used in references(body):
            users[used].add(name)
    done: set[str] = set()
    pending = list(grammar.rules)
    while pending:
        name = pending.pop()
        if name not in done and _productive(grammar.rules[name], done):
            done.add(name)
            pending.extend(user for user in users[name] if user not in done)
    return done


def _productive(node: Node, done: set[str]) -> bool:
    if isinstance(node, Ref):
        return node.name in done
    if isinstance(node, Sequence):
        return all(_productive(item, done) for item in node.items)
    if isinstance(node, Choice):
        return any(_productive(option, done) for option in node.options)
    if isinstance(node, Repeat):
        return node.low == 0 or _productive(node.item, done)
    if isinstance(node, CharSet):
        return matches_some_character(node)
    return True


def check_unit_cycles(grammar: Grammar, shown: Callable[[str], str] = str) -> None:
    """Refuses rules that are each only another one, repeated or not, in a cycle
    (``r ::= r{0,2}``, ``a ::= b{2}`` with ``b ::= (a)``): such rules match the
    empty text at most, and xgrammar 0.2.8 crashes (a segmentation fault, in
    the decoder) compiling some of them.

    ``shown`` gives a rule's name as the user wrote it.

    Raises:
        ConstraintError: naming the rules of the cycle.
    """
    targets = {name: _unit_target(body) for name, body in grammar.rules.items()}
    finished: set[str] = set()
    for first in grammar.rules:
        path: list[str] = []
        name: str | None = first
        while name is not None and name not in finished and name not in path:
            path.append(name)
            name = targets.get(name)
        if name is not None and name in path:
            cycle = [shown(rule) for rule in path[path.index(name) :]]
            what = (
                f"rule {cycle[0]} is only itself (repeated or not), so it matches"
                if len(cycle) == 1
                else f"rules {' -> '.join([*cycle, cycle[0]])} are each only the next one "
                "(repeated or not), so they match"
            )
            raise ConstraintError(f"{what} the empty text at most: write that text instead")
        finished.update(path)


def _unit_target(node: Node) -> str | None:
    """The rule a body is nothing but (in a group, repeated or not, beside empty
    texts: ``"" r{0,2}``), else None."""
    while True:
        if isinstance(node, Sequence):
            items = [item for item in node.items if not _only_empty_text(item)]
            if len(items) != 1:
                return None
            node = items[0]
        elif isinstance(node, Choice) and len(node.options) == 1:
            node = node.options[0]
        elif isinstance(node, Repeat):
            node = node.item
        else:
            return node.name if isinstance(node, Ref) else None


def _only_empty_text(node: Node) -> bool:
    """Whether ``node`` matches the empty text and nothing else, without a rule."""
    if isinstance(node, Text):
        return not node.value
    if isinstance(node, (Sequence, Choice)):
        return all(_only_empty_text(part) for part in children(node))
    if isinstance(node, Repeat):
        return _only_empty_text(node.item)
    return False


def check_output_size(grammar: Grammar) -> None:
    """Refuses a grammar with a rule or part no text within ``MAX_SHORTEST_OUTPUT`` satisfies.

    ``a1 ::= a0 a0``, ``a2 ::= a1 a1``, ... is a few lines for 2**30
    characters that xgrammar would force all at once (``shortest``). Rules
    that derive no text at all are left to ``productive_rules``.
    """
    order = reachable_rules(grammar)
    lengths = shortest_by_name(
        order,
        {name: list(references(grammar.rules[name])) for name in order},
        lambda name, known: _shortest(grammar.rules[name], known),
    )
    for name in order:
        _shortest(grammar.rules[name], lengths, check=f"rule {name}")


def _shortest(node: Node, lengths: Mapping[str, float], check: str | None = None) -> float:
    """Length of the shortest text of ``node``; with ``check``, refuses any part over the limit."""
    if isinstance(node, Text):
        length: float = len(node.value)
    elif isinstance(node, CharSet):
        length = 1
    elif isinstance(node, Ref):
        length = lengths.get(node.name, IMPOSSIBLE)
    elif isinstance(node, Sequence):
        length = capped(sum(_shortest(item, lengths, check) for item in node.items))
    elif isinstance(node, Choice):
        length = min(_shortest(option, lengths, check) for option in node.options)
    else:
        length = times(node.low, _shortest(node.item, lengths, check))
    if check is not None and over_limit(length):
        raise too_long(check)
    return length


def matches_some_character(node: CharSet) -> bool:
    """Whether some character that can occur in text (not a surrogate) is in the set."""
    covered = 0
    for low, high in node.ranges:
        covered += high - low + 1
        covered -= max(0, min(high, SURROGATES[1]) - max(low, SURROGATES[0]) + 1)
    text_characters = MAX_CODE_POINT + 1 - (SURROGATES[1] - SURROGATES[0] + 1)
    return covered < text_characters if node.negated else covered > 0


def unfinishable_message(name: str) -> str:
    """What to tell a user whose start rule derives no finite text."""
    return (
        f"rule {name} matches no text: each of its alternatives needs itself, another rule "
        "that never finishes, or a class that matches no character"
    )


def check_size(text: str) -> None:
    """Refuse a grammar text over ``MAX_GRAMMAR_BYTES`` before any reader looks at it."""
    if not isinstance(text, str):
        raise ConstraintError("a grammar must be a string")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_GRAMMAR_BYTES:
        raise ConstraintError(
            f"grammar too large: {size} bytes (limit MAX_GRAMMAR_BYTES = {MAX_GRAMMAR_BYTES})"
        )


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset; ``\\r\\n``, ``\\r``, ``\\n`` end lines."""
    line = 1
    line_start = 0
    for brk in _LINE_BREAK.finditer(text, 0, offset):
        if brk.end() > offset:
            break
        line += 1
        line_start = brk.end()
    return line, offset - line_start + 1


def lines(text: str) -> list[str]:
    """The lines of ``text`` as ``line_column`` counts them."""
    return _LINE_BREAK.split(text)
