"""One constrained generation, from canonical constraint to verified result.

Every route that promises a match goes through here, so the decoder's word
is never the last one: the finished text is re-checked by the constraint's
independent judge (``re``, a Lark parser, ``jsonschema``) before it is called
a match. A route that generates under a JSON Schema or TypeScript constraint
answers with ``report_headers``: the constraint report's summary.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from fastapi import Request

from engine.params import Constraint, ConstraintType, SamplingParams
from frontend.errors import APIError
from frontend.generation import Completion, collect_completion
from frontend.metrics import TOKENS, VERIFICATION_FAILURES
from frontend.offload import off_loop
from frontend.translation_cache import translation_cache
from grammar_compiler import (
    ConstraintError,
    compile_grammar,
    compile_json_schema,
    compile_typescript,
)
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.regex import regex_constraint

logger = logging.getLogger(__name__)


class Verdict(str, enum.Enum):
    """Why a generation ended, as the decoder decided it and the judge confirmed it."""

    MATCH = "match"  # the constraint ended it at a complete match, confirmed by the judge
    TOKEN_LIMIT = "token_limit"  # the token limit (or context window) ended it
    VERIFICATION_FAILED = "verification_failed"  # the judge disagrees with the decoder


@dataclass(frozen=True)
class VerifiedCompletion:
    completion: Completion
    verdict: Verdict
    matched: bool
    """The text is a complete match (decoder and judge agree), however it ended:
    a token limit may end an output that is already complete (stop_after_match off)."""


COMPILERS: dict[str, Callable[..., CanonicalConstraint]] = {
    "regex": regex_constraint,
    "grammar": compile_grammar,
    "typescript": compile_typescript,
    "json_schema": lambda schema, strict: compile_json_schema(
        schema, strict=strict, decoder_guard=True
    ),
}


@translation_cache(lambda language, *_: language)
def compile_constraint(language: str, *args: Hashable) -> CanonicalConstraint:
    """Translates a user constraint once per distinct text (mistakes are not
    cached: they raise ConstraintError every time)."""
    return COMPILERS[language](*args)


async def compiled_or_400(language: str, *args: Hashable) -> CanonicalConstraint:
    """``compile_constraint`` off the event loop; a mistake in the constraint is a 400."""
    try:
        return await off_loop(compile_constraint, language, *args)
    except ConstraintError as error:
        raise APIError(400, str(error)) from None


REPORT_HEADER = "X-Constraint-Report"
REPORT_HEADER_RESPONSES: dict[int | str, dict] = {
    200: {
        "headers": {
            REPORT_HEADER: {
                "description": "JSON Schema or TypeScript constraint: counts of the keywords "
                "enforced, ignored as annotations and not enforced, then the JSON pointers of "
                "the first few listed ones, e.g. 'enforced=14; ignored=1; not_enforced=0; "
                "ignored_at=/properties/a/nullable'. POST /v1/grammars/validate gives the whole "
                "report.",
                "schema": {"type": "string"},
            }
        }
    }
}
"""The header, for the OpenAPI description of the routes that send it."""


def report_headers(constraint: CanonicalConstraint | None) -> dict[str, str]:
    """``X-Constraint-Report``: what the constraint enforces, ignores and does not enforce.

    e.g. ``enforced=14; ignored=1; not_enforced=0; ignored_at=/properties/a/nullable``
    (``ConstraintReport.summary``: ASCII, bounded); none for other constraints.
    """
    if constraint is None or constraint.report is None:
        return {}
    return {REPORT_HEADER: constraint.report.summary()}


def decoder_constraint(constraint: CanonicalConstraint | None) -> Constraint:
    """What the decoder compiles for a translated constraint (none: unconstrained)."""
    if constraint is None:
        return Constraint()
    return Constraint(type=ConstraintType(constraint.kind), value=constraint.value)


async def generate_verified(
    request: Request, prompt: str, params: SamplingParams, constraint: CanonicalConstraint
) -> VerifiedCompletion:
    completion = await collect_completion(
        request,
        prompt,
        params,
        decoder_constraint(constraint),
    )
    TOKENS.labels("prompt").inc(completion.prompt_tokens)
    TOKENS.labels("completion").inc(completion.tokens_generated)
    return await verify(completion, constraint)


async def verify(completion: Completion, constraint: CanonicalConstraint) -> VerifiedCompletion:
    """The verdict follows the decoder's finish reason (what ended the output);
    a match the decoder reports is re-checked by the constraint's judge."""
    by_limit = completion.finish_reason == "length"
    if not completion.matched:
        if by_limit:  # a prefix of a match
            return VerifiedCompletion(completion, Verdict.TOKEN_LIMIT, matched=False)
        reason = "the decoder ended the output without a complete match"
    else:
        reason = await off_loop(constraint.judge, completion.text)
        if reason is None:
            verdict = Verdict.TOKEN_LIMIT if by_limit else Verdict.MATCH
            return VerifiedCompletion(completion, verdict, matched=True)
    VERIFICATION_FAILURES.labels(constraint.source_language).inc()
    logger.error(
        "verification failed (%s): %s; constraint=%r output=%r",
        constraint.source_language,
        reason,
        constraint.value[:2000],
        completion.text[:2000],
    )
    return VerifiedCompletion(completion, Verdict.VERIFICATION_FAILED, matched=False)
