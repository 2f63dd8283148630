"""The two-step repository bench.ensemble_cost compares the ensemble with."""

from __future__ import annotations

from pathlib import Path

from bench.ensemble_cost import two_step_repository


def test_the_two_step_ensemble_takes_its_text_from_the_decoder(tmp_path: Path) -> None:
    repository = two_step_repository(tmp_path)
    assert not (repository / "detokenizer").exists()
    ensemble = (repository / "ensemble" / "config.pbtxt").read_text()
    assert 'model_name: "detokenizer"' not in ensemble and "_token_window" not in ensemble
    decoder_step = ensemble[ensemble.index('model_name: "constrained_decoder"') :]
    assert 'output_map { key: "text_output", value: "text_output" }' in decoder_step
    assert ensemble.count("{") == ensemble.count("}")
    decoder = (repository / "constrained_decoder" / "config.pbtxt").read_text()
    assert 'key: "text_in_decoder", value: { string_value: "true" }' in decoder
