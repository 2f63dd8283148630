"""API keys held as digests, compared in constant time, and per-key token buckets."""

from __future__ import annotations

import hashlib
import hmac
import io
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from frontend import auth, keys
from frontend.app import create_app
from frontend.keys import digest_of, match, parse_entries
from frontend.ratelimit import RateLimiter
from frontend.settings import Settings

KEY = "plain-key-123"
OTHER = "other-key-456"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_digest_is_sha256_hex() -> None:
    assert digest_of(KEY) == "sha256:" + hashlib.sha256(KEY.encode()).hexdigest()


def test_file_entries_plain_and_hashed() -> None:
    upper = digest_of(OTHER).upper().replace("SHA256:", "sha256:")
    text = f"# operators' keys\n{KEY}\n\n  {upper} , {digest_of('third')}\n"
    assert parse_entries(text, "keys.txt") == [digest_of(KEY), digest_of(OTHER), digest_of("third")]


@pytest.mark.parametrize(
    "entry", ["sha256:abc", "sha256:" + "g" * 64, "SHA256:" + "0" * 63, "two words"]
)
def test_malformed_entries_are_refused_without_echoing_them(entry: str) -> None:
    with pytest.raises(ValueError, match=r"keys\.txt line 2") as caught:
        parse_entries(f"{KEY}\n{entry}\n", "keys.txt")
    assert entry not in str(caught.value)


def test_settings_hold_only_digests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(digest_of(OTHER) + "\n", encoding="utf-8")
    monkeypatch.setenv("CT_API_KEYS", KEY)
    monkeypatch.setenv("CT_API_KEYS_FILE", str(keys_file))
    monkeypatch.setenv("CT_RATE_LIMIT_RPS", "2.5")
    monkeypatch.setenv("CT_RATE_LIMIT_BURST", "4")
    monkeypatch.setenv("CT_METRICS_REQUIRE_KEY", "1")
    settings = Settings.from_env()
    assert settings.api_keys == (digest_of(KEY), digest_of(OTHER))
    assert KEY not in repr(settings)
    assert (settings.rate_limit_rps, settings.rate_limit_burst) == (2.5, 4)
    assert settings.metrics_require_key
    assert Settings(api_keys=(KEY,)).api_keys == (digest_of(KEY),)


def test_malformed_file_stops_start_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("sha256:nothex\n", encoding="utf-8")
    monkeypatch.setenv("CT_API_KEYS_FILE", str(keys_file))
    with pytest.raises(ValueError, match="64 hex digits"):
        Settings.from_env()


def test_negative_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        Settings(rate_limit_rps=-1.0)


def test_every_digest_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return real(a, b)

    monkeypatch.setattr(keys.hmac, "compare_digest", counting)
    digests = (digest_of(KEY), digest_of(OTHER), digest_of("third"))
    assert match(KEY, digests) == digest_of(KEY)  # the first matches; the rest still run
    assert len(calls) == 3
    assert match("wrong", digests) is None
    assert len(calls) == 6


def test_bucket_bursts_then_refills_at_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter([digest_of(KEY)], rate=0.5, burst=2, clock=clock)
    assert [limiter.take(digest_of(KEY)) for _ in range(2)] == [0, 0]
    assert limiter.take(digest_of(KEY)) == 2  # one token takes 2 s at 0.5/s
    clock.now += 1.0
    assert limiter.take(digest_of(KEY)) == 1  # half a token: 1 s more
    clock.now += 1.0
    assert limiter.take(digest_of(KEY)) == 0
    clock.now += 100.0  # refills cap at the burst
    assert [limiter.take(digest_of(KEY)) for _ in range(3)] == [0, 0, 2]


def test_retry_after_is_at_least_one_second() -> None:
    clock = Clock()
    limiter = RateLimiter([digest_of(KEY)], rate=1000.0, burst=1, clock=clock)
    assert limiter.take(digest_of(KEY)) == 0
    assert limiter.take(digest_of(KEY)) == 1


def test_keys_have_separate_buckets() -> None:
    limiter = RateLimiter([digest_of(KEY), digest_of(OTHER)], rate=0.1, burst=1, clock=Clock())
    assert limiter.take(digest_of(KEY)) == 0
    assert limiter.take(digest_of(KEY)) == 10
    assert limiter.take(digest_of(OTHER)) == 0


def _client(**settings: object) -> TestClient:
    """The real app; its lifespan (the Triton client) never starts, so no Triton is needed."""
    return TestClient(create_app(Settings(api_keys=(KEY, digest_of(OTHER)), **settings)))


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_dependency_answers_401_and_429_in_each_routes_shape() -> None:
    client = _client(rate_limit_rps=0.01, rate_limit_burst=1)
    assert client.get("/v1/models", headers=_bearer("wrong")).status_code == 401
    assert client.get("/v1/models", headers=_bearer(KEY)).status_code == 200
    limited = client.get("/v1/models", headers=_bearer(KEY))
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "100"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    regex = client.post("/v1/completion/regex", headers=_bearer(KEY), json={})
    assert regex.status_code == 429
    assert regex.json() == {"error": regex.json()["error"], "code": 429}
    assert client.get("/v1/models", headers=_bearer(OTHER)).status_code == 200


def test_wrong_keys_spend_no_tokens() -> None:
    client = _client(rate_limit_rps=0.01, rate_limit_burst=1)
    for _ in range(3):
        assert client.get("/v1/models", headers=_bearer("wrong")).status_code == 401
    assert client.get("/v1/models", headers=_bearer(KEY)).status_code == 200


def test_metrics_open_by_default_and_keyed_on_request() -> None:
    assert _client().get("/metrics").status_code == 200
    keyed = _client(metrics_require_key=True)
    assert keyed.get("/metrics").status_code == 401
    assert keyed.get("/metrics", headers=_bearer(KEY)).status_code == 200


def test_rejections_never_log_the_key(caplog: pytest.LogCaptureFixture) -> None:
    client = _client(rate_limit_rps=0.01, rate_limit_burst=1)
    with caplog.at_level("DEBUG"):
        for _ in range(2):
            client.get("/v1/models", headers=_bearer(KEY))
    assert KEY not in caplog.text
    assert keys.key_id(digest_of(KEY)) in caplog.text


def test_hash_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    auth.main(["hash", KEY])
    assert capsys.readouterr().out.strip() == digest_of(KEY)
    monkeypatch.setattr("sys.stdin", io.StringIO(KEY + "\n"))
    auth.main(["hash"])
    assert capsys.readouterr().out.strip() == digest_of(KEY)
    with pytest.raises(SystemExit):
        auth.main(["hash", "has space"])
