"""bench.gpu's phases on a tiny shape on the CPU (the static decode step runs
eagerly there), and its summary of a real H200 run."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from bench.gpu import (
    build_runner,
    forward_phase,
    outputs_phase,
    parts_phase,
    set_graphs,
    summary_markdown,
)

TINY_SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": True,
}
H200_RUN = Path(__file__).parent.parent / "bench" / "results" / "gpu-h200" / "one-token-graphs.json"


def test_outputs_and_forward_phases_run_with_and_without_the_static_step(
    tiny_model_dir: Path,
) -> None:
    runner = build_runner(tiny_model_dir, TINY_SHAPE, torch.float32)
    outputs = outputs_phase(runner)  # raises if an output misses its schema
    assert outputs["valid"] and outputs["agree_graphs_on_off"].endswith("/8")
    forward = forward_phase(runner, repeats=2)
    assert [(run["rows"], run["cuda_graphs"]) for run in forward] == [
        (rows, on) for rows in (1, 16, 64) for on in (True, False)
    ]
    assert all(run["ms"] > 0 for run in forward)
    parts = parts_phase(runner, repeats=2)
    assert [run["rows"] for run in parts["lm_head_ms"]] == [1, 16, 64]
    assert [run["prompts"] for run in parts["prefill_ms"]] == [
        "one short",
        "four short",
        "one long",
    ]
    assert all(run["eager"] > 0 and run["graphs"] > 0 for run in parts["prefill_ms"])
    assert "| prefill alone, ms | eager | prefill graphs |" in summary_markdown({"parts": parts})
    set_graphs(runner, True)
    assert runner.model.decode_graphs is not None and not runner.model.decode_graphs.capturing


def test_the_summary_pairs_graphs_on_and_off() -> None:
    summary = summary_markdown(json.loads(H200_RUN.read_text()))
    assert "NVIDIA H200" in summary
    assert "| c=64 none | 4.25 / 3.70 (15,060) | 7.38 / 7.26 (8,666) | 0.58 |" in summary
    assert "| 1 rows | 1.63 | 5.29 |" in summary
