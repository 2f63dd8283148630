"""POST /v1/completion/regex against a real tritonserver and the real frontend."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from grammar_compiler.regex import could_still_match, matches

from .conftest import API_KEY, Service

PATTERNS = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "phone": r"\(\d{3}\) \d{3}-\d{4}",
    "email-like": r"[a-z]{1,8}\.[a-z]{1,8}@[a-z]{2,8}\.(com|org|net)",
    "alternation": r"(red|green|blue) (car|boat|plane)",
    "bounded-repeat": r"(ab){2,4}c?",
    "classes": r"[A-Z][a-z]{2,5} [0-9]{1,3}",
    "unicode": r"(café|naïve|日本語|😀)+",
    "anchored": r"^yes|no$",
    "lookarounds": r"(?=.*\d)(?!0)[a-z0-9]{4,8}(?<!x)",
}


def _post(service: Service, body: dict, **kwargs) -> httpx.Response:
    with service.client(**kwargs) as client:
        return client.post("/v1/completion/regex", json=body)


def _assert_valid(pattern: str | list[str], body: dict) -> None:
    assert set(body) == {"completion", "tokens_generated", "stop_reason", "matched"}
    assert isinstance(body["tokens_generated"], int) and body["tokens_generated"] >= 1
    assert body["matched"] == matches(pattern, body["completion"]), body
    if body["stop_reason"] == "pattern_match":
        assert body["matched"], body
    else:
        assert body["stop_reason"] == "token_limit", body
        assert could_still_match(pattern, body["completion"]), body


def test_documented_example(service: Service) -> None:
    body = {
        "prompt": "This is a sample prompt",
        "pattern": ".*prompt$",
        "max_new_tokens": 10,
        "stop_after_match": False,
        "top_k": 50,
        "top_p": 0.9,
        "temperature": 0.8,
        "repetition_penalty": 1.2,
    }
    response = _post(service, body)
    assert response.status_code == 200, response.text
    result = response.json()
    _assert_valid(".*prompt$", result)
    assert result["tokens_generated"] <= 10
    if result["stop_reason"] == "pattern_match":
        assert re.fullmatch(".*prompt", result["completion"])


@pytest.mark.parametrize("name", sorted(PATTERNS))
@pytest.mark.parametrize("temperature", [0.0, 0.7, 1.5])
def test_patterns_across_temperatures_and_seeds(
    service: Service, name: str, temperature: float
) -> None:
    pattern = PATTERNS[name]
    for seed_prompt in ("Answer: ", "Q: what is it?\nA: "):
        response = _post(
            service,
            {
                "prompt": seed_prompt,
                "pattern": pattern,
                "max_new_tokens": 40,
                "temperature": temperature,
            },
        )
        assert response.status_code == 200, response.text
        _assert_valid(pattern, response.json())


def test_defaults_cut_long_patterns_at_five_tokens(service: Service) -> None:
    response = _post(service, {"prompt": "Spell: ", "pattern": "[a-z]{200}"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result == {
        **result,
        "stop_reason": "token_limit",
        "tokens_generated": 5,
        "matched": False,
    }
    assert could_still_match("[a-z]{200}", result["completion"])


def test_list_of_patterns_matches_any(service: Service) -> None:
    patterns = [r"\d{3}", r"[a-z]{3}", "maybe"]
    seen = set()
    for temperature in (0.0, 1.0, 1.5):
        response = _post(
            service,
            {
                "prompt": "Pick: ",
                "pattern": patterns,
                "max_new_tokens": 20,
                "temperature": temperature,
            },
        )
        assert response.status_code == 200, response.text
        result = response.json()
        _assert_valid(patterns, result)
        seen.add(result["completion"])
    assert seen


def test_stop_after_match_controls_when_generation_ends(service: Service) -> None:
    stop_early = _post(
        service, {"prompt": "Letters: ", "pattern": "[a-z]+", "max_new_tokens": 12}
    ).json()
    assert stop_early["stop_reason"] == "pattern_match"
    assert stop_early["tokens_generated"] == 1  # the first token already matches
    keep_going = _post(
        service,
        {
            "prompt": "Letters: ",
            "pattern": "[a-z]+",
            "max_new_tokens": 12,
            "stop_after_match": False,
        },
    ).json()
    _assert_valid("[a-z]+", keep_going)
    # It goes on while the pattern allows more: to the limit (which ended it, although
    # the text is a full match), or until the model ends a full match.
    if keep_going["stop_reason"] == "token_limit":
        assert keep_going["tokens_generated"] == 12 and keep_going["matched"]
    else:
        assert keep_going["stop_reason"] == "pattern_match" and keep_going["matched"]


def test_concurrent_requests_are_all_answered_correctly(service: Service) -> None:
    names = sorted(PATTERNS)

    async def run() -> list[tuple[str, httpx.Response]]:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(
            base_url=service.frontend.url, headers=headers, timeout=180
        ) as client:
            jobs = []
            for i in range(24):
                pattern = PATTERNS[names[i % len(names)]]
                body = {
                    "prompt": f"Request {i}: ",
                    "pattern": pattern,
                    "max_new_tokens": 30,
                    "temperature": 1.0,
                }
                jobs.append((pattern, client.post("/v1/completion/regex", json=body)))
            responses = await asyncio.gather(*(job for _, job in jobs))
            return [
                (pattern, response) for (pattern, _), response in zip(jobs, responses, strict=True)
            ]

    for pattern, response in asyncio.run(run()):
        assert response.status_code == 200, response.text
        _assert_valid(pattern, response.json())


@pytest.mark.parametrize("api_key", [None, "wrong-key"])
def test_missing_or_wrong_key_is_rejected(service: Service, api_key: str | None) -> None:
    response = _post(service, {"prompt": "x", "pattern": "a"}, api_key=api_key)
    assert response.status_code == 401
    assert response.json() == {"error": "Invalid API Key provided.", "code": 401}


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("(abc", "position"),
        ("a(?=b)", "lookahead"),
        ("x(b(?<=a))", "lookbehind"),
        (r"(a)*\1", "backreference"),
    ],
)
def test_bad_regexes_are_400_with_details(service: Service, pattern: str, fragment: str) -> None:
    response = _post(service, {"prompt": "x", "pattern": pattern})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == 400 and fragment in body["error"].lower()


@pytest.mark.parametrize(
    "body",
    [
        {"prompt": "x"},
        {"pattern": "a"},
        {"prompt": "x", "pattern": "a", "max_new_tokens": 0},
        {"prompt": "x", "pattern": "a", "top_p": 1.5},
        {"prompt": "x", "pattern": "a", "temperature": -1},
        {"prompt": "x", "pattern": "a", "max_new_tokens": "many"},
        {"prompt": "x", "pattern": []},
        {"prompt": "x", "pattern": "a", "unknown_field": 1},
    ],
)
def test_bad_fields_are_422_in_the_documented_shape(service: Service, body: dict) -> None:
    response = _post(service, body)
    assert response.status_code == 422, response.text
    result = response.json()
    assert set(result) == {"error", "code"} and result["code"] == 422


def test_health_and_openapi_docs(service: Service) -> None:
    with service.client(api_key=None) as client:
        assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/docs").status_code == 200
        spec = client.get("/openapi.json").json()
    assert "/v1/completion/regex" in spec["paths"]


def test_client_disconnect_cancels_generation(service: Service) -> None:
    from .test_ensemble_direct import CANCELLED, _metric, _wait_for_metric_above

    before = _metric(service.triton, CANCELLED)
    body = {"prompt": "Long: ", "pattern": "[a-z]{4000}", "max_new_tokens": 4000}
    # The tiny model writes these 4000 characters in about a second: leave well before.
    with service.client(timeout=0.2) as client, pytest.raises(httpx.TimeoutException):
        client.post("/v1/completion/regex", json=body)  # the client gives up and disconnects
    assert _wait_for_metric_above(service.triton, CANCELLED, before) > before
