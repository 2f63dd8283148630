"""``Lowercase<string>`` and its kin: the strings an intrinsic leaves as they are.

Outputs and hand-picked texts are judged by the real TypeScript compiler
(``tests/integration/typescript_judge``), which runs on Node's Unicode data,
newer than Python's: the letters Unicode 16 gave new case partners are the
test of the category guard in ``grammar_compiler.typescript.case_mappings``.
"""

from __future__ import annotations

import json
import random

import pytest
from integration.typescript_judge import typescript_errors
from json_instances import Decoder

from grammar_compiler import ConstraintError, compile_typescript
from grammar_compiler.typescript.case_mappings import unchanged_ranges

CASES = {
    "Lowercase": (["abc déf 1-2 ß", "ǆ ø ÿ", "", "_x.y@z"], ["Abc", "ǅ", "ÀB", "Σ"]),
    "Uppercase": (["ABC DÉF 1-2", "Ǆ Ø", "", "_X.Y@Z"], ["aBC", "ß", "ǅ", "ƛ"]),
    "Capitalize": (["Hello world", "1st", "", "Ærø"], ["hello", "ß", "ƛx"]),
    "Uncapitalize": (["hello World", "1st", "", "ærØ"], ["Hello", "ǅa", "\ua7da"]),
}


def _source(intrinsic: str) -> str:
    return f"type Text = {intrinsic}<string>;"


@pytest.mark.parametrize("intrinsic", CASES)
def test_the_grammar_takes_what_typescript_takes_and_no_more(intrinsic: str) -> None:
    good, bad = CASES[intrinsic]
    source = _source(intrinsic)
    decoder = Decoder(compile_typescript(source, "Text").value)
    good_texts = [json.dumps(text, ensure_ascii=False) for text in good]
    bad_texts = [json.dumps(text, ensure_ascii=False) for text in bad]
    assert [text for text in good_texts if not decoder.accepts(text)] == []
    assert [text for text in bad_texts if decoder.accepts(text)] == []
    assert typescript_errors(source, "Text", good_texts) == {}
    # ƛ (U+019B) has had an uppercase partner since Unicode 16, U+A7DA a lowercase
    # one: Python's data does not know them, TypeScript on Node's does, so the
    # grammar keeps out lowercase letters from Uppercase (uppercase and unassigned
    # ones from Uncapitalize's first character) regardless.
    assert sorted(typescript_errors(source, "Text", bad_texts)) == list(range(len(bad)))


@pytest.mark.parametrize("intrinsic", CASES)
def test_sampled_outputs_type_check(intrinsic: str) -> None:
    source = f"interface Tagged {{ tag: {intrinsic}<string>; id: `id-${{Lowercase<string>}}` }}"
    decoder = Decoder(compile_typescript(source, "Tagged").value)
    rng = random.Random(7)
    texts = [t for t in (decoder.sample(rng) for _ in range(30)) if t is not None]
    assert len(texts) >= 20
    assert typescript_errors(source, "Tagged", texts) == {}


@pytest.mark.parametrize("direction", ["lower", "upper"])
def test_every_kept_character_is_left_alone_by_typescript(direction: str) -> None:
    """A spread of the class's characters, one string each, type-checked."""
    ranges = unchanged_ranges(direction)
    characters = [chr(code) for first, last in ranges for code in range(first, last + 1)]
    picked = characters[::97] + characters[-3:]
    intrinsic = "Lowercase" if direction == "lower" else "Uppercase"
    texts = [json.dumps(character) for character in picked]
    assert typescript_errors(_source(intrinsic), "Text", texts) == {}


def test_names_and_conditionals_read_the_intrinsic() -> None:
    source = """
type Headers = Record<Lowercase<string>, string>;
type Kind<T> = T extends Uppercase<string> ? "shout" : "talk";
type Said = { a: Kind<"HEY">; b: Kind<"hey"> };
"""
    headers = Decoder(compile_typescript(source, "Headers").value)
    assert headers.accepts('{"content-type": "json"}')
    assert not headers.accepts('{"Content-Type": "json"}')
    said = Decoder(compile_typescript(source, "Said").value)
    assert said.accepts('{"a": "shout", "b": "talk"}')
    assert typescript_errors(source, "Said", ['{"a": "shout", "b": "talk"}']) == {}


def test_an_intrinsic_of_an_intrinsic_is_refused_by_name() -> None:
    with pytest.raises(ConstraintError, match="Uppercase takes string and string literal types"):
        compile_typescript("type A = Uppercase<Lowercase<string>>;", "A")
