"""How much of the TypeScript people write ``/v1/completion/typed`` takes.

``bench/typescript_probes.json`` holds short sources in the styles real
files use (namespaces, classes of fields, conditional and mapped types,
flag enums, module statements beside the types, JSDoc-tagged members, ...),
each with the type to compile; some are refused on purpose (``Set``,
``bigint``, function types, a rest element before the end of a tuple). This
prints each verdict and the count:

    .venv/bin/python -m bench.typescript_coverage

No model, server or GPU is involved: it measures the reader, not speed.
"""

from __future__ import annotations

import json
from pathlib import Path

from grammar_compiler import ConstraintError, compile_typescript

PROBES = Path(__file__).with_name("typescript_probes.json")


def main() -> None:
    probes = json.loads(PROBES.read_text(encoding="utf-8"))
    accepted = 0
    for name, probe in probes.items():
        try:
            compile_typescript(probe["source"], probe["type_name"])
        except ConstraintError as error:
            print(f"refused   {name}: {error}")
            continue
        accepted += 1
        print(f"compiled  {name}")
    print(f"\n{accepted}/{len(probes)} compiled")


if __name__ == "__main__":
    main()
