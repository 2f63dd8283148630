"""Direct left recursion is written for xgrammar as repetition, with the same texts."""

from __future__ import annotations

import xgrammar as xgr

from grammar_compiler import compile_grammar
from grammar_compiler.cfg_tree import Choice, Grammar, Ref, Repeat, Sequence, Text
from grammar_compiler.left_recursion import without_direct_left_recursion

_CHARACTERS = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def _accepts(ebnf: str, text: str) -> bool:
    matcher = xgr.GrammarMatcher(
        _CHARACTERS.compile_grammar(ebnf), terminate_without_stop_token=True
    )
    return matcher.accept_string(text) and matcher.is_terminated()


def test_a_left_recursive_rule_becomes_its_base_then_its_tails_repeated() -> None:
    expr = Choice(
        (
            Sequence((Ref("expr"), Text("+"), Ref("term"))),
            Ref("expr"),  # adds no text
            Ref("term"),
            Sequence((Ref("expr"), Text("-"), Ref("term"))),
        )
    )
    grammar = Grammar({"expr": expr, "term": Text("x")}, "expr")
    rewritten = without_direct_left_recursion(grammar).rules["expr"]
    tails = Choice((Sequence((Text("+"), Ref("term"))), Sequence((Text("-"), Ref("term")))))
    assert rewritten == Sequence((Ref("term"), Repeat(tails, 0, None)))


def test_rules_without_a_base_or_without_left_recursion_stay() -> None:
    right = Choice((Sequence((Text("a"), Ref("r"))), Text("a")))
    only_recursive = Sequence((Ref("loop"), Text("b")))
    grammar = Grammar({"r": right, "loop": only_recursive}, "r")
    assert without_direct_left_recursion(grammar).rules == grammar.rules


def test_a_lark_expression_grammar_means_the_same_without_left_recursion() -> None:
    lark_text = r"""
start: expr
expr: expr "+" term | expr "*" term | term
term: NUMBER | "(" expr ")" | term "!"
NUMBER: /[0-9]+/
"""
    constraint = compile_grammar(lark_text, "lark")
    lines = constraint.value.splitlines()
    assert (
        "r_rule_expr ::= r_rule_term (r_terminal_PLUS r_rule_term | r_terminal_STAR r_rule_term)*"
        in lines
    )
    term_base = "(r_terminal_NUMBER | r_terminal_LPAR r_rule_expr r_terminal_RPAR)"
    assert f"r_rule_term ::= {term_base} r_terminal_BANG*" in lines
    good = ["1", "1+2", "1+2*3!", "(1+2)!*3", "12!!+(3*(4+5))"]
    bad = ["", "+1", "1+", "1!+*2", "(1+2", "1+2)"]
    for text in good:
        assert _accepts(constraint.value, text), text
        assert constraint.judge(text) is None, text
    for text in bad:
        assert not _accepts(constraint.value, text), text
        assert constraint.judge(text) is not None, text
