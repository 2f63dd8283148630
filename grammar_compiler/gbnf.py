r"""GBNF (llama.cpp) and xgrammar EBNF grammars: checked, then handed to xgrammar as written.

Users of llama.cpp, vLLM and SGLang write ``root ::= ...`` grammars that
xgrammar already reads, so the canonical form is the user's text itself,
with two spellings rewritten where llama.cpp and xgrammar disagree:

* ``.`` (any character, newline included, in llama.cpp) does not exist in
  xgrammar 0.2.8, which reads it as part of a rule name; it becomes
  ``[\u0000-\U0010FFFF]``.
* ``\xHH`` is two hex digits in llama.cpp, but xgrammar reads every hex digit
  that follows (``"\x41b"`` is U+041B there); it becomes ``\u00HH``.
* An empty alternative (``ws ::= | " "``, as in llama.cpp's own json.gbnf)
  is refused by xgrammar; ``""`` is written where it begins.

The text is also read here, independently of xgrammar, into the grammar
tree the judge is built from, so the two can disagree only if one of them
misreads it. That reading accepts what both llama.cpp and xgrammar accept:
rule names ``[A-Za-z_][A-Za-z0-9_-]*``, double-quoted strings, classes,
groups (``()`` is the empty string), ``*`` ``+`` ``?`` ``{m}`` ``{m,}``
``{m,n}``, xgrammar's lookahead assertion ``(= ...)`` ending a rule (a
hint to xgrammar's matcher, not a constraint: the judge reads nothing for
it), ``#`` comments, escapes ``\n \r \t \\ \" \' \xHH \uXXXX
\UXXXXXXXX`` (in classes also ``\[ \] \- \^``), and llama.cpp's tokens
``<think>``, exactly that token of the served model (``special_tokens``: the
decoder resolves it; the judge sees its text). Rejected by name: tokens by
id (``<[1000]>``) and negated tokens (``!<think>``), xgrammar's
macros (``Regex(...)``, ``TagDispatch(...)``, ...); NUL inside a string, which
xgrammar 0.2.8 drops; undefined rules; a missing ``root`` rule. Whatever
xgrammar still refuses is reported with its line and column, mapped back to
the user's text.
"""

from __future__ import annotations

import re

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_reader import RuleReader
from grammar_compiler.cfg_tree import (
    CharSet,
    Grammar,
    Node,
    Ref,
    Text,
    check_output_size,
    check_size,
    check_unit_cycles,
    lines,
    productive_rules,
    unfinishable_message,
)
from grammar_compiler.errors import ConstraintError
from grammar_compiler.lark_writer import bnf_judge
from grammar_compiler.special_tokens import special_token_rule
from grammar_compiler.xgrammar_errors import xgrammar_complaint

ROOT = "root"
_ANY_CHARACTER = "[\\u0000-\\U0010FFFF]"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MACROS = frozenset({"TagDispatch", "Token", "ExcludeToken", "TokenTagDispatch", "Regex"})


def compile_gbnf(text: str, language: str = "gbnf") -> CanonicalConstraint:
    """Validate a GBNF / xgrammar EBNF grammar; return it for xgrammar with its Lark judge.

    ``language`` ("gbnf" or "ebnf") is only recorded as the source language.

    Raises:
        ConstraintError: the grammar is invalid or over a limit, with line and column.
    """
    grammar, canonical = read_gbnf(text)
    return CanonicalConstraint(
        kind="ebnf", value=canonical, source_language=language, judge=bnf_judge(grammar)
    )


def read_gbnf(text: str) -> tuple[Grammar, str]:
    """The grammar tree of a GBNF text and the text xgrammar gets, both checked."""
    check_size(text)
    reader = _GbnfReader(text)
    rules = reader.rules()
    for name, offset in reader.references:
        if name not in rules:
            raise reader.error(f"rule {name!r} is not defined", offset)
    if ROOT not in rules:
        first = next(iter(rules))
        raise reader.error(
            f"a GBNF grammar starts at a rule named root (root ::= ...); there is none, "
            f"and the first rule is {first!r}",
            reader.rule_offsets[first],
        )
    grammar = Grammar(rules, ROOT)
    if ROOT not in productive_rules(grammar):
        raise reader.error(unfinishable_message("'root'"), reader.rule_offsets[ROOT])
    check_unit_cycles(grammar)
    check_output_size(grammar)
    canonical = reader.rewritten()
    _confirm_with_xgrammar(canonical, reader)
    return grammar, canonical


def _confirm_with_xgrammar(canonical: str, reader: _GbnfReader) -> None:
    complaint = xgrammar_complaint(canonical)
    if complaint is None:
        return
    message = f"xgrammar: {complaint.message}"
    column = complaint.column_in(canonical)
    if complaint.line is None or column is None:
        raise ConstraintError(message)
    offset = reader.original_offset(_offset_of(canonical, complaint.line, column))
    raise reader.error(message, offset)


