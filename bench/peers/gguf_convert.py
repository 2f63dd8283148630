"""Run llama.cpp's ``convert_hf_to_gguf.py`` on a model directory, teaching it
the demo tokenizer's pre-tokenizer.

The converter recognises a BPE tokenizer by hashing how it splits a test
string, and stops on any hash missing from its table: the demo model's own 4k
BPE is one. That tokenizer splits with exactly GPT-2's regex (a ``ByteLevel``
pre-tokenizer with ``use_regex``), so when the table has no answer and the
tokenizer is of that kind, the converter is told "gpt-2". Real tokenizers
(Llama 3's) are still recognised by the table itself.

It also tries a SentencePiece vocabulary first, importing ``sentencepiece``
before looking for ``tokenizer.model``; a directory without that file answers
"not found" straight away, as the converter expects, so the package is not
needed for BPE models.

Run as a script with the project's interpreter:
``python gguf_convert.py LLAMA_CPP_DIR MODEL_DIR --outfile OUT.gguf --outtype f32``
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path


def _splits_like_gpt2(model_dir: Path) -> bool:
    pre = json.loads((model_dir / "tokenizer.json").read_text()).get("pre_tokenizer") or {}
    return pre.get("type") == "ByteLevel" and pre.get("use_regex", True)


def _no_sentencepiece_model(self) -> None:
    raise FileNotFoundError("no tokenizer.model")


def main() -> None:
    llama_cpp, model_dir = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path[:0] = [str(llama_cpp), str(llama_cpp / "gguf-py")]
    from conversion import base  # llama.cpp's converter package, importable only from its tree

    recognise = base.TextModel.get_vocab_base_pre

    def recognise_or_gpt2(self, tokenizer) -> str:
        try:
            return recognise(self, tokenizer)
        except NotImplementedError:
            if _splits_like_gpt2(model_dir):
                return "gpt-2"
            raise

    base.TextModel.get_vocab_base_pre = recognise_or_gpt2
    if not (model_dir / "tokenizer.model").is_file():
        base.TextModel._set_vocab_sentencepiece = _no_sentencepiece_model
    script = llama_cpp / "convert_hf_to_gguf.py"
    sys.argv = [str(script), *sys.argv[2:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
