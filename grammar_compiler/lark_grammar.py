r"""Lark grammars (as vLLM and mistral.rs users write them) compiled for xgrammar.

mistral.rs reads Lark with llguidance, so its users write llguidance's
dialect: ``lark_dialect`` first rewrites that into plain Lark (``%json``
schemas, special tokens, ``expr{m,n}`` counts, ``""``, dashed names,
``%llguidance`` options) and records what Lark cannot hold. Then the
``lark`` library reads the grammar: its Earley parser over the user's text is
the judge, and the rules and terminals it compiles (EBNF operators,
templates, ``%import`` and ``%override`` already expanded) are translated into
the grammar tree that becomes xgrammar EBNF. Before that, lark's own grammar
parser is run alone, to find mistakes with their line and column, to refuse
imports other than lark's ``common`` library (lark would otherwise read
grammar files from disk), and to enforce the limits before lark expands
anything (``lark_size``): lark multiplies out inline alternatives, so
``("a"|"b") ("c"|"d")`` is four alternatives, and its grammar analysis is
cubic in the length of an alternative, so ``MAX_ALTERNATIVES``,
``MAX_SEQUENCE`` and ``MAX_EXPANDED_SYMBOLS`` are checked on the expansion.
Errors are located in the user's text (``Dialect.relocated``).

Meaning. xgrammar has no lexer, so a Lark grammar is read as a grammar over
characters:

* A terminal matches exactly the texts its pattern fully matches; rules are
  sequences of terminals and rules, as Lark compiled them. Rule and terminal
  priorities, aliases, ``?``/``!``/``_`` prefixes only shape Lark's parse tree
  and are ignored.
* ``%ignore`` terminals may occur any number of times before every terminal
  (and inline JSON value) and after the last one, which is where Lark's
  dynamic lexer skips them: each terminal ``T`` becomes ``ignored T`` and the
  start rule ``start ignored``, with ``ignored ::= (I1 | I2 | ...)*``. Lark
  skips the longest ignored token; where the next token could extend an
  ignored one (``/#[^\n]*/`` before a name), the run is written so that the
  ignored token is followed only by what ends it (``ignored_runs``).
* Regexes are Python regexes read with ``re.ASCII`` (``\d`` is ``[0-9]``,
  ``\w`` is ``[A-Za-z0-9_]``), as the regex endpoint reads them; the judge
  parses with the same flag (``g_regex_flags``), so both agree. They go
  through ``compile_regex``, so everything it rejects is rejected here too,
  located at the terminal. Strings with the ``i`` flag match every ASCII case
  variant (``"select"i``), exactly what Python's ``re.ASCII | re.IGNORECASE``
  matches.
* A terminal that can match the empty string (``/(.|\n)*/``, common in
  llguidance grammars) means "nothing or a non-empty match"; Lark refuses
  such terminals, so the judge gets them in that form (``nullable_terminals``).
* A lazy quantifier makes the terminal end at the first place it can, as
  llguidance's lexer and Lark's (``re``) both read ``P X*? S``: that is
  translated exactly, as the automaton of the shortest match
  (``lazy_terminal``); other uses are refused. lark's ``common.ESCAPED_STRING``
  (lookbehind) and ``common.C_COMMENT`` are replaced by exact equivalents
  written without them, also inside a terminal built of them
  (``VALUE: SIGNED_NUMBER | ESCAPED_STRING``: lark joins their regexes). Anchors are rejected:
  inside a text ``^`` and ``$`` hold only at its ends, which a terminal cannot
  know.
* A special token (``<think>``) is written as a rule the decoder narrows to
  that token (``special_tokens``); its text is what the judge sees.
* An inline JSON schema is the schema's own grammar, embedded verbatim
  (``embedded_ebnf``), judged by ``lark_json_judge``.

Rejected by name: regex flags ``i``, ``u``, ``l``; ``%declare`` (a terminal
with no pattern); ``%import`` of anything but ``common``; the llguidance
extensions ``lark_dialect`` names. The judge uses lark's
``dynamic_complete`` lexer, which tries every length of every terminal match,
so it agrees with the character-level reading for ordinary terminals; a regex
whose alternatives are prefixes of later ones (``/a|ab/``) is the known
exception: Lark never lexes ``ab`` with it, xgrammar does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lark
import regex as regex_module
from lark import Token, Tree
from lark.exceptions import GrammarError, LarkError, UnexpectedCharacters, UnexpectedInput
from lark.lexer import Pattern, PatternRE, PatternStr, TerminalDef

# Lark's parser for grammar texts: private, but the only way to get every
# token of the user's grammar with its position (lark is pinned).
from lark.load_grammar import _get_parser as _grammar_parser

from grammar_compiler.canonical import CanonicalConstraint, Judge
from grammar_compiler.cfg_tree import (
    MAX_ALTERNATIVES,
    MAX_CODE_POINT,
    MAX_JUDGE_RULES,
    MAX_NESTING,
    MAX_RULES,
    CharSet,
    Grammar,
    Node,
    Ref,
    Sequence,
    Text,
    Verbatim,
    caseless,
    check_output_size,
    check_size,
    check_unit_cycles,
    choice_of,
    sequence_of,
)
from grammar_compiler.embedded_ebnf import embedded_ebnf
from grammar_compiler.errors import ConstraintError
from grammar_compiler.ignored_runs import EVERY_CHARACTER, IgnoredRuns
from grammar_compiler.lark_dialect import Dialect, read_dialect
from grammar_compiler.lark_json_judge import json_span_judge
from grammar_compiler.lark_size import CAP, Estimate, Size
from grammar_compiler.lark_writer import EARLEY_OPTIONS, parser_judge
from grammar_compiler.lazy_terminal import is_lazy, lazy_rules, lazy_shape_problem
from grammar_compiler.nullable_terminals import CharacterLark, UnwritableTerminal
from grammar_compiler.regex import (
    compile_regex,
    lookaround_in,
    lookarounds_stay_inside,
    python_spelling,
)
from grammar_compiler.regex_tree import regex_tree
from grammar_compiler.special_tokens import special_token_rule
from grammar_compiler.token_edges import first_characters
from grammar_compiler.tree_constraint import checked_ebnf

try:
    from re import _parser as _regex_parser
except ImportError:  # Python 3.10
    import sre_parse as _regex_parser

IMPORTABLE = "common"
MAX_SEQUENCE = 32
"""Most symbols in one alternative once lark expands it; lark's analysis is cubic in this."""
MAX_EXPANDED_SYMBOLS = 20_000
"""Most symbols in all alternatives of all rules once lark expands them."""
_REJECTED_REGEX_FLAGS = {"u": "unicode", "l": "locale"}

