"""The official JSON-Schema-Test-Suite, draft-04, draft-07 and 2020-12, against the compiler.

Every schema of those drafts (``optional/`` and ``optional/format/`` included)
is either compiled or refused with a ``ConstraintError`` naming a keyword
that constrains instances in that draft; when it compiles, every instance the
suite marks invalid is rejected by xgrammar running the compiled grammar on
the instance written as the service writes JSON. An invalid instance
accepted is a soundness bug, and fails the test of its file. The rules, and
what counts as an acceptable refusal, are in ``bench.schema_suite``.

No case is skipped. The suite's remote references and custom metaschemas
(``http://localhost:1234/...``) are never fetched: the compiler has to refuse
them (naming ``$ref``, or saying the ``$schema`` is unsupported) or compile
soundly without them.

The suite comes from the ``jsonschema`` source distribution, fetched into
``.cache/json-schema-test-suite`` by ``scripts/setup.sh``. The share of the
valid instances that the compiled grammars accept is printed per draft
(``test_valid_instance_coverage_per_draft``) and recorded by
``python -m bench.schema_coverage``.
"""

from __future__ import annotations

import functools

import pytest

from bench.json_grammar import raw_compiler
from bench.schema_suite import DRAFTS, SUITE_DIR, CaseOutcome, draft_summary, load_cases, run_case

MIN_CASES_PER_DRAFT = 150
"""The suite has about 200 (draft-04) to 440 (2020-12): fewer means a broken fetch."""
MIN_VALID_ACCEPTED_SHARE = 0.75
"""Below this share of a draft's valid instances accepted, a change made the grammars
narrower than they need to be: 53-58 % while a schema without "type" generated only the
kinds its keywords describe, 80-83 % since it allows every kind (the rest: formats, undeclared
members and extra items that strict generation leaves out, property order, bignums)."""


def _files() -> list[tuple[str, str]]:
    found = []
    for draft in DRAFTS:
        directory = SUITE_DIR / draft.directory
        if directory.is_dir():
            found += [
                (draft.directory, str(p.relative_to(directory))) for p in directory.rglob("*.json")
            ]
    return sorted(found)


_DRAFTS = {draft.directory: draft for draft in DRAFTS}


@functools.cache
def _outcomes(directory: str, file: str) -> tuple[CaseOutcome, ...]:
    compiler = _compiler()
    return tuple(run_case(case, compiler) for case in load_cases(_DRAFTS[directory], file))


@functools.cache
def _compiler():
    return raw_compiler()


@pytest.mark.parametrize(("directory", "file"), _files(), ids=lambda value: value)
def test_schema_is_compiled_soundly_or_refused_for_a_constraining_keyword(
    directory: str, file: str
) -> None:
    failures = [line for outcome in _outcomes(directory, file) for line in outcome.failures]
    assert not failures, "\n".join(failures)


def test_valid_instance_coverage_per_draft(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = [outcome for key in _files() for outcome in _outcomes(*key)]
    summary = draft_summary(outcomes)
    with capsys.disabled():
        print("\nJSON-Schema-Test-Suite (strict):")
        for directory, row in summary.items():
            print(
                f"  {directory:>12}: {row['compiled']}/{row['schemas']} schemas compiled, "
                f"{row['valid_accepted']}/{row['valid_instances']} valid instances accepted "
                f"({_percent(row['valid_accepted_share'])}), "
                f"{row['invalid_accepted']} invalid instances accepted"
            )
    for directory, row in summary.items():
        assert row["schemas"] >= MIN_CASES_PER_DRAFT, (
            f"{SUITE_DIR / directory} holds {row['schemas']} schemas: run scripts/setup.sh"
        )
        assert row["valid_accepted"] <= row["valid_instances"]
        assert row["valid_accepted_share"] >= MIN_VALID_ACCEPTED_SHARE, (directory, row)


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"
