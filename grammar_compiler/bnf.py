"""The BNF dialect of the ``/v1/completion/cfg`` document, compiled for xgrammar.

The document's only example is ``<start> ::= <noun> <verb> | <verb> <noun>``
answered by ``"noun verb"``. Two rules make that example mean what it shows,
and the dialect is defined by them (docs/grammars.md has more examples):

* A name that is used but never defined stands for itself as a literal word:
  ``<noun>`` with no ``<noun> ::=`` rule matches exactly ``noun``.
* Whitespace (or a comment) between two items of a sequence matches exactly
  one space; items written with nothing between them are concatenated:
  ``<a> <b>`` is ``a b``, ``<a><b>`` is ``ab``, ``"x"<a>`` is ``xa``. This
  holds across lines too: a rule continues until the next ``<name> ::=``.
  A quantifier must touch what it repeats, and repeats it with nothing in
  between: ``<d>+`` is ``d``, ``dd``, ...

The rest is ordinary BNF with the usual extensions: ``|``, groups ``( )``,
``*`` ``+`` ``?`` ``{m}`` ``{m,}`` ``{m,n}``, strings in double or single
quotes (escapes ``\\n \\r \\t \\\\ \\" \\' \\xHH \\uXXXX \\UXXXXXXXX``),
character classes ``[a-z]`` and ``[^...]`` (additionally ``\\[ \\] \\- \\^``),
comments from ``#`` or ``//`` to the end of the line and ``/* ... */``. The
start rule is ``<start>`` if defined, otherwise the first rule.

BNF as textbooks and the ALGOL report write it is read too, since grammars
are pasted from there: a bare word or symbol is a literal (``<digit> ::= 0
| 1``, ``<s> ::= if <c> then <v> := <e>``); EBNF's ``[ ... ]`` is an
optional group and ``{ ... }`` a repetition of zero or more (a ``[`` is a
character class where what follows it is not a reference, string or group,
or does not read as one: ``[a-z]``, ``[ \\t]``); a ``;`` may end a rule. A
grammar that reads only with its backslashes taken literally (classic BNF has no
escapes: ``<symbol> ::= "\\" | "]"``) is read that way.

Rejected with line and column: text that is not a rule, a name defined twice
(alternatives belong in one rule, joined by ``|``, so a second definition is
more likely a mistake than an extension), empty alternatives (``""`` is the
empty string), unclosed strings, classes, groups and comments, unknown
escapes, a start rule that matches no text, and anything over the limits in
``cfg_tree``.
"""

from __future__ import annotations

import re

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_reader import EscapeError, RuleReader
from grammar_compiler.cfg_tree import (
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
    productive_rules,
    sequence_of,
    unfinishable_message,
)
from grammar_compiler.errors import ConstraintError
from grammar_compiler.tree_constraint import tree_constraint

START = "start"
_BARE_WORD = re.compile(r"\w+")
_NAME_OR_STRING = re.compile(r"""<[^<>\s][^<>\r\n]*>|["']""")
_BARE_SYMBOLS = re.compile(r"""(?:[^\s|()\[\]{}<>"'#*+?;/]|/(?![/*]))+|;""")
"""A bare terminal as the ALGOL report writes them (``:=``, ``Sr.``, ``;``):
anything up to a space or a character with a meaning here."""
_COUNT = re.compile(r"\{[ \t]*[\d,][\d, \t]*\}")
"""A repetition count (``{2}``, ``{1, 3}``), as opposed to EBNF's ``{ ... }`` group."""
_SPACE = Text(" ")


def compile_bnf(text: str) -> CanonicalConstraint:
    """Validate a BNF-dialect grammar; return its xgrammar EBNF and its Lark judge.

    Raises:
        ConstraintError: the grammar is invalid or over a limit, with line and column.
    """
    return tree_constraint(read_bnf(text), "bnf")


def read_bnf(text: str) -> Grammar:
    """The grammar tree of a BNF-dialect text, undefined names already turned into words."""
    check_size(text)
    reader: _BnfReader = _BnfReader(text)
    try:
        rules = reader.rules()
    except EscapeError:
        raise
    except ConstraintError as error:
        if "\\" not in text:
            raise
        reader = _LiteralBackslashReader(text)
        try:
            rules = reader.rules()
        except ConstraintError:
            raise error from None
    start = START if START in rules else next(iter(rules))
    bodies = {name: _words_for_undefined(body, rules) for name, body in rules.items()}
    grammar = Grammar(bodies, start)
    if start not in productive_rules(grammar):
        raise reader.error(unfinishable_message(f"<{start}>"), reader.rule_offsets[start])
    check_unit_cycles(grammar)
    check_output_size(grammar)
    return grammar


