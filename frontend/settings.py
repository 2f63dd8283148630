"""Frontend configuration, read from the environment once at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _keys_from(value: str) -> list[str]:
    return [key.strip() for key in value.replace("\n", ",").split(",") if key.strip()]


def _name_of(model_dir: str | None) -> str:
    """The served model's name, as responses report it: its directory's name."""
    return Path(model_dir).name if model_dir else Settings.model_name


@dataclass(frozen=True)
class Settings:
    """Everything the frontend needs to know about its deployment."""

    triton_url: str = "127.0.0.1:8011"
    triton_model: str = "ensemble"
    triton_decoder_model: str = "constrained_decoder"
    model_name: str = "default"
    api_keys: tuple[str, ...] = field(default_factory=tuple)
    auth_disabled: bool = False
    request_timeout_s: float = 300.0
    stream_interval_ms: float = 0.0
    """Streamed responses: merge each choice's text for this long (0: every token)."""

    @classmethod
    def from_env(cls) -> Settings:
        keys = _keys_from(os.environ.get("CT_API_KEYS", ""))
        keys_file = os.environ.get("CT_API_KEYS_FILE")
        if keys_file:
            keys += _keys_from(Path(keys_file).read_text(encoding="utf-8"))
        return cls(
            triton_url=os.environ.get("CT_TRITON_URL", cls.triton_url),
            triton_model=os.environ.get("CT_TRITON_MODEL", cls.triton_model),
            triton_decoder_model=os.environ.get(
                "CT_TRITON_DECODER_MODEL", cls.triton_decoder_model
            ),
            model_name=os.environ.get("CT_MODEL_NAME") or _name_of(os.environ.get("CT_MODEL_DIR")),
            api_keys=tuple(keys),
            auth_disabled=os.environ.get("CT_AUTH_DISABLED", "").lower() in {"1", "true", "yes"},
            request_timeout_s=float(os.environ.get("CT_REQUEST_TIMEOUT_S", cls.request_timeout_s)),
            stream_interval_ms=float(
                os.environ.get("CT_STREAM_INTERVAL_MS", cls.stream_interval_ms)
            ),
        )
