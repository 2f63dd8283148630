"""Stop strings are found across token boundaries and inside multi-byte text."""

from engine.stop_strings import StopStringMatcher


def _feed(stops: list[str], pieces: list[bytes]) -> list[bool]:
    matcher = StopStringMatcher(stops)
    return [matcher.push(piece) for piece in pieces]


def test_stop_within_one_token() -> None:
    assert _feed(["END"], [b"ab", b"xENDy"]) == [False, True]


def test_stop_spanning_tokens() -> None:
    assert _feed(["\n\n"], [b"line\n", b"\nnext"]) == [False, True]
    assert _feed(["STOP"], [b"S", b"T", b"O", b"P"]) == [False, False, False, True]


def test_multibyte_stop_split_inside_a_character() -> None:
    stop = "日本"
    data = stop.encode()
    assert _feed([stop], [b"x" + data[:2], data[2:4], data[4:]]) == [False, False, True]


def test_no_false_positive_from_an_earlier_partial_match() -> None:
    assert _feed(["abc"], [b"ab", b"x", b"c"]) == [False, False, False]
