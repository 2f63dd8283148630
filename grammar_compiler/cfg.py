"""Context-free grammar constraints: one entry point for the BNF dialect, GBNF, Lark and EBNF.

``compile_grammar`` hands the text to the module for its format (``bnf``,
``gbnf`` — also as ``ebnf``, xgrammar's name for the same syntax —,
``lark_grammar``, ``iso_ebnf`` for ``iso-ebnf`` and ``w3c-ebnf``, and ``abnf``
for RFC 5234's ABNF) and returns its ``CanonicalConstraint``. With
``grammar_format="auto"`` the format is recognised from the first line that
defines something (blank lines and comment lines carry no signature):

* ``<name> ::=`` — the BNF dialect of the ``/v1/completion/cfg`` document;
* ``name ::=`` — GBNF (a missing ``root`` rule is then reported as such);
* ``name:``, ``NAME:``, ``?name:``, ``name.2:``, ``tool-call:`` or a
  ``%import``/``%ignore``/``%llguidance`` statement — Lark (llguidance's
  dialect included);
* ``name =`` — ISO/IEC 14977 or Wirth's EBNF (``iso_ebnf``), else ABNF
  (no ``;`` ends its rules, and ``/`` separates alternatives). A ``name ::=``
  grammar with a W3C EBNF sign (``'`` quotes, ``#x41``, ``/* */``) is also
  tried as the W3C's EBNF when GBNF does not read it.

If no line has a signature, the formats are tried in the order bnf, gbnf,
lark; the first that compiles wins, and if none does, the error reported is
the one found furthest into the text (the earliest format on a tie), since
the format that read furthest is most likely the one the user meant. Errors
in auto mode say which format the text was read as.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, get_args

from grammar_compiler.abnf import compile_abnf
from grammar_compiler.bnf import compile_bnf
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg_tree import check_size
from grammar_compiler.errors import ConstraintError
from grammar_compiler.gbnf import compile_gbnf
from grammar_compiler.iso_ebnf import compile_iso_ebnf
from grammar_compiler.lark_grammar import compile_lark

GrammarFormat = Literal["auto", "bnf", "gbnf", "ebnf", "lark", "iso-ebnf", "w3c-ebnf", "abnf"]
FORMATS = get_args(GrammarFormat)
AUTO_ORDER = ("bnf", "gbnf", "lark", "iso-ebnf")

_SIGNATURES = (
    ("bnf", re.compile(r"\s*<[^<>\r\n]+>\s*::=")),
    ("gbnf", re.compile(r"\s*[A-Za-z_][A-Za-z0-9_-]*\s*::=")),
    ("lark", re.compile(r"\s*%(?:import|ignore|declare|override|extend|llguidance)\b")),
    ("lark", re.compile(r"\s*[?!]?\w+(?:-\w+)*(?:\{[^}]*\})?(?:\.-?\d+)?\s*:(?!:)")),
    ("iso-ebnf", re.compile(r"\s*[A-Za-z_][\w -]*?\s*=(?!=)")),
)
_W3C_SIGNS = re.compile(r"'|#x[0-9a-fA-F]|/\*|\[(?:wfc|vc):")
"""What a ``name ::=`` grammar in the W3C's EBNF has and GBNF does not."""


def compile_grammar(
    text: str, grammar_format: GrammarFormat = "auto", *, start: str = "start"
) -> CanonicalConstraint:
    """Validate a grammar and return what xgrammar compiles, with an independent judge.

    ``start`` names the start rule of a Lark grammar; the BNF dialect starts at
    ``<start>`` (else its first rule) and GBNF at ``root``.

    Raises:
        ConstraintError: the format is unknown, or the grammar is invalid or over
            a limit (with line and column).
    """
    check_size(text)
    if grammar_format == "auto":
        return _compile_detected(text, start)
    compile_one = _compilers(start).get(grammar_format)
    if compile_one is None:
        raise ConstraintError(
            f"unknown grammar format {grammar_format!r}: expected one of {', '.join(FORMATS)}"
        )
    return compile_one(text)


def detect_format(text: str) -> str | None:
    """The format the first defining line of ``text`` is written in, if any line has one."""
    for line in text.splitlines():
        for name, signature in _SIGNATURES:
            if signature.match(line):
                return name
    return None


def _compilers(start: str) -> dict[str, Callable[[str], CanonicalConstraint]]:
    return {
        "bnf": compile_bnf,
        "gbnf": compile_gbnf,
        "ebnf": lambda text: compile_gbnf(text, language="ebnf"),
        "lark": lambda text: compile_lark(text, start=start),
        "iso-ebnf": compile_iso_ebnf,
        "w3c-ebnf": lambda text: compile_iso_ebnf(text, w3c=True),
        "abnf": compile_abnf,
    }


def _compile_detected(text: str, start: str) -> CanonicalConstraint:
    compilers = _compilers(start)
    detected = detect_format(text)
    candidates: tuple[str, ...] = (detected,) if detected else AUTO_ORDER
    if detected == "gbnf" and _W3C_SIGNS.search(text):
        candidates = ("gbnf", "w3c-ebnf")
    if detected == "iso-ebnf":
        candidates = ("iso-ebnf", "abnf")
    errors: list[tuple[str, ConstraintError]] = []
    for name in candidates:
        try:
            return compilers[name](text)
        except ConstraintError as err:
            errors.append((name, err))
    name, err = max(errors, key=lambda found: _reach(found[1]))
    raise ConstraintError(
        f"{err.message} (read as {name})", line=err.line, column=err.column
    ) from err


def _reach(err: ConstraintError) -> tuple[int, int]:
    return (err.line or 0, err.column or 0)
