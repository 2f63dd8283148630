"""The independent judge of JSON output: ``jsonschema`` against the user's own schema.

It shares nothing with the translation for xgrammar: the original schema,
``json.loads`` and ``jsonschema``'s validators decide. Formats are checked
too; ``jsonschema`` itself only checks some of them without optional
packages, so the ones the compiler enforces are checked here with the
standard library (``datetime``, ``ipaddress``) or regexes written from the
RFCs, never with the patterns used for generation.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
from collections.abc import Callable

import jsonschema
import referencing
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from grammar_compiler import bounded_regex
from grammar_compiler.canonical import JUDGE_BUDGET_S, Judge, out_of_time

MAX_REASON_LENGTH = 300


# ---------------------------------------------------------------------------
# Format checks (RFC 3339, RFC 1123, RFC 3986, RFC 3987, RFC 6570, RFC 6901)

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))", re.ASCII)
_DURATION = re.compile(
    r"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)",
    re.ASCII,
)
_HOSTNAME_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?", re.ASCII)
_JSON_POINTER = re.compile(r"(?:/(?:[^/~]|~[01])*)*")
_RELATIVE_JSON_POINTER = re.compile(r"(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^/~]|~[01])*)*)")
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
# RFC 6570: literals are any character but controls, space and "'%<>\^`{|} (a
# %-escape aside); expressions are {operator? varspec,...}.
_URI_TEMPLATE = re.compile(
    r"(?:[^\x00-\x20\x7f\"'%<>\\^`{|}]|%[0-9A-Fa-f]{2}"
    rf"|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"
)


def _rfc3986() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """URI and URI-reference, transcribed from the ABNF of RFC 3986 appendix A."""
    pct = "%[0-9A-Fa-f]{2}"
    unreserved_sub = r"A-Za-z0-9\-._~!$&'()*+,;="
    pchar = f"(?:[{unreserved_sub}:@]|{pct})"
    ip_literal = rf"\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[{unreserved_sub}:]+)\]"
    host = rf"(?:{ip_literal}|(?:[{unreserved_sub}]|{pct})*)"
    authority = rf"(?:(?:[{unreserved_sub}:]|{pct})*@)?{host}(?::[0-9]*)?"
    path_abempty = f"(?:/{pchar}*)*"
    path_absolute = f"/(?:{pchar}+(?:/{pchar}*)*)?"
    path_rootless = f"{pchar}+(?:/{pchar}*)*"
    path_noscheme = rf"(?:[{unreserved_sub}@]|{pct})+(?:/{pchar}*)*"
    tail = rf"(?:\?(?:{pchar}|[/?])*)?(?:#(?:{pchar}|[/?])*)?"
    hier = f"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless})?"
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme})?"
    uri = f"[A-Za-z][A-Za-z0-9+.-]*:{hier}{tail}"
    return re.compile(uri, re.ASCII), re.compile(f"{uri}|{relative}{tail}", re.ASCII)


_URI, _URI_REFERENCE = _rfc3986()
_UCSCHAR = re.compile(
    "["
    + "".join(
        f"{chr(low)}-{chr(high)}"
        for low, high in (
            (0xA0, 0xD7FF),
            (0xF900, 0xFDCF),
            (0xFDF0, 0xFFEF),
            *((plane << 16, (plane << 16) | 0xFFFD) for plane in range(1, 0xE)),
            (0xE1000, 0xEFFFD),
        )
    )
    + "]"
)
"""RFC 3987's ucschar: what an IRI may hold beyond a URI's characters."""


def _is_date(text: str) -> bool:
    found = _DATE.fullmatch(text)
    if not found:
        return False
    try:
        datetime.date(*map(int, found.groups()))
    except ValueError:
        return False
    return True


def _is_time(text: str) -> bool:
    found = _TIME.fullmatch(text)
    if not found:
        return False
    hour, minute, second = (int(found.group(i)) for i in (1, 2, 3))
    sign, offset_hour, offset_minute = found.group(4), found.group(5), found.group(6)
    if sign and (int(offset_hour) > 23 or int(offset_minute) > 59):
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    if second == 60:  # a leap second is 23:59:60 in UTC
        offset = 0 if not sign else (int(offset_hour) * 60 + int(offset_minute))
        utc = (hour * 60 + minute - (offset if sign == "+" else -offset)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def _is_date_time(text: str) -> bool:
    date, separator, time = text[:10], text[10:11], text[11:]
    return separator in ("T", "t") and _is_date(date) and _is_time(time)


def _is_hostname(text: str) -> bool:
    return len(text) <= 253 and all(
        len(label) <= 63 and _HOSTNAME_LABEL.fullmatch(label) for label in text.split(".")
    )


def _is_uri(text: str) -> bool:
    return _URI.fullmatch(text) is not None and _ip_literals_ok(text)


def _is_uri_reference(text: str) -> bool:
    return _URI_REFERENCE.fullmatch(text) is not None and _ip_literals_ok(text)


def _as_uri(iri: str) -> str:
    """RFC 3987 section 3.1: an IRI's ucschars %-encoded make it a URI.

    Private-use characters (allowed only in an IRI's query) are left as
    they are, so the URI check refuses them: stricter than the RFC there."""
    return _UCSCHAR.sub(lambda found: "%" + found.group().encode("utf-8").hex("%"), iri)


def _ip_literals_ok(text: str) -> bool:
    """An IPv6 literal in a URI's authority must be an IPv6 address."""
    found = re.match(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//(?:[^@/?#]*@)?\[([0-9A-Fa-f:.]+)\]", text)
    if found is None:
        return True
    try:
        ipaddress.IPv6Address(found.group(1))
    except ValueError:
        return False
    return True


_OWN_CHECKS: dict[str, Callable[[str], bool]] = {
    "date": _is_date,
    "time": _is_time,
    "date-time": _is_date_time,
    "duration": lambda text: _DURATION.fullmatch(text) is not None,
    "hostname": _is_hostname,
    "uri": _is_uri,
    "uri-reference": _is_uri_reference,
    "iri": lambda text: _is_uri(_as_uri(text)),
    "iri-reference": lambda text: _is_uri_reference(_as_uri(text)),
    "uri-template": lambda text: _URI_TEMPLATE.fullmatch(text) is not None,
    "json-pointer": lambda text: _JSON_POINTER.fullmatch(text) is not None,
    "relative-json-pointer": lambda text: _RELATIVE_JSON_POINTER.fullmatch(text) is not None,
}
_JSONSCHEMA_CHECKS = ("email", "idn-email", "idn-hostname", "ipv4", "ipv6", "uuid", "regex")


def format_checker() -> jsonschema.FormatChecker:
    """jsonschema's own checks where it has them without extras, the ones above otherwise."""
    checker = jsonschema.FormatChecker(formats=())
    builtin = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for name in _JSONSCHEMA_CHECKS:
        if name in builtin.checkers:
            checker.checkers[name] = builtin.checkers[name]
    for name, check in _OWN_CHECKS.items():
        checker.checks(name)(_strings_only(check))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[object], bool]:
    return lambda instance: not isinstance(instance, str) or check(instance)


JUDGED_FORMATS = frozenset(format_checker().checkers)
"""The ``format`` names the judge checks; any other name is an annotation to it."""


# ---------------------------------------------------------------------------
# The judge


def validator_for(document: object, validator_class: type[Validator]) -> Validator:
    """A validator for the user's schema that checks formats and never fetches remote schemas."""
    return validator_class(
        document, format_checker=format_checker(), registry=referencing.Registry()
    )


def make_judge(document: object, validator_class: type[Validator]) -> Judge:
    validator = validator_for(_without_inert_additional_items(document), validator_class)

    def judge(text: str) -> str | None:
        try:
            instance = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as error:
            return f"not JSON: {error}"
        except RecursionError:
            return "the JSON nests too deeply to be checked"
        try:
            with bounded_regex.deadline(JUDGE_BUDGET_S):  # the schema's patterns, together
                error = best_match(validator.iter_errors(instance))
        except TimeoutError:
            return out_of_time()
        except referencing.exceptions.Unresolvable as problem:
            return f"the schema cannot be checked: unresolvable $ref {problem}"
        except RecursionError:
            return "the JSON nests too deeply to be checked"
        except Exception as problem:  # a judge fails closed, never with a server error
            return f"the schema cannot be checked: {type(problem).__name__}: {problem}"
        if error is None:
            return None
        where = pointer(error.absolute_path) or "the value"
        return f"{where}: {error.message}"[:MAX_REASON_LENGTH]

    return judge


_VALUES = frozenset({"enum", "const", "default", "examples", "example"})


def _without_inert_additional_items(schema: object) -> object:
    """The schema minus ``additionalItems`` where ``items`` is no list, which does nothing.

    jsonschema 4.26 raises TypeError on it next to ``"items": false``.
    """
    if isinstance(schema, list):
        return [_without_inert_additional_items(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    inert = "additionalItems" in schema and not isinstance(schema.get("items"), list)
    return {
        key: value if key in _VALUES else _without_inert_additional_items(value)
        for key, value in schema.items()
        if not (inert and key == "additionalItems")
    }


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def pointer(path: object) -> str:
    """A JSON pointer (RFC 6901) for a path of keys and indices."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
