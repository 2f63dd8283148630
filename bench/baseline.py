"""The hand-written baseline: ``transformers`` ``generate()`` with xgrammar's HF logits processor.

This is what a user would write without the server: load the model, compile
the grammar once, and generate one request at a time. It runs in the
benchmark process with the same model directory, prompts, seeds, sampling
(temperature 1, no top-k/top-p), end-of-sequence suppressed as ``ignore_eos``
does, and the same canonical JSON schema compiled the way the decoder compiles
it (``any_whitespace=False``), so server/baseline ratios compare like for like.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch
import xgrammar as xgr
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase
from xgrammar.contrib.hf import LogitsProcessor

from bench.workload import PROMPTS, Constraint


@dataclass(frozen=True)
class BaselineTiming:
    label: str
    latency_s: float
    """Tokenize + generate + decode, as a caller of a library function waits for it."""
    output_tokens: int


class HFBaseline:
    """One loaded model and tokenizer, grammars compiled once and reused."""

    def __init__(self, model_dir: Path) -> None:
        self.tokenizer: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(str(model_dir))
        # float32 on CPU, float16 on a GPU: what the decoder's ModelRunner picks.
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.float16 if device.type == "cuda" else torch.float32
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype)
        self.model.to(device).eval()
        self.vocab_size = int(self.model.config.vocab_size)
        info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.vocab_size)
        self._compiler = xgr.GrammarCompiler(info)
        self._grammars: dict[str, xgr.CompiledGrammar] = {}
        eos = set(info.stop_token_ids)
        if self.tokenizer.eos_token_id is not None:
            eos.add(int(self.tokenizer.eos_token_id))
        self._eos = sorted(eos)
        pad = self.tokenizer.pad_token_id
        self._pad = pad if pad is not None else self._eos[0] if self._eos else 0

    def _grammar(self, constraint: Constraint) -> xgr.CompiledGrammar:
        compiled = self._grammars.get(constraint.value)
        if compiled is None:
            if constraint.kind == "json_schema":
                compiled = self._compiler.compile_json_schema(
                    constraint.value, any_whitespace=False
                )
            elif constraint.kind == "regex":
                compiled = self._compiler.compile_regex(constraint.value)
            else:
                compiled = self._compiler.compile_grammar(constraint.value)
            self._grammars[constraint.value] = compiled
        return compiled

    def generate(
        self, prompt: str, seed: int, constraint: Constraint, max_tokens: int
    ) -> BaselineTiming:
        """One request, timed from the prompt text to the completion text."""
        processors = []
        if constraint.kind != "none":
            # The processor holds per-request matchers: a new one per generate() call.
            processors.append(LogitsProcessor(self._grammar(constraint)))
        torch.manual_seed(seed)
        started = time.perf_counter()
        inputs = self.tokenizer(prompt, return_tensors="pt").to(self.model.device)
        output = self.model.generate(
            **inputs,
            max_new_tokens=max_tokens,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            suppress_tokens=self._eos,
            logits_processor=processors,
            pad_token_id=self._pad,
        )
        new_tokens = output[0, inputs["input_ids"].shape[1] :]
        self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        latency = time.perf_counter() - started
        return BaselineTiming(constraint.label, latency, int(new_tokens.shape[0]))

    def run(self, constraint: Constraint, count: int, max_tokens: int) -> list[BaselineTiming]:
        """`count` requests one after another: the prompts and seeds of workload.requests()."""
        return [
            self.generate(PROMPTS[i % len(PROMPTS)], 1000 + i, constraint, max_tokens)
            for i in range(count)
        ]

    def parameter_count(self) -> int:
        return sum(parameter.numel() for parameter in self.model.parameters())


def baseline_summary(timings: list[BaselineTiming]) -> dict:
    """Single-request latency (ms) and tokens/s of the baseline (one request at a time)."""
    from bench import stats

    tokens = sum(t.output_tokens for t in timings)
    seconds = sum(t.latency_s for t in timings)
    return {
        "requests": len(timings),
        "output_tokens": tokens,
        "latency_ms": stats.summarize((t.latency_s for t in timings), 1e3),
        "output_tokens_per_s": stats.throughput(tokens, seconds),
    }
