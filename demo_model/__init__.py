"""The project's self-built default model.

No model can be downloaded where this project runs, so a small Llama and a
byte-level BPE tokenizer are trained locally from offline text; see ``build``.
"""

from demo_model.build import DEMO, PRESETS, TINY, ModelPreset, build_model, ensure_model

__all__ = ["DEMO", "PRESETS", "TINY", "ModelPreset", "build_model", "ensure_model"]
