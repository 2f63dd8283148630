"""Offline training text for the demo model.

Nothing can be downloaded, so the corpus is assembled from the English reference
text that ships with CPython (``pydoc_data``) plus generated samples of the kinds
of output the service constrains: JSON payloads, dates, phone numbers, e-mail
addresses, numbers and short code lines. Everything is driven by one seeded
``random.Random`` so a given seed always yields the same documents.

Documents are returned without the end-of-sequence token; the trainer appends
the EOS *id* after each one, which is unambiguous whereas the literal text
``</s>`` would also be seen by the tokenizer trainer as ordinary characters.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pydoc_data.topics import topics

from demo_model.chat import conversation

# Bump whenever the generated text changes, so cached models get rebuilt.
CORPUS_VERSION = 2

# Share of the corpus (at most) taken from the pydoc reference text; the rest is
# generated, which keeps the structured formats well represented.
REFERENCE_SHARE = 0.25
# Reference paragraphs are grouped into documents of about this many characters
# so that most of a document fits into one training window.
REFERENCE_DOC_CHARS = 600

# Word lists stay packed; one item per line would bury the code.
# fmt: off
FIRST_NAMES = (
    "Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Hiro", "Ines", "Jack",
    "Karim", "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
    "Uma", "Victor", "Wen", "Ximena", "Yuki", "Zoe", "José", "Zoë", "Björn", "Łukasz",
    "Chloé", "Søren", "Ana", "Mei", "Olu", "Farah",
)
LAST_NAMES = (
    "Smith", "Johnson", "Garcia", "Müller", "Rossi", "Dubois", "Tanaka", "Kim", "Novak",
    "Silva", "Nguyen", "Ivanova", "Okafor", "Haddad", "Larsen", "Kowalski", "Patel",
    "Brown", "Martin", "Lopez", "Chen", "Wilson", "Moreau", "Sato",
)
CJK_NAMES = ("佐藤 花子", "山田 太郎", "王 伟", "李 娜", "김 민준")
CITIES = (
    ("Paris", "France"), ("Berlin", "Germany"), ("Tokyo", "Japan"), ("Lagos", "Nigeria"),
    ("Toronto", "Canada"), ("São Paulo", "Brazil"), ("Mumbai", "India"), ("Austin", "USA"),
    ("Madrid", "Spain"), ("Oslo", "Norway"), ("Seoul", "South Korea"), ("Zürich", "Switzerland"),
    ("Melbourne", "Australia"), ("Nairobi", "Kenya"), ("Kraków", "Poland"), ("Lyon", "France"),
)
STREETS = ("Main St", "Oak Avenue", "High Street", "Rue de la Paix", "Elm Road", "Park Lane",
           "Maple Drive", "Hauptstraße", "Via Roma", "Sunset Blvd")
DOMAINS = ("example.com", "mail.com", "example.org", "company.io", "inbox.net", "test.dev")
ADJECTIVES = ("red", "blue", "small", "large", "smart", "classic", "wireless", "wooden",
              "portable", "premium", "compact", "vintage", "quiet", "fast", "green", "solar")
NOUNS = ("lamp", "chair", "keyboard", "backpack", "kettle", "speaker", "notebook", "bottle",
         "jacket", "camera", "desk", "mug", "charger", "tent", "watch", "bicycle")
TAGS = ("new", "sale", "popular", "eco", "limited", "gift", "outdoor", "office", "kids",
        "home", "travel", "tech", "beta", "admin", "vip")
ROLES = ("admin", "editor", "viewer", "owner", "guest", "developer")
STATUSES = ("active", "pending", "suspended", "archived", "draft", "shipped", "delivered")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CAD", "CHF")
EVENT_TYPES = ("user.created", "order.paid", "login.failed", "file.uploaded", "session.ended",
               "payment.refunded")
IDENTIFIERS = ("count", "total", "items", "result", "value", "name", "data", "index", "user",
               "price", "size", "config", "response", "key", "text", "numbers")
FUNCTIONS = ("compute_total", "parse_line", "load_config", "get_user", "format_name",
             "is_valid", "merge_items", "fetch_data", "to_json", "average")
JS_FUNCTIONS = ("computeTotal", "parseLine", "loadConfig", "getUser", "formatName",
                "isValid", "mergeItems", "fetchData", "toJson", "average")
OPERATORS = ("+", "-", "*", "/", "%")
MODULES = ("os", "sys", "json", "math", "re", "random", "pathlib", "datetime", "itertools")
JOBS = ("baker", "teacher", "designer", "nurse", "chef", "writer", "manager", "pilot",
        "doctor", "student", "lawyer", "musician")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEATHER = ("sunny", "cloudy", "rainy", "windy", "cold", "warm", "foggy")
# fmt: on

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SPAN_SECONDS = 60 * 365 * 24 * 3600


def build_corpus(seed: int, target_chars: int) -> list[str]:
    """Return shuffled documents totalling at least ``target_chars`` characters.

    The reference text keeps the model able to continue ordinary English; the
    generated part dominates because structured output is what the service is
    exercised with.
    """
    rng = random.Random(seed)
    documents = reference_documents(int(target_chars * REFERENCE_SHARE))
    size = sum(map(len, documents))
    generators, weights = zip(*GENERATORS, strict=True)
    while size < target_chars:
        (generate,) = rng.choices(generators, weights=weights)
        document = generate(rng)
        documents.append(document)
        size += len(document)
    rng.shuffle(documents)
    return documents


def reference_documents(max_chars: int) -> list[str]:
    """Split the pydoc topics into paragraph groups, in a stable (sorted) order."""
    documents: list[str] = []
    size = 0
    for key in sorted(topics):
        for document in _group_paragraphs(topics[key]):
            if size + len(document) > max_chars:
                return documents
            documents.append(document)
            size += len(document)
    return documents


def _group_paragraphs(text: str) -> list[str]:
    paragraphs = [p.rstrip() for p in text.strip().split("\n\n") if p.strip()]
    groups: list[str] = []
    current: list[str] = []
    for paragraph in paragraphs:
        if current and len("\n\n".join([*current, paragraph])) > REFERENCE_DOC_CHARS:
            groups.append("\n\n".join(current))
            current = []
        current.append(paragraph)
    if current:
        groups.append("\n\n".join(current))
    return groups


# --- scalar values ---------------------------------------------------------------


def _person_name(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(CJK_NAMES)
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def _ascii_slug(text: str) -> str:
    """E-mail local parts are kept ASCII, as most real addresses are."""
    table = str.maketrans("éëöüøłóçãáíñ", "eeouolocaain")
    cleaned = text.lower().translate(table)
    return "".join(c for c in cleaned if c in string.ascii_lowercase + ".")


def email(rng: random.Random, name: str | None = None) -> str:
    """An address, derived from ``name`` when given so records look coherent."""
    first, _, last = (name or _person_name(rng)).partition(" ")
    first, last = _ascii_slug(first) or "user", _ascii_slug(last) or "mail"
    local = rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}{rng.randint(1, 99)}"))
    return f"{local}@{rng.choice(DOMAINS)}"


def phone(rng: random.Random) -> str:
    a, b, c = rng.randint(200, 989), rng.randint(200, 999), rng.randint(0, 9999)
    formats = (
        f"+1-{a}-{b}-{c:04d}",
        f"({a}) {b}-{c:04d}",
        f"{a}.{b}.{c:04d}",
        f"+44 20 {b}{c // 1000} {c:04d}",
        f"+49 30 {a}{b}",
        f"+33 1 {a % 100:02d} {b % 100:02d} {c % 100:02d} {c // 100:02d}",
    )
    return rng.choice(formats)


def moment(rng: random.Random) -> datetime:
    return EPOCH + timedelta(seconds=rng.randrange(SPAN_SECONDS))


def iso_date(rng: random.Random) -> str:
    return moment(rng).date().isoformat()


def iso_datetime(rng: random.Random) -> str:
    value = moment(rng)
    style = rng.randrange(4)
    if style == 0:
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style == 1:
        offset = timezone(timedelta(hours=rng.randint(-11, 12)))
        return value.astimezone(offset).isoformat()
    if style == 2:
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randrange(1000):03d}Z"
    return value.strftime("%Y-%m-%d %H:%M:%S")


def clock_time(rng: random.Random) -> str:
    value = moment(rng)
    return value.strftime(rng.choice(("%H:%M", "%H:%M:%S", "%I:%M %p")))


def number(rng: random.Random) -> str:
    style = rng.randrange(6)
    if style == 0:
        return str(rng.randint(0, 100))
    if style == 1:
        return str(rng.randint(-100000, 1000000))
    if style == 2:
        return f"{rng.uniform(-1000, 1000):.2f}"
    if style == 3:
        return f"{rng.uniform(0, 1):.4f}"
    if style == 4:
        return f"{rng.uniform(1, 9):.2f}e{rng.randint(-9, 12)}"
    return f"{rng.randint(1000, 10**9):,}"


def _price(rng: random.Random) -> float:
    return round(rng.uniform(1, 500), 2)


def _sku(rng: random.Random) -> str:
    letters = "".join(rng.choices(string.ascii_uppercase, k=2))
    return f"{letters}-{rng.randint(100, 9999)}"


def _tags(rng: random.Random) -> list[str]:
    return rng.sample(TAGS, rng.randint(0, 4))


# --- JSON objects ---------------------------------------------------------------


def _address(rng: random.Random) -> dict[str, object]:
    city, country = rng.choice(CITIES)
    return {
        "street": f"{rng.randint(1, 250)} {rng.choice(STREETS)}",
        "city": city,
        "zip": f"{rng.randint(1000, 99999):05d}",
        "country": country,
    }


def person(rng: random.Random) -> dict[str, object]:
    name = _person_name(rng)
    record: dict[str, object] = {
        "name": name,
        "age": rng.randint(18, 90),
        "email": email(rng, name),
    }
    if rng.random() < 0.7:
        record["phone"] = phone(rng)
    if rng.random() < 0.6:
        record["address"] = _address(rng)
    record["active"] = rng.random() < 0.7
    if rng.random() < 0.5:
        record["roles"] = rng.sample(ROLES, rng.randint(1, 3))
    if rng.random() < 0.4:
        record["created_at"] = iso_datetime(rng)
    return record


def product(rng: random.Random) -> dict[str, object]:
    record: dict[str, object] = {
        "id": rng.randint(1, 99999),
        "sku": _sku(rng),
        "name": f"{rng.choice(ADJECTIVES).title()} {rng.choice(NOUNS).title()}",
        "price": _price(rng),
        "currency": rng.choice(CURRENCIES),
        "in_stock": rng.random() < 0.75,
        "tags": _tags(rng),
    }
    if rng.random() < 0.5:
        record["dimensions"] = {
            "width": rng.randint(1, 120),
            "height": rng.randint(1, 120),
            "unit": rng.choice(("cm", "in", "mm")),
        }
    if rng.random() < 0.3:
        record["rating"] = round(rng.uniform(1, 5), 1)
    return record


def order(rng: random.Random) -> dict[str, object]:
    name = _person_name(rng)
    items = [
        {"sku": _sku(rng), "quantity": rng.randint(1, 5), "price": _price(rng)}
        for _ in range(rng.randint(1, 3))
    ]
    return {
        "order_id": f"ORD-{rng.randint(10000, 99999)}",
        "customer": {"name": name, "email": email(rng, name)},
        "items": items,
        "total": round(sum(i["price"] * i["quantity"] for i in items), 2),
        "status": rng.choice(STATUSES),
        "placed_at": iso_datetime(rng),
    }


def event(rng: random.Random) -> dict[str, object]:
    return {
        "type": rng.choice(EVENT_TYPES),
        "timestamp": iso_datetime(rng),
        "user_id": rng.randint(1, 100000),
        "payload": {
            "ip": ".".join(str(rng.randint(1, 254)) for _ in range(4)),
            "success": rng.random() < 0.5,
            "attempt": rng.randint(1, 5),
        },
    }


def api_response(rng: random.Random) -> dict[str, object]:
    make = rng.choice((person, product, event))
    if rng.random() < 0.15:
        return {
            "status": "error",
            "data": None,
            "errors": [
                {
                    "code": rng.choice((400, 401, 404, 409, 500)),
                    "message": rng.choice(
                        ("Not found", "Invalid input", "Unauthorized", "Conflict")
                    ),
                }
            ],
        }
    return {
        "status": "ok",
        "data": [make(rng) for _ in range(rng.randint(1, 3))],
        "meta": {
            "page": rng.randint(1, 20),
            "per_page": rng.choice((10, 20, 50)),
            "total": rng.randint(0, 5000),
        },
    }


def settings(rng: random.Random) -> dict[str, object]:
    return {
        "version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "debug": rng.random() < 0.3,
        "timeout": rng.choice((5, 10, 30, 60, 120)),
        "retries": rng.randint(0, 5),
        "hosts": [
            f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(rng.randint(1, 3))
        ],
        "features": {tag: rng.random() < 0.5 for tag in rng.sample(TAGS, 2)},
    }


JSON_MAKERS: tuple[Callable[[random.Random], object], ...] = (
    person,
    product,
    order,
    event,
    api_response,
    settings,
)


def json_document(rng: random.Random) -> str:
    """One JSON value, in the formatting styles commonly seen in the wild."""
    value: object = rng.choice(JSON_MAKERS)(rng)
    if rng.random() < 0.15:
        value = [rng.choice(JSON_MAKERS[:2])(rng) for _ in range(rng.randint(2, 3))]
    style = rng.randrange(4)
    ensure_ascii = rng.random() < 0.1
    if style == 0:
        return json.dumps(value, ensure_ascii=ensure_ascii)
    if style == 1:
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=2 if style == 2 else 4)


# --- line-oriented documents ----------------------------------------------------


def _lines(rng: random.Random, make: Callable[[random.Random], str]) -> str:
    return "\n".join(make(rng) for _ in range(rng.randint(1, 6)))


def labelled_values(rng: random.Random) -> str:
    """Key/value lines like those in forms, logs and e-mail signatures."""
    fields: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
        ("Date", iso_date),
        ("Time", clock_time),
        ("Timestamp", iso_datetime),
        ("Phone", phone),
        ("Email", email),
        ("Name", _person_name),
        ("Amount", number),
        ("Total", number),
    )
    chosen = rng.sample(fields, rng.randint(1, 4))
    return "\n".join(f"{label}: {make(rng)}" for label, make in chosen)


def value_list(rng: random.Random) -> str:
    make = rng.choice((iso_date, iso_datetime, clock_time, phone, email, number))
    return _lines(rng, make)


def python_snippet(rng: random.Random) -> str:
    name, other = rng.sample(IDENTIFIERS, 2)
    func = rng.choice(FUNCTIONS)
    op = rng.choice(OPERATORS)
    n = rng.randint(1, 20)
    snippets = (
        f"def {func}({name}, {other}):\n    return {name} {op} {other}",
        f"for {name} in range({n}):\n    print({name})",
        f"{name} = [{', '.join(str(rng.randint(0, 99)) for _ in range(rng.randint(1, 6)))}]",
        f"import {rng.choice(MODULES)}",
        f"if {name} > {n}:\n    {other} = {name} {op} {n}\nelse:\n    {other} = {n}",
        f'{name} = {{"{other}": {n}, "enabled": True}}',
        f"class {func.title().replace('_', '')}:\n    def __init__(self, {name}):\n"
        f"        self.{name} = {name}",
        f'with open("{name}.txt") as f:\n    {other} = f.read()',
        f"{other} = [{name} * 2 for {name} in range({n})]",
    )
    return rng.choice(snippets)


def javascript_snippet(rng: random.Random) -> str:
    name, other = rng.sample(IDENTIFIERS, 2)
    func = rng.choice(JS_FUNCTIONS)
    op = rng.choice(OPERATORS)
    n = rng.randint(1, 20)
    snippets = (
        f"function {func}({name}, {other}) {{\n  return {name} {op} {other};\n}}",
        f"const {name} = {n};",
        f"let {name} = [{', '.join(str(rng.randint(0, 99)) for _ in range(rng.randint(1, 6)))}];",
        f"console.log({name});",
        f"for (let i = 0; i < {n}; i++) {{\n  {name} += i;\n}}",
        f"const {other} = {{ {name}: {n}, enabled: true }};",
        f"if ({name} > {n}) {{\n  {other} = {name} {op} {n};\n}}",
        f"const {func} = ({name}) => {name} {op} {n};",
        f"export default {func};",
    )
    return rng.choice(snippets)


# --- prose -------------------------------------------------------------------------


def _sentence(rng: random.Random) -> str:
    """One plain sentence; the pydoc text alone is too technical to teach simple English."""
    name, other = _person_name(rng), _person_name(rng)
    city, country = rng.choice(CITIES)
    thing = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    templates = (
        f"{name} lives in {city}, {country}, and works as a {rng.choice(JOBS)}.",
        f"{name} ordered {rng.randint(2, 9)} {rng.choice(NOUNS)}s on {iso_date(rng)}.",
        f"The {thing} costs {_price(rng)} {rng.choice(CURRENCIES)}.",
        f"The {thing} was shipped to {city} on {rng.choice(WEEKDAYS)}.",
        f"The meeting with {name} starts at {clock_time(rng)} on {rng.choice(WEEKDAYS)}.",
        f"Please contact {name} at {email(rng, name)} or call {phone(rng)}.",
        f"{name} sent a message to {other} about the {thing}.",
        f"The weather in {city} is {rng.choice(WEATHER)} today.",
        f"The order for {name} has the status {rng.choice(STATUSES)}.",
        f"The function {rng.choice(FUNCTIONS)} returns the {rng.choice(IDENTIFIERS)} as a list.",
        f"If the {rng.choice(IDENTIFIERS)} is empty, the request is rejected.",
        f"On {rng.choice(WEEKDAYS)}, {name} and {other} visited {city}.",
        f"The {rng.choice(JOBS)} from {city} bought a {thing} for {_price(rng)} dollars.",
    )
    return rng.choice(templates)


def prose(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(1, 5)))


def chat_conversation(rng: random.Random) -> str:
    """A conversation in the chat template's layout; JSON answers are one line
    with the separators constrained output uses (", " and ": ")."""
    return conversation(rng, lambda r: json.dumps(r.choice(JSON_MAKERS)(r), ensure_ascii=False))


GENERATORS: tuple[tuple[Callable[[random.Random], str], float], ...] = (
    (json_document, 0.4),
    (chat_conversation, 0.2),
    (prose, 0.2),
    (labelled_values, 0.1),
    (value_list, 0.1),
    (python_snippet, 0.1),
    (javascript_snippet, 0.1),
)
