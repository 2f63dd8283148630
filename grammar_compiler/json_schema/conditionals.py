"""``if``/``then``/``else`` as branches: (if and then) or (not if, and else).

The first branch is the ``if`` schema compiled like any other, so it is as
exact as the compiler is. The others are the terms of the ``if``'s
complement (``complement``), each with the ``else``. JSON Schema's
subtleties follow from that: ``if: {properties: {x: {const: 1}}}`` holds for
objects without ``x`` and for every non-object, so those get the ``then``;
its complement is the objects having an ``x`` other than 1 (a value of
another kind, another string...). Where the complement is only partly
expressible (a ``pattern`` in the ``if``), the ``else`` branches cover that
part only: a subset. Branches impossible with the rest of the schema (an
``x`` the enum beside does not list) are dropped before counting; more than
``MAX_REWRITE_BRANCHES`` make the ``if`` unenforceable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grammar_compiler.json_schema.branching import alternatives, conjoin
from grammar_compiler.json_schema.complement import Complements
from grammar_compiler.json_schema.nodes import Node, Unmergeable

if TYPE_CHECKING:
    from grammar_compiler.json_schema.normalize import Compiler


def enforce(compiler: Compiler, schema: dict, node: Node, where: str) -> Node:
    """``node`` (the rest of ``schema``) with the schema's ``if``/``then``/``else``."""
    if "if" not in schema:  # (node() passes only what the draft reads)
        return node
    if "then" not in schema and "else" not in schema:
        return node  # the if alone constrains nothing
    condition, at = schema["if"], f"{where}/if"
    passing = compiler.merge(node, compiler.node(condition, at), where)
    if "then" in schema:
        passing = compiler.merge(passing, compiler.node(schema["then"], f"{where}/then"), where)
    failing = node
    if "else" in schema:
        failing = compiler.merge(failing, compiler.node(schema["else"], f"{where}/else"), where)
    branches = [passing]
    rejected = Complements(compiler).of(condition, at)
    for term in rejected.terms:
        branch = conjoin(compiler, failing, term, where)
        if branch is not None:
            branches.append(branch)
    try:
        result = alternatives(compiler, branches, where, "if", ((schema, where),))
    except Unmergeable as problem:
        compiler.unenforceable("if", where, problem.why)
        return node
    if not rejected.exact:
        compiler.subset("if", where, "the values its if rejects can be expressed only in part")
    return result
