r"""Backreferences to groups of a few texts, spelled out as alternatives.

Why: a date whose separators agree, ``\d{1,2}([./-])\d{1,2}\1\d{4}``, and
a quoted text, ``(['"]).*\1``, are common patterns, and a backreference is
not regular in general (``(\w+) \1``); but one to a group that each match
of a sequence passes exactly once, and that matches only a few texts, is:
the sequence is the choice, for each of those texts, of the sequence with
the group and its references replaced by it (``[./-]`` gives three).

Sequences are spelled out from the innermost: a group in one alternative
(the leap-year date regexes, ``...(\/|-|\.)...\1|...(\/|-|\.)...\2``)
or in a repeated group with its references (``(?:(['"])\w*\1,)*``) is
spelled out there. The group is replaced by its text exactly (as matched);
a reference keeps the case-insensitivity of where it stands, as Python
compares it. A reference left (to a group a match may skip or pass several
times, holding another referenced group or scoped flags, or of more than
``MAX_SPELLED_OUT`` texts in all) is refused where it is translated.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from grammar_compiler.code_points import Ranges

try:
    from re import _parser
except ImportError:  # Python 3.10
    import sre_parse as _parser

MAX_SPELLED_OUT = 64
"""Alternatives one sequence may become: the product of its referenced groups' text counts."""

Items = Sequence[tuple]
CharacterSet = Callable[[object, object], Ranges]
_SINGLE_CHARACTER = frozenset({_parser.LITERAL, _parser.NOT_LITERAL, _parser.ANY, _parser.IN})
_REPEATS = (_parser.MAX_REPEAT, _parser.MIN_REPEAT)
_LOOKAROUNDS = (_parser.ASSERT, _parser.ASSERT_NOT)


def holds_backreference(items: Items) -> bool:
    return any(op is _parser.GROUPREF for op, _ in _walk(items))


def spelled_out(items: Items, character_set: CharacterSet) -> list[tuple]:
    """The items with every backreference that can be spelled out spelled out.

    ``character_set``: the characters a one-character item matches, read with
    the pattern's flags.
    """
    inner = [(op, _with_inner_spelled_out(op, av, character_set)) for op, av in items]
    referenced = sorted({av for op, av in _walk(inner) if op is _parser.GROUPREF})
    passed_once = dict(_groups_passed_once(inner))
    texts: dict[int, set[str]] = {}
    for group in referenced:
        found = _group_texts(group, passed_once, referenced, character_set)
        if found is not None:
            texts[group] = found
    count = 1
    for found in texts.values():
        count *= len(found)
    if not texts or count > MAX_SPELLED_OUT:
        return inner
    groups = list(texts)
    variants = [
        _substituted(inner, dict(zip(groups, choice, strict=True)))
        for choice in itertools.product(*(sorted(texts[group]) for group in groups))
    ]
    return variants[0] if len(variants) == 1 else [(_parser.BRANCH, (None, variants))]


def _with_inner_spelled_out(op: object, av: object, character_set: CharacterSet) -> object:
    """``av`` with the sequences inside it spelled out."""
    if op is _parser.SUBPATTERN or op in _REPEATS or op in _LOOKAROUNDS:
        return (*av[:-1], spelled_out(av[-1], character_set))  # type: ignore[index]
    if op is _parser.BRANCH:
        return (av[0], [spelled_out(branch, character_set) for branch in av[1]])  # type: ignore[index]
    return av


def _group_texts(
    group: int,
    passed_once: dict[int, Items],
    referenced: list[int],
    character_set: CharacterSet,
) -> set[str] | None:
    """The texts of a group the sequence passes once, if few; None otherwise."""
    if group not in passed_once:
        return None
    for op, av in _walk(passed_once[group]):
        if op is _parser.SUBPATTERN and (av[1] or av[2] or av[0] in referenced):
            return None  # scoped flags, or a referenced group inside
    return _texts(passed_once[group], character_set)


def _walk(items: Items) -> list[tuple]:
    """Every item, nested ones included."""
    found = []
    for op, av in items:
        found.append((op, av))
        for inner in _inner(op, av):
            found += _walk(inner)
    return found


def _inner(op: object, av: object) -> list[Items]:
    if op is _parser.SUBPATTERN or op in _REPEATS or op in _LOOKAROUNDS:
        return [av[-1]]  # type: ignore[index]
    if op is _parser.BRANCH:
        return list(av[1])  # type: ignore[index]
    return []


def _groups_passed_once(items: Items) -> list[tuple[int, Items]]:
    """The groups every match passes exactly once: in the pattern's own sequence
    or in such a group."""
    found = []
    for op, av in items:
        if op is _parser.SUBPATTERN:
            group, _add, _remove, inner = av
            if group is not None:
                found.append((group, inner))
            found += _groups_passed_once(inner)
    return found


def _texts(items: Items, character_set: CharacterSet) -> set[str] | None:
    """The texts the items match, if at most ``MAX_SPELLED_OUT``; None otherwise."""
    texts = {""}
    for op, av in items:
        options = _item_texts(op, av, character_set)
        if options is None:
            return None
        texts = {before + after for before in texts for after in options}
        if len(texts) > MAX_SPELLED_OUT:
            return None
    return texts


def _item_texts(op: object, av: object, character_set: CharacterSet) -> set[str] | None:
    if op in _SINGLE_CHARACTER:
        ranges = character_set(op, av)
        if sum(high - low + 1 for low, high in ranges) > MAX_SPELLED_OUT:
            return None
        return {chr(code) for low, high in ranges for code in range(low, high + 1)}
    if op is _parser.SUBPATTERN:
        return _texts(av[-1], character_set)  # type: ignore[index]
    if op is _parser.BRANCH:
        options: set[str] = set()
        for branch in av[1]:  # type: ignore[index]
            found = _texts(branch, character_set)
            if found is None:
                return None
            options |= found
        return options if len(options) <= MAX_SPELLED_OUT else None
    if op in _REPEATS:
        low, high, inner = av  # type: ignore[misc]
        once = _texts(inner, character_set)
        if once is None or high == _parser.MAXREPEAT or high > MAX_SPELLED_OUT:
            return None
        options, copies = set(), {""}
        for count in range(high + 1):
            if count >= low:
                options |= copies
            if len(options) > MAX_SPELLED_OUT:
                return None
            copies = {before + after for before in copies for after in once}
        return options
    return None  # anchors, lookarounds, references: not spelled out


def _substituted(items: Items, chosen: dict[int, str]) -> list[tuple]:
    """The items with each chosen group and each reference to it replaced by its text."""
    result = []
    for op, av in items:
        if op is _parser.SUBPATTERN and av[0] in chosen:
            result.append((op, (None, 0, re.IGNORECASE, _literal(chosen[av[0]]))))
        elif op is _parser.GROUPREF and av in chosen:
            result.append((_parser.SUBPATTERN, (None, 0, 0, _literal(chosen[av]))))
        elif op is _parser.SUBPATTERN or op in _REPEATS or op in _LOOKAROUNDS:
            result.append((op, (*av[:-1], _substituted(av[-1], chosen))))
        elif op is _parser.BRANCH:
            result.append((op, (av[0], [_substituted(branch, chosen) for branch in av[1]])))
        else:
            result.append((op, av))
    return result


def _literal(text: str) -> list[tuple]:
    return [(_parser.LITERAL, ord(character)) for character in text]
