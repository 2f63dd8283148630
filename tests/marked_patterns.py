"""Random regexes with lookarounds, word boundaries and anchors inside groups.

Both dialects (JSON Schema's ECMA-262 patterns, the regex endpoint's Python
regexes) spread such groups into alternatives (``marked_groups``); their random
tests draw from the same patterns, which mean the same in both dialects.
"""

from __future__ import annotations

import random

_ATOMS = ["a", "b", "-", "1", "\\d", "\\w", "[a-b]", "."]
_MARKS = ["\\b", "\\B", "(?=\\w)", "(?!-)", "$", "^", "(?=a|1)", "(?<!-)", "(?!$)"]
TEXT_CHARACTERS = "ab-1_ .x"


def marked_pattern(rng: random.Random, depth: int = 0) -> str:
    """Up to three parts: atoms, marks, and groups of such parts, some quantified."""
    parts = []
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if depth < 2 and roll < 0.3:
            inner = marked_pattern(rng, depth + 1)
            if rng.random() < 0.4:
                inner += "|" + marked_pattern(rng, depth + 1)
            quantifier = rng.choice(["", "", "?", "{2}", "{0,2}", "??", "*", "+"])
            parts.append(rng.choice(["(?:", "("]) + inner + ")" + quantifier)
        elif roll < 0.55:
            parts.append(rng.choice(_MARKS))
        else:
            parts.append(rng.choice(_ATOMS) + rng.choice(["", "", "?", "+", "*", "{1,2}"]))
    return "".join(parts)


def texts(rng: random.Random) -> list[str]:
    """Fifty short texts over the patterns' characters and a few with a non-ASCII one."""
    drawn = ["".join(rng.choices(TEXT_CHARACTERS, k=rng.randint(0, 5))) for _ in range(50)]
    return drawn + ["é" + text for text in drawn[:8]]
