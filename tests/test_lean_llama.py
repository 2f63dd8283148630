"""The lean forward reproduces Hugging Face's logits for the Llama family.

Each model is run through the engine's own calls (batched prefill, decode of a
ragged running batch with rows joining, leaving and taking several tokens,
chunked prefill with every position's logits) once with Hugging Face's
modeling and once with the lean forward; the logits must agree to fp32
rounding.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from engine.kv_batch import RunningBatch
from engine.lean_llama import LeanCausalLM, lean_support_problem
from engine.model_runner import ModelRunner, auto_dtype

TOLERANCE = 1e-4


def _engine_calls(runner: ModelRunner) -> list[torch.Tensor]:
    """Every forward shape the engine uses, in one scripted sequence."""
    generator = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(3, runner.vocab_size, (length,), generator=generator).tolist()
        for length in (5, 11, 2)
    ]
    outputs = []
    logits, cache, mask = runner.prefill_many(prompts)
    outputs.append(logits)
    batch = RunningBatch()
    batch.append_rows(cache, mask, [1, 2, 1])
    outputs.append(runner.decode(batch, [[7], [8], [9], [10]]))
    batch.keep([0, 2, 3])
    outputs.append(runner.decode(batch, [[11, 12, 13], [14], [15, 16]]))
    outputs.append(runner.decode(batch, [[17], [18, 19], [20]], logits_rows=[0, 2]))
    joining, joining_cache = runner.prefill([5, 6, 7, 8, 9, 10])
    outputs.append(joining)
    batch.append(joining_cache, 6, copies=2)
    for step in range(3):
        outputs.append(runner.decode(batch, [[20 + step]] * len(batch)))
    first, chunked = runner.extend([5, 6, 7], None, keep_all_logits=True)
    second, _ = runner.extend([8, 9, 10, 11], chunked, keep_all_logits=True)
    outputs += [first, second]
    return outputs


def _assert_same_logits(model_dir: Path) -> None:
    reference = ModelRunner.load(model_dir, device="cpu", impl="hf")
    lean = ModelRunner.load(model_dir, device="cpu", impl="lean")
    assert isinstance(lean.model, LeanCausalLM)
    assert not isinstance(reference.model, LeanCausalLM)
    for expected, actual in zip(_engine_calls(reference), _engine_calls(lean), strict=True):
        assert expected.shape == actual.shape
        assert torch.isfinite(actual).all()
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)


def _save_random(model: torch.nn.Module, directory: Path, tokenizer_dir: Path) -> Path:
    model.save_pretrained(directory)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, directory / name)
    return directory


def test_demo_architecture_matches(tiny_model_dir: Path) -> None:
    _assert_same_logits(tiny_model_dir)


@pytest.mark.parametrize("tied", [True, False])
def test_llama3_shaped_model_matches(tiny_model_dir: Path, tmp_path: Path, tied: bool) -> None:
    config = LlamaConfig(
        vocab_size=600,
        hidden_size=96,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tied,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        },
    )
    torch.manual_seed(1)
    _assert_same_logits(_save_random(LlamaForCausalLM(config), tmp_path, tiny_model_dir))


def test_qwen2_shaped_model_with_qkv_bias_matches(tiny_model_dir: Path, tmp_path: Path) -> None:
    config = Qwen2Config(
        vocab_size=600,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    torch.manual_seed(2)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():  # random, non-zero biases, so a dropped bias would show
        for layer in model.model.layers:
            for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                projection.bias.normal_(0, 0.5)
            layer.self_attn.v_proj.bias.normal_(0, 0.5)
    _assert_same_logits(_save_random(model, tmp_path, tiny_model_dir))


def test_padded_positions_skip_the_projections_on_a_cpu(tiny_model_dir: Path) -> None:
    """A ragged step's projections see its real positions only (the logits
    test above shows they are still right); an even step runs as a grid."""
    runner = ModelRunner.load(tiny_model_dir, device="cpu", impl="lean")
    projection = runner.model.layers[0].qkv
    seen: list[tuple[int, ...]] = []
    original = projection.__call__

    class Recording:
        def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
            seen.append(tuple(inputs.shape[:-1]))
            return original(inputs)

    runner.model.layers[0].qkv = Recording()
    _, cache, mask = runner.prefill_many([[5, 6, 7, 8, 9], [10, 11]])
    batch = RunningBatch()
    batch.append_rows(cache, mask, [1, 1])
    runner.decode(batch, [[12, 13, 14], [15]])
    runner.decode(batch, [[16], [17]])
    assert seen == [(7,), (4,), (2, 1)]


def test_other_architectures_keep_hugging_face_modeling(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    config = GPT2Config(vocab_size=600, n_embd=32, n_layer=1, n_head=2, n_positions=128)
    model_dir = _save_random(GPT2LMHeadModel(config), tmp_path, tiny_model_dir)
    assert lean_support_problem(config) is not None
    runner = ModelRunner.load(model_dir, device="cpu")
    assert not isinstance(runner.model, LeanCausalLM)
    with pytest.raises(ValueError, match="does not support model_type 'gpt2'"):
        ModelRunner.load(model_dir, device="cpu", impl="lean")


def test_unsupported_rotary_scaling_is_refused_for_lean() -> None:
    config = LlamaConfig(rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0})
    assert "rotary scaling 'yarn'" in lean_support_problem(config)


def test_unknown_implementation_name_is_an_error(tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match="CT_MODEL_IMPL='fast'"):
        ModelRunner.load(tiny_model_dir, device="cpu", impl="fast")


def test_a_cuda_graphs_setting_other_than_0_or_1_is_an_error(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CT_CUDA_GRAPHS", "yes")
    with pytest.raises(ValueError, match="CT_CUDA_GRAPHS='yes'"):
        ModelRunner.load(tiny_model_dir, device="cpu")
    monkeypatch.setenv("CT_CUDA_GRAPHS", "0")
    runner = ModelRunner.load(tiny_model_dir, device="cpu")
    assert runner.model.decode_graphs is None  # and none on a CPU in any case


def test_half_precision_on_a_gpu_follows_the_saved_dtype() -> None:
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    bf16_model, f32_model = LlamaConfig(dtype="bfloat16"), LlamaConfig(dtype="float32")
    assert auto_dtype(cuda, bf16_model, bf16_supported=True) is torch.bfloat16
    assert auto_dtype(cuda, bf16_model, bf16_supported=False) is torch.float16
    assert auto_dtype(cuda, f32_model, bf16_supported=True) is torch.float16
    assert auto_dtype(cpu, bf16_model, bf16_supported=True) is torch.float32
