#!/usr/bin/env python3
"""Build (or reuse) the project's default model.

No model can be downloaded where this project runs, so the service's default
model is trained locally; see ``demo_model.build``. The resulting directory is
printed as the last line of stdout so that other scripts can capture it.

    python scripts/build_demo_model.py                 # .cache/models/demo
    python scripts/build_demo_model.py --preset tiny   # .cache/models/tiny
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Run as a plain script, Python only puts scripts/ on the path.
sys.path.insert(0, str(REPO_ROOT))

from demo_model.build import PRESETS, build_model, ensure_model  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="demo")
    parser.add_argument(
        "--output",
        type=Path,
        help="model directory (default: .cache/models/<preset> in the repository)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--force", action="store_true", help="rebuild even if an up-to-date build exists"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    preset = PRESETS[args.preset]
    output = args.output or REPO_ROOT / ".cache" / "models" / preset.name
    build = build_model if args.force else ensure_model
    started = time.monotonic()
    path = build(output, preset, seed=args.seed)
    print(f"{preset.name} model ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
