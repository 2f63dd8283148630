"""How large lark will make a grammar, read off its parse tree before lark builds anything.

Lark turns each rule into plain alternatives by multiplying inline groups
out (``("a"|"b") ("c"|"d")`` is four alternatives), writing ``x ~ n`` with
n below 50 as n copies, and giving ``*``, ``+`` and larger counts rules of
their own. Its grammar analysis then takes time cubic in the length of each
alternative (about 20 ms for one of 50 symbols), so a small text can ask for
minutes of work. ``estimate`` predicts, per rule, how many alternatives lark
will make, how long the longest is and how many symbols they hold in all,
plus the symbols of the helper rules lark adds, so ``lark_grammar`` can
refuse such a grammar by name first. Numbers saturate at ``CAP``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Tree

CAP = 10**12
_REPEAT_INLINE_BELOW = 50  # lark's REPEAT_BREAK_THRESHOLD
_REPEAT_FACTOR = 5  # lark's SMALL_FACTOR_THRESHOLD: the most copies in one helper rule


@dataclass(frozen=True)
class Size:
    alternatives: int
    longest: int
    symbols: int


ONE = Size(1, 1, 1)
EMPTY = Size(1, 0, 0)


def _capped(value: int) -> int:
    return min(value, CAP)


def choice(*options: Size) -> Size:
    return Size(
        _capped(sum(option.alternatives for option in options)),
        max(option.longest for option in options),
        _capped(sum(option.symbols for option in options)),
    )


def sequence(first: Size, second: Size) -> Size:
    """Every alternative of ``first`` followed by every one of ``second``."""
    return Size(
        _capped(first.alternatives * second.alternatives),
        _capped(first.longest + second.longest),
        _capped(first.symbols * second.alternatives + second.symbols * first.alternatives),
    )


def repeated(item: Size, times: int) -> Size:
    result = EMPTY
    for _ in range(times):
        result = sequence(result, item)
    return result


class Estimate:
    """Sizes of rule bodies, collecting the helper rules lark will add on the way."""

    def __init__(self, templates: dict[str, Size] | None = None) -> None:
        self.templates = templates or {}
        self.helpers: list[Size] = []

    def helper(self, size: Size) -> None:
        self.helpers.append(size)

    def of(self, node: object) -> Size:
        if not isinstance(node, Tree):
            return ONE
        children = node.children
        if node.data == "expansions":
            return choice(*(self.of(child) for child in children))
        if node.data == "expansion":
            result = EMPTY
            for child in children:
                result = sequence(result, self.of(child))
            return result
        if node.data == "alias":
            return self.of(children[0])
        if node.data == "maybe":
            return choice(self.of(children[0]), EMPTY)
        if node.data == "expr":
            return self._operator(self.of(children[0]), children[1:])
        if node.data == "template_usage":
            name = str(children[0].children[0]) if isinstance(children[0], Tree) else ""
            self.helper(self.templates.get(name, ONE))
        return choice(*(self.of(child) for child in children)) if node.data == "value" else ONE

    def _operator(self, atom: Size, rest: list) -> Size:
        operator = str(rest[0])
        if operator == "?":
            return choice(atom, EMPTY)
        if operator in ("*", "+"):
            # item_star: item | item_star item
            self.helper(choice(atom, sequence(ONE, atom)))
            return ONE if operator == "+" else choice(ONE, EMPTY)
        low = int(rest[1])
        high = int(rest[2]) if len(rest) > 2 else low
        if high < _REPEAT_INLINE_BELOW:
            return choice(*(repeated(atom, times) for times in range(low, high + 1)))
        block = choice(*(repeated(atom, times) for times in range(1, _REPEAT_FACTOR + 1)))
        for _ in range(2 * high.bit_length()):
            self.helper(sequence(ONE, block))
        return Size(1, 2, 2)
