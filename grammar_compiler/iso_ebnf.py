r"""EBNF as standards and textbooks write it: ISO/IEC 14977, Wirth's, and the W3C's.

Three spellings of the same idea, all read into the grammar tree
(``cfg_tree``) that the BNF dialect and GBNF use, so one writer gives
xgrammar its EBNF and another the judge its Lark grammar:

* **ISO/IEC 14977**: ``digit = "0" | "1" ;`` — rules end with ``;`` (or
  ``.``), ``,`` concatenates, ``|`` (also ``/``, ``!``) separates
  alternatives, ``[ ... ]`` is optional, ``{ ... }`` repeats, ``( ... )``
  groups (``(/ /)`` and ``(: :)`` too), ``3 * x`` repeats three times,
  ``a - b`` is ``a`` except ``b``, comments are ``(* ... *)``, terminals are
  quoted in ``'`` or ``"``. Names may hold spaces (``letter or digit``).
* **Wirth's EBNF** (and most textbooks): the same without commas — items
  written side by side concatenate, and names are single words. A grammar
  with no ``,`` between items is read this way.
* **W3C EBNF** (the XML specification's): ``name ::= ...`` without a
  terminator, items side by side, ``?`` ``*`` ``+`` after an item,
  ``#x41`` for a character, ``[a-z]`` / ``[^<&]`` / ``[#x20-#x7E]`` classes,
  ``/* ... */`` comments. It is read when a ``::=`` grammar has no ``root``
  rule or quotes with ``'`` (GBNF has one and does not).

In all three, ``?`` ``*`` ``+`` after an item are accepted (a common
extension), whitespace between items means nothing, the start rule is the
first one, and ``\n``, ``\t``, ``\r``, ``\\``, ``\"``, ``\'`` in a terminal
are the characters they name (the standards have no escapes; grammars for
models write them). An exception ``a - b`` is taken where both sides are
sets of single characters (``letter - "e"``, ``[^"] - "\\"``), as it is
almost always used, and is refused elsewhere with line and column; so is a
``? special sequence ?`` other than the phrases grammars use for character
sets (``? all visible characters ?``, ``? white space ?``, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_reader import RuleLimits
from grammar_compiler.cfg_tree import (
    MAX_CODE_POINT,
    MAX_NESTING,
    MAX_REPEAT,
    CharSet,
    Choice,
    Grammar,
    Node,
    Ref,
    Repeat,
    Sequence,
    Text,
    check_output_size,
    check_size,
    check_unit_cycles,
    choice_of,
    merge_ranges,
    productive_rules,
    references,
    sequence_of,
    unfinishable_message,
)
from grammar_compiler.code_points import minus
from grammar_compiler.tree_constraint import tree_constraint

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_W3C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ALTERNATION = "|/!"
_CLOSERS = {"[": "]", "{": "}", "(": ")", "(/": "/)", "(:": ":)"}
_ANY = CharSet(((0, 0xD7FF), (0xE000, MAX_CODE_POINT)))
_WHITE_SPACE = CharSet(((9, 10), (13, 13), (32, 32)))
_SPECIAL_SEQUENCES: dict[str, Node] = {
    "white space character": _WHITE_SPACE,
    "white space": _WHITE_SPACE,
    "whitespace": _WHITE_SPACE,
    "visible character": CharSet(((0x21, 0x7E),)),
    "printable character": CharSet(((0x20, 0x7E),)),
    "ascii character": CharSet(((0, 0x7F),)),
    "character": _ANY,
    "any character": _ANY,
    "unicode character": _ANY,
    "letter": CharSet(((ord("A"), ord("Z")), (ord("a"), ord("z")))),
    "digit": CharSet(((ord("0"), ord("9")),)),
    "newline": Text("\n"),
    "new line": Text("\n"),
    "line feed": Text("\n"),
    "end of line": Text("\n"),
    "tab": Text("\t"),
}
"""What ``? ... ?`` means here, by its phrase (lowercase, plural ``s`` and a
leading "all" dropped: ``? all visible characters ?`` is ``visible character``)."""


def compile_iso_ebnf(text: str, *, w3c: bool = False) -> CanonicalConstraint:
    """Validate an ISO / Wirth (or, with ``w3c``, a W3C) EBNF grammar; return its
    xgrammar EBNF and its Lark judge.

    Raises:
        ConstraintError: the grammar is invalid or over a limit, with line and column.
    """
    return tree_constraint(read_iso_ebnf(text, w3c=w3c), "w3c-ebnf" if w3c else "iso-ebnf")


def read_iso_ebnf(text: str, *, w3c: bool = False) -> Grammar:
    check_size(text)
    reader = _Reader(text, w3c=w3c)
    rules = reader.rules()
    start = next(iter(rules))
    for body in rules.values():
        for used in references(body):
            if used not in rules:
                raise reader.error(
                    f"rule {used!r} is used but never defined", reader.uses.get(used, 0)
                )
    resolved = {name: reader.resolve(body, rules) for name, body in rules.items()}
    grammar = Grammar(resolved, start)
    if start not in productive_rules(grammar):
        raise reader.error(unfinishable_message(repr(start)), reader.rule_offsets[start])
    check_unit_cycles(grammar)
    check_output_size(grammar)
    return grammar


@dataclass(frozen=True)
class _Except:
    """``base - excluded`` until every rule is read (a side may name a later rule)."""

    base: Node
    excluded: Node
    offset: int


class _Reader(RuleLimits):
    def __init__(self, text: str, *, w3c: bool) -> None:
        self.text = text
        self.pos = 0
        self.w3c = w3c
        self.depth = 0
        self.alternatives = 0
        self.rule_offsets: dict[str, int] = {}
        self.uses: dict[str, int] = {}
        # ISO names may hold spaces when commas do the concatenating
        self.spaced_names = not w3c and "," in _outside_terminals(text)
        self.definer = "::=" if w3c else "="

    # -- characters -----------------------------------------------------------

    def peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def skip_blank(self) -> None:
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
                continue
            opener = "/*" if self.w3c else "(*"
            if text.startswith(opener, self.pos):
                closer = "*/" if self.w3c else "*)"
                end = text.find(closer, self.pos + 2)
                if end < 0:
                    raise self.error(f"comment {opener!r} is never closed with {closer!r}")
                self.pos = end + 2
                continue
            if self.w3c and text.startswith(("[wfc:", "[vc:"), self.pos):
                end = text.find("]", self.pos)  # the XML specification's constraint notes
                self.pos = end + 1 if end >= 0 else len(text)
                continue
            break

    # -- rules ------------------------------------------------------------------

    def rules(self) -> dict[str, Node]:
        rules: dict[str, Node] = {}
        self.skip_blank()
        if self.pos >= len(self.text):
            raise self.error("the grammar is empty: it defines no rule")
        while self.pos < len(self.text):
            offset = self.pos
            name = self.name("a rule name")
            self.skip_blank()
            if not self.text.startswith(self.definer, self.pos) or (
                not self.w3c and self.peek(1) == "="
            ):
                raise self.error(f"expected '{self.definer}' after the rule name {name!r}")
            self.pos += len(self.definer)
            self.admit_rule(rules, name, offset)
            rules[name] = self.alternation()
            self.skip_blank()
            if self.w3c:
                if self.pos < len(self.text) and not self._rule_starts():
                    raise self.error(f"unexpected {self.peek()!r}")
            elif self.peek() in (";", "."):
                self.pos += 1
            else:
                found = repr(self.peek()) if self.peek() else "the end"
                raise self.error(f"expected ';' to end the rule {name!r}, found {found}")
            self.skip_blank()
        return rules

    def _rule_starts(self) -> bool:
        found = _W3C_NAME.match(self.text, self.pos)
        if found is None:
            return False
        after = found.end()
        while after < len(self.text) and self.text[after] in " \t\r\n":
            after += 1
        return self.text.startswith("::=", after)

    def name(self, what: str) -> str:
        pattern = _W3C_NAME if self.w3c else _WORD
        found = pattern.match(self.text, self.pos)
        if found is None:
            shown = repr(self.peek()) if self.peek() else "the end"
            raise self.error(f"expected {what}, found {shown}")
        words = [found.group()]
        self.pos = found.end()
        while self.spaced_names:
            gap = re.compile(r"[ \t]+").match(self.text, self.pos)
            following = gap and _WORD.match(self.text, gap.end())
            if not following:
                break
            words.append(following.group())
            self.pos = following.end()
        return " ".join(words)

    # -- expressions --------------------------------------------------------------

    def alternation(self) -> Node:
        options = [self.concatenation()]
        while True:
            self.skip_blank()
            if not self.peek() or self.peek() not in _ALTERNATION or self._at_closer():
                return choice_of(options)
            self.add_alternative()
            self.pos += 1
            options.append(self.concatenation())

    def _at_closer(self) -> bool:
        return self.text.startswith(("/)", ":)"), self.pos)

    def concatenation(self) -> Node:
        items: list[Node] = []
        while True:
            self.skip_blank()
            if self._ends_sequence():
                return sequence_of(items) if items else Text("")
            if items and not self.w3c and self.spaced_names:
                if self.peek() != ",":
                    raise self.error(f"expected ',' or the end of the rule, found {self.peek()!r}")
                self.pos += 1
                self.skip_blank()
            elif self.peek() == ",":
                self.pos += 1  # a comma in a grammar that also writes items side by side
                self.skip_blank()
            items.append(self.term())

    def _ends_sequence(self) -> bool:
        char = self.peek()
        if not char or char in ")]}" or self._at_closer():
            return True
        if char in _ALTERNATION:
            return True
        if self.w3c:
            return self._rule_starts()
        return char in ";."

    def term(self) -> Node:
        start = self.pos
        base = self.factor()
        self.skip_blank()
        if self.peek() == "-" and not self.text.startswith("->", self.pos):
            self.pos += 1
            self.skip_blank()
            return _Except(base, self.factor(), start)  # type: ignore[return-value]
        return base

    def factor(self) -> Node:
        count = re.compile(r"(\d+)\s*\*").match(self.text, self.pos)
        if count and not self.w3c:
            times = int(count.group(1))
            if times > MAX_REPEAT:
                raise self.error(f"repetition count {times} above MAX_REPEAT = {MAX_REPEAT}")
            self.pos = count.end()
            self.skip_blank()
            return Repeat(self.primary(), times, times)
        item = self.primary()
        while self.peek() and self.peek() in "?*+":
            low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[self.peek()]
            self.pos += 1
            item = Repeat(item, low, high)
        return item

    def primary(self) -> Node:
        char = self.peek()
        opening = self.pos
        if char in "\"'":
            return Text(self.terminal())
        if char == "?" and not self.w3c:
            return self.special_sequence()
        if char == "#" and self.w3c:
            return Text(chr(self.code_point()))
        if char == "[" and self.w3c:
            return self.w3c_class()
        for opener in ("(/", "(:", "(", "[", "{"):
            if self.text.startswith(opener, self.pos) and not (
                opener == "(" and self.text.startswith("(*", self.pos)
            ):
                return self.group(opener, opening)
        if char and (char.isalpha() or char == "_"):
            name = self.name("a rule name")
            self.uses.setdefault(name, opening)
            return Ref(name)
        shown = repr(char) if char else "the end"
        raise self.error(f"expected a terminal, a rule name or a group, found {shown}")

    def group(self, opener: str, opening: int) -> Node:
        if self.depth == MAX_NESTING:
            raise self.error(f"groups nested too deeply (limit MAX_NESTING = {MAX_NESTING})")
        self.depth += 1
        self.pos += len(opener)
        body = self.alternation()
        self.skip_blank()
        closer = _CLOSERS[opener]
        if not self.text.startswith(closer, self.pos):
            raise self.error(f"{opener!r} is never closed with {closer!r}", opening)
        self.pos += len(closer)
        self.depth -= 1
        if opener in ("[", "(/"):
            return Repeat(body, 0, 1)
        if opener in ("{", "(:"):
            return Repeat(body, 0, None)
        return body

    # -- terminals --------------------------------------------------------------

    def special_sequence(self) -> Node:
        """``? all visible characters ?`` and the other phrases grammars use; the
        standard leaves their meaning to the implementation, and this is ours."""
        opening = self.pos
        end = self.text.find("?", self.pos + 1)
        if end < 0:
            raise self.error("special sequence '?' is never closed with '?'")
        phrase = " ".join(self.text[self.pos + 1 : end].lower().replace("-", " ").split())
        self.pos = end + 1
        meaning = _SPECIAL_SEQUENCES.get(phrase.removesuffix("s").removeprefix("all "))
        if meaning is None:
            known = ", ".join(f"? {name} ?" for name in sorted(_SPECIAL_SEQUENCES))
            raise self.error(
                f"special sequence '? {phrase} ?' has no meaning here (known: {known}); "
                "write the characters it stands for",
                opening,
            )
        return meaning

    def terminal(self) -> str:
        opening = self.pos
        quote = self.peek()
        self.pos += 1
        chars: list[str] = []
        while True:
            char = self.peek()
            if char in ("", "\r", "\n"):
                raise self.error("terminal string is not closed on the line it starts", opening)
            self.pos += 1
            if char == quote:
                if not chars:
                    return ""
                return "".join(chars)
            if char == "\\" and self.peek() in _ESCAPES:
                chars.append(_ESCAPES[self.peek()])
                self.pos += 1
                continue
            chars.append(char)

    def code_point(self) -> int:
        found = re.compile(r"#x([0-9a-fA-F]+)").match(self.text, self.pos)
        if found is None:
            raise self.error("expected a character code '#xN'")
        code = int(found.group(1), 16)
        if code > MAX_CODE_POINT or 0xD800 <= code <= 0xDFFF:
            raise self.error(f"'#x{found.group(1)}' is not a character")
        self.pos = found.end()
        return code

    def w3c_class(self) -> CharSet:
        opening = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if self.peek() in ("", "\r", "\n"):
                raise self.error("character class is not closed on the line it starts", opening)
            low = self._class_character()
            high = low
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self._class_character()
                if high < low:
                    raise self.error("character range is out of order")
            ranges.append((low, high))
        self.pos += 1
        if not ranges and not negated:
            raise self.error("character class '[]' matches no character", opening)
        return CharSet(merge_ranges(ranges), negated)

    def _class_character(self) -> int:
        if self.text.startswith("#x", self.pos):
            return self.code_point()
        char = self.peek()
        self.pos += 1
        return ord(char)

    # -- exceptions ---------------------------------------------------------------

    def resolve(self, node: Node, rules: dict[str, Node]) -> Node:
        """``node`` with every exception turned into the character set it leaves."""
        if isinstance(node, _Except):
            base = _characters(node.base, rules, set())
            excluded = _characters(node.excluded, rules, set())
            if base is None or excluded is None:
                raise self.error(
                    "an exception 'a - b' is read here between sets of single characters "
                    "only (a class, one-character terminals, rules of them)",
                    node.offset,
                )
            return _difference(base, excluded)
        if isinstance(node, Sequence):
            return sequence_of([self.resolve(item, rules) for item in node.items])
        if isinstance(node, Choice):
            return Choice(tuple(self.resolve(option, rules) for option in node.options))
        if isinstance(node, Repeat):
            return Repeat(self.resolve(node.item, rules), node.low, node.high)
        return node


def _characters(node: Node, rules: dict[str, Node], seen: set[str]) -> CharSet | None:
    """The single characters ``node`` matches, when that is all it matches."""
    if isinstance(node, Text):
        return CharSet(((ord(node.value), ord(node.value)),)) if len(node.value) == 1 else None
    if isinstance(node, CharSet):
        return _positive(node)
    if isinstance(node, Ref) and node.name in rules and node.name not in seen:
        return _characters(rules[node.name], rules, seen | {node.name})
    if isinstance(node, Choice):
        parts = [_characters(option, rules, seen) for option in node.options]
        if any(part is None for part in parts):
            return None
        return CharSet(merge_ranges([r for part in parts if part for r in part.ranges]))
    if isinstance(node, _Except):
        base = _characters(node.base, rules, seen)
        excluded = _characters(node.excluded, rules, seen)
        return None if base is None or excluded is None else _difference(base, excluded)
    return None


def _positive(node: CharSet) -> CharSet:
    return node if not node.negated else CharSet(minus(_ANY.ranges, node.ranges))


def _difference(base: CharSet, excluded: CharSet) -> CharSet:
    return CharSet(minus(_positive(base).ranges, _positive(excluded).ranges))


def _outside_terminals(text: str) -> str:
    """``text`` without its quoted terminals and comments (to see its punctuation)."""
    return re.sub(r"\(\*.*?\*\)|\"[^\"\n]*\"|'[^'\n]*'", "", text, flags=re.DOTALL)
