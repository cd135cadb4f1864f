"""The consent page: the owner signs in with the admin secret and lets a client connect.

    GET  /oauth/consent?request=ID   which client asks, for what, and the form
    POST /oauth/consent              request, secret, decision (allow | deny), reindex (on;
                                     offered ticked when the client asked for it, unticked
                                     when it asked to read only):
                                     a 303 back to the client's redirect_uri with a code, or
                                     access_denied; a wrong secret shows the form again (403),
                                     or ends the request (429, 410: provider.wrong_secret);
                                     with two sources or more, the right secret first shows
                                     the sources form
    POST /oauth/consent              request, owner (the sources form's one-time key), source
                                     (each ticked), decision: the 303 as above

The sources form lists the configured sources, none ticked: ticking some limits the
client's tokens to those (server/answers/source_limits.py); ticking none lets it read every source,
those added later too. It comes only after the admin secret, so that the page, which anyone
who can register a client reaches, names no source to a stranger.

The secret is $DOCDEX_ADMIN_SECRET, held in memory only: its SHA-256 is compared with the
one typed, in constant time, before anything else is looked at, so a right secret always
passes whatever strangers typed before; a wrong one costs what provider.wrong_secret says,
to whoever typed it. A denial is sent back to the client only if the owner once authorized
it: otherwise a stranger's client could use docdex's address to send a browser anywhere
(RFC 9700 4.11.2). The page carries its own Content-Security-Policy (screens.py).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from docdex.server.http.oauth.paths import CONSENT_PATH
from docdex.server.http.oauth.settings import READ_SCOPE, REINDEX_SCOPE

from . import screens
from .pending import Pending
from .provider import DocdexProvider, WrongSecret

SCOPE_WORDS = {
    READ_SCOPE: "search and read the indexed documentation",
    REINDEX_SCOPE: "ask the indexer to re-read sources (reindex)",
}


SourceNames = Callable[[], list[str]]  # the configured sources, as the page offers them


class Consent:
    def __init__(self, provider: DocdexProvider, admin_secret: str, sources: SourceNames = list):
        if not admin_secret:
            raise ValueError("the consent page needs an admin secret")
        self.provider = provider
        self.sources = sources
        self._secret = hashlib.sha256(admin_secret.encode()).digest()
        self._signed_in: dict[str, tuple[str, list[str]]] = {}  # request -> (key, scopes)

    async def page(self, request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        pending = self.provider.pending(request_id)
        if pending is None:
            return screens.gone()
        return _form(request_id, pending)

    async def answer(self, request: Request) -> Response:
        form = await request.form()
        request_id = _text(form.get("request"))
        pending = self.provider.pending(request_id)
        if pending is None:
            return screens.gone()
        if _text(form.get("decision")) == "deny":
            return self._denied(request_id, pending)
        if "owner" in form:
            return self._sources_chosen(request_id, pending, form)
        if not self._right(_text(form.get("secret"))):
            return await self._wrong(request_id, pending)
        scopes = _chosen_scopes(pending, _text(form.get("reindex")) == "on")
        names = self.sources()
        if len(names) < 2:  # nothing to choose
            return _redirect(self.provider.approve(request_id, scopes), pending)
        key = secrets.token_urlsafe(24)
        self._signed_in = {r: v for r, v in self._signed_in.items() if self.provider.pending(r)}
        self._signed_in[request_id] = (key, scopes)
        return _sources_form(request_id, pending, key, names)

    def _denied(self, request_id: str, pending: Pending) -> Response:
        """The owner refused: the client hears of it only if the owner once authorized it."""
        self._signed_in.pop(request_id, None)
        target = self.provider.deny(request_id)
        if target is not None and not self.provider.trusted(pending.client_id):
            return screens.refused()
        return _redirect(target, pending)

    async def _wrong(self, request_id: str, pending: Pending) -> Response:
        outcome = await self.provider.wrong_secret(request_id)
        if outcome is WrongSecret.AGAIN:
            return _form(request_id, pending, "Wrong admin secret.", 403)
        if outcome is WrongSecret.WITHDRAWN:
            return screens.gone("Too many wrong secrets for this request", 429)
        return screens.gone("Too many wrong secrets: this client is forgotten")

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


def _chosen_scopes(pending: Pending, reindex: bool) -> list[str]:
    """What the owner allows: the scopes the client asked for but reindex, which goes with
    the box alone (offered to a client that asked to read only, so that it needs no second
    consent to step up)."""
    asked = [s for s in pending.scopes if s in SCOPE_WORDS and s != REINDEX_SCOPE]
    return asked + ([REINDEX_SCOPE] if reindex else [])


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _redirect(target: str | None, pending: Pending) -> Response:
    if target is None:
        return screens.gone()
    return RedirectResponse(target, status_code=303, headers=screens.headers(pending.redirect_uri))


def _form(request_id: str, pending: Pending, problem: str = "", status: int = 200) -> Response:
    e = html.escape
    client = e(pending.client_name)
    where = e(urlsplit(pending.redirect_uri).netloc or pending.redirect_uri)
    asked = [s for s in pending.scopes if s in SCOPE_WORDS]
    items = "".join(f"<li>{e(SCOPE_WORDS[s])}</li>" for s in asked)
    if REINDEX_SCOPE in asked:
        box, why = " checked", ""
    else:
        box, why = "", " (it asked to read only; ticking it saves a second consent later)"
    reindex = (
        f'<p><label><input type="checkbox" name="reindex"{box}> also allow reindex</label>{why}</p>'
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
    return HTMLResponse(
        screens.document(body), status_code=status, headers=screens.headers(pending.redirect_uri)
    )


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
    return HTMLResponse(screens.document(body), headers=screens.headers(pending.redirect_uri))
