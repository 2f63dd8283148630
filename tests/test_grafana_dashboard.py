"""The Grafana dashboard's shape, checked offline (its metric names are
checked against the live stack's exports in tests/integration/test_observability.py)."""

from __future__ import annotations

import re

from grafana_dashboard import load, metric_names, query_panels

from frontend.metrics import REGISTRY


def test_the_dashboard_is_an_importable_grafana_dashboard() -> None:
    dashboard = load()
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in query_panels(dashboard):
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs))
        for target in panel["targets"]:
            expr = target["expr"]
            assert expr.count("(") == expr.count(")"), expr
            assert "[$__rate_interval]" in expr or not re.search(r"\b(rate|increase)\(", expr)


def test_the_dashboard_covers_what_operators_watch() -> None:
    used = metric_names(load())
    for metric in (
        "ct_http_requests_total", "ct_http_request_seconds", "ct_time_to_first_token_seconds",
        "ct_tokens_total", "ct_generations_in_flight", "ct_decoder_requests",
        "ct_grammar_compile_seconds", "ct_grammar_cache_lookups_total",
        "ct_verification_failures_total", "ct_triton_model_restarts_total",
    ):  # fmt: skip
        assert metric in used, metric


def test_frontend_metrics_used_are_the_frontends_own() -> None:
    exported = {family.name for family in REGISTRY.collect()}
    # prometheus_client names counters without their _total suffix
    exported |= {f"{name}_total" for name in exported}
    frontend_metrics = {
        name
        for name in metric_names(load())
        if name.startswith("ct_") and not name.startswith(("ct_decoder_", "ct_grammar_"))
    }
    assert frontend_metrics <= exported, frontend_metrics - exported