def _offset_of(text: str, line: int, column: int) -> int:
    """The character offset of a 1-based line and column (clamped to the text)."""
    all_lines = lines(text)
    line = min(line, len(all_lines))
    offset = 0
    for number in range(1, line):
        offset += len(all_lines[number - 1])
        offset += 2 if text.startswith("\r\n", offset) else 1
    return min(offset + column - 1, len(text))


class _GbnfReader(RuleReader):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.references: list[tuple[str, int]] = []
        self._rewrites: list[tuple[int, int, str]] = []
        self.special: dict[str, str] = {}
        """The rules of the tokens the grammar names, appended to the text for xgrammar."""

    def rule_name_at(self, offset: int) -> tuple[str, int] | None:
        found = _NAME.match(self.text, offset)
        return (found.group(), found.end()) if found else None

    def symbol(self) -> Node:
        offset = self.pos
        if self.peek() == "<" or (self.peek() == "!" and self.peek(offset + 1) == "<"):
            return self._token()
        if self.peek() == ".":
            self.pos += 1
            self._rewrites.append((offset, 1, _ANY_CHARACTER))
            return CharSet((), negated=True)
        found = self.rule_name_at(offset)
        if found is None:
            if self.peek() == "'":
                raise self.error("GBNF strings are written in double quotes")
            raise self.error(f"unexpected {self.peek()!r}")
        name, self.pos = found
        if name in _MACROS:
            raise self.error(f"xgrammar's {name}(...) macro is not supported", offset)
        self.references.append((name, offset))
        return Ref(name)

    def _token(self) -> Node:
        """``<think>``: exactly that token of the served model (``special_tokens``);
        its text is what the judge sees."""
        offset = self.pos
        if self.peek() == "!":
            raise self.error(
                "a negated token (!<...>) is not supported: it constrains tokens, not text, "
                "so its outputs could not be checked"
            )
        end = self.text.find(">", offset + 1)
        if end < 0 or "\n" in self.text[offset:end]:
            raise self.error("a token (<think>) needs its closing '>'")
        text = self.text[offset : end + 1]
        if text.startswith("<[") and text.endswith("]>"):
            raise self.error(
                f"a token given by id ({text}) is not supported: the ids depend on the served "
                "model; name the token by its text (<think>)"
            )
        if text == "<>" or any(character.isspace() for character in text):
            raise self.error(f"{text!r} is not a token: write <text-of-the-token>")
        self.pos = end + 1
        rule = special_token_rule(text)
        self.special[rule.root] = rule.ebnf
        self._rewrites.append((offset, len(text), rule.root))
        return Text(text)

    def group(self) -> Node:
        if self.peek(self.pos + 1) != "=":
            return super().group()
        # xgrammar's lookahead assertion, which ends a rule: a hint to its matcher that
        # does not hold the rule to it (``a ::= "a" (= "b")`` still matches "a" before
        # "c"), so it adds nothing to what the judge accepts; xgrammar checks its place
        opening = self.pos
        self.pos += 2
        self.choice("'(='")
        if self.peek() != ")":
            raise self.error("'(=' is never closed", opening)
        self.pos += 1
        return Text("")

    def string(self) -> str:
        opening = self.pos
        value = super().string()
        if "\0" in value:
            raise self.error(
                "a NUL character cannot be written in a string here (xgrammar drops it); "
                "write the class [\\u0000] instead",
                opening,
            )
        return value

    def empty_alternative(self, offset: int, after: str) -> Node:
        self._rewrites.append((offset, 0, '""'))
        return Text("")

    def skip_blank_before_quantifier(self) -> None:
        self.skip_blank()

    def on_hex_escape(self, offset: int, letter: str, digits: str) -> None:
        if letter == "x":
            self._rewrites.append((offset, 4, f"\\u00{digits}"))

    def rewritten(self) -> str:
        """The text with llama.cpp-only spellings replaced by xgrammar's."""
        parts = []
        done = 0
        for offset, length, replacement in sorted(self._rewrites):
            parts += [self.text[done:offset], replacement]
            done = offset + length
        tail = "\n" if self.special and not self.text.endswith("\n") else ""
        return "".join([*parts, self.text[done:], tail, *self.special.values()])

    def original_offset(self, rewritten_offset: int) -> int:
        """Where an offset into ``rewritten()`` falls in the user's text."""
        shift = 0
        for offset, length, replacement in sorted(self._rewrites):
            if rewritten_offset < offset + shift:
                break
            if rewritten_offset < offset + shift + len(replacement):
                return offset
            shift += len(replacement) - length
        return rewritten_offset - shift
