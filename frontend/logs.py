"""The frontend's log lines: one JSON object per line, or text (``CT_LOG_FORMAT``).

JSON (the default) is what log pipelines parse without rules of their own:
``timestamp``, ``level``, ``logger``, ``message``, and within a request its
``request_id`` and ``route``; the access line adds ``method``, ``path``,
``status`` and ``duration_ms``. Uvicorn's own lines go through the same
handler; its access log is replaced by :mod:`frontend.request_context`'s,
which knows the request id. Nothing here logs headers, so API keys never
reach a log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime

from frontend.request_context import current

LOG_FORMATS = ("json", "text")
_HANDLER_NAME = "ct-frontend"
_ACCESS_FIELDS = ("method", "path", "status", "duration_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = current()
        if context is not None:
            entry["request_id"] = context.request_id
            entry["route"] = context.route
        for name in _ACCESS_FIELDS:
            if (value := getattr(record, name, None)) is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For a person at a terminal; the request id still leads each request's lines."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        context = current()
        record.request_id = context.request_id if context is not None else "-"
        return super().format(record)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is now, not what it was when the app
    was made: test runners swap it per test and close the old one."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        """``StreamHandler.__init__`` sets a stream; the current one is always used instead."""


def configure_logging(log_format: str | None = None) -> None:
    """Routes the frontend's and uvicorn's loggers to one handler in ``log_format``
    (default: ``CT_LOG_FORMAT``, else json). Safe to call again: it replaces its
    own handler rather than adding a second."""
    log_format = (log_format or os.environ.get("CT_LOG_FORMAT") or "json").lower()
    if log_format not in LOG_FORMATS:
        raise ValueError(
            f"CT_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}"
        )
    handler = _StderrHandler()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if h.get_name() != _HANDLER_NAME] + [handler]
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
