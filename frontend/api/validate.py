"""``POST /v1/grammars/validate``: compile a constraint without generating.

The same fields as the generation endpoints name the constraint, so a user
can debug exactly what they would send: the answer shows the canonical form
xgrammar will compile, what is not enforced, and every mistake with its
position. For JSON Schema and TypeScript the ``report`` says which keywords
are enforced, which were ignored as annotations and which are not enforced.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from frontend.api.cfg import GrammarFormat
from frontend.auth import require_api_key
from frontend.constrained import compile_constraint
from frontend.offload import off_loop
from frontend.text_fields import require_text
from grammar_compiler import ConstraintError
from grammar_compiler.canonical import ConstraintReport, KeywordAt

router = APIRouter(dependencies=[Depends(require_api_key)])

LANGUAGE_FIELDS = ("pattern", "grammar", "schema", "json_schema")


class ValidateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # "strict": "yes" is refused, not read as true
        json_schema_extra={
            "examples": [
                {"grammar": "<start> ::= <noun> <verb> | <verb> <noun>"},
                {"pattern": [r"\d{4}-\d{2}-\d{2}", "today"]},
                {"schema": "export interface Point { x: number; y: number }", "type_name": "Point"},
                {"json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            ]
        },
    )

    pattern: str | Annotated[list[str], Field(min_length=1)] | None = Field(
        None, description="A regex or list of regexes, as /v1/completion/regex takes it."
    )
    grammar: str | None = Field(None, description="A grammar, as /v1/completion/cfg takes it.")
    grammar_format: GrammarFormat = "auto"
    schema_: str | None = Field(
        None, alias="schema", description="TypeScript definitions, with type_name."
    )
    type_name: str | None = None
    json_schema: dict[str, Any] | str | None = Field(
        None, description="A JSON Schema (object or JSON text)."
    )
    strict: bool = Field(
        True,
        description="JSON Schema: refuse keywords that cannot be enforced (false: report them).",
    )

    @model_validator(mode="after")
    def _exactly_one_language(self) -> ValidateRequest:
        given = [
            name
            for name in LANGUAGE_FIELDS
            if getattr(self, name if name != "schema" else "schema_")
        ]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(LANGUAGE_FIELDS)} (got {len(given)})")
        if self.schema_ is not None and not self.type_name:
            raise ValueError("schema (TypeScript) needs type_name")
        return self

    def constraint_args(self) -> tuple[str, tuple[Hashable, ...]]:
        """The language and the arguments ``compile_constraint`` takes for it."""
        if self.pattern is not None:
            pattern = self.pattern if isinstance(self.pattern, str) else tuple(self.pattern)
            return "regex", (pattern,)
        if self.grammar is not None:
            return "grammar", (self.grammar, self.grammar_format)
        if self.schema_ is not None:
            return "typescript", (self.schema_, self.type_name)
        schema = (
            self.json_schema if isinstance(self.json_schema, str) else json.dumps(self.json_schema)
        )
        return "json_schema", (schema, self.strict)


class ConstraintProblem(BaseModel):
    message: str = Field(description="What is wrong, with its location.")
    position: int | None = Field(None, description="0-based character offset, when known.")
    line: int | None = Field(None, description="1-based line, when known.")
    column: int | None = Field(None, description="1-based column, when known.")
    pattern_index: int | None = Field(None, description="0-based index into a list of patterns.")


class CanonicalForm(BaseModel):
    type: Literal["regex", "ebnf", "json_schema"] = Field(description="What the decoder compiles.")
    value: str


class ReportedKeyword(BaseModel):
    keyword: str
    pointer: str = Field(
        description="JSON pointer (RFC 6901) of the subschema holding the keyword; '' is the root. "
        "TypeScript: into the JSON Schema generated from the types."
    )
    note: str = Field("", description="Why it is listed, and what was probably meant.")

    @classmethod
    def of(cls, item: KeywordAt) -> ReportedKeyword:
        return cls(keyword=item.keyword, pointer=item.pointer, note=item.note)


class Report(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "enforced": {"maximum": 1, "properties": 1, "type": 3},
                    "ignored": [
                        {
                            "keyword": "nullable",
                            "pointer": "/properties/name",
                            "note": "an OpenAPI keyword, not JSON Schema's; JSON Schema ignores it "
                            '(to allow null, list "null" in "type")',
                        }
                    ],
                    "not_enforced": [],
                    "subsets": [],
                }
            ]
        }
    )

    enforced: dict[str, int] = Field(
        description="Constraining keywords enforced, by keyword: how many subschemas have each."
    )
    ignored: list[ReportedKeyword] = Field(
        description="Keywords that constrain nothing under the schema's draft and were dropped: "
        "unknown and vendor keywords, other drafts' keywords, OpenAPI's, unknown formats, $ref "
        "siblings before 2019-09 (JSON Schema's own annotations and x- keys are not listed)."
    )
    not_enforced: list[ReportedKeyword] = Field(
        description="strict: false only: keywords that constrain but are not enforced during "
        "generation (the output is still checked against them)."
    )
    subsets: list[ReportedKeyword] = Field(
        description="Keywords enforced as a subset: every output satisfies them, but some valid "
        "values are never generated (the note says which)."
    )

    @classmethod
    def of(cls, report: ConstraintReport) -> Report:
        return cls(
            enforced=dict(report.enforced),
            ignored=[ReportedKeyword.of(item) for item in report.ignored],
            not_enforced=[ReportedKeyword.of(item) for item in report.not_enforced],
            subsets=[ReportedKeyword.of(item) for item in report.subsets],
        )


class ValidateResponse(BaseModel):
    valid: bool
    language: str = Field(description="The detected or named constraint language.")
    canonical: CanonicalForm | None = None
    not_enforced: list[str] = Field(
        default_factory=list, description="Keywords accepted but not enforced (strict: false only)."
    )
    report: Report | None = Field(
        None, description="JSON Schema and TypeScript: what is enforced, ignored, not enforced."
    )
    errors: list[ConstraintProblem] = Field(default_factory=list)


@router.post(
    "/v1/grammars/validate",
    response_model=ValidateResponse,
    summary="Compile a constraint and show its canonical form, without generating",
)
async def validate(body: ValidateRequest) -> ValidateResponse:
    require_text(body)
    language, args = body.constraint_args()
    try:
        constraint = await off_loop(compile_constraint, language, *args)
    except ConstraintError as error:
        problem = ConstraintProblem(
            message=str(error),
            position=error.position,
            line=error.line,
            column=error.column,
            pattern_index=error.pattern_index,
        )
        return ValidateResponse(valid=False, language=language, errors=[problem])
    return ValidateResponse(
        valid=True,
        language=constraint.source_language,
        canonical=CanonicalForm(type=constraint.kind, value=constraint.value),
        not_enforced=list(constraint.not_enforced),
        report=Report.of(constraint.report) if constraint.report is not None else None,
    )
