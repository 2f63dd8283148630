r"""Terminals that can match the empty string, which llguidance allows and Lark refuses.

``TEXT: /(.|\n)*/`` is everywhere in grammars written for llguidance
(free text before a tool call, the body of a thought). Lark's Earley
parser, the judge, refuses a terminal that can match nothing
("Dynamic Earley doesn't allow zero-width regexps"), because its scanner
can only move forward. Such a terminal ``T`` means "nothing, or a
non-empty match of ``T``", and that is what the judge is given: ``T``'s
pattern becomes a regex matching exactly its non-empty matches
(``nonempty_regex``, built from Python's own parse of the regex, not from
the translation for xgrammar), and every use of ``T`` in a rule becomes an
optional rule ``T_opt: | T``. The translation for xgrammar reads the
original pattern (``original_patterns``): ``T_opt`` is then "nothing or
``T``", the same texts as ``T``.

``CharacterLark`` does this between lark's compilation of the grammar and
the construction of its parser (``Lark._build_parser``, private but the
one place where both the compiled rules and terminals exist; lark is
pinned).
"""

from __future__ import annotations

import re

import lark
from lark.grammar import NonTerminal, Rule, RuleOptions, Terminal
from lark.lexer import PatternRE, TerminalDef

from grammar_compiler.bounded_regex import LarkTerminals
from grammar_compiler.errors import ConstraintError

try:
    from re import _constants as _sre
    from re import _parser
except ImportError:  # Python 3.10
    import sre_constants as _sre
    import sre_parse as _parser

OPTIONAL_PREFIX = "nullable__"
MAX_NONEMPTY_ITEMS = 20_000
"""Most regex items the non-empty version of one terminal may hold. It repeats
the rest of a sequence after each item that may be empty (``a?b?c?...`` grows
quadratically), so long runs of optional items are refused."""
_NOTHING = "(?!)x"  # for a terminal that matches only the empty string: never matches

_CATEGORIES = {
    _sre.CATEGORY_DIGIT: r"\d",
    _sre.CATEGORY_NOT_DIGIT: r"\D",
    _sre.CATEGORY_SPACE: r"\s",
    _sre.CATEGORY_NOT_SPACE: r"\S",
    _sre.CATEGORY_WORD: r"\w",
    _sre.CATEGORY_NOT_WORD: r"\W",
}
_ANCHORS = {
    _sre.AT_BEGINNING: "^",
    _sre.AT_BEGINNING_STRING: r"\A",
    _sre.AT_END: "$",
    _sre.AT_END_STRING: r"\Z",
    _sre.AT_BOUNDARY: r"\b",
    _sre.AT_NON_BOUNDARY: r"\B",
}
# Verbose mode is left out: the regex is written without insignificant whitespace.
_FLAG_LETTERS = (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL))
_SINGLE = (_parser.LITERAL, _parser.NOT_LITERAL, _parser.ANY, _parser.IN)
_ZERO_WIDTH = (_parser.AT, _parser.ASSERT, _parser.ASSERT_NOT)


