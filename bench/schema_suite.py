"""The official JSON-Schema-Test-Suite against the compiler and xgrammar.

The suite (``json-schema-org/JSON-Schema-Test-Suite``, the copy shipped in
the ``jsonschema`` source distribution, fetched into ``SUITE_DIR`` by
``scripts/fetch_json_schema_test_suite.sh``) lists schemas with instances
marked valid or invalid. Each schema of draft-04, draft-07 and 2020-12
(``optional/`` and ``optional/format/`` included) is compiled as the service
compiles it (strict), declaring its draft the way a user would (a
``$schema`` added where the suite leaves it implicit). Then:

* refused: the refusal must name a keyword that constrains instances in that
  draft (one ``jsonschema`` validates, plus draft-04's exclusive bounds; a
  ``format`` only if the draft defines it), present where the message says;
  or say that no value is possible when the suite marks every instance
  invalid; or, for a schema whose ``$schema`` is a custom metaschema only a
  network fetch could read, say the ``$schema`` is unsupported. Any other
  refusal (a whole draft refused, a limit, an internal error) is a failure;
* compiled: every instance the suite marks invalid must be rejected by
  xgrammar running the compiled grammar, in both layouts xgrammar writes
  (``", "``/``": "`` separators, and compact as for enum/const values); an
  accepted one is a soundness failure. Valid instances accepted (in either
  layout) are counted: the share accepted is the coverage figure.

Nothing is fetched: remote ``$ref`` targets and custom metaschemas
(``http://localhost:1234/...``, the suite's "remotes") are not available, so
the compiler must refuse them or compile without them soundly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import xgrammar as xgr

from bench.json_grammar import JsonGrammar
from grammar_compiler import ConstraintError, compile_json_schema

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITE_DIR = REPO_ROOT / ".cache" / "json-schema-test-suite"


@dataclass(frozen=True)
class Draft:
    """A suite directory and what that draft says about keywords and formats."""

    directory: str
    metaschema: str
    validator: type[jsonschema.protocols.Validator]
    formats: frozenset[str]
    bound_modifiers: frozenset[str] = frozenset()

    def constrains(self, keyword: str) -> bool:
        return keyword in self.validator.VALIDATORS or keyword in self.bound_modifiers


_DRAFT4_FORMATS = frozenset({"date-time", "email", "hostname", "ipv4", "ipv6", "uri"})
_DRAFT7_FORMATS = _DRAFT4_FORMATS | {
    "date",
    "time",
    "idn-email",
    "idn-hostname",
    "iri",
    "iri-reference",
    "json-pointer",
    "relative-json-pointer",
    "regex",
    "uri-reference",
    "uri-template",
}
DRAFTS = (
    Draft(
        "draft4",
        "http://json-schema.org/draft-04/schema#",
        jsonschema.Draft4Validator,
        _DRAFT4_FORMATS,
        frozenset({"exclusiveMinimum", "exclusiveMaximum"}),  # they change minimum/maximum
    ),
    Draft(
        "draft7",
        "http://json-schema.org/draft-07/schema#",
        jsonschema.Draft7Validator,
        _DRAFT7_FORMATS,
    ),
    Draft(
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
        jsonschema.Draft202012Validator,
        _DRAFT7_FORMATS | {"duration", "uuid"},
    ),
)
_OFFICIAL_METASCHEMAS = frozenset(
    uri.rstrip("#")
    for uri in (
        "http://json-schema.org/draft-04/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    )
)


@dataclass(frozen=True)
class SuiteTest:
    description: str
    data: Any
    valid: bool


@dataclass(frozen=True)
class SuiteCase:
    """One schema of the suite with its instances."""

    draft: Draft
    file: str  # relative to the draft's directory, e.g. "optional/format/email.json"
    description: str
    schema: Any
    tests: tuple[SuiteTest, ...]

    @property
    def name(self) -> str:
        return f"{self.draft.directory}/{self.file}: {self.description}"

    def document(self) -> Any:
        """The schema as a user would send it: its draft declared."""
        if isinstance(self.schema, dict) and "$schema" not in self.schema:
            return {"$schema": self.draft.metaschema, **self.schema}
        return self.schema


def suite_files(draft: Draft, root: Path = SUITE_DIR) -> list[str]:
    """The draft's test files, relative to its directory.

    Raises:
        FileNotFoundError: the suite has not been fetched (run scripts/setup.sh).
    """
    directory = root / draft.directory
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory} is missing: run scripts/setup.sh, which fetches the "
            "JSON-Schema-Test-Suite into .cache/"
        )
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*.json"))


def load_cases(draft: Draft, file: str, root: Path = SUITE_DIR) -> list[SuiteCase]:
    entries = json.loads((root / draft.directory / file).read_text())
    return [
        SuiteCase(
            draft,
            file,
            entry["description"],
            entry["schema"],
            tuple(SuiteTest(t["description"], t["data"], t["valid"]) for t in entry["tests"]),
        )
        for entry in entries
    ]


@dataclass
class CaseOutcome:
    """What the compiler and xgrammar made of one suite case."""

    case: SuiteCase
    compiled: bool = False
    refusal: str | None = None
    bad_refusal: str | None = None  # why the refusal is not acceptable
    crash: str | None = None  # an exception other than ConstraintError
    accepted_invalid: list[dict[str, str]] = field(default_factory=list)
    valid_accepted: int = 0

    @property
    def valid_total(self) -> int:
        return sum(test.valid for test in self.case.tests)

    @property
    def failures(self) -> list[str]:
        """Everything the test suite test asserts against, as readable lines."""
        lines = []
        if self.crash:
            lines.append(f"{self.case.name}: crashed: {self.crash}")
        if self.bad_refusal:
            lines.append(f"{self.case.name}: {self.bad_refusal}")
        lines += [
            f"{self.case.name}: accepted the invalid instance {item['text']} ({item['test']})"
            for item in self.accepted_invalid
        ]
        return lines


def layouts(instance: Any) -> tuple[str, ...]:
    """The instance as xgrammar writes JSON: ", "/": " separators, and compact."""
    spaced = json.dumps(instance, ensure_ascii=False)
    compact = json.dumps(instance, ensure_ascii=False, separators=(",", ":"))
    return (spaced,) if compact == spaced else (spaced, compact)


def run_case(case: SuiteCase, compiler: xgr.GrammarCompiler) -> CaseOutcome:
    outcome = CaseOutcome(case)
    document = case.document()
    try:
        constraint = compile_json_schema(document, strict=True, decoder_guard=True)
        grammar = JsonGrammar(compiler, constraint.value)
    except ConstraintError as error:
        outcome.refusal = str(error)
        outcome.bad_refusal = refusal_problem(case, document, outcome.refusal)
        return outcome
    except Exception as error:  # the service would answer 500
        outcome.crash = f"{type(error).__name__}: {error}"
        return outcome
    outcome.compiled = True
    for test in case.tests:
        accepted = [text for text in layouts(test.data) if grammar.accepts(text)]
        if test.valid and accepted:
            outcome.valid_accepted += 1
        elif not test.valid and accepted:
            outcome.accepted_invalid.append({"text": accepted[0], "test": test.description})
    return outcome


_KEYWORD_AT = re.compile(r"keyword '(?P<keyword>[^']+)' at (?P<where>the root|/\S*) ")
_PATTERN_AT = re.compile(r"(?P<keyword>pattern) at (?P<where>the root|/[^\s:]*):")
_REGEX_AT = re.compile(r"regex at (?P<where>/[^\s:]*):")
_REGEX_KEYWORDS = ("pattern", "patternProperties")

OPTIONAL_ASSERTIONS = {
    "optional/content.json": frozenset({"contentEncoding", "contentMediaType", "contentSchema"}),
    "optional/dependencies-compatibility.json": frozenset({"dependencies"}),
}
"""Annotations in their draft that these optional files test as assertions."""


def named_keyword(message: str) -> tuple[str, str] | None:
    """The keyword a refusal names and the pointer of the schema holding it, if any.

    Three shapes name one: "keyword 'K' at LOCATION ...", "pattern at
    LOCATION: ..." and "regex at /.../pattern: ..." (a regex the metaschema
    check refused, located by the pointer to the keyword's value).
    """
    found = _KEYWORD_AT.search(message) or _PATTERN_AT.match(message)
    if found:
        where = found.group("where")
        return found.group("keyword"), "" if where == "the root" else where
    found = _REGEX_AT.match(message)
    if found:
        tokens = found.group("where").split("/")
        for index in range(len(tokens) - 1, 0, -1):
            if tokens[index] in _REGEX_KEYWORDS:
                return tokens[index], "/".join(tokens[:index])
    return None


def refusal_problem(case: SuiteCase, document: Any, message: str) -> str | None:
    """None when the refusal is one the service may give for this case, else why not."""
    named = named_keyword(message)
    if named:
        keyword, where = named
        if not (
            case.draft.constrains(keyword) or keyword in OPTIONAL_ASSERTIONS.get(case.file, ())
        ):
            draft = case.draft.directory
            return f"refused for {keyword!r}, which constrains nothing in {draft}: {message}"
        schema = _at_pointer(document, where)
        if not isinstance(schema, dict) or keyword not in schema:
            place = where or "the root"
            return f"refused for {keyword!r} at {place}, where the schema has none: {message}"
        if keyword == "format" and schema["format"] not in case.draft.formats:
            return f"refused for the unknown format {schema['format']!r} (an annotation): {message}"
        return None
    if message.startswith("no JSON value satisfies the schema") and not any(
        test.valid for test in case.tests
    ):
        return None
    declared = document.get("$schema") if isinstance(document, dict) else None
    if (
        message.startswith("unsupported $schema")
        and isinstance(declared, str)
        and declared.rstrip("#") not in _OFFICIAL_METASCHEMAS
    ):
        return None
    return f"refused without naming a constraining keyword: {message}"


def _at_pointer(document: Any, pointer: str) -> Any:
    value = document
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        else:
            return None
    return value


def all_cases(root: Path = SUITE_DIR) -> Iterator[SuiteCase]:
    for draft in DRAFTS:
        for file in suite_files(draft, root):
            yield from load_cases(draft, file, root)


def draft_summary(outcomes: list[CaseOutcome]) -> dict[str, dict[str, Any]]:
    """Per draft: schemas compiled, valid instances accepted, soundness failures."""
    summary: dict[str, dict[str, Any]] = {}
    for draft in DRAFTS:
        mine = [o for o in outcomes if o.case.draft is draft]
        valid = sum(o.valid_total for o in mine)
        accepted = sum(o.valid_accepted for o in mine)
        summary[draft.directory] = {
            "schemas": len(mine),
            "compiled": sum(o.compiled for o in mine),
            "compiled_share": _share(sum(o.compiled for o in mine), len(mine)),
            "valid_instances": valid,
            "valid_accepted": accepted,
            "valid_accepted_share": _share(accepted, valid),
            "invalid_accepted": sum(len(o.accepted_invalid) for o in mine),
            "unacceptable_refusals": sum(o.bad_refusal is not None for o in mine),
            "crashes": sum(o.crash is not None for o in mine),
        }
    return summary


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
