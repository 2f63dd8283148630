"""The xgrammar grammar of tool calls (format in ``tool_calls``), composed from xgrammar grammars.

Each tool's arguments are the JSON Schema that ``compile_json_schema``
produced, turned into an xgrammar ``Grammar`` with the options the decoder
uses for JSON Schema (``engine/grammar_cache.py``), so an argument grammar
here is the very grammar a ``json_schema`` constraint would be. The pieces
are joined with ``Grammar.concat`` and ``Grammar.union``, which rename each
part's rules apart, instead of pasting EBNF texts whose rule names
(``root``, ``basic_string``, ...) would collide.

xgrammar has no "repeat this grammar" operation, so "one or more calls
joined by newlines" is the one edit made to xgrammar's printed EBNF: the
union of the calls is wrapped once more, which leaves its root line as
``root ::= ((NAME))`` with nothing else referring to ``root``, and that line
becomes ``root ::= NAME ("\\n" NAME)*``. The result is parsed again by
xgrammar, so the text handed to the decoder is text xgrammar reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import xgrammar

from grammar_compiler.ebnf_names import rewrite_names
from grammar_compiler.tool_calls import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, TOOL_CALL_SEPARATOR

ARGUMENTS_MARK = "# tool-call arguments: "
"""The grammar's first line, a comment to xgrammar: this mark, then each
tool's argument schema as one line of JSON, which the decoder reads to keep
each call's names and unique items apart (``engine/tool_outline.py``)."""
_WRAPPER_ROOT = re.compile(r"^root ::= \(\((\w+)\)\)$", re.MULTILINE)
_ANY_CHARACTER = "[\\u0000-\\U0010FFFF]"
_CLASS_METACHARACTERS = frozenset("\\]^-")


def tool_calls_grammar(
    arguments_schemas: Mapping[str, str], *, allow_text: bool, parallel: bool = True
) -> str:
    """xgrammar EBNF (root ``root``) for one or more calls of the given tools
    (exactly one unless ``parallel``), its first line the argument schemas
    for the decoder (``ARGUMENTS_MARK``).

    Args:
        arguments_schemas: each callable tool's name and the canonical JSON
            Schema (a ``compile_json_schema`` value) its arguments follow.
        allow_text: also accept plain text, i.e. any text not starting with
            ``<tool_call>`` (``tool_choice="auto"``).
    """
    one_call = xgrammar.Grammar.union(
        *(_call(name, schema) for name, schema in arguments_schemas.items())
    )
    grammar = _one_or_more(one_call) if parallel else one_call
    if allow_text:
        grammar = xgrammar.Grammar.union(grammar, _not_starting_with(TOOL_CALL_OPEN))
    ebnf = _one_rule_per_lazy_regex(str(grammar))
    xgrammar.Grammar.from_ebnf(ebnf)  # what the decoder will parse; raises if it cannot
    schemas = {name: json.loads(schema) for name, schema in arguments_schemas.items()}
    return ARGUMENTS_MARK + json.dumps(schemas, separators=(",", ":")) + "\n" + ebnf


def _one_rule_per_lazy_regex(ebnf: str) -> str:
    """The grammar with each distinct ``Regex(...)`` rule once, the copies'
    references pointing at it.

    Why: xgrammar 0.2.8 keeps a JSON string's pattern that holds a negated
    class (a string's characters under maxLength, ``regex_emit.py``) as a
    lazy ``Regex`` rule, built for every copy of the rule; each tool's
    arguments bring their own copies (a JSON Schema shares them itself,
    ``json_schema/render.py``). Ten tools, each with a maxLength 64 and a
    maxLength 8 string, compiled in 3.9 s with Llama 3's vocabulary; with
    positive classes, which xgrammar shares, 0.6 s.
    """
    keeper_of: dict[str, str] = {}  # a Regex rule's body -> the first rule with it
    renamed: dict[str, str] = {}
    kept: list[str] = []
    for line in ebnf.splitlines():
        name, separator, body = line.partition(" ::= ")
        if separator and body.startswith("Regex(") and name != "root":
            keeper = keeper_of.setdefault(body, name)
            if keeper != name:
                renamed[name] = keeper
                continue
        kept.append(line)
    if not renamed:
        return ebnf
    return rewrite_names("\n".join(kept), lambda name: renamed.get(name, name))


def _json_schema_grammar(schema: str) -> xgrammar.Grammar:
    """A canonical JSON Schema as the decoder compiles it (``any_whitespace=False``)."""
    return xgrammar.Grammar.from_json_schema(schema, any_whitespace=False)


def _call(name: str, schema: str) -> xgrammar.Grammar:
    head = f'{TOOL_CALL_OPEN}{{"name": {json.dumps(name)}, "arguments": '
    return xgrammar.Grammar.concat(
        _literal(head), _json_schema_grammar(schema), _literal("}" + TOOL_CALL_CLOSE)
    )


def _literal(text: str) -> xgrammar.Grammar:
    return xgrammar.Grammar.from_ebnf(f"root ::= {json.dumps(text)}")


def _one_or_more(item: xgrammar.Grammar) -> xgrammar.Grammar:
    """``item ("\\n" item)*``, written into the EBNF of ``item`` wrapped by a union."""
    wrapped = str(xgrammar.Grammar.union(item))
    roots = list(_WRAPPER_ROOT.finditer(wrapped))
    if len(roots) != 1:
        raise RuntimeError("xgrammar printed a union in an unexpected form; cannot repeat it")
    root = roots[0]
    name = root.group(1)
    repeated = f"root ::= {name} ({json.dumps(TOOL_CALL_SEPARATOR)} {name})*"
    return xgrammar.Grammar.from_ebnf(wrapped[: root.start()] + repeated + wrapped[root.end() :])


def _not_starting_with(prefix: str) -> xgrammar.Grammar:
    """Every text, the empty one included, that does not start with ``prefix``.

    After each matched character of the prefix the text may end, go on with
    any other character (and then anything), or match the next character.
    """
    rest = ""
    for char in reversed(prefix):
        options = ['""', f"[^{_class_character(char)}] any*"]
        if rest:
            options.append(f"{json.dumps(char)} ({rest})")
        rest = " | ".join(options)
    return xgrammar.Grammar.from_ebnf(f"root ::= {rest}\nany ::= {_ANY_CHARACTER}")


def _class_character(char: str) -> str:
    return "\\" + char if char in _CLASS_METACHARACTERS else char
