"""Ephemeral TCP ports for servers started by tests and tools."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """Return a port that was free a moment ago.

    Another process may still take it before the caller binds it; that race is accepted
    because tritonserver cannot be told to pick a port itself and report it back.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
