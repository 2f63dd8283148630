"""The self-built default model, exercised through the TINY preset (seconds per build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from demo_model.build import BUILD_INFO_FILE, TINY, build_model, ensure_model, fingerprint

ROUND_TRIP_TEXTS = [
    "plain ascii text",
    "café, naïve, résumé",
    "日本語のテキスト",
    "emoji 🎉 and a family 👩‍👩‍👧 and a flag 🇫🇷",
    '  leading spaces, tabs\tand\nnewlines  \n{"a": [1, 2.5e-3, null]}',
    "literal special-looking text: </s> <pad>",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model(tmp_path_factory.mktemp("tiny") / "model", TINY, progress=False)


def test_directory_loads_with_auto_classes(model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert model.config.vocab_size == len(tokenizer) == TINY.vocab_size
    assert (model_dir / "model.safetensors").is_file()


def test_special_tokens_are_set_and_not_added_implicitly(model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    generation = json.loads((model_dir / "generation_config.json").read_text())
    assert tokenizer.eos_token_id is not None
    assert generation["eos_token_id"] == tokenizer.eos_token_id
    assert generation["bos_token_id"] == tokenizer.bos_token_id
    ids = tokenizer("hello")["input_ids"]
    assert tokenizer.bos_token_id not in ids
    assert tokenizer.eos_token_id not in ids


@pytest.mark.parametrize("text", ROUND_TRIP_TEXTS)
def test_tokenizer_round_trips_unicode(model_dir: Path, text: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=False) == text


def test_forward_pass_gives_finite_next_token_logits(model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    ids = torch.tensor([tokenizer.encode('{"name": ')])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], TINY.vocab_size)
    assert torch.isfinite(logits).all()


def test_same_seed_gives_identical_weights(model_dir: Path, tmp_path: Path) -> None:
    again = build_model(tmp_path / "again", TINY, progress=False)
    first = load_file(model_dir / "model.safetensors")
    second = load_file(again / "model.safetensors")
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_ensure_model_reuses_a_matching_build(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = model_dir / "model.safetensors"
    mtime = weights.stat().st_mtime_ns

    def fail(*_args: object) -> None:
        raise AssertionError("ensure_model rebuilt an up-to-date model")

    monkeypatch.setattr("demo_model.build._build_and_publish", fail)
    assert ensure_model(model_dir, TINY, progress=False) == model_dir
    assert weights.stat().st_mtime_ns == mtime


def test_ensure_model_rebuilds_when_the_recipe_changes(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / BUILD_INFO_FILE).write_text(json.dumps({"fingerprint": "stale"}))
    ensure_model(target, TINY, seed=1, progress=False)
    info = json.loads((target / BUILD_INFO_FILE).read_text())
    assert info["fingerprint"] == fingerprint(TINY, seed=1)
    assert (target / "model.safetensors").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".model.")] == [".model.lock"]
