"""A child server process with an HTTP readiness probe and a stop that leaves nothing behind.

Servers are started in their own session so that everything they spawn (tritonserver's
Python-backend stubs, uvicorn workers) shares one process group that can be killed as a
whole. The leader is deliberately not reaped until `stop()`: while it is a zombie its pid
stays reserved as the group id, so killing the group can never hit an unrelated process.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TypeVar

_POLL_INTERVAL_S = 0.1
_START_ATTEMPTS = 3
_TAIL_LINES = 40

_Managed = TypeVar("_Managed", bound="ManagedProcess")

# Echo threads of several servers share one stdout; whole lines must not interleave.
_ECHO_LOCK = threading.Lock()

# Readiness probes go to local servers: never through an HTTP proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ProcessError(RuntimeError):
    """The managed process exited before it became ready."""


def echo(line: str) -> None:
    """Print one whole line to stdout without interleaving with the servers' echoed output."""
    with _ECHO_LOCK:
        sys.stdout.write(f"{line}\n")
        sys.stdout.flush()


def probe_host(bind_address: str) -> str:
    """The address a client on this machine uses to reach a server bound to `bind_address`."""
    return "127.0.0.1" if bind_address in ("", "0.0.0.0", "::") else bind_address


class ManagedProcess:
    """Start a server command, wait until its readiness URL answers, stop it for good.

    `env` holds variables to set on top of this process's environment. Output goes to
    `log_file` (appended), or line by line to this process's stdout behind `echo_prefix`, or,
    with neither, straight to the inherited stdout/stderr. The last lines are kept (from the
    file or the echo) to explain a failed start.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        ready_url: str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log_file: Path | None = None,
        echo_prefix: str | None = None,
        any_status_is_ready: bool = False,
        startup_timeout: float = 120.0,
    ) -> None:
        if log_file is not None and echo_prefix is not None:
            raise ValueError("choose either log_file or echo_prefix, not both")
        self.name = name
        self.command = list(command)
        self.ready_url = ready_url
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.log_file = log_file
        self.echo_prefix = echo_prefix
        self.any_status_is_ready = any_status_is_ready
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None
        self._log_offset = 0  # where this run's output starts in an appended log file
        self._echo_thread: threading.Thread | None = None
        self._echoed: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.name} has not been started")
        return self._proc.pid

    def start(self) -> None:
        """Launch the command; a stopped instance may be started again."""
        if self._proc is not None and self._proc.returncode is None:
            raise RuntimeError(f"{self.name} is already running")
        self._echoed.clear()
        stdout: int | IO[bytes] | None = None
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log_handle = stdout = self.log_file.open("ab")
            self._log_offset = self._log_handle.tell()
        elif self.echo_prefix is not None:
            stdout = subprocess.PIPE
        self._proc = subprocess.Popen(
            self.command,
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=None if stdout is None else subprocess.STDOUT,
            start_new_session=True,
        )
        if self._proc.stdout is not None:
            self._echo_thread = threading.Thread(
                target=self._echo, args=(self._proc.stdout,), name=f"{self.name}-echo", daemon=True
            )
            self._echo_thread.start()

    def exit_status(self) -> int | None:
        """The exit status once the process has ended (negative: killed by that signal).

        Looks without reaping, see the module docstring.
        """
        if self._proc is None:
            return None
        if self._proc.returncode is not None:
            return self._proc.returncode
        info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    def is_ready(self) -> bool:
        """One readiness probe: a 200, or with `any_status_is_ready` any HTTP answer."""
        try:
            with _OPENER.open(self.ready_url, timeout=2.0) as response:
                return response.status == 200 or self.any_status_is_ready
        except urllib.error.HTTPError:
            return self.any_status_is_ready
        except (OSError, ValueError):
            return False

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until ready; fail as soon as the process dies rather than at the timeout."""
        limit = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while not self.is_ready():
            status = self.exit_status()
            if status is not None:
                raise ProcessError(
                    f"{self.name} exited with status {status} before it was ready"
                    f"{self._tail_for_error()}"
                )
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{self.name} was not ready at {self.ready_url} after "
                    f"{limit}s{self._tail_for_error()}"
                )
            time.sleep(_POLL_INTERVAL_S)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM the server, SIGKILL its whole process group after `timeout` seconds.

        Returns the server's exit status (None if it was never started). Whatever is left
        in the group once the server has exited (orphaned children) is killed too.
        """
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None:
            if self.exit_status() is None:
                os.kill(proc.pid, signal.SIGTERM)
            if not self._wait_exit(timeout):
                self._kill_group(proc.pid)
                self._wait_exit(None)
            self._kill_group(proc.pid)
            proc.wait()
        if self._echo_thread is not None:
            self._echo_thread.join(timeout=5.0)
        if self._log_handle is not None:
            self._log_handle.close()
        return proc.returncode

    def log_tail(self, lines: int = _TAIL_LINES) -> str:
        """The last output lines of the latest run ("" when output is inherited)."""
        if self.log_file is not None and self.log_file.is_file():
            with self.log_file.open("rb") as handle:
                handle.seek(max(self._log_offset, self.log_file.stat().st_size - 64 * 1024))
                text = handle.read().decode(errors="replace")
            return "\n".join(text.splitlines()[-lines:])
        return "\n".join(list(self._echoed)[-lines:])

    def start_and_wait(self, timeout: float | None = None) -> None:
        """start() and wait_ready(), stopping again on failure.

        A server that died because a port it was given is already taken is started again
        on fresh ports when they were picked automatically (see ports.free_port).
        """
        for attempt in range(1, _START_ATTEMPTS + 1):
            self.start()
            try:
                self.wait_ready(timeout)
                return
            except ProcessError:
                lost_port_race = "already in use" in self.log_tail().lower()
                self.stop()
                if attempt == _START_ATTEMPTS or not (lost_port_race and self._repick_ports()):
                    raise
            except BaseException:
                self.stop()
                raise

    def _repick_ports(self) -> bool:
        """Choose new free ports after losing a port race; False where ports were given."""
        return False

    def __enter__(self: _Managed) -> _Managed:
        self.start_and_wait()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_exit(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.exit_status() is None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_INTERVAL_S)
        return True

    @staticmethod
    def _kill_group(pgid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)

    def _echo(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            self._echoed.append(line)
            echo(f"{self.echo_prefix}{line}")

    def _tail_for_error(self) -> str:
        tail = self.log_tail()
        where = f" (log: {self.log_file})" if self.log_file is not None else ""
        return f"\n--- last output of {self.name}{where} ---\n{tail}" if tail else where
