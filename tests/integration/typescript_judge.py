"""The real TypeScript compiler as the judge of ``/v1/completion/typed`` outputs.

The service translates TypeScript to JSON Schema itself, so judging its
outputs with that schema would let a mistranslation judge itself. ``tsc``
knows nothing of the translation: each output is written as the
initializer of a constant of the requested type, in the same file as the
declarations (so non-exported types are in scope), and ``tsc --strict``
type-checks it. JSON is a JavaScript expression, and an object literal
assigned to a type gets TypeScript's excess-property check, so a member
the type does not declare is an error too.

``tsc`` comes from the npm package pinned in ``typescript_judge/``
(``scripts/setup.sh`` installs it with ``npm ci``) and runs through
``bench.tsc``, which ``bench.typescript_fuzz`` shares.
"""

from __future__ import annotations

import random

from json_instances import Decoder

from bench.tsc import JUDGE_DIR, TSC, type_check
from grammar_compiler import compile_typescript


def typescript_errors(source: str, type_name: str, outputs: list[str]) -> dict[int, list[str]]:
    """``tsc``'s errors for each output that is not a value of ``type_name``, by output index.

    Raises:
        AssertionError: ``tsc`` is missing, or it reports an error in the
            declarations themselves (the test's own mistake).
    """
    assert TSC.exists(), f"{TSC} is missing: run scripts/setup.sh (npm ci in {JUDGE_DIR})"
    lines = [*source.splitlines(), ""]
    first_output_line = len(lines) + 1
    lines += [f"const judged{i}: {type_name} = {output};" for i, output in enumerate(outputs)]
    checked = type_check("\n".join(lines) + "\nexport {};\n", timeout=120)
    errors: dict[int, list[str]] = {}
    for number, message in checked.errors:
        assert number >= first_output_line, f"the declarations do not compile: {message}"
        errors.setdefault(number - first_output_line, []).append(message)
    assert checked.failed == bool(errors), checked.printed
    return errors


def judged_samples(
    source: str, type_name: str, *, count: int = 20, seed: int = 5, guard: bool = False
) -> list[str]:
    """Random walks through the compiled type (``guard``: against repeated names,
    as the decoder serves it), asserting there are some and ``tsc`` takes each."""
    decoder = Decoder(compile_typescript(source, type_name).value, guard=guard)
    rng = random.Random(seed)
    texts = [t for t in (decoder.sample(rng) for _ in range(count)) if t is not None]
    assert texts
    assert typescript_errors(source, type_name, texts) == {}
    return texts
