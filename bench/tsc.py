"""The pinned TypeScript compiler run on one file: the judge of typed outputs.

The integration tests (``tests/integration/typescript_judge.py``) and
``bench.typescript_fuzz`` both have ``tsc --strict`` type-check written-out
values as initializers of constants of a type; this runs it once and reads
its diagnostics back as line numbers. ``tsc`` comes from the npm package
pinned in ``tests/integration/typescript_judge/`` (``scripts/setup.sh``
installs it with ``npm ci``).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

JUDGE_DIR = Path(__file__).parents[1] / "tests" / "integration" / "typescript_judge"
TSC = JUDGE_DIR / "node_modules" / ".bin" / "tsc"
_OPTIONS = ("--noEmit", "--strict", "--target", "es2022", "--pretty", "false")
_DIAGNOSTIC = re.compile(r"^judged\.ts\((\d+),\d+\): error (TS\d+: .*)$")


@dataclass
class Checked:
    """``tsc``'s errors as (line, message), whether it failed, and all it printed."""

    errors: list[tuple[int, str]]
    failed: bool
    printed: str


def type_check(text: str, timeout: float) -> Checked:
    """``tsc --noEmit --strict`` on ``text`` as one file; lines count from 1."""
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "judged.ts").write_text(text)
        result = subprocess.run(
            [str(TSC), *_OPTIONS, "judged.ts"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    errors = [
        (int(found.group(1)), found.group(2))
        for found in map(_DIAGNOSTIC.match, result.stdout.splitlines())
        if found is not None  # not the continuation lines of a diagnostic
    ]
    return Checked(errors, result.returncode != 0, result.stdout + result.stderr)
