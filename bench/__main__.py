"""``python -m bench``: the whole benchmark in one command (see bench/README.md).

.venv/bin/python -m bench --model-dir .cache/models/demo --out bench/results/NAME
.venv/bin/python -m bench --quick            # a smoke test of a few minutes
"""

from __future__ import annotations

import argparse
import datetime
import signal
import sys
from dataclasses import replace
from pathlib import Path
from types import FrameType

from bench.run import PHASES, run
from bench.settings import FULL, QUICK

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO_ROOT / ".cache" / "models" / "demo"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="a Hugging Face causal-LM directory (default: the demo model, built if missing)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default bench/results/<mode>-<time>)"
    )
    parser.add_argument("--quick", action="store_true", help="a few-minute smoke test")
    parser.add_argument(
        "--stream-interval-ms",
        type=float,
        default=0.0,
        help="merge each stream's tokens for this long in the TPOT and sweep phases (default 0)",
    )
    parser.add_argument(
        "--skip", action="append", choices=PHASES, default=[], help="leave a phase out (repeatable)"
    )
    parser.add_argument(
        "--rerender",
        type=Path,
        metavar="DIR",
        help="measure nothing: rebuild targets, summary.md and plots from DIR/report.json",
    )
    return parser.parse_args(argv)


def _model_dir(requested: Path | None) -> Path:
    if requested is not None:
        if not (requested / "config.json").is_file():
            raise SystemExit(f"{requested} is not a Hugging Face model directory (no config.json)")
        return requested.resolve()
    from demo_model import DEMO, ensure_model

    return ensure_model(DEMO_DIR, DEMO)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM unwinds like Ctrl-C, so the servers are stopped and the report written."""
    raise KeyboardInterrupt


def _rerender(out_dir: Path) -> dict:
    import json

    from bench.plots import write_plots
    from bench.report import write_json, write_summary
    from bench.targets import evaluate

    report = json.loads((out_dir / "report.json").read_text())
    report["targets"] = evaluate(report)
    report["plots"] = write_plots(report, out_dir)
    write_json(report, out_dir / "report.json")
    write_summary(report, out_dir / "summary.md")
    return report


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.rerender is not None:
        report = _rerender(args.rerender)
        _print_targets(report)
        return 0
    settings = replace(QUICK if args.quick else FULL, stream_interval_ms=args.stream_interval_ms)
    mode = "quick" if args.quick else "full"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = args.out or REPO_ROOT / "bench" / "results" / f"{mode}-{stamp}"
    signal.signal(signal.SIGTERM, _interrupt)
    report = run(_model_dir(args.model_dir), out_dir.resolve(), settings, set(args.skip))
    _print_targets(report)
    return 1 if report["errors"] else 0


def _print_targets(report: dict) -> None:
    for row in report["targets"]:
        measured = "—" if row["measured"] is None else f"{row['measured']:.3f}"
        print(f"{row['status']:>13}  {measured:>9} {row['requirement']:>10}  {row['target']}")


if __name__ == "__main__":
    sys.exit(main())
