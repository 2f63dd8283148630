"""Character sets of a case-insensitive pattern, as Python's two regex engines read ``(?i)``.

Why: ``(?i)`` is not ECMA-262, but schemas written for Python validators use
it (``(?i)^(true|false)$``), and the judge (the ``regex`` package) and
jsonschema (``re``) both read it case-insensitively. Each literal or class
of such a pattern generates its own characters and their case partners
(``k``: ``K`` and the Kelvin sign), keeping only the cased characters that
both engines match with that literal or class under ``(?i)``: for a negated
class (``[^a-z]``) that also drops what case-insensitivity excludes (``A``
to ``Z``). So generation stays a subset of what either engine accepts.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

import regex

from grammar_compiler.code_points import Ranges, complement, intersect, normalize

_BMP_END = 0x10000
_SURROGATES = range(0xD800, 0xE000)


@functools.cache
def _case_classes() -> dict[int, tuple[int, ...]]:
    """Each cased BMP character -> every character of its case class (itself
    included), joined by single-character lower- and upper-case mappings."""
    parent = list(range(_BMP_END))

    def root(code: int) -> int:
        while parent[code] != code:
            parent[code] = parent[parent[code]]
            code = parent[code]
        return code

    for code in range(_BMP_END):
        if code in _SURROGATES:
            continue
        char = chr(code)
        for other in (char.lower(), char.upper()):
            if len(other) == 1 and other != char and ord(other) < _BMP_END:
                parent[root(code)] = root(ord(other))
    members: dict[int, list[int]] = defaultdict(list)
    for code in range(_BMP_END):
        if code not in _SURROGATES:
            members[root(code)].append(code)
    return {code: tuple(group) for group in members.values() if len(group) > 1 for code in group}


@functools.cache
def _cased() -> Ranges:
    return normalize((code, code) for code in _case_classes())


@functools.cache
def _uncased() -> Ranges:
    return complement(_cased())


def case_insensitive(ranges: Ranges, source: str) -> Ranges:
    """The characters that ``source`` (a literal or class as written, whose
    characters are ``ranges``) matches under ``(?i)`` in both engines.

    Raises:
        ValueError: ``source`` cannot be compiled on its own.
    """
    try:
        matchers = (re.compile("(?i)" + source), regex.compile("(?i)" + source))
    except (re.error, regex.error) as error:
        raise ValueError(str(error)) from None
    classes = _case_classes()
    candidates = {
        partner
        for low, high in intersect(ranges, _cased())
        for code in range(low, high + 1)
        for partner in classes[code]
    }
    kept = [
        (code, code)
        for code in sorted(candidates)
        if all(matcher.fullmatch(chr(code)) for matcher in matchers)
    ]
    return normalize([*intersect(ranges, _uncased()), *kept])
