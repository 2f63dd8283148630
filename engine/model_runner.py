"""Loads a Hugging Face causal LM and runs its prefill and batched decode."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import xgrammar as xgr
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from engine.decode_graphs import CUDA_GRAPHS_ENV, DecodeGraphs
from engine.kv_batch import RunningBatch
from engine.lean_llama import LeanCausalLM, lean_support_problem
from engine.prefill_graphs import PrefillGraphs

# auto: the lean forward for the Llama family, Hugging Face's modeling for the
# rest; lean: refuse to start if the model is not of the Llama family; hf:
# always Hugging Face's modeling. On CUDA the lean forward's decode steps and
# short prompts' prefills are replayed CUDA graphs unless CT_CUDA_GRAPHS=0.
MODEL_IMPL_ENV = "CT_MODEL_IMPL"
MODEL_IMPLS = ("auto", "lean", "hf")

log = logging.getLogger(__name__)


def cuda_graphs_on() -> bool:
    value = os.environ.get(CUDA_GRAPHS_ENV, "1")
    if value not in ("0", "1"):
        raise ValueError(f"{CUDA_GRAPHS_ENV}={value!r}: expected 0 or 1")
    return value == "1"


def auto_dtype(
    device: torch.device, config: PretrainedConfig, *, bf16_supported: bool | None = None
) -> torch.dtype:
    """float32 on a CPU. On a GPU, half precision: bfloat16 where the model
    was saved in it (Llama 3, Qwen2: float16 can overflow their activations)
    and the GPU has it, float16 otherwise."""
    if device.type != "cuda":
        return torch.float32
    if bf16_supported is None:
        bf16_supported = torch.cuda.is_bf16_supported()
    saved = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if saved in (torch.bfloat16, "bfloat16") and bf16_supported:
        return torch.bfloat16
    return torch.float16


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def choose_forward(model: torch.nn.Module, impl: str) -> torch.nn.Module | LeanCausalLM:
    """The forward the engine will call: the lean one where it reproduces the
    model exactly, Hugging Face's otherwise (or when asked to)."""
    if impl not in MODEL_IMPLS:
        raise ValueError(f"{MODEL_IMPL_ENV}={impl!r}: expected one of {', '.join(MODEL_IMPLS)}")
    if impl == "hf":
        return model
    problem = lean_support_problem(model.config)
    if problem is None:
        return LeanCausalLM(model)
    if impl == "lean":
        raise ValueError(f"{MODEL_IMPL_ENV}=lean, but the lean forward does not support {problem}")
    log.info("using Hugging Face's modeling: the lean forward does not support %s", problem)
    return model


def load_tokenizer(model_dir: str | Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(str(model_dir))


def vocabulary_bytes(tokenizer_info: xgr.TokenizerInfo, vocab_size: int) -> list[bytes]:
    """Each token's raw bytes (xgrammar undoes byte-level and SentencePiece
    encodings); ids past the tokenizer's vocabulary have none."""
    token_bytes = [bytes(piece) for piece in tokenizer_info.decoded_vocab]
    return token_bytes + [b""] * (vocab_size - len(token_bytes))


@dataclass
class ModelRunner:
    """The model plus what the engine must know about its vocabulary."""

    model: torch.nn.Module | LeanCausalLM
    tokenizer: PreTrainedTokenizerBase
    tokenizer_info: xgr.TokenizerInfo
    token_bytes: list[bytes]
    eos_token_ids: frozenset[int]
    vocab_size: int
    context_window: int

    @classmethod
    def load(
        cls,
        model_dir: str | Path,
        *,
        device: str = "auto",
        dtype: str = "auto",
        impl: str | None = None,
    ) -> ModelRunner:
        target = pick_device(device)
        config = AutoConfig.from_pretrained(str(model_dir))
        torch_dtype = auto_dtype(target, config) if dtype == "auto" else getattr(torch, dtype)
        model = AutoModelForCausalLM.from_pretrained(
            str(model_dir), config=config, dtype=torch_dtype
        )
        model.to(target).eval()
        return cls.from_model(model, load_tokenizer(model_dir), impl=impl)

    @classmethod
    def from_model(
        cls,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        impl: str | None = None,
    ) -> ModelRunner:
        """A runner over a model already loaded (and placed on its device)."""
        forward = choose_forward(model, impl or os.environ.get(MODEL_IMPL_ENV, "auto"))
        graphs_wanted = cuda_graphs_on()  # read on any device: a typo is an error everywhere
        if isinstance(forward, LeanCausalLM) and forward.device.type == "cuda" and graphs_wanted:
            forward.decode_graphs = DecodeGraphs(forward)
            forward.prefill_graphs = PrefillGraphs(forward)
        config = model.config
        vocab_size = int(config.vocab_size)
        tokenizer_info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        eos = set(tokenizer_info.stop_token_ids)
        if tokenizer.eos_token_id is not None:
            eos.add(int(tokenizer.eos_token_id))
        token_bytes = vocabulary_bytes(tokenizer_info, vocab_size)
        return cls(
            model=forward,
            tokenizer=tokenizer,
            tokenizer_info=tokenizer_info,
            token_bytes=token_bytes,
            eos_token_ids=frozenset(eos),
            vocab_size=vocab_size,
            context_window=int(getattr(config, "max_position_embeddings", 2048)),
        )

    def prefill(self, prompt_ids: list[int]) -> tuple[torch.Tensor, DynamicCache]:
        """Runs the prompt; returns the next-token logits ``[vocab]`` and its cache."""
        logits, cache = self.extend(prompt_ids, None)
        return logits[-1], cache

    @torch.inference_mode()
    def extend(
        self, ids: list[int], cache: DynamicCache | None, *, keep_all_logits: bool = False
    ) -> tuple[torch.Tensor, DynamicCache]:
        """Feeds one sequence more tokens (a prompt, or the next chunk of it).

        Returns the logits after the last token ``[1, vocab]`` (after every
        token with ``keep_all_logits``) and the grown cache.
        """
        tensor = torch.tensor([ids], dtype=torch.long, device=self.model.device)
        output = self.model(
            input_ids=tensor,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=0 if keep_all_logits else 1,
        )
        return output.logits[0, :, : self.vocab_size].float(), output.past_key_values

    @torch.inference_mode()
    def prefill_many(
        self, prompts: list[list[int]]
    ) -> tuple[torch.Tensor, DynamicCache, torch.Tensor]:
        """Runs several whole prompts in one forward pass, left-padded.

        Returns each prompt's next-token logits ``[prompts, vocab]``, the
        cache, and the mask of real positions ``[prompts, longest]``.
        """
        longest = max(len(prompt) for prompt in prompts)
        ids = torch.zeros(len(prompts), longest, dtype=torch.long)
        mask = torch.zeros(len(prompts), longest, dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, longest - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            mask[row, longest - len(prompt) :] = 1
        graphs = getattr(self.model, "prefill_graphs", None)
        if graphs is not None and graphs.bucket(len(prompts), longest) is not None:
            logits, cache = graphs.run(ids, mask)
            return logits[:, : self.vocab_size], cache, mask
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        device = self.model.device
        output = self.model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            use_cache=True,
            logits_to_keep=1,
        )
        return output.logits[:, -1, : self.vocab_size].float(), output.past_key_values, mask

    def decode(
        self,
        batch: RunningBatch,
        next_tokens: list[list[int]],
        logits_rows: list[int] | None = None,
    ) -> torch.Tensor:
        """One decode step; logits for ``logits_rows`` only (all when None)."""
        return batch.forward(self.model, next_tokens, logits_rows)
