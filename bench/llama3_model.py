"""A bench model with Llama 3's real 128k-token vocabulary, built offline.

The demo model's 4k vocabulary hides what a real one costs: every
constrained row fills a token mask over the whole vocabulary each step, and
real merges (long tokens spanning quotes and digits) break assumptions a
small BPE never meets. No model can be downloaded here, but the package index
can: the ``llama-cpp-python`` source distribution vendors llama.cpp, whose
``models/ggml-vocab-llama-bpe.gguf`` is Llama 3's tokenizer (vocabulary only)
and ``models/templates/`` Meta's own chat template. ``transformers`` reads
the GGUF (with the ``gguf`` package) and saves a fast ``tokenizer.json``.

The weights are a small Llama (4 layers, 256 wide) with Llama 3.2's shape
choices (GQA, tied embeddings, rope theta 500k), random and seeded: enough
for timing and for the constrained paths (the grammar decides what is
valid; the weights only rank it). Outputs are not meant to be read.

    python -m bench.llama3_model [--output .cache/models/bench-llama3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / ".cache" / "models" / "bench-llama3"
SDIST_DIR = REPO_ROOT / ".cache" / "llama-cpp-sdist"
LLAMA_CPP_PYTHON = "0.3.36"
VOCAB_FILE = "ggml-vocab-llama-bpe.gguf"
TEMPLATE_FILE = "meta-llama-Llama-3.1-8B-Instruct.jinja"
SHAPE = {
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rope_theta": 500_000.0,
    "tie_word_embeddings": True,
}
SEED = 0
INFO_FILE = "bench_model.json"


def _fingerprint() -> str:
    recipe = {"sdist": LLAMA_CPP_PYTHON, "vocab": VOCAB_FILE, "shape": SHAPE, "seed": SEED}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def sdist(directory: Path = SDIST_DIR) -> Path:
    """The pinned llama-cpp-python source distribution, downloaded once."""
    archive = directory / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if not archive.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(directory)],
            check=True,
        )  # fmt: skip
    return archive


def _extract(archive: Path, names: tuple[str, ...], into: Path) -> None:
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/models/"
    with tarfile.open(archive) as tar:
        for name in names:
            member = tar.getmember(prefix + name)
            source = tar.extractfile(member)
            assert source is not None, name
            (into / Path(name).name).write_bytes(source.read())


def ensure_llama3_model(output: Path = DEFAULT_OUTPUT) -> Path:
    """``output``, built there first if missing or from another recipe."""
    info = output / INFO_FILE
    if info.is_file() and json.loads(info.read_text()).get("fingerprint") == _fingerprint():
        return output
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.build-", dir=output.parent))
    try:
        with tempfile.TemporaryDirectory() as scratch:
            _extract(sdist(), (VOCAB_FILE, f"templates/{TEMPLATE_FILE}"), Path(scratch))
            tokenizer = AutoTokenizer.from_pretrained(scratch, gguf_file=VOCAB_FILE)
            tokenizer.chat_template = (Path(scratch) / TEMPLATE_FILE).read_text()
        tokenizer.save_pretrained(staging)
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **SHAPE,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(SEED)
            LlamaForCausalLM(config).save_pretrained(staging)
        (staging / INFO_FILE).write_text(
            json.dumps({"fingerprint": _fingerprint(), "vocab_size": len(tokenizer)}) + "\n"
        )
        staging.chmod(0o755)  # read by Triton's processes, maybe another user
        if output.exists():
            shutil.rmtree(output)
        staging.rename(output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    print(ensure_llama3_model(parser.parse_args().output))


if __name__ == "__main__":
    main()
