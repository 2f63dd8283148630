"""The runs of ``%ignore`` tokens that may stand before each token of a Lark grammar.

Lark's lexer skips an ignored token by its longest match; a grammar over
characters lets it end wherever it matches. They agree when no complete
ignored token can be continued by the first character of what follows it
(``token_edges``). Often that holds for every pair (``%ignore WS``), and the
run before every token is one rule, ``(I1 | I2 | ...)*``.

A line comment, ``/#[^\\n]*/`` or ``/\\/\\/[^\\n]*/``, is the usual exception:
any character but a newline would continue it, so a name written right
after it would belong to it. Rather than refuse such grammars, the runs are
written as a small automaton whose state is the last ignored token: a token
may follow it only if it cannot continue it, and the run may end before a
token (or the end of the text) only if that token cannot continue it
either. An ``x+`` token after a comment (``WS``) is cut to the matches that
start with a character that ends the comment (a newline), so
``# note\\n  name`` stays writable. Each run written is one Lark reads the
same way, so the outputs are a subset of what the judge accepts; what is
left out is a comment touching what follows it, which Lark would read as
part of the comment anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from grammar_compiler.cfg_tree import (
    MAX_CODE_POINT,
    CharSet,
    Node,
    Ref,
    Repeat,
    Text,
    choice_of,
    merge_ranges,
    sequence_of,
)
from grammar_compiler.code_points import complement, intersect
from grammar_compiler.token_edges import (
    Ranges,
    continuing_characters,
    first_characters,
    overlap,
    positive_ranges,
    starting_with,
)

EVERY_CHARACTER: Ranges = ((0, MAX_CODE_POINT),)
"""What may start a follower whose first characters are not known (embedded JSON)."""


class IgnoredRuns:
    """Writes the run rules into ``rules`` and names the one before each follower.

    ``terminal_rule(name)`` is the rule matching one ignored token;
    ``bodies[name]`` its texts as a tree; ``prefix_free`` the lazy terminals,
    which nothing continues.
    """

    SIMPLE = "ignored"

    def __init__(
        self,
        ignored: list[str],
        bodies: Mapping[str, Node],
        terminal_rule: Callable[[str], str],
        prefix_free: set[str],
        rules: dict[str, Node],
    ) -> None:
        self.ignored = ignored
        self.bodies = bodies
        self.terminal_rule = terminal_rule
        self.rules = rules
        self.continuing = {
            name: () if name in prefix_free else continuing_characters(bodies[name])
            for name in ignored
        }
        self.first = {name: first_characters(bodies[name]) for name in ignored}
        self._runs: dict[frozenset[str], str] = {}

    def rule_before(self, follower: str | None, first: Ranges | None) -> str:
        """The run rule before terminal ``follower`` starting with ``first``
        (``None``, ``None``: before the end of the text, which nothing continues)."""
        may_end = frozenset(
            name
            for name in self.ignored
            if first is None or not self._continues(name, follower, first)
        )
        if may_end == frozenset(self.ignored) and self._all_transitions_free():
            if self.SIMPLE not in self.rules:
                options = [Ref(self.terminal_rule(name)) for name in self.ignored]
                self.rules[self.SIMPLE] = Repeat(choice_of(options), 0, None)
            return self.SIMPLE
        known = self._runs.get(may_end)
        if known is None:
            known = self._runs[may_end] = self._write_run(may_end, f"ignored:{len(self._runs)}")
        return known

    def preceding(self, follower: str | None, body: Node, first: Ranges) -> Node:
        """``body`` (terminal ``follower``'s rule, or embedded JSON: None) after the
        ignored run that may stand before it.

        Where only some of the follower's first characters would continue an
        ignored token (``/[a ]/`` after ``%ignore / +/``), the run before it
        would be cut for all of them; the matches that start with one of the
        others are written apart, after a run that may end anywhere
        (``" a"``: a space skipped, then ``a``).
        """
        whole = sequence_of([Ref(self.rule_before(follower, first)), body])
        if follower is None:
            return whole
        continuing = [span for name in self.ignored for span in self.continuing[name]]
        ending = intersect(first, complement(merge_ranges(continuing)))
        if not ending or ending == first:
            return whole
        cut = starting_with(self.bodies[follower], ending)
        if cut is None:
            return whole
        return choice_of([whole, sequence_of([Ref(self.rule_before(follower, ending)), cut])])

    def _continues(self, before: str, after: str | None, first: Ranges) -> bool:
        """Whether a complete ``before`` token could run on into ``after``."""
        if before == after and _runs_on_itself(self.bodies[before]):
            return False  # a run of x+ is one longer x+: Lark and a grammar agree
        return overlap(self.continuing[before], first) is not None

    def _all_transitions_free(self) -> bool:
        return all(
            not self._continues(before, after, self.first[after])
            for before in self.ignored
            for after in self.ignored
        )

    def _step(self, before: str, after: str) -> Node | None:
        """``after`` as it may follow ``before``: whole, cut to the matches that start
        with a character ending ``before`` (an ``x+`` token), or not at all."""
        if not self._continues(before, after, self.first[after]):
            return Ref(self.terminal_rule(after))
        body = self.bodies[after]
        if not (_runs_on_itself(body) and body.low <= 1 and isinstance(body.item, CharSet)):
            return None
        characters = positive_ranges(body.item)
        ending = intersect(characters, complement(self.continuing[before]))
        if not ending:
            return None
        return sequence_of(
            [CharSet(ending), Repeat(CharSet(characters), 0, None)]  # x+ from an ending character
        )

    def _write_run(self, may_end: frozenset[str], prefix: str) -> str:
        """Rules ``prefix`` (the run) and ``prefix:after:I`` (the run so far ended with I)."""
        steps = {
            before: {after: self._step(before, after) for after in self.ignored}
            for before in self.ignored
        }
        finishing = set(may_end)
        changed = True
        while changed:  # the states from which the run can still end here
            changed = False
            for before in self.ignored:
                if before not in finishing and any(
                    step is not None and after in finishing for after, step in steps[before].items()
                ):
                    finishing.add(before)
                    changed = True

        def state(name: str) -> str:
            return f"{prefix}:after:{name}"

        for before in sorted(finishing):
            options: list[Node] = [Text("")] if before in may_end else []
            for after, step in steps[before].items():
                if step is not None and after in finishing:
                    options.append(sequence_of([step, Ref(state(after))]))
            self.rules[state(before)] = choice_of(options)
        starts = [
            sequence_of([Ref(self.terminal_rule(name)), Ref(state(name))])
            for name in self.ignored
            if name in finishing
        ]
        self.rules[prefix] = choice_of([Text(""), *starts])
        return prefix


def _runs_on_itself(body: Node) -> bool:
    return isinstance(body, Repeat) and body.high is None
