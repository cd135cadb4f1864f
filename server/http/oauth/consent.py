"""The consent page: the owner signs in with the admin secret and lets a client connect.

    GET  /oauth/consent?request=ID   which client asks, for what, and the form
    POST /oauth/consent              request, secret, decision (allow | deny), reindex (on):
                                     a 303 back to the client's redirect_uri with a code, or
                                     access_denied; a wrong secret shows the form again (403);
                                     with two sources or more, the right secret first shows
                                     the sources form
    POST /oauth/consent              request, owner (the sources form's one-time key), source
                                     (each ticked), decision: the 303 as above

The sources form lists the configured sources, none ticked: ticking some limits the
client's tokens to those (server/answers/limits.py); ticking none lets it read every source,
those added later too. It comes only after the admin secret, so that the page, which anyone
who can register a client reaches, names no source to a stranger.

The secret is $DOCDEX_ADMIN_SECRET, held in memory only: its SHA-256 is compared with the
one typed, in constant time. Past MAX_FAILURES wrong secrets within WINDOW_S seconds every
attempt is refused (429) until the window has passed, so the secret cannot be guessed at
speed. The page carries its own Content-Security-Policy: no script at all, and a form that
may go to this server and, by its redirect, to the client's redirect_uri only.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import re
import secrets
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .paths import CONSENT_PATH
from .provider import DocdexProvider, Pending
from .settings import READ_SCOPE, REINDEX_SCOPE
from .store import Clock

MAX_FAILURES = 10
WINDOW_S = 300.0
SCOPE_WORDS = {
    READ_SCOPE: "search and read the indexed documentation",
    REINDEX_SCOPE: "ask the indexer to re-read sources (reindex)",
}


class Throttle:
    """Wrong secrets in the last WINDOW_S seconds, by the clock given."""

    def __init__(self, clock: Clock, limit: int = MAX_FAILURES, window: float = WINDOW_S):
        self.clock, self.limit, self.window = clock, limit, window
        self._failures: deque[float] = deque()

    def blocked(self) -> bool:
        now = self.clock()
        while self._failures and self._failures[0] <= now - self.window:
            self._failures.popleft()
        return len(self._failures) >= self.limit

    def failed(self) -> None:
        self._failures.append(self.clock())


SourceNames = Callable[[], list[str]]  # the configured sources, as the page offers them


class Consent:
    def __init__(
        self,
        provider: DocdexProvider,
        admin_secret: str,
        clock: Clock = time.time,
        sources: SourceNames = list,
    ):
        if not admin_secret:
            raise ValueError("the consent page needs an admin secret")
        self.provider = provider
        self.sources = sources
        self._secret = hashlib.sha256(admin_secret.encode()).digest()
        self.throttle = Throttle(clock)
        self._signed_in: dict[str, tuple[str, list[str]]] = {}  # request -> (key, scopes)

    async def page(self, request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        pending = self.provider.pending(request_id)
        if pending is None:
            return _gone()
        return _form(request_id, pending)

    async def answer(self, request: Request) -> Response:
        form = await request.form()
        request_id = _text(form.get("request"))
        pending = self.provider.pending(request_id)
        if pending is None:
            return _gone()
        if _text(form.get("decision")) == "deny":
            self._signed_in.pop(request_id, None)
            return _redirect(self.provider.deny(request_id), pending)
        if "owner" in form:
            return self._sources_chosen(request_id, pending, form)
        if self.throttle.blocked():
            return _form(request_id, pending, "Too many wrong secrets: wait a few minutes.", 429)
        if not self._right(_text(form.get("secret"))):
            self.throttle.failed()
            return _form(request_id, pending, "Wrong admin secret.", 403)
        scopes = [READ_SCOPE] + ([REINDEX_SCOPE] if _text(form.get("reindex")) == "on" else [])
        names = self.sources()
        if len(names) < 2:  # nothing to choose
            return _redirect(self.provider.approve(request_id, scopes), pending)
        key = secrets.token_urlsafe(24)
        self._signed_in = {r: v for r, v in self._signed_in.items() if self.provider.pending(r)}
        self._signed_in[request_id] = (key, scopes)
        return _sources_form(request_id, pending, key, names)

    def _sources_chosen(self, request_id: str, pending: Pending, form: FormData) -> Response:
        """The sources form's answer: its one-time key says the owner signed in for this
        request; the sources ticked (none: every source) go with the code."""
        key, scopes = self._signed_in.pop(request_id, ("", []))
        if not key or not hmac.compare_digest(_text(form.get("owner")).encode(), key.encode()):
            return _form(request_id, pending, "Sign in again.", 403)
        ticked = {_text(value) for value in form.getlist("source")}
        chosen = [name for name in self.sources() if name in ticked] or None
        return _redirect(self.provider.approve(request_id, scopes, chosen), pending)

    def _right(self, given: str) -> bool:
        return hmac.compare_digest(hashlib.sha256(given.encode()).digest(), self._secret)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _redirect(target: str | None, pending: Pending) -> Response:
    if target is None:
        return _gone()
    return RedirectResponse(target, status_code=303, headers=_headers(pending))


def _gone() -> Response:
    body = _document(
        "<h1>This request has expired</h1><p>Start connecting again from your client.</p>"
    )
    return HTMLResponse(body, status_code=410, headers=_headers(None))


def _form(request_id: str, pending: Pending, problem: str = "", status: int = 200) -> Response:
    e = html.escape
    client = e(pending.client_name)
    where = e(urlsplit(pending.redirect_uri).netloc or pending.redirect_uri)
    asked = [s for s in pending.scopes if s in SCOPE_WORDS]
    items = "".join(f"<li>{e(SCOPE_WORDS[s])}</li>" for s in asked)
    reindex = (
        '<p><label><input type="checkbox" name="reindex" checked> also allow reindex</label></p>'
        if REINDEX_SCOPE in asked
        else ""
    )
    alert = f'<p role="alert"><strong>{e(problem)}</strong></p>' if problem else ""
    body = f"""<h1>Connect {client} to docdex?</h1>
