"""Frontend configuration, read from the environment once at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from frontend.keys import normalize, parse_entries


def _key_digests() -> list[str]:
    """Digests of the keys in CT_API_KEYS and CT_API_KEYS_FILE; bad entries stop start-up."""
    digests = parse_entries(os.environ.get("CT_API_KEYS", ""), "CT_API_KEYS")
    keys_file = os.environ.get("CT_API_KEYS_FILE")
    if keys_file:
        digests += parse_entries(Path(keys_file).read_text(encoding="utf-8"), keys_file)
    return digests


def _flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value in {"1", "true", "yes", "on"}


def _urls(value: str) -> tuple[str, ...]:
    """``host:port`` entries, comma-separated: every Triton endpoint to spread requests over."""
    urls = tuple(url.strip() for url in value.split(",") if url.strip())
    if not urls:
        raise ValueError("CT_TRITON_URL names no endpoint")
    return urls


def _names(value: str) -> tuple[str, ...]:
    """Comma-separated names, blanks dropped."""
    return tuple(name.strip() for name in value.split(",") if name.strip())


def _name_of(model_dir: str | None) -> str:
    """The served model's name, as responses report it: its directory's name."""
    return Path(model_dir).name if model_dir else Settings.model_name


@dataclass(frozen=True)
class Settings:
    """Everything the frontend needs to know about its deployment."""

    triton_urls: tuple[str, ...] = ("127.0.0.1:8011",)
    triton_model: str = "ensemble"
    triton_decoder_model: str = "constrained_decoder"
    triton_tokenizer_model: str = "tokenizer"
    triton_chat_template_model: str = "chat_template"
    triton_detokenizer_model: str = "detokenizer"
    model_name: str = "default"
    served_model_names: tuple[str, ...] = ()
    """More names the model answers to on /v1/completions (a client's
    ``"model": "mistral"``), listed by /v1/models after ``model_name``."""
    api_keys: tuple[str, ...] = field(default_factory=tuple)
    """``sha256:<hex>`` digests; plain keys given here are hashed on construction."""
    auth_disabled: bool = False
    rate_limit_rps: float = 0.0
    """Steady requests a second allowed per key (0: unlimited)."""
    rate_limit_burst: int = 0
    """Requests a key may make at once (0: the steady rate rounded up, at least 1)."""
    metrics_require_key: bool = False
    request_timeout_s: float = 300.0
    stream_interval_ms: float = 0.0
    """Streamed responses: merge each choice's text for this long (0: every token)."""
    health_interval_s: float = 1.0
    health_probe_timeout_s: float = 5.0
    restart_failed_models: bool = True
    """Unload and load a model whose stub died (needs Triton's explicit model control)."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest request body accepted (413 beyond it; 0: no limit): ``frontend.body_limit``."""

    def __post_init__(self) -> None:
        """Holds keys only as digests and refuses limits that cannot mean anything."""
        digests = tuple(
            normalize(key, f"api_keys[{index}]") for index, key in enumerate(self.api_keys)
        )
        object.__setattr__(self, "api_keys", digests)
        if not (self.rate_limit_rps >= 0 and self.rate_limit_burst >= 0):  # NaN too
            raise ValueError("CT_RATE_LIMIT_RPS and CT_RATE_LIMIT_BURST must be >= 0")
        if not (self.health_interval_s > 0 and self.health_probe_timeout_s > 0):
            raise ValueError("CT_HEALTH_INTERVAL_S and CT_HEALTH_PROBE_TIMEOUT_S must be > 0")

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name the served model answers to: its own first, then the aliases."""
        return tuple(dict.fromkeys((self.model_name, *self.served_model_names)))

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            triton_urls=_urls(os.environ.get("CT_TRITON_URL", ",".join(cls.triton_urls))),
            triton_model=os.environ.get("CT_TRITON_MODEL", cls.triton_model),
            triton_decoder_model=os.environ.get(
                "CT_TRITON_DECODER_MODEL", cls.triton_decoder_model
            ),
            triton_tokenizer_model=os.environ.get(
                "CT_TRITON_TOKENIZER_MODEL", cls.triton_tokenizer_model
            ),
            triton_detokenizer_model=os.environ.get(
                "CT_TRITON_DETOKENIZER_MODEL", cls.triton_detokenizer_model
            ),
            triton_chat_template_model=os.environ.get(
                "CT_TRITON_CHAT_TEMPLATE_MODEL", cls.triton_chat_template_model
            ),
            model_name=os.environ.get("CT_MODEL_NAME") or _name_of(os.environ.get("CT_MODEL_DIR")),
            served_model_names=_names(os.environ.get("CT_SERVED_MODEL_NAMES", "")),
            api_keys=tuple(_key_digests()),
            auth_disabled=_flag("CT_AUTH_DISABLED"),
            rate_limit_rps=float(os.environ.get("CT_RATE_LIMIT_RPS") or 0),
            rate_limit_burst=int(os.environ.get("CT_RATE_LIMIT_BURST") or 0),
            metrics_require_key=_flag("CT_METRICS_REQUIRE_KEY"),
            request_timeout_s=float(os.environ.get("CT_REQUEST_TIMEOUT_S", cls.request_timeout_s)),
            stream_interval_ms=float(
                os.environ.get("CT_STREAM_INTERVAL_MS", cls.stream_interval_ms)
            ),
            health_interval_s=float(os.environ.get("CT_HEALTH_INTERVAL_S", cls.health_interval_s)),
            health_probe_timeout_s=float(
                os.environ.get("CT_HEALTH_PROBE_TIMEOUT_S", cls.health_probe_timeout_s)
            ),
            restart_failed_models=_flag("CT_RESTART_FAILED_MODELS", cls.restart_failed_models),
            max_body_bytes=int(os.environ.get("CT_MAX_BODY_BYTES") or cls.max_body_bytes),
        )
