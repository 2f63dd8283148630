"""A user's regex searched in bounded time, without stopping the process.

Python's ``re`` backtracks without limit and holds the GIL while it does:
``(a|a)*c`` searched in forty ``a``s takes days, and meanwhile every other
thread of the process stops, the frontend's event loop and its health
checks included. JSON Schema puts user regexes in ``pattern`` and
``patternProperties``, which the compiler tests against declared property
names and listed values, and the judge against every output (through
``jsonschema``); a Lark grammar's terminals are user regexes that its judge
tries at every position of an output. The ``regex`` package reads the same
syntax, releases the GIL while it matches a ``str`` and gives up at a
timeout, so a pathological pattern costs one request its answer, not the
server its responsiveness.

One deadline bounds all the searches of one piece of work (a compile, a
judgement), however many patterns and strings it tests: ``deadline`` sets
it for the calling context (each worker thread has its own).
"""

from __future__ import annotations

import contextvars
import re
import time
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import regex

from grammar_compiler.canonical import JUDGE_BUDGET_S
from grammar_compiler.lazy_terminal import is_lazy

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "regex_deadline", default=None
)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Searches in this context end, with TimeoutError, ``seconds`` from now."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def search(pattern: str, text: str) -> regex.Match | None:
    """``re.search(pattern, text)`` within the context's deadline (outside any,
    ``JUDGE_BUDGET_S`` for this search alone).

    Raises:
        TimeoutError: the deadline passed, before or during the search.
    """
    return regex.search(pattern, text, timeout=_remaining())


def check_deadline() -> None:
    """Raises TimeoutError if the context's deadline has passed (outside any, never).

    For other bounded work on users' regexes under the same deadline: the
    automata of ``regex_automaton``."""
    end = _DEADLINE.get()
    if end is not None and time.monotonic() > end:
        raise TimeoutError("regex deadline passed")


def _remaining() -> float:
    end = _DEADLINE.get()
    remaining = JUDGE_BUDGET_S if end is None else end - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("regex deadline passed")
    return remaining


class LarkTerminals:
    """What lark compiles a grammar's terminals with (its ``LexerConf.re_module``,
    ``re`` by default): the user's terminal regexes, which the Earley judge's
    dynamic lexer tries at every position of an output, then match within the
    context's deadline like ``search``.

    A terminal without a lazy quantifier is matched longest first (the
    ``regex`` package's POSIX matching): the judge's lexer tries that match
    and every shorter one, so it sees every length the terminal's language
    has, as the grammar does (with Python's first match, ``/a|ab/`` would
    never take ``ab``, which the grammar allows). A lazy terminal keeps
    Python's reading, which ``lazy_terminal`` translates."""

    @staticmethod
    def compile(pattern: str, flags: int = 0) -> _BoundedPattern:
        # re.ASCII is 256, which the regex package reads as its VERSION1 flag.
        ascii_flag = regex.ASCII if flags & re.ASCII else 0
        longest = 0 if _lazy(pattern) else regex.POSIX
        return _BoundedPattern(regex.compile(pattern, (flags & ~re.ASCII) | ascii_flag | longest))


def _lazy(pattern: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FutureWarning for '[[': the regex package reads it
            return is_lazy(pattern)
    except (re.error, ValueError, OverflowError):
        return False  # the regex package reports it


class _BoundedPattern:
    """A compiled terminal; lark only calls ``match``."""

    def __init__(self, compiled: regex.Pattern) -> None:
        self._compiled = compiled

    def match(self, text: str, pos: int = 0) -> regex.Match | None:
        return self._compiled.match(text, pos, timeout=_remaining())


# jsonschema matches ``pattern`` and ``patternProperties`` (also to tell which
# properties ``additionalProperties`` and ``unevaluatedProperties`` cover) with
# the ``re.search`` of these modules, and offers no hook for it; these are all
# its regex searches of user patterns (jsonschema 4.26, pinned). Replaced once,
# for every validator of the process: the judge's and the compiler's own.
_JSONSCHEMA_MODULES = (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils)
for _module in _JSONSCHEMA_MODULES:
    if getattr(_module, "re", None) is not re:
        raise ImportError(f"{_module.__name__} no longer searches with re: re-check the bound")
    _module.re = types.SimpleNamespace(search=search)  # type: ignore[attr-defined]
