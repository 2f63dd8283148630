r"""llguidance's Lark dialect, read into plain Lark plus what plain Lark cannot hold.

mistral.rs reads Lark grammars with llguidance, so grammars written for it
use llguidance's extensions. Each is rewritten here into plain Lark that
the ``lark`` library reads (and whose Earley parser stays the judge), with
the parts Lark cannot express recorded on the side for the translation:

* ``%json { schema }`` (a rule body or an item of one) is compiled with
  ``compile_json_schema`` (strict) and replaced by a placeholder rule. The
  translation embeds the schema's own grammar there (``embedded_ebnf``);
  in the judge's Lark text the placeholder matches any JSON value (a
  generic JSON grammar appended at the end), and the judge then checks each
  text a placeholder matched against the schema with ``jsonschema``
  (``lark_json_judge``).
* Special tokens ``<think>``, ``<|python_tag|>`` (rules only, as in
  llguidance) become a terminal matching the token's text; the
  translation writes it as a special-token rule the decoder resolves
  against the served tokenizer (``special_tokens``). Tokens given by id
  (``<[128010]>``, ranges, ``<[*]>``) are refused: the judge checks text
  and cannot know which text token 128010 is.
* ``expr{m,n}``, ``{m}``, ``{m,}``, ``{,n}`` become Lark's ``expr~m..n``,
  ``expr~m``, ``(expr~m expr*)``, ``expr~0..n``.
* ``""`` (the empty string, which Lark refuses as a terminal) becomes ``()``.
* ``-`` inside names (``tool-call``) becomes ``_``; a grammar using both
  spellings of one name is refused.
* ``%llguidance { options }`` is removed. ``no_forcing`` only changes how
  llguidance tokenizes forced text, not the language, and is accepted;
  ``allow_invalid_utf8: false`` is the only behaviour here; every other
  option (``allow_invalid_utf8: true``, ``skip_repetition``, unknown ones)
  is refused by name.

* Rule options (``name[lazy, capture]:``): ``capture``, ``capture="x"``
  and ``stop_capture="x"`` name parts of the output for llguidance's
  callers and change nothing it may be, so they are dropped. ``lazy`` and
  ``suffix=S`` make the rule one lexeme that ends at the first place it can
  (``f_hd[lazy]: TEXT "<function"``, ``think[suffix="</think>"]: /(.|\n)*/``:
  any text up to the first ``</think>``, which is written): the body (string
  and regex literals, terminals defined as one of them) and the suffix
  become one terminal whose single varying repeat is made lazy, which
  ``lazy_terminal`` translates exactly. ``stop=`` (which hides the stop
  text by taking tokens back), ``max_tokens=`` and ``temperature=`` (about
  tokens and sampling, not text) are refused by name.

* ``&`` and ``~`` in a terminal's definition (``NAME: /[a-z]+/ & ~KEYWORD``)
  are computed by ``terminal_algebra`` into one regex that replaces the
  definition's line.

Lazy terminals (``/(.|\n)*?<\/think>/``) need no rewriting: they are plain
Lark, translated exactly by ``lazy_terminal``. The other extensions stay
refused, recognised where Lark's parser stops (``relocated``): ``%regex``,
``@grammar`` references, options on terminals (``NAME[lazy]:``) and ``&``
outside a terminal's definition. ``#`` comments are Lark's already.

The rewritten text records where each piece of it came from (the
generated definitions follow the last line), and ``relocated`` maps a
location in it back to the user's text.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field

from lark.exceptions import GrammarError
from lark.load_grammar import eval_escaping

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.lark_writer import regex_text
from grammar_compiler.lazy_terminal import lazy_shape_problem
from grammar_compiler.terminal_algebra import (
    LITERAL,
    AlgebraError,
    combined_regex,
    outside_literals,
    uses_algebra,
)

# Lark's own token definitions (lark/load_grammar.py), so spans agree with its parser.
_STRING = re.compile(r'"(\\"|\\\\|[^"\n])*?"i?')
_REGEXP = re.compile(r"/(?!/)(\\/|\\\\|[^/])*?/[imslux]*")
_COMMENT = re.compile(r"//[^\n]*|#[^\n]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*")
_COUNT = re.compile(r"\{[ \t]*(\d*)[ \t]*(,[ \t]*(\d*)[ \t]*)?\}")
_SPECIAL_TOKEN = re.compile(r"<[^<>\n]+>")
_DEFINITION = re.compile(
    r"[ \t]*(?:%(?:override|extend)[ \t]+)?[?!]?(_?[A-Za-z][A-Za-z0-9_-]*)"
    r"(?:\{[^}\n]*\})?(?:\.-?\d+)?[ \t]*:(?!:)"
)
_IGNORE = re.compile(r"[ \t]*%ignore\b")
_OPTIONED_RULE = re.compile(
    r"([ \t]*[?!]?)(_?[a-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)\[([^\]\n]*)\]([ \t]*:)(?!:)"
)
_ANNOTATIONS = frozenset({"capture", "stop_capture"})
"""Rule options that name parts of llguidance's output and leave the language alone."""
_REFUSED_OPTIONS = {
    "stop": "hides the stop text by taking its tokens back, which a service that streams "
    "text cannot do; write suffix=... (the text stays in the output) or lazy",
    "max_tokens": "bounds tokens, not text; bound the text (/.{0,200}/) or set max_tokens "
    "on the request",
    "temperature": "changes sampling inside the rule; set temperature on the request",
}
_OPTION = re.compile(
    rf"[ \t]*([a-z_]+)[ \t]*(?:=[ \t]*({LITERAL.pattern}|[A-Za-z0-9_.-]+))?[ \t]*(?:,|$)"
)
_COUNTED = re.compile(r"\{(\d*)(,?)(\d*)\}")
_SIMPLE_TERMINAL = re.compile(
    rf"^[ \t]*(_?[A-Z][A-Z0-9_]*)(?:\.-?\d+)?[ \t]*:[ \t]*({LITERAL.pattern})"
    r"[ \t]*(?:(?://|#)[^\n]*)?$",
    re.MULTILINE,
)
_SPACES = re.compile(r"[ \t]*")
_LINE_END = re.compile(r"[ \t]*(?:(?://|#)[^\n]*)?(?:\n|$)")
_CONTINUED = re.compile(r"(?:[ \t]*(?:(?://|#)[^\n]*)?\n)*[ \t]+\|")
_OTHER_STATEMENT = re.compile(r"[ \t]*%(?:import|declare)\b")
_PREFIX_WORDS = re.compile(r"(?i)llg\w*")

