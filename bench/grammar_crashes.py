"""Random GBNF grammars the service accepts, compiled by xgrammar in a child process.

``python -m bench.grammar_crashes --seed 1 --grammars 1500`` (about a minute)

A GBNF grammar reaches the decoder almost as the user wrote it, and
xgrammar's compiler is C++: a grammar it crashes on (``r ::= r{0,3}`` died
of a segmentation fault in xgrammar 0.2.8) would take the decoder process
down, for every request it holds. This draws grammars of the shapes that
stress it (empty strings, ``{0}``/``{0,0}``/``{m,n}`` repeats of rules,
nullable groups, self-reference), keeps those ``compile_grammar`` accepts
and compiles them one after another in a child process; when the child
dies, the grammar it was compiling is printed and the rest go on in a new
child. Exits 1 if any grammar crashed xgrammar.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from grammar_compiler import ConstraintError
from grammar_compiler.cfg import compile_grammar

_ATOMS = ('"a"', '""', '"ab"', "[a-c]", "[^a]", "[^\\n]", "r1", "r2", "root", '("a" | "")', '("")')
_QUANTIFIERS = (
    *("", "", "?", "*", "+"),
    *("{0}", "{0,0}", "{1}", "{2}", "{0,2}", "{1,}", "{0,}", "{3,5}"),
)
_CHILD = """
import json, sys, xgrammar
compiler = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
grammars = json.load(open(sys.argv[1]))
for index in range(int(sys.argv[2]), len(grammars)):
    print(index, flush=True)
    compiler.compile_grammar(grammars[index])
"""


def random_grammar(rng: random.Random) -> str:
    def expression(depth: int) -> str:
        parts = []
        for _ in range(rng.randint(1, 3)):
            if depth > 0 and rng.random() < 0.3:
                options = [expression(depth - 1) for _ in range(rng.randint(1, 2))]
                atom = f"({' | '.join(options)})"
            else:
                atom = rng.choice(_ATOMS)
            parts.append(atom + rng.choice(_QUANTIFIERS))
        return " ".join(parts)

    rules = []
    for name in ("root", "r1", "r2"):
        options = [expression(2) for _ in range(rng.randint(1, 2))]
        rules.append(f"{name} ::= {' | '.join(options)}")
    return "\n".join(rules) + "\n"


def crashing(grammars: list[str]) -> list[tuple[str, int]]:
    """The grammars xgrammar's compiler kills its process on, with the exit status."""
    found = []
    with tempfile.TemporaryDirectory() as folder:
        listing = Path(folder) / "grammars.json"
        listing.write_text(json.dumps(grammars))
        start = 0
        while start < len(grammars):
            child = subprocess.run(
                [sys.executable, "-c", _CHILD, str(listing), str(start)],
                capture_output=True,
                text=True,
                check=False,
            )
            if child.returncode == 0:
                break
            printed = child.stdout.split()
            last = int(printed[-1]) if printed else start
            found.append((grammars[last], child.returncode))
            start = last + 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--grammars", type=int, default=1500)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    accepted = []
    for _ in range(args.grammars):
        try:
            accepted.append(compile_grammar(random_grammar(rng), "gbnf").value)
        except ConstraintError:
            continue
    found = crashing(accepted)
    for grammar, status in found:
        print(f"CRASH (exit status {status}):\n{grammar}")
    print(
        f"seed {args.seed}: {args.grammars} drawn, {len(accepted)} accepted,"
        f" {len(found)} crashed xgrammar"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
