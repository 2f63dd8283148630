"""bench.typescript_fuzz: tsc's verdicts reach the right case and text, and a run completes.

The fuzzer batches many cases into one file for ``tsc``; a diagnostic
mapped to the wrong case or text would report a disagreement that is not
there, or hide one that is.
"""

from __future__ import annotations

import random

from bench.typescript_fuzz import _Case, _Drawer, _judged_by_tsc, _mutants, main


def test_tsc_verdicts_map_back_to_their_case_and_text() -> None:
    cases = [
        _Case("type Root = 1 | 2;", ["1", "3", "2"], 3, [True, False, True]),
        _Case("type Root = Missing;", ["1"], 1, [True]),
        _Case(
            'interface A { a: "x" }\ntype Root = A[];',
            ['[{"a": "x"}]', '[{"a": 1}]'],
            1,
            [True, False],
        ),
    ]
    refused, broken = _judged_by_tsc(cases)
    assert refused[0] == {1}
    assert refused[2] == {1}
    assert broken[0] == "" and broken[2] == ""
    assert "Missing" in broken[1]


def test_drawn_sources_name_root_and_mutants_differ_from_their_text() -> None:
    rng = random.Random(3)
    sources = [_Drawer(rng).draw() for _ in range(20)]
    assert all(source.splitlines()[-1].startswith("type Root = ") for source in sources)
    text = '{"id": [1, "a"], "n": null}'
    mutants = _mutants(text, rng, 10)
    assert mutants and text not in mutants


def test_a_small_run_finds_nothing_unsound() -> None:
    assert main(["--seed", "2", "--types", "6", "--walks", "3", "--mutants", "4"]) == 0