class _BnfReader(RuleReader):
    QUOTES = "\"'"
    COMMENTS = ("#", "//", "/*")
    EMPTY_CLASS_ALLOWED = False
    RULE_EXAMPLE = "<name> ::= ..."

    def rule_name_at(self, offset: int) -> tuple[str, int] | None:
        if self.peek(offset) != "<":
            return None
        end = offset + 1
        while self.peek(end) not in ("", ">", "<", "\r", "\n"):
            end += 1
        if self.peek(end) != ">" or end == offset + 1:
            return None
        return self.text[offset + 1 : end], end + 1

    def symbol(self) -> Node:
        found = self.rule_name_at(self.pos)
        if found is None:
            if self.peek() == "<":
                raise self.error("'<' does not start a name like <name> on this line")
            if self.peek() == ")":
                raise self.error("')' has no matching '('")
            bare = _BARE_SYMBOLS.match(self.text, self.pos)
            if bare:
                self.pos = bare.end()
                return Text(bare.group())
            raise self.error(f"unexpected {self.peek()!r}")
        name, self.pos = found
        return Ref(name)

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._ebnf_groups: list[Repeat] = []

    def element(self) -> Node:
        char = self.peek()
        if char == "{" and not _COUNT.match(self.text, self.pos):
            return self._ebnf_group(Repeat(self.group("}"), 0, None))
        if char == "[" and self._may_open_optional():
            optional = self.attempt(lambda: Repeat(self.group("]"), 0, 1))
            if not isinstance(optional, ConstraintError):
                return self._ebnf_group(optional)
            as_class = self.attempt(self.char_class)
            if isinstance(as_class, ConstraintError):
                raise optional
            return as_class
        return super().element()

    def _ebnf_group(self, group: Repeat) -> Repeat:
        self._ebnf_groups.append(group)
        return group

    def joined(self, items: list[Node], spaced_before: list[bool]) -> list[Node]:
        """As in any sequence, but the space beside an EBNF group is the group's.

        ``<d> { <d> }`` is ``0``, ``0 1``, ``0 1 0`` and ``<a> [ <b> ]`` is
        ``a`` or ``a b``: the space written before a ``[...]``/``{...}`` group
        (after it, where only such groups come before it) is matched only with
        the group's text, once per repetition, as a textbook grammar means.
        """
        joined: list[Node] = []
        leading = True  # only groups so far: each takes the space after it
        space_taken = False
        for index, item in enumerate(items):
            space_before = index > 0 and spaced_before[index] and not space_taken
            space_taken = False
            if not any(item is group for group in self._ebnf_groups):
                joined.extend([_SPACE, item] if space_before else [item])
                leading = False
                continue
            assert isinstance(item, Repeat)
            space_taken = leading and index + 1 < len(items) and spaced_before[index + 1]
            body = [_SPACE] * space_before + [item.item] + [_SPACE] * space_taken
            joined.append(Repeat(sequence_of(body), item.low, item.high))
        return joined

    def _may_open_optional(self) -> bool:
        """Whether the ``[`` at ``pos`` may open EBNF's optional group rather than a class.

        It may where a reference, string or group follows it, or a word after a
        space with a reference or string before the next ``]`` (``[ else <s> ]``);
        ``[ -~]`` and ``[ a-z]`` stay classes.
        """
        inside = self.pos + 1
        spaced = self.peek(inside) in (" ", "\t")
        while self.peek(inside) in (" ", "\t"):
            inside += 1
        first = self.peek(inside)
        if first in self.QUOTES or first in "({" or self.rule_name_at(inside) is not None:
            return True
        if not spaced or _BARE_WORD.match(self.text, inside) is None:
            return False
        line_end = self.text.find("]", inside)
        return _NAME_OR_STRING.search(self.text, inside, max(line_end, inside)) is not None

    def quantified(self, item: Node, start: int) -> Node:
        if self.peek() == "{" and not _COUNT.match(self.text, self.pos):
            return item  # EBNF's repetition group, written against the item
        return super().quantified(item, start)

    def sequence_ends(self) -> bool:
        return super().sequence_ends() or self.peek() in "]}" or self._at_rule_end_mark()

    def skip_rule_end(self) -> None:
        if self._at_rule_end_mark():
            self.pos += 1

    def _at_rule_end_mark(self) -> bool:
        """Whether ``pos`` is at a ``;`` closing the rule: the text or the next rule follows."""
        if self.peek() != ";":
            return False
        saved = self.pos
        self.pos += 1
        try:
            self.skip_blank()
            return self.at_end() or self.rule_start_at(self.pos)
        finally:
            self.pos = saved

    def separator(self) -> tuple[Node, ...]:
        return (_SPACE,)

    def empty_group(self, offset: int) -> Node:
        bracket = self.text[offset]
        empty = bracket + {"(": ")", "[": "]", "{": "}"}[bracket]
        raise self.error(f'empty group "{empty}"; write "" for the empty string', offset)

    def describe(self, name: str) -> str:
        return f"<{name}>"


class _LiteralBackslashReader(_BnfReader):
    ESCAPES = False


def _words_for_undefined(node: Node, rules: dict[str, Node]) -> Node:
    """The rule body with each reference to an undefined name replaced by the name's text."""
    if isinstance(node, Ref):
        return node if node.name in rules else Text(node.name)
    if isinstance(node, Sequence):
        return sequence_of([_words_for_undefined(item, rules) for item in node.items])
    if isinstance(node, Choice):
        return Choice(tuple(_words_for_undefined(option, rules) for option in node.options))
    if isinstance(node, Repeat):
        return Repeat(_words_for_undefined(node.item, rules), node.low, node.high)
    return node
