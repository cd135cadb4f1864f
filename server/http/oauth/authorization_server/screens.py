"""The HTML pages the authorization server shows a browser: the frame of every page, its
headers, and the pages that end a request (expired, refused, an error of /authorize).

Every page carries its own Content-Security-Policy: no script at all, and forms that may go
to this server and, by its redirect, to the one redirect URI given (`form_target`) only. An
error page names the error in words of its own, never text of the request: with open
registration a stranger chooses that text, and this page is shown under docdex's name.
"""

from __future__ import annotations

import html

from starlette.responses import HTMLResponse

from .redirects import csp_source

AUTHORIZE_ERRORS = {
    "invalid_request": "the request is incomplete, or names an unknown client or a redirect "
    "address that client did not register",
    "unsupported_response_type": "it asks for a response other than a code",
    "invalid_scope": "it asks for a permission this server does not give",
    "invalid_target": "it asks for tokens for another server than this one",
    "temporarily_unavailable": "too many requests are waiting or were refused just now; "
    "try again in a few minutes",
}


def document(body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>docdex: connect a client</title><link rel="stylesheet" href="/static/style.css">'
        f"</head><body><main>{body}</main></body></html>"
    )


def headers(form_target: str = "") -> dict[str, str]:
    """No caching, and a policy whose form-action lets the redirect reach `form_target`."""
    target = csp_source(form_target) if form_target else ""
    policy = (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
        f"frame-ancestors 'none'; form-action 'self' {target}".rstrip()
    )
    return {"cache-control": "no-store", "content-security-policy": policy}


def page(body: str, status: int = 200) -> HTMLResponse:
    """A page that sends nothing anywhere: its forms, if any, go to this server only."""
    return HTMLResponse(document(body), status_code=status, headers=headers())


def gone(why: str = "This request has expired", status: int = 410) -> HTMLResponse:
    return page(
        f"<h1>{html.escape(why)}</h1><p>Start connecting again from your client.</p>", status
    )


def authorize_error(error: str) -> HTMLResponse:
    """/authorize refused, shown here rather than sent to a redirect URI not trusted."""
    reason = AUTHORIZE_ERRORS.get(error, "it cannot be answered")
    body = (
        "<h1>This authorization request cannot be answered</h1>"
        f"<p>docdex refused it ({html.escape(error)}): {html.escape(reason)}.</p>"
        "<p>Start connecting again from your client; if this page keeps coming back, the "
        "client may not be what it says.</p>"
    )
    return page(body, 400)


def refused() -> HTMLResponse:
    """The owner's denial, for a client docdex does not send the browser back to."""
    body = (
        "<h1>You refused</h1><p>The client gets no access. It was never authorized here, so "
        "docdex does not send your browser back to it: close this page.</p>"
    )
    return page(body)
