"""Reading the Grafana dashboard in deploy/grafana: its panels and the metric
names its queries use (shared by the offline and the live-stack tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "constrained-completions.json"
_METRIC = re.compile(r"\b((?:ct|nv)_[a-z0-9_]+)\b")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def query_panels(dashboard: dict) -> list[dict]:
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def metric_names(dashboard: dict) -> set[str]:
    """Every metric a query reads, histogram series named by their family."""
    names = set()
    for panel in query_panels(dashboard):
        for target in panel["targets"]:
            for name in _METRIC.findall(target["expr"]):
                for suffix in _HISTOGRAM_SUFFIXES:
                    if name.endswith(suffix):
                        name = name.removesuffix(suffix)
                        break
                names.add(name)
    return names
