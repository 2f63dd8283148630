"""xgrammar running a compiled JSON Schema constraint, as the decoder runs it.

The decoder compiles a constraint's canonical value with
``GrammarCompiler.compile_json_schema(value, any_whitespace=False)``
(``engine.grammar_cache``) and masks tokens with a ``GrammarMatcher``. Here
the same compiled grammar answers two questions the coverage measurements
ask:

* does it accept this exact text (``accepts``)? Used on the official test
  suite's instances: an instance the suite marks invalid must be rejected.
  The text is read as a model writing it a character at a time would be:
  a character the decoder would keep out (``engine.json_repeats``: the
  quote that would repeat a name) rejects it;
* what could a model be made to write (``walk``)? A random walk picks any
  token the mask allows, so every finished walk is an output the service
  could produce and the judge must accept. The mask is the decoder's: with
  the tokens that would repeat a name or a unique array's item taken out
  (``engine.json_repeats``), as the decoder does for a schema given whole,
  and each string's maxLength kept as the decoder keeps it where its counts
  would be slow to build (``engine.string_lengths``: the grammar compiled
  without it). Here that is done wherever it safely can be, so the walks
  check the decoder's own bounds rather than xgrammar's.

Any tokenizer works: ``raw_compiler`` builds a small raw vocabulary (fast to
compile against, enough for acceptance checks and walks), and
``tokenizer_compiler`` wraps a Hugging Face tokenizer such as the demo
model's, to time compilation as the server pays it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import xgrammar as xgr

from engine.json_repeats import JsonOutline, RepeatGuard, needs_outline
from engine.string_lengths import LengthGuard, bounded_strings, quote_reach, relaxed_schema

CLOSING_BYTES = frozenset(b'"}]')
"""Tokens holding one of these are favoured on walks, so walks tend to finish."""
CLOSING_WEIGHT = 8
STOP_PROBABILITY = 0.3
STUBBORN_SHARE = 0.8
"""The share of a stubborn walk's tokens that are the lowest id allowed."""
"""Chance of ending a walk wherever the grammar allows it to end."""

_RAW_VOCABULARY = [chr(code) for code in range(32, 127)] + ['": ', '", "', "é", "中", "</s>"]


def raw_compiler() -> xgr.GrammarCompiler:
    """A compiler over printable ASCII, a few JSON pieces, two non-ASCII letters, an end."""
    info = xgr.TokenizerInfo(
        _RAW_VOCABULARY, xgr.VocabType.RAW, stop_token_ids=[len(_RAW_VOCABULARY) - 1]
    )
    return xgr.GrammarCompiler(info, cache_enabled=False)


def tokenizer_compiler(model_dir: Path) -> xgr.GrammarCompiler:
    """A compiler over a Hugging Face tokenizer's vocabulary, built as the engine builds it."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    return xgr.GrammarCompiler(info, cache_enabled=False)


class JsonGrammar:
    """One canonical JSON Schema value compiled for one tokenizer."""

    def __init__(self, compiler: xgr.GrammarCompiler, canonical_value: str) -> None:
        # the compiler tells its vocabulary only through what it compiles
        self._tokens = compiler.compile_regex("").tokenizer_info.decoded_vocab
        reach = quote_reach(self._tokens)
        self._schema = json.loads(canonical_value)
        self._repeats = needs_outline(self._schema)
        self._bounds = bounded_strings(self._schema, shortest=reach)
        compiled_copy = json.loads(canonical_value)  # relaxed_schema changes it
        relaxed = relaxed_schema(compiled_copy, bounded_strings(compiled_copy, shortest=reach))
        self.compiled = compiler.compile_json_schema(relaxed, any_whitespace=False)
        self._info = self.compiled.tokenizer_info
        self._stops = frozenset(self._info.stop_token_ids)
        self._matcher = xgr.GrammarMatcher(self.compiled, terminate_without_stop_token=True)
        self._guard = RepeatGuard(self._tokens) if self._repeats else None
        words = xgr.get_bitmask_shape(1, self._info.vocab_size)[1]
        self._lengths = LengthGuard(self._tokens, words) if self._bounds else None

    def _outline(self) -> JsonOutline | None:
        if not (self._repeats or self._bounds):
            return None
        return JsonOutline(self._schema, repeats=self._repeats, bounds=self._bounds)

    def accepts(self, text: str) -> bool:
        """Whether the grammar (with the decoder's guards) matches all of ``text`` and may end."""
        outline = self._outline()
        if outline is not None and not outline.writes_by_character(text):
            return False
        self._matcher.reset()
        return self._matcher.accept_string(text) and self._matcher.is_terminated()

    def walk(self, rng: random.Random, max_tokens: int = 400, stubborn: bool = False) -> str | None:
        """One random walk to an end of the grammar, or None if it ran past ``max_tokens``.

        ``stubborn``: most tokens are the lowest id allowed, so the walk comes
        back to the same start again and again (the hardest way to fill a
        unique array or an open object's names), where the decoder's repeat
        guard could be cornered; a fifth are drawn at random, to get anywhere.

        Raises:
            AssertionError: xgrammar allowed no token and no end (a dead end).
        """
        matcher = xgr.GrammarMatcher(self.compiled)
        bitmask = xgr.allocate_token_bitmask(1, self._info.vocab_size)
        outline = self._outline()
        pieces: list[bytes] = []
        for _ in range(max_tokens):
            matcher.fill_next_token_bitmask(bitmask)
            if self._guard is not None and outline is not None:
                RepeatGuard.restrict(bitmask, 0, self._guard.banned(outline))
            if self._lengths is not None and outline is not None:
                self._lengths.restrict(bitmask, 0, outline.room)
            bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
            allowed = np.flatnonzero(bits[: self._info.vocab_size]).tolist()
            choices = [token for token in allowed if token not in self._stops]
            if len(choices) < len(allowed) and (not choices or rng.random() < STOP_PROBABILITY):
                return b"".join(pieces).decode("utf-8", errors="replace")
            if not choices:
                text = b"".join(pieces).decode("utf-8", errors="replace")
                raise AssertionError(f"xgrammar allows nothing after {text!r}")
            weights = [
                CLOSING_WEIGHT if CLOSING_BYTES & set(self._tokens[t]) else 1 for t in choices
            ]
            if stubborn and rng.random() < STUBBORN_SHARE:
                token = choices[0]
            else:
                token = rng.choices(choices, weights)[0]
            if not matcher.accept_token(token):
                raise AssertionError(f"xgrammar refused token {token} that its mask allowed")
            pieces.append(self._tokens[token])
            if outline is not None:
                outline.push(self._tokens[token])
        return None

    def walks(self, count: int, seed: int, stubborn: int = 0) -> tuple[list[str], int]:
        """``count`` walks (the last ``stubborn`` of them stubborn): the finished
        texts, and how many ran too long to finish."""
        rng = random.Random(seed)
        texts = [self.walk(rng, stubborn=index >= count - stubborn) for index in range(count)]
        finished = [text for text in texts if text is not None]
        return finished, len(texts) - len(finished)