# What stays refused, recognised where Lark's parser stops.
_REFUSED = (
    (re.compile(r"%regex\b"), "structured regexes (%regex {...})"),
    (re.compile(r"@"), "references to other grammars (@name)"),
    (re.compile(r"<"), "special tokens not closed by '>' (<name>)"),
    (re.compile(r"\["), "options on terminals (NAME[lazy]:; rules take them: name[lazy]:)"),
    (re.compile(r"&"), "regex intersections (&) outside a terminal's definition (NAME: A & ~B)"),
)
MAX_INLINE_SCHEMAS = 32
"""Most ``%json`` schemas in one grammar: each is compiled on its own and embedded
whole (a few kilobytes of EBNF each), and tool grammars need one per tool."""
_ACCEPTED_OPTIONS = {
    "no_forcing": None,  # any value: llguidance's tokenization of forced text, not the language
    "allow_invalid_utf8": False,
}


@dataclass(frozen=True)
class _Piece:
    """A run of the rewritten text: copied from ``source`` (``verbatim``) or standing for it."""

    text: str
    source: int
    verbatim: bool


@dataclass
class Dialect:
    """A grammar in llguidance's dialect, as plain Lark and side tables."""

    original: str
    lark_text: str
    embedded: dict[str, CanonicalConstraint] = field(default_factory=dict)
    """Placeholder rule name -> the compiled ``%json`` schema it stands for."""
    special_tokens: dict[str, str] = field(default_factory=dict)
    """Terminal name -> the text of the special token it stands for."""
    judge_only: frozenset[str] = frozenset()
    """Rules of the generic JSON grammar, which only the judge uses."""
    _starts: list[int] = field(default_factory=list)
    _pieces: list[_Piece] = field(default_factory=list)

    def source_offset(self, offset: int) -> tuple[int, bool]:
        """Where the character at ``offset`` of ``lark_text`` came from in the original,
        and whether it was copied from there as it is."""
        index = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        piece = self._pieces[index]
        if piece.verbatim:
            return min(piece.source + offset - self._starts[index], len(self.original)), True
        return piece.source, False

    def relocated(self, error: ConstraintError) -> ConstraintError:
        """``error`` located in the original text, naming a refused extension found there."""
        if error.line is None:
            return error
        source, copied = self.source_offset(_offset(self.lark_text, error.line, error.column or 1))
        line, column = _line_column(self.original, source)
        for pattern, feature in _REFUSED if copied else ():
            if pattern.match(self.original, source):
                return ConstraintError(
                    f"{feature} are not supported (an llguidance extension)",
                    line=line,
                    column=column,
                )
        return ConstraintError(error.message, line=line, column=column)


