"""Compiles canonical constraints with xgrammar, off the decode loop, once each.

Compilation of a large schema can take hundreds of milliseconds; it runs on
a worker thread so the engine keeps decoding other requests while one waits
for its grammar. Identical constraints share one compiled grammar (and one
in-flight compilation) and the hit/miss counts are kept for metrics.

Special tokens a grammar names (llguidance's ``<think>``) are resolved here,
against the served tokenizer's added tokens
(``grammar_compiler.special_tokens``); a token it does not have fails the
compile, which reaches the client as a 400 naming the token.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import xgrammar as xgr

from engine.metrics import EngineMetrics
from engine.params import Constraint, ConstraintType
from engine.string_lengths import (
    bounded_strings,
    compile_estimate_s,
    quote_reach,
    relaxed_schema,
)
from grammar_compiler.special_tokens import RULE_PREFIX, resolve_special_tokens

# Nice value of the compile thread (Linux: per thread), 0 = normal, 19 = lowest;
# what applies where the idle policy below is off or refused.
COMPILE_NICE = 19
# The compile thread (and xgrammar's threads, which inherit it) runs under
# SCHED_IDLE: only on CPU time nothing else wants. Running streams' TPOT while
# heavy schemas compiled / without (bench compile phase, 2 cores, four
# alternated pairs): 1.071, 1.061, 1.060, 1.075 under SCHED_IDLE against 1.125,
# 1.071, 1.083, 1.107 at nice 19; the compiles took ~0.5 s longer
# (3.3-3.4 s against 2.8-3.4 s), which only happens while decoding keeps the
# cores busy.
COMPILE_IDLE = True
# A schema whose strings' maxLength would take xgrammar about this long to
# build has the decoder keep them instead (``engine/string_lengths.py``);
# 0: wherever it safely can.
STRING_BOUNDS_ABOVE_S = 0.5


class GrammarCache:
    """LRU of compiled grammars keyed by the canonical constraint."""

    def __init__(
        self,
        tokenizer_info: xgr.TokenizerInfo,
        *,
        special_tokens: Mapping[str, int] | None = None,
        max_entries: int = 512,
        compile_nice: int = COMPILE_NICE,
        compile_idle: bool = COMPILE_IDLE,
        metrics: EngineMetrics | None = None,
        string_bounds_above_s: float = STRING_BOUNDS_ABOVE_S,
    ) -> None:
        self._tokenizer_info = tokenizer_info
        self._special_tokens = dict(special_tokens or {})
        """Ids of the tokenizer's added tokens (the ones it never splits), by their text."""
        self._compile_nice = compile_nice
        self._string_bounds_above_s = string_bounds_above_s
        # Of the vocabulary (engine/string_lengths.py), here rather than on the compile thread.
        self._quote_reach = quote_reach(tokenizer_info.decoded_vocab)
        self._compile_idle = compile_idle
        self._compiler: xgr.GrammarCompiler | None = None
        self._executor = ThreadPoolExecutor(
            1, thread_name_prefix="grammar-compile", initializer=self._start_worker
        )
        self._entries: OrderedDict[Constraint, Future[xgr.CompiledGrammar]] = OrderedDict()
        self._max_entries = max_entries
        self._metrics = metrics or EngineMetrics()
        self._lock = threading.Lock()

    def _start_worker(self) -> None:
        """Runs on the compile thread: lowers its scheduling priority, then
        creates the compiler there so xgrammar's own threads inherit it.

        Compiling a large schema takes whole cores for a while; at a lower
        priority it uses what decoding leaves, so running requests keep their
        pace while one waits for its grammar.
        """
        thread = threading.get_native_id()
        with contextlib.suppress(OSError):  # not permitted: compile at normal priority
            os.setpriority(os.PRIO_PROCESS, thread, self._compile_nice)
        if self._compile_idle and hasattr(os, "SCHED_IDLE"):
            with contextlib.suppress(OSError):  # refused: the nice value stands
                os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))
        self._compiler = xgr.GrammarCompiler(
            self._tokenizer_info, max_threads=2, cache_enabled=False
        )

    def get(self, constraint: Constraint) -> Future[xgr.CompiledGrammar]:
        """A future of the compiled grammar; completed at once on a cache hit."""
        with self._lock:
            future = self._entries.get(constraint)
            if future is not None:
                self._entries.move_to_end(constraint)
                self._metrics.grammar_lookup(hit=True)
                return future
            self._metrics.grammar_lookup(hit=False)
            # Python work stays off the compile thread, which runs only on idle CPU
            # time: holding the GIL there, it starved (a first 128k compile ran past 30 s).
            future = self._executor.submit(
                self._compile, constraint, self._xgrammar_value(constraint)
            )
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

    def _xgrammar_value(self, constraint: Constraint) -> str:
        """What xgrammar compiles for ``constraint``: a JSON schema without the
        string bounds the decoder keeps (``kept_bounds``), else its value."""
        if constraint.type is not ConstraintType.JSON_SCHEMA:
            return constraint.value
        schema = json.loads(constraint.value)
        kept = self.kept_bounds(schema)
        return relaxed_schema(schema, kept) if kept else constraint.value

    def _compile(self, constraint: Constraint, value: str) -> xgr.CompiledGrammar:
        started = time.perf_counter()
        try:
            compiled = self._compile_now(constraint, value)
        except Exception:
            self._metrics.grammar_compiled(time.perf_counter() - started, ok=False)
            raise
        self._metrics.grammar_compiled(time.perf_counter() - started, ok=True)
        return compiled

    def _compile_now(self, constraint: Constraint, value: str) -> xgr.CompiledGrammar:
        assert self._compiler is not None  # created by _start_worker on this thread
        if constraint.type is ConstraintType.REGEX:
            return self._compiler.compile_regex(constraint.value)
        if constraint.type is ConstraintType.EBNF:
            ebnf = constraint.value
            if RULE_PREFIX in ebnf:
                vocab_size = self._tokenizer_info.vocab_size
                ebnf = resolve_special_tokens(ebnf, self._special_tokens, vocab_size)
            return self._compiler.compile_grammar(ebnf)
        if constraint.type is ConstraintType.JSON_SCHEMA:
            return self._compiler.compile_json_schema(value, any_whitespace=False)
        raise ValueError(f"constraint type {constraint.type.value!r} has no grammar")

    def kept_bounds(self, schema: Any) -> dict[int, tuple[int, int]]:
        """The strings of ``schema`` (parsed) whose maxLength the decoder keeps
        instead of xgrammar (``engine/string_lengths.py``): all it safely can,
        where their counts would take xgrammar over ``string_bounds_above_s``
        to build; else none."""
        bounds = bounded_strings(schema, shortest=self._quote_reach)
        vocab_size = self._tokenizer_info.vocab_size
        if compile_estimate_s(bounds.values(), vocab_size) < self._string_bounds_above_s:
            return {}
        return bounds

    def shutdown(self, *, wait: bool = False) -> None:
        """Stops compiling (``wait``: until the compile thread has ended)."""
        self._executor.shutdown(wait=wait, cancel_futures=True)