# Lark's common terminals whose regexes rely on lookbehind (and laziness), keyed
# by the regex lark builds for them, with regexes that match the same tokens.
_EQUIVALENTS = {
    # A string ends at the first quote not escaped by an odd run of backslashes.
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:[^"\\\n]|\\[^\n])*"',
    # A comment ends at the first "*/".
    "/\\*(.|\n)*?\\*/": r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/",
}


def compile_lark(text: str, start: str = "start") -> CanonicalConstraint:
    """Validate a Lark grammar; return its xgrammar EBNF and a judge that parses with lark.

    Raises:
        ConstraintError: the grammar is invalid, untranslatable or over a limit,
            with line and column wherever lark or the check knows them.
    """
    check_size(text)
    dialect = read_dialect(text)
    try:
        source = _Source(dialect.lark_text, start)
        parser = source.lark_parser()
        grammar = _Translation(parser, source, dialect).grammar()
    except ConstraintError as err:
        raise dialect.relocated(err) from None
    check_unit_cycles(grammar, shown=lambda rule: rule.removeprefix(_rule_name("")))
    check_output_size(grammar)
    return CanonicalConstraint(
        kind="ebnf",
        value=checked_ebnf(grammar),
        source_language="lark",
        judge=_judge(parser, dialect),
    )


def read_lark(text: str, start: str = "start") -> Grammar:
    """The grammar tree the EBNF is written from (tests generate sentences from it).

    An inline JSON schema's rule is ``rule:`` plus its placeholder's name in
    ``read_dialect(text).embedded``; its body is only a stand-in.
    """
    check_size(text)
    dialect = read_dialect(text)
    source = _Source(dialect.lark_text, start)
    return _Translation(source.lark_parser(), source, dialect).grammar()


def _judge(parser: lark.Lark, dialect: Dialect) -> Judge:
    if not dialect.embedded:
        return parser_judge(parser)
    return json_span_judge(
        parser, {name: schema.judge for name, schema in dialect.embedded.items()}
    )


# ---------------------------------------------------------------------------
# The grammar text, as lark's own grammar parser reads it


class _Source:
    """The user's grammar text, checked statement by statement before lark compiles it."""

    def __init__(self, text: str, start: str) -> None:
        self.text = text
        self.start = start
        self.tree = self._parse()
        self.definitions = self._definitions()
        self._check_statements()
        self._check_limits()

    def error(self, message: str, token: Token | None = None) -> ConstraintError:
        if token is None or getattr(token, "line", None) is None:
            return ConstraintError(message)
        return ConstraintError(message, line=token.line, column=token.column)

    def _parse(self) -> Tree:
        try:
            return _grammar_parser().parse(self.text + "\n", "start")
        except UnexpectedCharacters as err:
            raise ConstraintError(
                f"unexpected character {err.char!r}", line=err.line, column=err.column
            ) from None
        except UnexpectedInput as err:
            raise ConstraintError(_token_message(err), line=err.line, column=err.column) from None

    def _definitions(self) -> list[tuple[str, Token]]:
        """(kind, name token) of every rule and terminal definition, in order."""
        found = []
        for statement in self.tree.children:
            definition = _definition_in(statement)
            if definition.data == "rule":
                found.append(("rule", definition.children[1]))
            elif definition.data == "term":
                found.append(("terminal", definition.children[0]))
        return found

    def _check_statements(self) -> None:
        for statement in self.tree.children:
            if statement.data == "import":
                self._check_import(statement)
            elif statement.data == "declare":
                token = next(_tokens(statement), None)
                raise self.error(
                    "%declare is not supported: a declared terminal has no pattern to match",
                    token,
                )
        for token in _tokens(self.tree):
            if token.type == "REGEXP":
                flags = token[token.rindex("/") + 1 :]
                for flag in flags:
                    if flag in _REJECTED_REGEX_FLAGS:
                        raise self.error(
                            f"regex flag '{flag}' ({_REJECTED_REGEX_FLAGS[flag]}) is not "
                            "supported: regexes here are read with re.ASCII",
                            token,
                        )
        rules = [token for kind, token in self.definitions if kind == "rule"]
        if self.start not in rules:
            first = rules[0] if rules else None
            raise self.error(f"the grammar has no rule named {self.start!r} to start from", first)

    def _check_import(self, statement: Tree) -> None:
        path = statement.children[0]
        names_listed = len(statement.children) > 1 and isinstance(statement.children[1], Tree)
        module = path.children if names_listed else path.children[:-1]
        if path.data != "import_lib" or [str(part) for part in module] != [IMPORTABLE]:
            raise self.error(
                f"only names from lark's common library can be imported "
                f"(%import {IMPORTABLE}.NAME or %import {IMPORTABLE} (A, B))",
                path.children[0],
            )

    def _check_limits(self) -> None:
        if len(self.definitions) > MAX_RULES:
            raise self.error(
                f"too many rules and terminals (limit MAX_RULES = {MAX_RULES})",
                self.definitions[MAX_RULES][1],
            )
        deep = _too_deep(self.tree)
        if deep is not None:
            raise self.error(
                f"groups nested too deeply (limit MAX_NESTING = {MAX_NESTING})",
                next(_tokens(deep), None),
            )
        self._check_expanded_size()

    def _check_expanded_size(self) -> None:
        """Refuse what lark would expand into too much work, before it does (see lark_size)."""
        rules = [
            definition
            for definition in map(_definition_in, self.tree.children)
            if definition.data == "rule"
        ]
        templates = {
            str(rule.children[1]): Estimate().of(rule.children[-1])
            for rule in rules
            if rule.children[2].children
        }
        total = 0
        parser_rules = 0
        for rule in rules:
            name = rule.children[1]
            if str(name) in templates:
                continue  # counted where it is used
            estimate = Estimate(templates)
            size = estimate.of(rule.children[-1])
            for part in (size, *estimate.helpers):
                self._check_size(name, part)
            total += size.symbols + sum(helper.symbols for helper in estimate.helpers)
            parser_rules += 1 + len(estimate.helpers)
            if parser_rules > MAX_JUDGE_RULES:
                raise self.error(
                    f"grammar too large once lark expands its groups and repetitions: more than "
                    f"{MAX_JUDGE_RULES} rules by rule {name} (limit MAX_JUDGE_RULES = "
                    f"{MAX_JUDGE_RULES}); lark's parser set-up grows about quadratically in them",
                    name,
                )
            if total > MAX_EXPANDED_SYMBOLS:
                raise self.error(
                    f"grammar too large once lark expands its groups and repetitions: more than "
                    f"{MAX_EXPANDED_SYMBOLS} symbols by rule {name} "
                    f"(limit MAX_EXPANDED_SYMBOLS = {MAX_EXPANDED_SYMBOLS})",
                    name,
                )

    def _check_size(self, name: Token, size: Size) -> None:
        if size.alternatives > MAX_ALTERNATIVES:
            raise self.error(
                f"rule {name} has {_at_least(size.alternatives, MAX_ALTERNATIVES)} alternatives "
                f"once lark multiplies its groups out (limit MAX_ALTERNATIVES = "
                f"{MAX_ALTERNATIVES})",
                name,
            )
        if size.longest > MAX_SEQUENCE:
            raise self.error(
                f"rule {name} has an alternative of {size.longest} symbols once lark expands "
                f"it (limit MAX_SEQUENCE = {MAX_SEQUENCE}); move parts into rules of their own",
                name,
            )

    def lark_parser(self) -> CharacterLark:
        try:
            return CharacterLark(
                self.text,
                start=self.start,
                lexer="dynamic_complete",
                g_regex_flags=re.ASCII,
                import_paths=[],
                **EARLEY_OPTIONS,
            )
        except (re.error, regex_module.error) as err:
            raise self._regex_error(f"invalid regex: {err.msg}", err.pattern) from None
        except UnwritableTerminal as err:
            raise self.error(err.message, self.definition_token(err.name)) from None
        except UnexpectedInput as err:
            raise ConstraintError(_token_message(err), line=err.line, column=err.column) from None
        except (LarkError, ValueError, AssertionError) as err:
            raise self._lark_error(err) from None
        except RecursionError:
            raise ConstraintError("grammar nested too deeply for lark to compile") from None

    def _lark_error(self, err: Exception) -> ConstraintError:
        message = str(err).split("\n\n")[0].strip()
        located = re.search(r",? at line (\d+),? col(?:umn)? (\d+)", message)
        if located:
            return ConstraintError(
                message[: located.start()].strip(),
                line=int(located.group(1)),
                column=int(located.group(2)),
            )
        token = self._token_named_in(message)
        if isinstance(err, GrammarError) and "zero-width" in message:
            message = "a terminal can match the empty string, which lark refuses"
        return self.error(message, token)

    def _token_named_in(self, message: str) -> Token | None:
        """The token a lark message names: a duplicate's second definition, else its first use."""
        for quoted in re.findall(r"'([^'\s]+)'", message):
            mentions = [token for token in _tokens(self.tree) if token == quoted]
            if "more than once" in message:
                definitions = [token for _, token in self.definitions if token == quoted]
                mentions = definitions[1:] or mentions
            found = mentions[0] if mentions else self.regex_token(quoted)
            if found is not None:
                return found
        return None

    def _regex_error(self, message: str, regex: object) -> ConstraintError:
        return self.error(message, self.regex_token(str(regex)))

    def regex_token(self, regex: str) -> Token | None:
        """The ``/regex/`` literal whose text between the slashes is ``regex``, if one is."""
        for token in _tokens(self.tree):
            if token.type == "REGEXP" and token[1 : token.rindex("/")] == regex:
                return token
        return None

    def pattern_token(self, name: str, pattern: Pattern) -> Token | None:
        """Where the user wrote a terminal: its literal, else its definition, else a mention."""
        tokens = list(_tokens(self.tree))
        written = [token for token in tokens if pattern.raw is not None and token == pattern.raw]
        mentions = [token for token in tokens if token == name]
        return (
            next(iter(written), None) or self.definition_token(name) or next(iter(mentions), None)
        )

    def definition_token(self, name: str) -> Token | None:
        return next((token for _, token in self.definitions if token == name), None)


def _definition_in(statement: Tree) -> Tree:
    """The rule or terminal definition an ``%override``/``%extend`` wraps, or the statement."""
    return statement.children[0] if statement.data in ("override", "extend") else statement


def _tokens(tree: Tree) -> Iterator[Token]:
    """Every token under ``tree``, in text order, without recursion."""
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Tree):
            stack.extend(reversed(node.children))
        elif isinstance(node, Token):
            yield node