def read_dialect(text: str) -> Dialect:
    """``text`` as plain Lark with its llguidance extensions taken out.

    Raises:
        ConstraintError: an extension is malformed or refused (a special token
            by id, ``%json`` in a terminal, an unsupported option, an invalid
            schema), located in ``text``.
    """
    return _Reader(text).read()


def _offset(text: str, line: int, column: int) -> int:
    """The offset of 1-based ``line``/``column``, lines ending at ``\\n`` as Lark counts them."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    return min(start + column - 1, len(text))


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0
        self.pieces: list[_Piece] = []
        self.context: str | None = None  # "rule" or "terminal": the definition being read
        self.groups: list[int] = []  # piece index of each open ( or [
        self.atom: int | None = None  # piece index where the last complete item starts
        self.prefix = _free_prefix(text)
        self.embedded: dict[str, CanonicalConstraint] = {}
        self.embedded_at: dict[str, int] = {}
        self.special: dict[str, str] = {}  # token text -> terminal name
        self.special_at: dict[str, int] = {}
        self.plain_names: set[str] = set()
        self.dashed_names: dict[str, int] = {}
        self.one_literal_terminals = {
            found.group(1): found.group(2) for found in _SIMPLE_TERMINAL.finditer(text)
        }
        self.lexemes: dict[str, tuple[str, int]] = {}  # terminal name -> (regex, rule offset)

    def error(self, message: str, offset: int) -> ConstraintError:
        line, column = _line_column(self.text, offset)
        return ConstraintError(message, line=line, column=column)

    def emit(self, text: str, source: int, *, verbatim: bool = False) -> None:
        self.pieces.append(_Piece(text, source, verbatim))

    def copy(self, end: int) -> None:
        self.emit(self.text[self.position : end], self.position, verbatim=True)
        self.position = end

    def read(self) -> Dialect:
        text = self.text
        while self.position < len(text):
            if self.position == 0 or text[self.position - 1] == "\n":
                self.line_start()
                if self.position == len(text):
                    break
            char = text[self.position]
            if char in " \t\r\n":
                self.copy(self.position + 1)
            elif comment := _COMMENT.match(text, self.position):
                self.copy(comment.end())
            elif char == '"' and (string := _STRING.match(text, self.position)):
                self.string(string)
            elif char == "/" and (regexp := _REGEXP.match(text, self.position)):
                self.item(regexp.end())
            elif text.startswith("%json", self.position):
                self.json_schema()
            elif text.startswith("%llguidance", self.position):
                self.options()
            elif char == "<" and (token := _SPECIAL_TOKEN.match(text, self.position)):
                self.special_token(token)
            elif char == "{" and (count := _COUNT.match(text, self.position)):
                self.count(count)
            elif name := _NAME.match(text, self.position):
                self.name(name)
            else:
                self.punctuation(char)
        self.check_names()
        return self.dialect()

    def line_start(self) -> None:
        """Notes whether the line starts a rule or terminal definition, or %ignore."""
        if optioned := _OPTIONED_RULE.match(self.text, self.position):
            self.optioned_rule(optioned)
            return
        definition = _DEFINITION.match(self.text, self.position)
        if definition:
            bare = definition.group(1).lstrip("_")
            self.context = "terminal" if bare[:1].isupper() else "rule"
            if self.context == "terminal":
                self.maybe_algebra(definition.end())
        elif _IGNORE.match(self.text, self.position):
            self.context = "terminal"
        elif _OTHER_STATEMENT.match(self.text, self.position):
            self.context = None

    def optioned_rule(self, header: re.Match[str]) -> None:
        """``name[options]:``, the options dropped; a lazy one's body becomes one terminal."""
        lazy, suffix = self.rule_options(header)
        self.copy(header.start(2))
        self.name(_NAME.match(self.text, self.position))  # type: ignore[arg-type]
        self.position = header.start(4)
        self.copy(header.end())
        self.context = "rule"
        if lazy or suffix is not None:
            self.lexeme(suffix, header.start())

    def rule_options(self, header: re.Match[str]) -> tuple[bool, str | None]:
        """Whether the rule is lazy, and its suffix (a literal or terminal name)."""
        text, base = header.group(3), header.start(3)
        lazy, suffix, position = False, None, 0
        while position < len(text):
            option = _OPTION.match(text, position)
            if option is None or option.end() == position:
                raise self.error(
                    'rule options are written name[lazy, suffix="...", capture]', base + position
                )
            key, value = option.group(1), option.group(2)
            if key in _REFUSED_OPTIONS:
                raise self.error(
                    f"rule option {key}= is not supported: it {_REFUSED_OPTIONS[key]}",
                    base + option.start(1),
                )
            if key == "lazy" and value is None:
                lazy = True
            elif key == "suffix" and value is not None:
                suffix = value
            elif key not in _ANNOTATIONS or (key == "stop_capture" and value is None):
                raise self.error(
                    f"rule option {option.group().strip(' ,')!r} is not supported (accepted: "
                    'lazy, suffix=..., capture, capture="name", stop_capture="name")',
                    base + option.start(1),
                )
            position = option.end()
        return lazy, suffix

    def lexeme(self, suffix: str | None, at: int) -> None:
        """The rest of a lazy rule's line (its body) and its suffix, as one lazy terminal."""
        parts = []
        while not (end := _LINE_END.match(self.text, self.position)):
            start = _SPACES.match(self.text, self.position).end()  # type: ignore[union-attr]
            word = LITERAL.match(self.text, start) or _NAME.match(self.text, start)
            if word is None:
                raise self.error(
                    "a lazy rule's body is one line of strings, regexes and terminals defined "
                    "as one string or regex",
                    start,
                )
            parts.append(self.literal_regex(word.group(), start, "a lazy rule"))
            self.position = word.end()
        if not parts:
            raise self.error("a lazy rule needs a body on its line", at)
        if _CONTINUED.match(self.text, end.end()):
            raise self.error("a lazy rule's body is one line with no alternatives", end.end())
        if suffix is not None:
            parts.append(self.literal_regex(suffix, at, "a lazy rule"))
        regex = _made_lazy("".join(f"(?:{part})" for part in parts))
        if regex is None:
            raise self.error(
                "a lazy rule's text may repeat only one part a varying number of times", at
            )
        problem = lazy_shape_problem(eval_escaping(regex))
        if problem is not None:
            raise self.error(f"a lazy rule: {problem}", at)
        name = f"{self.prefix.upper()}LAZY_{len(self.lexemes)}"
        self.lexemes[name] = (regex, at)
        self.emit(f" {name}", at)
        self.copy(end.end())

    def maybe_algebra(self, start: int) -> None:
        """A terminal's definition with ``&`` or ``~`` (``terminal_algebra``), from
        ``start`` to the end of its line, as one regex; others are left as they are."""
        line_end = self.text.find("\n", start)
        line_end = len(self.text) if line_end < 0 else line_end
        body = self.text[start:line_end]
        body = body[: _comment_start(body)]
        if not uses_algebra(body):
            return
        if _CONTINUED.match(self.text, line_end + 1):
            raise self.error(
                "a terminal with & or ~ is one line with no alternatives below it", line_end + 1
            )
        where = "a terminal with & or ~"
        try:
            regex = combined_regex(
                body, lambda word, offset: self.literal_regex(word, start + offset, where)
            )
        except AlgebraError as error:
            raise self.error(error.message, start + error.offset) from None
        self.copy(start)
        self.emit(f" /{regex}/", start)
        self.position = start + len(body)

    def literal_regex(self, word: str, offset: int, where: str) -> str:
        """A string or regex literal, or a terminal defined as one, as the body of a
        regex; ``where`` names the construct for errors."""
        if word[0] not in '"/':
            if word not in self.one_literal_terminals:
                raise self.error(
                    f"{word} in {where} must be a terminal defined in this grammar as one "
                    "string or regex",
                    offset,
                )
            return self.literal_regex(self.one_literal_terminals[word], offset, where)
        if word[0] == '"':
            if word.endswith("i"):
                raise self.error(f"case-insensitive strings in {where} are not supported", offset)
            try:
                return regex_text(eval_escaping(word[1:-1]).replace("\\\\", "\\"))
            except GrammarError:
                raise self.error(f"invalid string {word[:40]}", offset) from None
        body, flags = word[1 : word.rindex("/")], word[word.rindex("/") + 1 :]
        if set(flags) - set("sm"):
            raise self.error(f"regex flags {flags!r} in {where} are not supported", offset)
        return f"(?{flags}:{body})" if flags else body

    def item(self, end: int) -> None:
        """A complete item a count can follow."""
        self.atom = len(self.pieces)
        self.copy(end)

    def string(self, string: re.Match[str]) -> None:
        if string.group() in ('""', '""i'):
            self.atom = len(self.pieces)
            self.emit("()", self.position)
            self.position = string.end()
        else:
            self.item(string.end())

    def name(self, name: re.Match[str]) -> None:
        word = name.group()
        self.atom = len(self.pieces)
        if "-" in word:
            self.dashed_names.setdefault(word, self.position)
            self.emit(word.replace("-", "_"), self.position, verbatim=True)
            self.position = name.end()
        else:
            self.plain_names.add(word)
            self.copy(name.end())

    def punctuation(self, char: str) -> None:
        if char in "([":
            self.groups.append(len(self.pieces))
            self.atom = None
        elif char in ")]" and self.groups:
            self.atom = self.groups.pop()
            self.copy(self.position + 1)
            return
        elif char not in "?*+~":
            self.atom = None
        self.copy(self.position + 1)

    def in_rule(self, construct: str) -> None:
        if self.context != "rule":
            raise self.error(
                f"{construct} can only be used in rules (lowercase names), not in terminals "
                "or %ignore",
                self.position,
            )

    def json_schema(self) -> None:
        start = self.position
        self.in_rule("an inline JSON schema (%json)")
        if len(self.embedded) == MAX_INLINE_SCHEMAS:
            raise self.error(
                f"too many inline JSON schemas (limit MAX_INLINE_SCHEMAS = {MAX_INLINE_SCHEMAS}); "
                "join them with anyOf in one %json",
                start,
            )
        schema, end = self.json_object(start + len("%json"), "%json")
        try:
            constraint = compile_json_schema(schema)
        except ConstraintError as err:
            raise self.error(f"inline JSON schema (%json): {err.message}", start) from None
        name = f"{self.prefix}json_{len(self.embedded)}"
        self.embedded[name] = constraint
        self.embedded_at[name] = start
        self.atom = len(self.pieces)
        self.emit(name, start)  # on one line, so what follows the schema stays in the rule
        self.position = end

    def json_object(self, after: int, directive: str) -> tuple[object, int]:
        """The JSON object that follows ``directive`` at ``after``, and where it ends."""
        start = after + len(self.text[after:]) - len(self.text[after:].lstrip())
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, start)
        except json.JSONDecodeError as err:
            message = f"{directive} must be followed by a JSON object: {err.msg}"
            raise self.error(message, err.pos) from None
        if not isinstance(value, dict):
            raise self.error(f"{directive} must be followed by a JSON object", start)
        return value, end

    def options(self) -> None:
        start = self.position
        options, end = self.json_object(start + len("%llguidance"), "%llguidance")
        for key, value in options.items():
            if key not in _ACCEPTED_OPTIONS:
                raise self.error(
                    f"%llguidance option {key!r} is not supported (accepted: no_forcing, "
                    "allow_invalid_utf8: false)",
                    start,
                )
            required = _ACCEPTED_OPTIONS[key]
            if required is not None and value != required:
                raise self.error(
                    f"%llguidance option {key}: {json.dumps(value)} is not supported: outputs "
                    "here are always valid UTF-8 text",
                    start,
                )
        self.emit(re.sub(r"[^\n]", " ", self.text[start:end]), start)
        self.position = end

    def special_token(self, token: re.Match[str]) -> None:
        text = token.group()
        self.in_rule(f"the special token {text}")
        if text.startswith("<[") and text.endswith("]>"):
            raise self.error(
                f"special tokens given by id ({text}) are not supported: outputs are checked "
                "as text, and which text a token id stands for depends on the tokenizer; name "
                "the token instead (<|python_tag|>)",
                self.position,
            )
        name = self.special.setdefault(text, f"{self.prefix.upper()}SPECIAL_{len(self.special)}")
        self.special_at.setdefault(text, self.position)
        self.atom = len(self.pieces)
        self.emit(name, self.position)
        self.position = token.end()

    def count(self, count: re.Match[str]) -> None:
        low_text, comma, high_text = count.group(1), count.group(2), count.group(3)
        start = self.position
        if not low_text and not (comma and high_text):
            raise self.error("a count needs a number: {m}, {m,n}, {m,} or {,n}", start)
        low = int(low_text or 0)
        high = None if comma and not high_text else int(high_text or low_text)
        if high is not None and high < low:
            raise self.error(f"count {count.group()} has its maximum below its minimum", start)
        self.position = count.end()
        if high is not None:
            self.emit(f"~{low}" if high == low else f"~{low}..{high}", start)
            return
        if self.atom is None:
            raise self.error(f"count {count.group()} must follow what it repeats", start)
        repeated = self.pieces[self.atom :]
        self.pieces.insert(self.atom, _Piece("(", start, verbatim=False))
        self.emit(f"~{low} ", start)
        self.pieces.extend(repeated)
        self.emit("*)", start)

    def check_names(self) -> None:
        for word, offset in self.dashed_names.items():
            if word.replace("-", "_") in self.plain_names:
                raise self.error(
                    f"names {word} and {word.replace('-', '_')} are both used; '-' in names is "
                    "read as '_', so they would be the same name",
                    offset,
                )

    def dialect(self) -> Dialect:
        definitions = self.generated_definitions()
        if definitions:
            self.pieces.extend(definitions)
        starts, offset = [], 0
        for piece in self.pieces:
            starts.append(offset)
            offset += len(piece.text)
        judge_only = frozenset(_json_rule_names(self.prefix)) if self.embedded else frozenset()
        return Dialect(
            original=self.text,
            lark_text="".join(piece.text for piece in self.pieces),
            embedded=self.embedded,
            special_tokens={name: text for text, name in self.special.items()},
            judge_only=judge_only,
            _starts=starts,
            _pieces=self.pieces,
        )

    def generated_definitions(self) -> list[_Piece]:
        pieces = [_Piece("\n", len(self.text), verbatim=False)]
        for name, at in self.embedded_at.items():
            pieces.append(_Piece(f"{name}: {self.prefix}json_value\n", at, verbatim=False))
        if self.embedded:
            first = min(self.embedded_at.values())
            pieces.append(_Piece(_json_grammar(self.prefix), first, verbatim=False))
        for text, name in self.special.items():
            definition = f"{name}: /{regex_text(text)}(?#special token)/\n"
            pieces.append(_Piece(definition, self.special_at[text], verbatim=False))
        for name, (regex, at) in self.lexemes.items():
            pieces.append(_Piece(f"{name}: /{regex}/\n", at, verbatim=False))
        return pieces if len(pieces) > 1 else []


