"""JSON mode: any JSON object, laid out so that it cannot run away into whitespace.

OpenAI's ``{"type": "json_object"}`` (and the arguments of a non-strict tool)
only ask for "a JSON object". A grammar of JSON as the standard writes it
allows any amount of whitespace between tokens, and peers that compile it
so see models emit ``{`` followed by spaces and newlines until
``max_tokens``: whitespace is always allowed and often likely. So JSON mode
here is the schema ``{"type": "object"}`` compiled like every JSON Schema
(``compile_json_schema``), which the decoder compiles with
``any_whitespace=False``: the only whitespace is the single space in xgrammar's
``", "`` and ``": "`` separators, so every token the model is allowed to
pick makes progress through the object.
"""

from __future__ import annotations

import functools

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.json_schema import compile_json_schema


@functools.cache
def json_object_constraint() -> CanonicalConstraint:
    """Any JSON object, with no free whitespace; judged by ``json.loads`` + an object check.

    Compiled once: the result is immutable and its judge keeps no state.
    """
    return compile_json_schema({"type": "object"})
