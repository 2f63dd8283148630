r"""Backreferences to groups of a few texts, spelled out as alternatives.

Why: a date whose separators agree, ``\d{1,2}([./-])\d{1,2}\1\d{4}``, and
a quoted text, ``(['"]).*\1``, are common patterns, and a backreference is
not regular in general (``(\w+) \1``); but one to a group that every match
passes exactly once, and that matches only a few texts, is: the pattern is
the choice, for each of those texts, of the pattern with the group and its
references replaced by it (``[./-]`` gives three patterns).

The group is replaced by its text exactly (case-sensitively, as it was
matched); a reference keeps the case-insensitivity of where it stands, as
Python compares it. Each of the pattern's own alternatives is spelled out
on its own. Refused (``spelled_out`` returns None): a referenced group that
a match may skip or pass several times (inside an alternative, a repeat or
a lookaround), one that holds another referenced group or scoped flags, and
more than ``MAX_SPELLED_OUT`` patterns in all.
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
"""Patterns one pattern may become: the product of its referenced groups' text counts."""

Items = Sequence[tuple]
CharacterSet = Callable[[object, object], Ranges]
_SINGLE_CHARACTER = frozenset({_parser.LITERAL, _parser.NOT_LITERAL, _parser.ANY, _parser.IN})
_REPEATS = (_parser.MAX_REPEAT, _parser.MIN_REPEAT)
_LOOKAROUNDS = (_parser.ASSERT, _parser.ASSERT_NOT)


def holds_backreference(items: Items) -> bool:
    return any(op is _parser.GROUPREF for op, _ in _walk(items))


def spelled_out(items: Items, character_set: CharacterSet) -> list[list[tuple]] | None:
    """The items once per choice of texts for the referenced groups, each group
    and reference replaced by its text; None where that cannot be done.

    ``character_set``: the characters a one-character item matches, read with
    the pattern's flags.
    """
    if len(items) == 1 and items[0][0] is _parser.BRANCH:  # each alternative on its own
        variants: list[list[tuple]] = []
        for branch in items[0][1][1]:
            found = spelled_out(branch, character_set) if holds_backreference(branch) else [branch]
            if found is None:
                return None
            variants += [list(variant) for variant in found]
        return variants if len(variants) <= MAX_SPELLED_OUT else None
    referenced = sorted({av for op, av in _walk(items) if op is _parser.GROUPREF})
    passed_once = dict(_groups_passed_once(items))
    if not all(group in passed_once for group in referenced):
        return None
    for group in referenced:
        inner = list(_walk(passed_once[group]))
        if any(op is _parser.SUBPATTERN and (av[1] or av[2]) for op, av in inner):
            return None
        if any(op is _parser.SUBPATTERN and av[0] in referenced for op, av in inner):
            return None
    texts = [_texts(passed_once[group], character_set) for group in referenced]
    if any(found is None for found in texts):
        return None
    count = 1
    for found in texts:
        count *= len(found)  # type: ignore[arg-type]
    if count > MAX_SPELLED_OUT:
        return None
    return [
        _substituted(items, dict(zip(referenced, choice, strict=True)))
        for choice in itertools.product(*(sorted(found) for found in texts))  # type: ignore[arg-type]
    ]


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