def _token_message(err: UnexpectedInput) -> str:
    token = getattr(err, "token", None)
    if token is None:
        return "unexpected end of the grammar"
    expected = set(getattr(err, "expected", ()) or ())
    shown = "end of line" if token.type == "_NL" else repr(str(token))
    if "_RPAR" in expected:
        return f"unexpected {shown}: '(' is not closed"
    if "_RBRA" in expected:
        return f"unexpected {shown}: '[' is not closed"
    if "_COLON" in expected:
        return f"expected ':' after the rule or terminal name, found {shown}"
    return f"unexpected {shown}"


def _too_deep(tree: Tree) -> Tree | None:
    """The first group nested deeper than MAX_NESTING, if any."""
    stack: list[tuple[Tree, int]] = [(tree, -1)]  # a definition's own alternatives: level 0
    while stack:
        node, depth = stack.pop()
        if node.data == "expansions":
            depth += 1
            if depth > MAX_NESTING:
                return node
        stack.extend((child, depth) for child in node.children if isinstance(child, Tree))
    return None


def _at_least(count: int, limit: int) -> str:
    return f"more than {limit}" if count >= CAP else str(count)


# ---------------------------------------------------------------------------
# Lark's compiled grammar, translated into the grammar tree


class _Translation:
    """Rules and terminals of a compiled ``lark.Lark``, as one ``Grammar``."""

    TOP = "top"

    def __init__(self, parser: CharacterLark, source: _Source, dialect: Dialect) -> None:
        self.parser = parser
        self.source = source
        self.dialect = dialect
        self.terminals: dict[str, TerminalDef] = {term.name: term for term in parser.terminals}
        self.ignored = list(parser.ignore_tokens)
        self.rules: dict[str, Node] = {}
        self.verbatim: dict[str, Verbatim] = {}
        self.bodies: dict[str, Node] = {}
        """Each terminal's texts as a tree without references, for ``token_edges``."""
        self.prefix_free: set[str] = set()
        """Lazy terminals: no match of theirs continues into a longer one."""
        self.preceded: dict[str, tuple[str | None, Node]] = {}
        """Rules of a token (or embedded JSON: None) after ignored text, written last."""

    def grammar(self) -> Grammar:
        expansions: dict[str, list[Node]] = {}
        for rule in self.parser.rules:
            origin = rule.origin.name
            if origin in self.dialect.judge_only or origin in self.dialect.embedded:
                continue
            symbols = [self.symbol(symbol) for symbol in rule.expansion]
            body = sequence_of(symbols)
            expansions.setdefault(_rule_name(origin), []).append(body)
        for name, options in expansions.items():
            self.rules[name] = choice_of(options)
        for index, (name, schema) in enumerate(self.dialect.embedded.items()):
            self.rules[_rule_name(name)] = _SOME_TEXT
            self.verbatim[_rule_name(name)] = embedded_ebnf(schema, f"json{index}.")
        start = Ref(_rule_name(self.source.start))
        if self.ignored:
            self._write_ignored_runs()
            end_run = self.runs.rule_before(None, None)
            self.rules[self.TOP] = Sequence((start, Ref(end_run)))
        else:
            self.rules[self.TOP] = start
        return Grammar(self.rules, self.TOP, self.verbatim)

    def symbol(self, symbol: lark.grammar.Symbol) -> Node:
        if not symbol.is_term:
            rule = Ref(_rule_name(symbol.name))
            if symbol.name in self.dialect.embedded and self.ignored:
                # Lark skips ignored text before the JSON's first token, as before any token.
                before = f"before:{_rule_name(symbol.name)}"
                self.preceded[before] = (None, rule)
                return Ref(before)
            return rule
        body = self.terminal(symbol.name)
        if not self.ignored:
            return Ref(body)
        token = f"token:{symbol.name}"
        self.preceded[token] = (symbol.name, Ref(body))
        return Ref(token)

    def _write_ignored_runs(self) -> None:
        """Each token (and embedded JSON) after the run of ignored tokens that may
        stand before it (``ignored_runs``)."""
        for name in self.ignored:
            self.terminal(name)
        self.runs = IgnoredRuns(
            self.ignored, self.bodies, self.terminal, self.prefix_free, self.rules
        )
        for rule, (follower, body) in self.preceded.items():
            first = EVERY_CHARACTER if follower is None else first_characters(self.bodies[follower])
            self.rules[rule] = self.runs.preceding(follower, body, first)

    def terminal(self, name: str) -> str:
        """The name of the rule matching terminal ``name`` alone, defined on first use."""
        rule = f"terminal:{name}"
        if name in self.bodies:
            return rule
        special = self.dialect.special_tokens.get(name)
        if special is not None:
            self.bodies[name] = self.rules[rule] = Text(special)
            self.verbatim[rule] = special_token_rule(special)
            return rule
        definition = self.terminals.get(name)
        if definition is None:
            raise self.source.error(
                f"terminal {name} has no pattern to match", self.source.definition_token(name)
            )
        self.bodies[name] = self.pattern(definition)
        self.rules[rule] = self.bodies[name]
        if name in self.prefix_free:
            self.rules[rule] = self.lazy(name, self.bodies[name])
        return rule

    def pattern(self, definition: TerminalDef) -> Node:
        """The texts of the terminal as a tree, read from the pattern the user wrote
        (not the non-empty one the judge's lexer is given: ``nullable_terminals``)."""
        pattern = self.parser.original_patterns.get(definition.name, definition.pattern)
        if isinstance(pattern, PatternStr):
            return caseless(pattern.value) if "i" in pattern.flags else Text(pattern.value)
        return self.regex(definition, pattern)

    def regex(self, definition: TerminalDef, pattern: PatternRE) -> Node:
        token = self.source.pattern_token(definition.name, pattern)
        value = pattern.value
        for lookbehind_or_lazy, equivalent in _EQUIVALENTS.items():  # also inside terminals
            value = value.replace(lookbehind_or_lazy, equivalent)  # built of them (A | B)
        # lark's lexer reads terminals with the regex package: (?<name>...) and POSIX classes too
        regex = python_spelling(PatternRE(value, pattern.flags).to_regexp())
        lookaround = lookaround_in(regex)
        if lookaround is not None and not _lookarounds_stay_inside(regex):
            raise self.source.error(
                f"terminal {_shown(definition.name)} uses a {lookaround} that can reach past "
                "the token, where lark's lexer reads the next token's text (allowed: one no "
                r"longer than the text beside it in the terminal, outside groups, as in (?!\d)\w+)",
                token,
            )
        try:
            translated = compile_regex(regex)
        except ConstraintError as err:
            raise self.source.error(
                f"terminal {_shown(definition.name)}: {err.message}", token
            ) from None
        if _has_anchor(regex):
            raise self.source.error(
                f"terminal {_shown(definition.name)} uses an anchor (^, $, \\A, \\Z, \\b, "
                "\\B), which lark's lexer and a grammar read differently",
                token,
            )
        if is_lazy(regex):
            problem = lazy_shape_problem(regex)
            if problem is not None:
                raise self.source.error(f"terminal {_shown(definition.name)}: {problem}", token)
            self.prefix_free.add(definition.name)
        return regex_tree(translated)

    def lazy(self, name: str, tree: Node) -> Node:
        """The lazy terminal's rules (``lazy_terminal``); returns a reference to the first."""
        try:
            start, rules = lazy_rules(tree, f"lazy:{name}:")
        except ConstraintError as err:
            raise self.source.error(
                f"terminal {_shown(name)}: {err.message}",
                self.source.pattern_token(name, self.terminals[name].pattern),
            ) from None
        self.rules.update(rules)
        return Ref(start)