class UnwritableTerminal(ConstraintError):
    """A terminal that can match the empty string, whose non-empty part
    ``nonempty_regex`` cannot write (a construct the translation refuses too, or
    a regex too large)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"terminal {name} can match the empty string and {reason}")
        self.name = name


class CharacterLark(lark.Lark):
    """``lark.Lark`` whose terminals may match the empty string (see the module docstring)."""

    original_patterns: dict[str, object]

    def _build_parser(self):
        # The terminals are the user's regexes: the judge matches them in bounded time.
        self.lexer_conf.re_module = LarkTerminals  # type: ignore[assignment]
        self.original_patterns = {}
        optional: dict[str, NonTerminal] = {}
        for terminal in self.terminals:
            if terminal.pattern.min_width == 0:
                self.original_patterns[terminal.name] = terminal.pattern
                terminal.pattern = PatternRE(_nonempty_or_refuse(terminal))
                optional[terminal.name] = NonTerminal(OPTIONAL_PREFIX + terminal.name)
        if optional:
            self.rules = [_with_optional(rule, optional) for rule in self.rules] + [
                Rule(symbol, expansion, options=RuleOptions())
                for name, symbol in optional.items()
                for expansion in ([], [Terminal(name)])
            ]
        return super()._build_parser()


def _with_optional(rule: Rule, optional: dict[str, NonTerminal]) -> Rule:
    if not any(symbol.name in optional for symbol in rule.expansion if symbol.is_term):
        return rule
    expansion = [
        optional[symbol.name] if symbol.is_term and symbol.name in optional else symbol
        for symbol in rule.expansion
    ]
    return Rule(rule.origin, expansion, rule.order, rule.alias, rule.options)


def _nonempty_or_refuse(terminal: TerminalDef) -> str:
    try:
        found = nonempty_regex(terminal.pattern.to_regexp())
    except _TooLarge:
        raise UnwritableTerminal(
            terminal.name,
            f"has too many optional parts to be checked that way (limit MAX_NONEMPTY_ITEMS = "
            f"{MAX_NONEMPTY_ITEMS}); make the terminal match at least one character and "
            "mark its uses optional",
        ) from None
    except ValueError as err:
        raise UnwritableTerminal(terminal.name, f"uses {err}, which is not supported") from None
    return _NOTHING if found is None else found


class _TooLarge(ValueError):
    pass


# ---------------------------------------------------------------------------
# The non-empty part of a regex, on Python's parse tree


def nonempty_regex(regex: str) -> str | None:
    """A regex whose matches are exactly the non-empty matches of ``regex``.

    None if ``regex`` matches nothing but the empty string. Raises
    ValueError for constructs this does not write back (backreferences,
    conditionals, atomic groups, possessive quantifiers).
    """
    tree = _parser.parse(regex, re.ASCII)
    options = _Rewriter().nonempty(list(tree))
    if not options:
        return None
    flags = "".join(letter for letter, flag in _FLAG_LETTERS if tree.state.flags & flag)
    prefix = f"(?{flags})" if flags else ""
    return f"{prefix}(?:{'|'.join(_written(option) for option in options)})"


def _nullable(items: list) -> bool:
    return all(_nullable_item(op, av) for op, av in items)


def _nullable_item(op: object, av: object) -> bool:
    if op in _SINGLE:
        return False
    if op is _parser.BRANCH:
        return any(_nullable(list(branch)) for branch in av[1])
    if op is _parser.SUBPATTERN:
        return _nullable(list(av[-1]))
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        return av[0] == 0 or _nullable(list(av[2]))
    return True  # anchors and lookarounds take no text


class _Rewriter:
    """Builds the non-empty sequences, counting the items it writes (``MAX_NONEMPTY_ITEMS``)."""

    def __init__(self) -> None:
        self.items = 0

    def nonempty(self, items: list) -> list[list]:
        """Sequences whose matches together are the non-empty matches of ``items``.

        A match is non-empty from its first item that takes text: the items
        before it take none (zero-width assertions among them are kept).
        """
        options: list[list] = []
        for index, (op, av) in enumerate(items):
            before = [item for item in items[:index] if item[0] in _ZERO_WIDTH]
            for part in self.nonempty_item(op, av):
                options.append(before + part + list(items[index + 1 :]))
                self.items += len(options[-1])
                if self.items > MAX_NONEMPTY_ITEMS:
                    raise _TooLarge
            if not _nullable_item(op, av):
                break
        return options

    def nonempty_item(self, op: object, av: object) -> list[list]:
        if op in _SINGLE:
            return [[(op, av)]]
        if op is _parser.BRANCH:
            options = [option for branch in av[1] for option in self.nonempty(list(branch))]
            return [[(_parser.BRANCH, (None, options))]] if options else []
        if op is _parser.SUBPATTERN:
            group, add_flags, del_flags, items = av
            options = self.nonempty(list(items))
            branch = [(_parser.BRANCH, (None, options))]
            return (
                [[(_parser.SUBPATTERN, (group, add_flags, del_flags, branch))]] if options else []
            )
        if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
            low, high, items = av
            items = list(items)
            if high == 0:
                return []
            if not _nullable(items):
                return [[(op, (max(low, 1), high, items))]]
            inner = self.nonempty(items)  # X{m,n} with X nullable: 0 to n non-empty X
            return [[(op, (1, high, [(_parser.BRANCH, (None, inner))]))]] if inner else []
        if op in _ZERO_WIDTH:
            return []
        raise ValueError(_unwritable(op))


def _unwritable(op: object) -> str:
    return {
        _parser.GROUPREF: "a backreference",
        _parser.GROUPREF_EXISTS: "a conditional group",
    }.get(op, "an atomic group or possessive quantifier")


def _written(items: list) -> str:
    return "".join(_written_item(op, av) for op, av in items)


def _written_item(op: object, av: object) -> str:
    if op is _parser.LITERAL:
        return _char(av)
    if op is _parser.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is _parser.ANY:
        return "."
    if op is _parser.IN:
        return "[" + "".join(_class_item(kind, value) for kind, value in av) + "]"
    if op is _parser.BRANCH:
        return "(?:" + "|".join(_written(list(branch)) for branch in av[1]) + ")"
    if op is _parser.SUBPATTERN:
        _group, add_flags, del_flags, items = av
        return f"(?{_flags(add_flags)}{'-' + _flags(del_flags) if del_flags else ''}:" + (
            _written(list(items)) + ")"
        )
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT):
        low, high, items = av
        upper = "" if high == _parser.MAXREPEAT else str(high)
        lazy = "?" if op is _parser.MIN_REPEAT else ""
        return f"(?:{_written(list(items))}){{{low},{upper}}}{lazy}"
    if op is _parser.AT:
        return _ANCHORS[av]
    if op in (_parser.ASSERT, _parser.ASSERT_NOT):
        direction, items = av
        kind = (
            ("=" if op is _parser.ASSERT else "!")
            if direction > 0
            else ("<=" if op is _parser.ASSERT else "<!")
        )
        return f"(?{kind}{_written(list(items))})"
    raise ValueError(_unwritable(op))


def _class_item(kind: object, value: object) -> str:
    if kind is _parser.NEGATE:
        return "^"
    if kind is _parser.LITERAL:
        return _char(value)
    if kind is _parser.RANGE:
        return f"{_char(value[0])}-{_char(value[1])}"
    if kind is _parser.CATEGORY:
        return _CATEGORIES[value]
    raise ValueError(_unwritable(kind))


def _char(code: int) -> str:
    """The character, meaning itself inside or outside a class."""
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _flags(value: int) -> str:
    return "".join(letter for letter, flag in _FLAG_LETTERS if value & flag)
