"""JSON pointers as the compiler's messages spell them."""


def escape_token(token: str) -> str:
    """One key as a JSON pointer token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def location(where: str) -> str:
    """A pointer as messages name it: the empty pointer is "the root"."""
    return where or "the root"
