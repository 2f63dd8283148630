"""Headless Chromium (Debian's ``chromium`` package) for the browser tests.

Driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so no
driver library or matching driver binary is needed. Each browser gets its own
profile directory and process group, and the group is killed when the
browser is closed, whatever happened: Chromium leaves helper processes
behind when its main process is killed alone.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# Every host name fails to resolve except loopback: the pages must work on a
# machine without internet (an air-gapped cluster).
OFFLINE_RULES = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("chromium is not installed (scripts/test.sh installs Debian's package)")
    return found


class Browser:
    """One headless Chromium showing one page."""

    def __init__(self, url: str, *, timeout_s: float = 60.0) -> None:
        self._timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def descriptors_3_and_4() -> None:
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self._process = subprocess.Popen(
            [
                chromium_binary(),
                "--headless",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                f"--host-resolver-rules={OFFLINE_RULES}",
                "--window-size=1400,1000",
                url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=descriptors_3_and_4,
            pass_fds=(3, 4),  # kept open after the child closes the rest
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._next_id = 0
        self._buffer = b""
        self._session = self._attach_to_page()

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def _read_message(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _attach_to_page(self) -> str:
        deadline = time.monotonic() + self._timeout_s
        while time.monotonic() < deadline:
            pages = [
                target
                for target in self._send("Target.getTargets")["targetInfos"]
                if target["type"] == "page"
            ]
            if pages:
                attached = self._send(
                    "Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True}
                )
                return attached["sessionId"]
            time.sleep(0.1)
        raise TimeoutError("chromium opened no page")

    def evaluate(self, expression: str) -> Any:
        result = self._send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, self._session
        )["result"]
        return result.get("value")

    def wait_for(self, expression: str, *, timeout_s: float | None = None) -> Any:
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + (timeout_s or self._timeout_s)
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):  # the page may be navigating
                value = self.evaluate(expression)
                if value:
                    return value
            time.sleep(0.2)
        raise TimeoutError(f"never true in the page: {expression}")

    def text_of(self, element_id: str) -> str:
        return self.evaluate(f"document.getElementById({json.dumps(element_id)})?.textContent")

    def screenshot(self, path: Path) -> Path:
        data = self._send("Page.captureScreenshot", {"format": "png"}, self._session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        for descriptor in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
