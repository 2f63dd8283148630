"""Train and save the project's self-built default model.

The service needs *some* causal LM with a Hugging Face layout, and none can be
downloaded, so one is trained here from the offline corpus: a byte-level BPE
tokenizer (so any UTF-8 text, and therefore any grammar-constrained output, can
be represented) and a small Llama. Builds are deterministic for a given preset
and seed, cached by fingerprint, and published atomically.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from tqdm.auto import tqdm
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from demo_model.chat import CHAT_TEMPLATE, EOS_TOKEN
from demo_model.corpus import CORPUS_VERSION, build_corpus

BOS_TOKEN = "<s>"
PAD_TOKEN = "<pad>"
# Tokens that grammars written for reasoning and tool-calling models name
# (llguidance's ``<think>``, Llama 3.1's ``<|python_tag|>``), so the served
# demo model can show special tokens being forced; never seen in training.
GRAMMAR_TOKENS = ("<think>", "</think>", "<|python_tag|>")
# Registered first, so their ids are 0, 1, 2, ... in this order.
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, *GRAMMAR_TOKENS)

BUILD_INFO_FILE = "build_info.json"
# Bump when the training code changes in a way that changes the weights, so that
# cached builds are redone (the corpus has its own CORPUS_VERSION).
TRAINING_VERSION = 3
# Float reductions can depend on how work is split across threads, so training
# always uses the same count regardless of the machine's core count.
TRAIN_THREADS = 2
# Half of the training windows start with BOS: callers may or may not prepend
# it, and the model should continue a prompt sensibly either way.
BOS_PROBABILITY = 0.5
GRAD_CLIP_NORM = 1.0
# The reported loss averages the last steps, because one batch is noisy.
LOSS_WINDOW = 10


@dataclass(frozen=True)
class ModelPreset:
    """Everything that determines a build; it is hashed into the cache fingerprint."""

    name: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    max_position_embeddings: int
    corpus_chars: int
    seq_len: int
    batch_size: int
    train_steps: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float = 0.1


# Sized so the whole build (corpus, tokenizer, 340 steps) takes about 3.5 minutes
# on 2 idle CPU cores; the step count is fixed rather than time-budgeted so that
# the result is reproducible. Of the peak rates tried (2e-3, 3e-3, 6e-3), 2e-3
# reached the lowest loss in this budget.
DEMO = ModelPreset(
    name="demo",
    vocab_size=4096,
    hidden_size=256,
    intermediate_size=688,
    num_layers=4,
    num_heads=4,
    num_kv_heads=2,
    max_position_embeddings=2048,
    corpus_chars=2_000_000,
    seq_len=128,
    batch_size=16,
    train_steps=340,
    learning_rate=2e-3,
    warmup_steps=30,
)

# For tests: same code paths, builds in a few seconds, output is mostly noise.
TINY = ModelPreset(
    name="tiny",
    vocab_size=512,
    hidden_size=64,
    intermediate_size=172,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    max_position_embeddings=2048,
    corpus_chars=200_000,
    seq_len=64,
    batch_size=8,
    train_steps=40,
    learning_rate=3e-3,
    warmup_steps=5,
)

PRESETS: dict[str, ModelPreset] = {preset.name: preset for preset in (DEMO, TINY)}


def fingerprint(preset: ModelPreset, seed: int) -> str:
    """Identify a build recipe, so a cached directory can be trusted or rebuilt."""
    recipe = {
        "preset": asdict(preset),
        "seed": seed,
        "corpus_version": CORPUS_VERSION,
        "training_version": TRAINING_VERSION,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def ensure_model(
    output_dir: Path, preset: ModelPreset, *, seed: int = 0, progress: bool = True
) -> Path:
    """Return ``output_dir``, building the model there only if it is missing or stale."""
    output_dir = Path(output_dir).absolute()
    expected = fingerprint(preset, seed)
    if _stored_fingerprint(output_dir) == expected:
        return output_dir
    with _build_lock(output_dir):
        # Another process (a parallel test session, say) may have built it meanwhile.
        if _stored_fingerprint(output_dir) != expected:
            _build_and_publish(output_dir, preset, seed, progress)
    return output_dir


def build_model(
    output_dir: Path, preset: ModelPreset, *, seed: int = 0, progress: bool = True
) -> Path:
    """Build from scratch and replace ``output_dir``, even if it is up to date."""
    output_dir = Path(output_dir).absolute()
    with _build_lock(output_dir):
        _build_and_publish(output_dir, preset, seed, progress)
    return output_dir


@contextmanager
def _build_lock(output_dir: Path) -> Iterator[None]:
    """Serialise builds of one directory across processes; released if the holder dies."""
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with (output_dir.parent / f".{output_dir.name}.lock").open("w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        yield


def _build_and_publish(output_dir: Path, preset: ModelPreset, seed: int, progress: bool) -> None:
    """Build in a hidden sibling directory and rename it into place at the end, so
    an interrupted build never leaves a half-written model. Needs the build lock.
    """
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.build-", dir=output_dir.parent))
    try:
        _build_into(staging, preset, seed, progress)
        _make_shareable(staging)
        _replace_dir(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _stored_fingerprint(output_dir: Path) -> str | None:
    try:
        info = json.loads((output_dir / BUILD_INFO_FILE).read_text())
    except (OSError, ValueError):
        return None
    return info.get("fingerprint") if isinstance(info, dict) else None


def _make_shareable(directory: Path) -> None:
    """Undo the owner-only modes of ``mkdtemp`` and safetensors' writer.

    The model is read by other processes, possibly other users (a Triton container).
    """
    directory.chmod(0o755)
    for path in directory.iterdir():
        path.chmod(0o644)


def _replace_dir(source: Path, target: Path) -> None:
    """Swap ``source`` in for ``target``; a rename cannot overwrite a non-empty dir."""
    if not target.exists():
        source.rename(target)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    target.rename(retired / target.name)
    source.rename(target)
    shutil.rmtree(retired)


def _build_into(directory: Path, preset: ModelPreset, seed: int, progress: bool) -> None:
    started = time.monotonic()
    documents = build_corpus(seed, preset.corpus_chars)
    backend = train_tokenizer(documents, preset.vocab_size)
    tokenizer = wrap_tokenizer(backend, preset.max_position_embeddings)
    tokenizer.save_pretrained(directory)

    stream, doc_starts = _encode_corpus(backend, documents, tokenizer.eos_token_id)
    with _deterministic_torch(seed):
        model = LlamaForCausalLM(_model_config(preset, tokenizer))
        losses = _train(model, stream, doc_starts, preset, tokenizer.bos_token_id, progress)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(directory)

    info = _build_info(preset, seed, documents, stream, losses, time.monotonic() - started)
    # Written last: its presence with a matching fingerprint marks a complete build.
    (directory / BUILD_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")


def _build_info(
    preset: ModelPreset,
    seed: int,
    documents: list[str],
    stream: torch.Tensor,
    losses: list[float],
    seconds: float,
) -> dict[str, object]:
    """The cache fingerprint, plus what a person checking a model wants to know."""
    return {
        "fingerprint": fingerprint(preset, seed),
        "preset": asdict(preset),
        "seed": seed,
        "corpus_version": CORPUS_VERSION,
        "training_version": TRAINING_VERSION,
        "corpus_documents": len(documents),
        "corpus_tokens": stream.numel(),
        "final_loss": round(sum(losses[-LOSS_WINDOW:]) / len(losses[-LOSS_WINDOW:]), 4),
        "build_seconds": round(seconds, 1),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }


def train_tokenizer(documents: list[str], vocab_size: int) -> Tokenizer:
    """Byte-level BPE: every byte is in the alphabet, so no text is ever unrepresentable.

    ``add_prefix_space=False`` keeps ``decode(encode(text)) == text`` exact.
    """
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(documents, trainer=trainer)
    return tokenizer


def wrap_tokenizer(backend: Tokenizer, max_length: int) -> PreTrainedTokenizerFast:
    """Expose the tokenizer through ``AutoTokenizer``.

    BOS/EOS are never added implicitly and spaces are never "cleaned up" on
    decode: either would break exact round-trips of constrained output.
    """
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        extra_special_tokens=list(GRAMMAR_TOKENS),
        add_bos_token=False,
        add_eos_token=False,
        clean_up_tokenization_spaces=False,
        model_max_length=max_length,
        chat_template=CHAT_TEMPLATE,
    )


def _encode_corpus(
    backend: Tokenizer, documents: list[str], eos_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate documents, each followed by EOS so the model learns to stop.

    Returns the token stream and the offset at which each document starts.
    """
    ids: list[int] = []
    starts: list[int] = []
    for encoding in backend.encode_batch(documents, add_special_tokens=False):
        starts.append(len(ids))
        ids.extend(encoding.ids)
        ids.append(eos_id)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(starts, dtype=torch.long)


