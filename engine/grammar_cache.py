"""Compiles canonical constraints with xgrammar, off the decode loop, once each.

Compilation of a large schema can take hundreds of milliseconds; it runs on
a worker thread so the engine keeps decoding other requests while one waits
for its grammar. Identical constraints share one compiled grammar (and one
in-flight compilation) and the hit/miss counts are kept for metrics.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

import xgrammar as xgr

from engine.metrics import EngineMetrics
from engine.params import Constraint, ConstraintType


class GrammarCache:
    """LRU of compiled grammars keyed by the canonical constraint."""

    def __init__(
        self,
        tokenizer_info: xgr.TokenizerInfo,
        *,
        max_entries: int = 512,
        compile_threads: int = 1,
        metrics: EngineMetrics | None = None,
    ) -> None:
        self._compiler = xgr.GrammarCompiler(tokenizer_info, max_threads=2, cache_enabled=False)
        self._executor = ThreadPoolExecutor(compile_threads, thread_name_prefix="grammar-compile")
        self._entries: OrderedDict[Constraint, Future[xgr.CompiledGrammar]] = OrderedDict()
        self._max_entries = max_entries
        self._metrics = metrics or EngineMetrics()
        self._lock = threading.Lock()

    def get(self, constraint: Constraint) -> Future[xgr.CompiledGrammar]:
        """A future of the compiled grammar; completed at once on a cache hit."""
        with self._lock:
            future = self._entries.get(constraint)
            if future is not None:
                self._entries.move_to_end(constraint)
                self._metrics.grammar_lookup(hit=True)
                return future
            self._metrics.grammar_lookup(hit=False)
            future = self._executor.submit(self._compile, constraint)
            self._entries[constraint] = future
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        # Outside the lock: a compile that already failed runs the callback here.
        future.add_done_callback(lambda done: self._forget_failure(constraint, done))
        return future

    def _forget_failure(self, constraint: Constraint, future: Future) -> None:
        """A failed compile is not cached, so a fixed server config can retry it."""
        if future.exception() is not None:
            with self._lock:
                if self._entries.get(constraint) is future:
                    del self._entries[constraint]

    def _compile(self, constraint: Constraint) -> xgr.CompiledGrammar:
        started = time.perf_counter()
        try:
            compiled = self._compile_now(constraint)
        except Exception:
            self._metrics.grammar_compiled(time.perf_counter() - started, ok=False)
            raise
        self._metrics.grammar_compiled(time.perf_counter() - started, ok=True)
        return compiled

    def _compile_now(self, constraint: Constraint) -> xgr.CompiledGrammar:
        if constraint.type is ConstraintType.REGEX:
            return self._compiler.compile_regex(constraint.value)
        if constraint.type is ConstraintType.EBNF:
            return self._compiler.compile_grammar(constraint.value)
        if constraint.type is ConstraintType.JSON_SCHEMA:
            return self._compiler.compile_json_schema(constraint.value, any_whitespace=False)
        raise ValueError(f"constraint type {constraint.type.value!r} has no grammar")

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
