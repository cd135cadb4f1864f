"""Secrets kept out of what docdex says and writes. An endpoint's error body is quoted in
its error sentence, and gateways echo the key they were sent ("Incorrect API key provided:
sk-..."); that sentence reaches logs, /health, list_sources and files under the data
directory. `redact` replaces the secrets a caller knows (the key it sent) and whatever is
shaped like one: a bearer or basic credential, a prefixed key (`sk-...`), a long token
after a word such as "key" or "token", a URL's user and password, any long run of mixed
letters and digits."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"

_BEARER = re.compile(r"(?i)\b(bearer\s+)(?!\[redacted\])[^\s\"',;)}\]]{4,}")
_BASIC = re.compile(r"(?i)\b(basic\s+)(?P<value>[A-Za-z0-9+/]{8,}={0,2})")
_PREFIXED_KEY = re.compile(r"\b(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{6,}")
# "key", "token", "secret"... then at most two short words ("provided:", "is") and the value
_NAMED_VALUE = re.compile(
    r"(?i)\b(?:api[_-]?key|key|token|secret|password|passwd|credential)s?"
    r"(?P<gap>[^A-Za-z0-9\n]{0,4}(?:[A-Za-z]{1,12}[^A-Za-z0-9\n]{1,4}){0,2})"
    r"(?P<value>[A-Za-z0-9_\-.~+/]{12,}=*)"
)
_PASSWORD_IN_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/@\s:]*:[^/@\s]+@")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+]{32,}={0,2}")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each of `secrets` and anything shaped like a secret replaced by
    REDACTED (a git commit id, a path, a number or a word stays as it is)."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _BEARER.sub(lambda m: m[1] + REDACTED, text)
    text = _BASIC.sub(lambda m: _value_if_mixed(m, 2), text)
    text = _PREFIXED_KEY.sub(REDACTED, text)
    text = _NAMED_VALUE.sub(lambda m: _value_if_mixed(m, 2), text)
    text = _PASSWORD_IN_URL.sub(lambda m: f"{m[1]}{REDACTED}@", text)
    return _LONG_TOKEN.sub(lambda m: REDACTED if _classes(m[0]) == 3 else m[0], text)


def _value_if_mixed(match: re.Match[str], classes: int) -> str:
    """The match with its `value` group redacted when the value mixes `classes` kinds of
    character, else as it was."""
    if _classes(match["value"]) < classes:
        return match[0]
    return match[0][: match.start("value") - match.start()] + REDACTED


def _classes(value: str) -> int:
    """How many of lower case, upper case and digits `value` holds: a key mixes them; a
    word, a number, a lower-case hex digest or a variable's NAME does not."""
    return sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit))