def _model_config(preset: ModelPreset, tokenizer: PreTrainedTokenizerFast) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=preset.hidden_size,
        intermediate_size=preset.intermediate_size,
        num_hidden_layers=preset.num_layers,
        num_attention_heads=preset.num_heads,
        num_key_value_heads=preset.num_kv_heads,
        max_position_embeddings=preset.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


@contextmanager
def _deterministic_torch(seed: int) -> Iterator[None]:
    """Pin seed, thread count and algorithms; restore the caller's settings after."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(TRAIN_THREADS)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(deterministic)


def _train(
    model: LlamaForCausalLM,
    stream: torch.Tensor,
    doc_starts: torch.Tensor,
    preset: ModelPreset,
    bos_id: int,
    progress: bool,
) -> list[float]:
    """AdamW with warmup and cosine decay; returns the loss of every step."""
    optimizer = torch.optim.AdamW(
        _param_groups(model, preset.weight_decay), lr=preset.learning_rate, betas=(0.9, 0.95)
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _lr_factor(step, preset.warmup_steps, preset.train_steps)
    )
    starts, weights = _window_starts(doc_starts, stream.numel(), preset.seq_len)
    model.train()
    losses: list[float] = []
    steps = tqdm(range(preset.train_steps), desc=f"training {preset.name}", disable=not progress)
    for _ in steps:
        batch = _sample_batch(stream, starts, weights, preset, bos_id)
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP_NORM)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        steps.set_postfix(loss=f"{losses[-1]:.3f}")
    model.eval()
    return losses


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, object]]:
    """Decay matrices only: shrinking norm gains towards zero just hurts."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def _lr_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """Linear warmup, then cosine decay to 10% of the peak rate."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress)))


def _window_starts(
    doc_starts: torch.Tensor, stream_length: int, seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Where training windows may begin, and how likely each start is.

    Windows begin at document boundaries, so that position 0 looks like the start
    of a prompt, which is how the model is used. Weighting by document length
    keeps each source's share of training tokens close to its share of the
    corpus; uniform weights would let the many short generated documents crowd
    out the long reference paragraphs.
    """
    lengths = torch.diff(doc_starts, append=torch.tensor([stream_length]))
    usable = doc_starts + seq_len <= stream_length
    return doc_starts[usable], lengths[usable].double()


def _sample_batch(
    stream: torch.Tensor,
    starts: torch.Tensor,
    weights: torch.Tensor,
    preset: ModelPreset,
    bos_id: int,
) -> torch.Tensor:
    """Draws from torch's global RNG, which the build has seeded."""
    chosen = starts[torch.multinomial(weights, preset.batch_size, replacement=True)]
    batch = stream[chosen[:, None] + torch.arange(preset.seq_len)]
    with_bos = torch.rand(preset.batch_size) < BOS_PROBABILITY
    batch[with_bos] = torch.cat(
        [torch.full((int(with_bos.sum()), 1), bos_id), batch[with_bos, :-1]], dim=1
    )
    return batch