def _comment_start(line: str) -> int:
    """Where a ``//`` or ``#`` comment starts in a line (outside literals), or its length."""
    starts = (i for i in outside_literals(line) if line.startswith(("//", "#"), i))
    return next(starts, len(line))


def _made_lazy(regex: str) -> str | None:
    """``regex`` with its one repeat of varying count made lazy (``*`` -> ``*?``);
    None if it has several. Read on the regex's text: escapes and classes are skipped."""
    repeats: list[tuple[int, bool]] = []  # (offset after the quantifier, already lazy)
    index, in_class = 0, False
    while index < len(regex):
        char = regex[index]
        counted = _COUNTED.match(regex, index) if char == "{" and not in_class else None
        if char == "\\":
            index += 2
        elif in_class:
            in_class = char != "]"
            index += 1
        elif char == "[":
            in_class = True
            index += 1 + regex.startswith("^", index + 1)
            index += regex.startswith("]", index)  # a leading "]" is a member
        elif char == "(" and regex.startswith("?", index + 1):
            index += 2  # (?:, (?P<name>, (?=: not a quantifier
        elif char in "*+?" or (counted and counted.group(2) and counted[1] != counted[3]):
            index = counted.end() if counted else index + 1
            repeats.append((index, regex.startswith("?", index)))
            index += regex.startswith(("?", "+"), index)
        else:
            index = counted.end() if counted else index + 1
    if len(repeats) > 1:
        return None
    if not repeats or repeats[0][1]:
        return regex
    return regex[: repeats[0][0]] + "?" + regex[repeats[0][0] :]