<p><strong>{client}</strong> (returning to <code>{where}</code>) asks to:</p>
<ul>{items}</ul>
{alert}
<form method="post" action="{CONSENT_PATH}">
<input type="hidden" name="request" value="{e(request_id)}">
<p><label>Admin secret <input type="password" name="secret" autocomplete="current-password"
 autofocus></label></p>
{reindex}
<p><button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button></p>
</form>"""
    return HTMLResponse(_document(body), status_code=status, headers=_headers(pending))


def _sources_form(request_id: str, pending: Pending, key: str, sources: list[str]) -> Response:
    """After the right secret: a box per configured source, none ticked."""
    e = html.escape
    boxes = "".join(
        f'<li><label><input type="checkbox" name="source" value="{e(name)}"> {e(name)}</label></li>'
        for name in sources
    )
    body = f"""<h1>Which sources may {e(pending.client_name)} read?</h1>
<form method="post" action="{CONSENT_PATH}">
<input type="hidden" name="request" value="{e(request_id)}">
<input type="hidden" name="owner" value="{e(key)}">
<fieldset><legend>Sources it may read</legend>
<p>Tick some to limit it to those; with none ticked it reads every source, those added later
too.</p><ul>{boxes}</ul></fieldset>
<p><button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button></p>
</form>"""
    return HTMLResponse(_document(body), headers=_headers(pending))


def _document(body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>docdex: connect a client</title><link rel="stylesheet" href="/static/style.css">'
        f"</head><body><main>{body}</main></body></html>"
    )


def _headers(pending: Pending | None) -> dict[str, str]:
    """No caching, and a policy whose form-action lets the redirect reach the client."""
    target = _source(pending.redirect_uri) if pending is not None else ""
    policy = (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
        f"frame-ancestors 'none'; form-action 'self' {target}".rstrip()
    )
    return {"cache-control": "no-store", "content-security-policy": policy}


def _source(redirect_uri: str) -> str:
    """The CSP source of a redirect URI: its origin, or its scheme for an app's own scheme."""
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}" if _HOST.fullmatch(parts.netloc) else ""
    return f"{parts.scheme}:" if _SCHEME.fullmatch(parts.scheme) else ""


_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
