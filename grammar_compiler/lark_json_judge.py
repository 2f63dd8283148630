"""The judge of a Lark grammar with inline JSON schemas (``%json``).

Lark cannot hold a JSON schema, so in the judge's grammar each ``%json``
is a placeholder rule matching any JSON value (``lark_dialect``). A text
satisfies the user's grammar when some parse of it does and, in that parse,
every text a placeholder matched satisfies its schema, as ``jsonschema``
says (``compile_json_schema``'s own judge). Lark's Earley parser returns
the shared packed parse forest of all parses; this walks it and asks, for
each node, whether some derivation below it uses only placeholder texts
that pass. A placeholder's text is judged once per span however many
derivations share it. A node reached again while it is being decided
(a cycle, which only empty derivations make) counts as failing, so a doubt
never turns into a match.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import lark
from lark.exceptions import UnexpectedInput
from lark.parsers.earley_forest import SymbolNode

from grammar_compiler.canonical import JUDGE_BUDGET_S, Judge, out_of_time
from grammar_compiler.lark_writer import parse_failure, timed_text

_DECIDING = object()


def json_span_judge(parser: lark.Lark, schemas: Mapping[str, Judge]) -> Judge:
    """The judge for ``parser``'s grammar, whose rules named in ``schemas`` are ``%json``s."""

    def judge(text: str) -> str | None:
        deadline = time.monotonic() + JUDGE_BUDGET_S
        try:
            forest = parser.parse(timed_text(text, deadline))
            walk = _Walk(text, schemas, deadline)
            return None if walk.passes(forest) else walk.reason()
        except UnexpectedInput as err:
            return parse_failure(err, text)
        except RecursionError:
            return "text too deeply nested for the judge to check"
        except TimeoutError:
            return out_of_time()

    return judge


class _Walk:
    def __init__(self, text: str, schemas: Mapping[str, Judge], deadline: float) -> None:
        self.text = text
        self.schemas = schemas
        self.deadline = deadline
        self.decided: dict[int, object] = {}
        self.failures: dict[tuple[str, int, int], str] = {}

    def reason(self) -> str:
        if not self.failures:
            return "no parse of the text satisfies the grammar"
        (_, start, end), why = min(self.failures.items(), key=lambda item: item[0][1])
        return f"the JSON at positions {start}-{end} does not match its schema: {why}"

    def passes(self, root: SymbolNode) -> bool:
        """Whether some derivation of ``root`` has only passing placeholder texts.

        Iterative (a long text makes a deep forest): each node is expanded,
        then decided once its children are.
        """
        stack: list[tuple[object, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if not isinstance(node, SymbolNode) or (id(node) in self.decided and not expanded):
                continue
            if time.monotonic() > self.deadline:
                raise TimeoutError
            name = None if node.is_intermediate else node.s.name
            if name in self.schemas:
                self.decided[id(node)] = self.placeholder_passes(name, node)
            elif not expanded:
                self.decided[id(node)] = _DECIDING
                stack.append((node, True))
                stack.extend(
                    (child, False) for packed in node.children for child in packed.children
                )
            else:
                self.decided[id(node)] = any(
                    all(self.outcome(child) for child in packed.children)
                    for packed in node.children
                )
        return self.outcome(root)

    def outcome(self, node: object) -> bool:
        if not isinstance(node, SymbolNode):
            return True  # a token: the parse already matched it
        return self.decided.get(id(node)) is True

    def placeholder_passes(self, name: str, node: SymbolNode) -> bool:
        key = (name, node.start, node.end)
        if key in self.failures:
            return False
        why = self.schemas[name](self.text[node.start : node.end])
        if why is not None:
            self.failures[key] = why
        return why is None