def _free_prefix(text: str) -> str:
    """A prefix for generated names that no word of the grammar starts with."""
    words = {word.lower() for word in _PREFIX_WORDS.findall(text)}
    number = 0
    prefix = "llg_"
    while any(word.startswith(prefix) for word in words):
        prefix = f"llg{number}_"
        number += 1
    return prefix


_JSON_RULES = (
    "json_value",
    "json_scalar",
    "json_object",
    "json_members",
    "json_member",
    "json_array",
    "json_items",
    "json_item",
    "json_space",
)


def _json_rule_names(prefix: str) -> list[str]:
    return [prefix + name for name in _JSON_RULES]


def _json_grammar(prefix: str) -> str:
    """Any JSON value, with JSON's whitespace between its tokens (the judge's placeholder)."""
    return _GENERIC_JSON.replace("p_", prefix).replace("P_", prefix.upper())


_GENERIC_JSON = r"""p_json_value: p_json_object | p_json_array | p_json_scalar
p_json_scalar: P_JSON_STRING | P_JSON_NUMBER | "true" | "false" | "null"
p_json_object: "{" p_json_space "}" | "{" p_json_members "}"
p_json_members: p_json_member | p_json_members "," p_json_member
p_json_member: p_json_space P_JSON_STRING p_json_space ":" p_json_item
p_json_array: "[" p_json_space "]" | "[" p_json_items "]"
p_json_items: p_json_item | p_json_items "," p_json_item
p_json_item: p_json_space p_json_value p_json_space
p_json_space: | P_JSON_SPACE
P_JSON_SPACE: /[ \t\n\r]+/
P_JSON_STRING: /"(?:[^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
P_JSON_NUMBER: /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/
"""
