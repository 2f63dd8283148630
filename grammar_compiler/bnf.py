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
from grammar_compiler.cfg_reader import RuleReader
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
    productive_rules,
    sequence_of,
    unfinishable_message,
)
from grammar_compiler.ebnf_writer import write_ebnf
from grammar_compiler.errors import ConstraintError
from grammar_compiler.lark_writer import bnf_judge
from grammar_compiler.xgrammar_errors import xgrammar_complaint

START = "start"
_BARE_WORD = re.compile(r"\w+")
_SPACE = Text(" ")


def compile_bnf(text: str) -> CanonicalConstraint:
    """Validate a BNF-dialect grammar; return its xgrammar EBNF and its Lark judge.

    Raises:
        ConstraintError: the grammar is invalid or over a limit, with line and column.
    """
    grammar = read_bnf(text)
    ebnf = write_ebnf(grammar)
    complaint = xgrammar_complaint(ebnf)
    if complaint is not None:
        raise ConstraintError(f"grammar not accepted by xgrammar: {complaint.message}")
    return CanonicalConstraint(
        kind="ebnf", value=ebnf, source_language="bnf", judge=bnf_judge(grammar)
    )


def read_bnf(text: str) -> Grammar:
    """The grammar tree of a BNF-dialect text, undefined names already turned into words."""
    check_size(text)
    reader = _BnfReader(text)
    rules = reader.rules()
    start = START if START in rules else next(iter(rules))
    bodies = {name: _words_for_undefined(body, rules) for name, body in rules.items()}
    grammar = Grammar(bodies, start)
    if start not in productive_rules(grammar):
        raise reader.error(unfinishable_message(f"<{start}>"), reader.rule_offsets[start])
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
            word = _BARE_WORD.match(self.text, self.pos)
            if word:
                raise self.error(
                    f'bare word {word.group()!r}: write "{word.group()}" or <{word.group()}>'
                )
            raise self.error(f"unexpected {self.peek()!r}")
        name, self.pos = found
        return Ref(name)

    def separator(self) -> tuple[Node, ...]:
        return (_SPACE,)

    def empty_group(self, offset: int) -> Node:
        raise self.error('empty group "()"; write "" for the empty string', offset)

    def describe(self, name: str) -> str:
        return f"<{name}>"


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
