"""JSON pointers as the compiler's messages spell them."""


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def location(where: str) -> str:
    return where or "the root"
