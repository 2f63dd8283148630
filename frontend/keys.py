"""API key entries: plain keys or ``sha256:<hex>`` digests, held only as digests.

Operators may keep key files free of secrets by listing digests (``python -m
frontend.auth hash``); plain entries are hashed the moment they are read, so
the process never keeps a usable key in memory after start-up.
"""

from __future__ import annotations

import hashlib
import hmac
import re

PREFIX = "sha256:"
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}")


def digest_of(key: str) -> str:
    """The ``sha256:<hex>`` form of a plain key."""
    return PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id(digest: str) -> str:
    """A short, non-secret name for a key, the only form of it fit for logs."""
    return digest[: len(PREFIX) + 8]


def normalize(entry: str, where: str) -> str:
    """One configured entry as a digest; ``where`` says where it came from.

    Errors never echo the entry: a near-miss plain key is still a secret.
    """
    if not entry or any(char.isspace() for char in entry):
        raise ValueError(f"malformed API key entry ({where}): empty or contains whitespace")
    if entry.lower().startswith(PREFIX):
        digest = entry[len(PREFIX) :]
        if not _HEX_DIGEST.fullmatch(digest):
            raise ValueError(
                f"malformed API key entry ({where}): a {PREFIX} entry needs 64 hex digits"
            )
        return PREFIX + digest.lower()
    return digest_of(entry)


def parse_entries(text: str, source: str) -> list[str]:
    """Digests from comma- or newline-separated entries; ``#`` lines are comments.

    Raises ValueError naming ``source`` and the line of the first bad entry.
    """
    digests = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        for entry in line.split(","):
            if entry.strip():
                digests.append(normalize(entry.strip(), f"{source} line {number}"))
    return digests


def match(token: str, digests: tuple[str, ...]) -> str | None:
    """The configured digest ``token`` hashes to, or None.

    Every digest is compared, with ``hmac.compare_digest`` and no early exit,
    so response time says nothing about which key or how much of it matched.
    """
    candidate = digest_of(token).encode()
    found = None
    for digest in digests:
        if hmac.compare_digest(candidate, digest.encode()):
            found = digest
    return found