def _rule_name(name: str) -> str:
    return f"rule:{name}"


# What size analyses see for an embedded JSON value (its EBNF is verbatim): some text.
_SOME_TEXT = CharSet(((0, MAX_CODE_POINT),))


def _shown(name: str) -> str:
    if name.startswith("__ANON"):
        return "(an anonymous regex)"
    return "(an anonymous %ignore pattern)" if name.startswith("__IGNORE") else name


def _lookarounds_stay_inside(regex: str) -> bool:
    try:
        return lookarounds_stay_inside(regex)
    except re.error:  # compile_regex reports it, located
        return True


def _has_anchor(regex: str) -> bool:
    """Whether ``regex`` (which ``compile_regex`` accepted) has an anchor anywhere."""
    stack = [_regex_parser.parse(regex, re.ASCII)]
    while stack:
        items = stack.pop()
        for op, av in items:
            if op is _regex_parser.AT:
                return True
            stack.extend(_sub_patterns(op, av))
    return False


def _sub_patterns(op: object, av: object) -> list:
    if op is _regex_parser.BRANCH:
        return list(av[1])
    if op is _regex_parser.SUBPATTERN:
        return [av[-1]]
    if op in (_regex_parser.MAX_REPEAT, _regex_parser.MIN_REPEAT):
        return [av[2]]
    if op in (_regex_parser.ASSERT, _regex_parser.ASSERT_NOT):
        return [av[1]]
    return []
