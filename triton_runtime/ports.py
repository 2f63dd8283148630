"""Free TCP ports for servers started by tests and tools.

tritonserver cannot be told to pick a port itself and report it back, so a port is chosen
first and bound later by the server; something else may take it in between. Asking the
kernel for one (binding port 0) makes that likely on a busy machine: such ports come from
the ephemeral range, which the kernel also hands out as the source port of every outgoing
connection. Ports are therefore drawn at random from below that range, where only
listening servers live, and callers that lost the race anyway retry (see ManagedProcess).
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_LOWEST = 20000
_ATTEMPTS = 1000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port(host: str = "127.0.0.1") -> int:
    """Return a port on `host` that nothing was listening on a moment ago."""
    first_ephemeral = _first_ephemeral_port()
    for _ in range(_ATTEMPTS):
        port = random.randrange(_LOWEST, first_ephemeral)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port found on {host} in {_ATTEMPTS} attempts")


def _first_ephemeral_port() -> int:
    """Linux's default is 32768; a system configured lower leaves no room, so fail loudly."""
    first = int(_EPHEMERAL_RANGE.read_text().split()[0]) if _EPHEMERAL_RANGE.is_file() else 32768
    if first - _LOWEST < 1000:
        raise RuntimeError(f"ephemeral ports start at {first}: no room below for test servers")
    return first
