"""The search page (server/http/static/, docs/adr/0016-web-page.md), in a real browser: Debian's
Chromium driven by Playwright against a real `docdex serve` with a token, over a real index of
two git sources, one of them a document full of XSS payloads.

One server and one browser for the module. Screenshots go to bench/results/screenshots/
(or $DOCDEX_SCREENSHOTS).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest

from docdex.index_format import metrics
from docdex.index_format.config import Config, Settings, SourceConfig, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.indexer.run.pipeline import index_sources
from docdex.server.answers.page_views import page_view
from docdex.server.engine import Engine
from docdex.server.http.oauth.authorization_server.token_store import OAuthStore
from docdex.server.http.search_page import CONTENT_SECURITY_POLICY, page_bytes
from docdex.server.rendering.renderer import Where, link_target, render_markdown
from docdex.serverproc import ServeProcess

from fixtures import FAQ_E1234, INSTALL, build_workspace, http, pushed_workspace, wait_for
from gitrepo import Workspace, git
from paths import ROOT

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):  # CI installs it (.ci/run): missing there is a failure
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    pytest.skip("chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

SHOTS = Path(os.environ.get("DOCDEX_SCREENSHOTS", ROOT / "bench" / "results" / "screenshots"))
TOKEN = "web-test-token-0123456789abcdef"
TIMEOUT_MS = 15_000
TIME_ZONE = "Asia/Kolkata"  # UTC+05:30: a time shown unconverted would be off by a half hour
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
DOCDEX = Path(sys.executable).absolute().with_name("docdex")  # what the server runs from

XSS = """---
title: "Payloads <img src=x onerror=\\"window.__pwned='title'\\">"
---
# Payloads <svg onload="window.__pwned='heading'">

<script>window.__pwned = "script"; alert("script")</script>

<img src=x onerror="window.__pwned='img'; alert('img')">

<svg onload="window.__pwned='svg'"><script>window.__pwned='svg-script'</script></svg>

<iframe src="javascript:window.parent.__pwned='iframe'"></iframe>

<a href="javascript:window.__pwned='html-link'">html link</a>

<div style="background:red" onclick="window.__pwned='div'">styled div</div>

## Markdown links

[markdown link](javascript:window.__pwned='md-link')
[mixed case](JaVaScRiPt:window.__pwned='md-case')
[entity](&#106;avascript:window.__pwned='entity')
[vbscript](vbscript:msgbox("x"))
[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
[reference link][evil]
[a file beside it](secrets.txt)
<javascript:window.__pwned='autolink'>

![data image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)
![remote image](http://127.0.0.2:9/pixel.png "a beacon")

```html
<script>window.__pwned = "code block"</script>
```

Inline `<img src=x onerror=alert(1)>` code and payload words for the search.

[evil]: javascript:window.__pwned='ref'
"""

DEPLOY = """# Deploying

See [the payload page](../xss.md#markdown-links) and [the docs](https://example.com/docs).

## Ports

| service | port | notes |
|:--------|-----:|:-----:|
| serve   | 8085 | HTTP  |
| worker  | none | queue |

```sh
docdex serve --port 8085
```

The deploy checklist keeps the signing key rotation in a cron job.
"""

CALLOUTS = """# Callouts

!!! warning "Rotate the key"
    The signing key expires after ninety days.

::: details Why ninety days?
Auditors ask for it.
:::

> [!TIP]
> Keep the old key for a day.

<Note>

Components show their children.

</Note>
"""


@dataclass
class Site:
    data: DataDir
    server: ServeProcess
    docs: Workspace
    browser: object
    context: object  # signed in once, with "remember": its pages share the token

    def url(self, path: str = "/") -> str:
        return self.server.url + path


@dataclass
class Tab:
    """A page and what it did: console errors, uncaught errors, dialogs, requests."""

    page: object
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def index_all(data: DataDir, embedder) -> None:
    report = index_sources(data, load_config(data), embedder=embedder)
    assert report.published, report


RUNBOOK_TOPICS = [
    "Paging rotation",
    "Snapshot restore",
    "Backup bucket layout",
    "Certificate renewal",
    "Disk pressure",
    "Log shipping",
    "Database failover",
    "Load balancer drain",
    "Cache warmup",
    "Queue backlog",
    "DNS changes",
    "Firewall rules",
    "Kernel updates",
    "Incident review",
    "Capacity planning",
    "Cost report",
]
RUNBOOK = (
    "# Operations runbook\n\nWhat the on-call engineer does, step by step.\n\n"
    "| step | command | who | when | notes |\n|---|---|---|---|---|\n"
    "| restore | `docdex index --full --json` | on-call engineer | after a disk failure |"
    " keep the old data directory until the new one serves |\n\n"
    "```sh\ndocdex --data /srv/docdex-data/a/rather/long/path/to/the/data/directory index --full\n"
    "```\n\n"
    + "".join(
        f"## {topic}\n\nThe {topic.lower()} procedure, first step: check the dashboards and "
        f"write down what you see.\n\nSecond step of {topic.lower()}: act, then tell the "
        "channel what changed and when.\n\nThird step: close the ticket.\n\n"
        for topic in RUNBOOK_TOPICS
    )
    + "## Snapshot restore checks\n\nAfter a snapshot restore from the backup bucket, "
    "compare the restored snapshot with the backup bucket listing.\n\n"
    "## Celebrations\n\nA quiet week on call earns a cake. ✅ 🔥\n"
)
RLO_PATH = "ops/report\u202efdp.md"  # a right-to-left override: "report" then "pdf.md" reversed
RLO = "# Quarterly report\n\nThe zeppelin hangar budget for the quarter.\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("web")
    docs = build_workspace(root / "docs")
    notes = pushed_workspace(
        root / "notes",
        {
            "xss.md": XSS,
            "ops/deploy.md": DEPLOY,
            "ops/callouts.md": CALLOUTS,
            "ops/runbook.md": RUNBOOK,
            RLO_PATH: RLO,
        },
    )
    data = DataDir(root / "data")
    data.ensure()
    sources = [SourceConfig(name="docs", location=str(docs.bare))]
    sources.append(SourceConfig(name="notes", location=str(notes.bare)))
    save_config(data, Config(sources=sources))
    index_all(data, embedder)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with ServeProcess(data.root, root / "serve.log", token=TOKEN) as server:
        server.wait_serving()
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            context = signed_in_context(
                browser, server.url, viewport={"width": 1100, "height": 800}
            )
            yield Site(data, server, docs, browser, context)
            browser.close()


def signed_in_context(browser, url: str, **options):
    """A browser context in TIME_ZONE that may use the clipboard, signed in with "remember"
    (its pages share the token)."""
    context = browser.new_context(timezone_id=TIME_ZONE, **options)
    context.set_default_timeout(TIMEOUT_MS)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page = context.new_page()
    page.goto(url + "/")
    page.fill("#token", TOKEN)
    page.check("#remember")
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#search:not([hidden])")
    page.close()
    return context


@pytest.fixture(scope="module")
def phone_context(site) -> Iterator[object]:
    """A phone: 390 px wide, touch, no hover."""
    context = signed_in_context(
        site.browser, site.server.url, viewport=PHONE, is_mobile=True, has_touch=True
    )
    yield context
    context.close()


def open_tab(context) -> Tab:
    page = context.new_page()
    tab = Tab(page)
    page.on("console", lambda m: m.type == "error" and tab.console.append(m.text))
    page.on("pageerror", lambda e: tab.errors.append(str(e)))
    page.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: tab.requests.append(r.url))
    return tab


def sign_in(tab: Tab, site: Site, token: str = TOKEN, remember: bool = False) -> Tab:
    tab.page.goto(site.url())
    tab.page.fill("#token", token)
    if remember:
        tab.page.check("#remember")
    tab.page.click("#signin-form button[type=submit]")
    return tab


@pytest.fixture
def tab(site) -> Iterator[Tab]:
    tab = open_tab(site.context)
    yield tab
    assert tab.errors == [], tab.errors  # no uncaught error on any page
    tab.page.close()


@pytest.fixture(params=["phone", "desktop"])
def sized(request, site, phone_context) -> Iterator[Tab]:
    """A tab at 390 x 844 on a touch screen, then at 1280 x 800 with a mouse."""
    if request.param == "phone":
        tab = open_tab(phone_context)
    else:
        tab = open_tab(site.context)
        tab.page.set_viewport_size(DESKTOP)
    yield tab
    assert tab.errors == [], tab.errors
    tab.page.close()


def search(tab: Tab, site: Site, query: str, path: str = "/") -> list:
    page = tab.page
    if not page.url.startswith(site.url()):
        page.goto(site.url(path))
    page.fill("#q", "")
    page.click("#q")
    page.keyboard.type(query, delay=20)
    page.wait_for_selector(f'#results[data-query="{query}"]', state="attached")
    return page.query_selector_all("#results .hit")


def hit_fields(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#results .hit",
        """hits => hits.map(h => ({
            doc: h.dataset.doc,
            page_title: h.querySelector('.hit-page')?.textContent ?? '',
            title: h.querySelector('.hit-title').textContent,
            crumb: h.querySelector('.crumb')?.textContent ?? '',
            where: h.querySelector('.where').textContent,
            meta: h.querySelector('.meta').textContent,
            marks: [...h.querySelectorAll('mark')].map(m => m.textContent),
            snippet: h.querySelector('.snippet').textContent,
            href: h.querySelector('.hit-title').getAttribute('href'),
        }))""",
    )


def until(page, expression: str) -> None:
    """Wait until `expression` is true in the page (evaluated over CDP: the page's CSP forbids
    the eval that Playwright's wait_for_function would use)."""
    wait_for(lambda: page.evaluate(expression), timeout=TIMEOUT_MS / 1000, what=expression)


def shoot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def width(tab: Tab) -> str:
    return "phone" if tab.page.viewport_size["width"] == PHONE["width"] else "desktop"


def assert_no_sideways_scroll(page) -> None:
    """The document is no wider than the window: nothing is cut off at its right edge."""
    sizes = page.evaluate(
        "(e => ({scroll: e.scrollWidth, client: e.clientWidth}))(document.documentElement)"
    )
    assert sizes["scroll"] <= sizes["client"], sizes


# --- the renderer, on its own --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/a?b=c", "https://example.com/a?b=c"),
        ("mailto:docs@example.com", "mailto:docs@example.com"),
        ("../faq.md", "/?doc=docs%3Afaq.md"),
        ("/reference/api.md#tokens", "/?doc=docs%3Areference%2Fapi.md#doc-tokens"),
        ("install.md?plain=1#Some%20Thing", "/?doc=docs%3Aguide%2Finstall.md#doc-some-thing"),
        ("#requirements", "#doc-requirements"),
        ("javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        (" java\tscript:alert(1)", None),
        ("vbscript:msgbox(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("file:///etc/passwd", None),
        ("//evil.example/x.md", None),
        ("../../outside.md", None),
        ("picture.png", None),
        ("", None),
    ],
)
def test_link_targets_are_allowlisted(url, expected):
    assert link_target(url, Where("docs", "guide/install.md")) == expected


def test_render_escapes_html_numbers_blocks_and_never_writes_an_image_or_style():
    html = render_markdown(
        "# A <b>title</b>\n\n<script>x()</script>\n\n| a | b |\n|--:|:-:|\n| 1 | 2 |\n\n"
        "![pixel](https://example.com/p.png) ![local](p.png)\n",
        Where("docs", "a.md"),
    )
    assert "<script>" not in html and "&lt;script&gt;x()&lt;/script&gt;" in html
    assert '<h1 id="doc-a-btitleb">A &lt;b&gt;title&lt;/b&gt;' in html
    assert '<div class="blk" id="L1" data-first="1" data-last="1">' in html
    assert 'data-first="5" data-last="7"><table>' in html
    assert "<img" not in html and "style=" not in html and 'class="align-right"' in html
    assert '<a class="image" href="https://example.com/p.png"' in html
    assert '<span class="image">image: local</span>' in html


def test_a_long_page_is_cut_at_a_line_with_a_note(site, embedder):
    engine = Engine.open(site.data, embedder)
    try:
        page = engine.index.pages["docs:guide/install.md"]
        whole, cut = page_view(engine.index, page), page_view(engine.index, page, limit=140)
    finally:
        engine.close()
    assert not whole.cut and whole.note == "" and whole.last_line == whole.lines == 11
    assert "Requirements" in whole.html and whole.page.title == "Install guide"
    assert cut.cut and cut.last_line == 8 and "Requirements" not in cut.html
    assert "the view stops after line 8 of 11" in cut.note
    assert "get_document(doc_id='docs:guide/install.md', start_line=9) reads on" in cut.note


def test_api_page_refuses_ids_outside_the_index(site):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for doc_id, status, message in [
        ("docs:../../etc/passwd", 400, "never contain '..'"),
        ("docs:missing.md", 404, "no document 'docs:missing.md'"),
        ("", 400, "doc_id is empty"),
    ]:
        reply = http(site.url(f"/api/page?doc_id={quote(doc_id)}"), auth)
        assert reply.status == status and message in reply.json()["error"], (doc_id, reply.body)


# --- what answers without the token ----------------------------------------------------------


def test_without_the_token_only_the_page_files_answer(site):
    page = http(site.url("/"), {"Accept": "text/html"})
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    html = page.body.decode()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="/static/app.js">']
    assert "style=" not in html and "http" not in html.replace("http-equiv", "")
    for name in ("app.js", "style.css", "icon.svg"):
        assert http(site.url(f"/static/{name}")).status == 200
    for path in ("/api/search?q=install", "/api/sources", "/api/page?doc_id=docs:faq.md"):
        assert http(site.url(path)).status == 401, path
    assert http(site.url("/api/clients")).status == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert http(site.url("/static/index.html"), auth).status == 404
    assert http(site.url("/static/..%2Fauth.py"), auth).status == 404
    assert page_bytes() < 50_000


def test_every_response_carries_the_security_headers(site):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path, headers in [
        ("/", {"Accept": "text/html"}),
        ("/static/app.js", {}),
        ("/api/search?q=install", auth),
        ("/api/sources", {}),  # a refusal too
    ]:
        reply = http(site.url(path), headers)
        assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["referrer-policy"] == "no-referrer"
    policy = dict(part.split(" ", 1) for part in CONTENT_SECURITY_POLICY.split("; "))
    assert policy["default-src"] == policy["script-src"] == "'self'"
    assert policy["frame-ancestors"] == policy["object-src"] == policy["base-uri"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY


# --- search ----------------------------------------------------------------------------------


def test_typing_shows_hits_with_path_lines_source_and_date(site, tab):
    hits = search(tab, site, "error E1234")
    assert hits
    top = hit_fields(tab.page)[0]
    assert top["title"] == "FAQ" and top["crumb"] == "FAQ › Error E1234"
    path, start, end = re.fullmatch(r"(\S+):(\d+)-(\d+)", top["where"]).groups()
    assert path == "faq.md" and "E1234" in "\n".join(
        FAQ_E1234.split("\n")[int(start) - 1 : int(end)]
    )
    assert re.search(r"· docs · \d{4}-\d{2}-\d{2}$", top["meta"]), top["meta"]
    assert top["marks"] == ["error", "E1234"]  # every word of the query, where it stands
    assert "q=error+E1234" in tab.page.url
    assert "No good match" not in tab.page.text_content("#summary")


def test_a_path_that_overrides_direction_cannot_reverse_the_rest_of_the_line(site, tab):
    search(tab, site, "zeppelin hangar budget")
    [hit] = [h for h in hit_fields(tab.page) if "zeppelin" in h["snippet"]]
    assert hit["where"].startswith("ops/report[U+202E]fdp.md:")
    assert "\u202e" not in hit["meta"] and " · notes · " in hit["meta"]
    isolated = tab.page.eval_on_selector_all(
        "#results .hit .meta bdi", "bs => bs.map(b => getComputedStyle(b).unicodeBidi)"
    )
    assert isolated and set(isolated) == {"isolate"}


def test_a_query_with_no_good_match_says_so(site, tab):
    search(tab, site, "zebra migration patterns")
    assert tab.page.text_content("#summary").startswith("No good match")


def test_filters_by_source_and_path_prefix(site, tab):
    search(tab, site, "deploy port token")
    sources = {h["doc"].partition(":")[0] for h in hit_fields(tab.page)}
    assert sources == {"docs", "notes"}
    tab.page.select_option("#source", "notes")
    until(tab.page, "location.search.includes('source=notes')")
    docs = "[...document.querySelectorAll('#results .hit')].map(h => h.dataset.doc)"
    until(tab.page, f"{docs}.every(d => d.startsWith('notes:'))")
    pages = tab.page.evaluate("document.getElementById('q').placeholder")
    assert re.fullmatch(r"Search \d+ pages in notes", pages), pages
    tab.page.select_option("#source", "")
    tab.page.fill("#path", "reference/")
    until(tab.page, "location.search.includes('path=reference')")
    wheres = "[...document.querySelectorAll('#results .where')].map(w => w.textContent)"
    until(tab.page, f"{wheres}.every(w => w.startsWith('reference/')) && {wheres}.length > 0")


def test_a_deep_link_reproduces_the_search(site, tab):
    tab.page.goto(site.url("/?q=install+python&source=docs&path=guide%2F"))
    tab.page.wait_for_selector('#results[data-query="install python"]', state="attached")
    assert tab.page.input_value("#q") == "install python"
    assert tab.page.input_value("#source") == "docs"
    assert tab.page.input_value("#path") == "guide/"
    wheres = [h["where"] for h in hit_fields(tab.page)]
    assert wheres and all(w.startswith("guide/install.md:") for w in wheres)


def test_keyboard_slash_arrows_enter(site, tab):
    tab.page.goto(site.url("/?view=status"))
    tab.page.wait_for_selector("#status-body p")
    tab.page.keyboard.press("/")
    assert tab.page.evaluate("document.activeElement.id") == "q"
    tab.page.keyboard.type("token", delay=20)
    tab.page.wait_for_selector('#results[data-query="token"]', state="attached")
    tab.page.keyboard.press("ArrowDown")
    tab.page.keyboard.press("ArrowDown")
    second = hit_fields(tab.page)[1]["href"]
    assert tab.page.evaluate("document.activeElement.getAttribute('href')") == second
    tab.page.keyboard.press("ArrowUp")
    tab.page.keyboard.press("ArrowUp")
    assert tab.page.evaluate("document.activeElement.id") == "q"
    tab.page.keyboard.press("ArrowDown")
    tab.page.keyboard.press("Enter")
    tab.page.wait_for_selector("#page-body .blk")
    assert "doc=" in tab.page.url and "lines=" in tab.page.url
    tab.page.go_back()
    tab.page.wait_for_selector('#results[data-query="token"]', state="attached")


# --- a page ----------------------------------------------------------------------------------


def test_opening_a_hit_shows_its_section_highlighted(site, tab):
    search(tab, site, "error E1234")
    top = hit_fields(tab.page)[0]
    start, end = map(int, top["where"].rpartition(":")[2].split("-"))
    tab.page.click("#results .hit-title >> nth=0")
    tab.page.wait_for_selector("#page-body .blk.hit")
    assert tab.page.text_content("#page-title") == "FAQ"
    marked = tab.page.eval_on_selector_all(
        "#page-body .blk.hit",
        "bs => bs.map(b => [+b.dataset.first, +b.dataset.last, b.textContent])",
    )
    assert all(last >= start and first <= end for first, last, _ in marked)
    text = " ".join(t for _, _, t in marked)
    assert "Error E1234" in text and "writer lock file is busy" in text
    assert "Why is my index stale?" not in text  # another section is not marked
    assert marked[0][0] == start  # numbered with its file line
    assert tab.page.is_visible("#page-body .blk.hit")
    box = tab.page.eval_on_selector("#page-body .blk.hit", "b => b.getBoundingClientRect().top")
    assert 0 <= box < 800  # scrolled to it
    assert "faq.md:" in tab.page.text_content("#page-meta")
    tab.page.click("#back")
    tab.page.wait_for_selector('#results[data-query="error E1234"]', state="attached")


def test_a_page_renders_tables_code_anchors_and_links(site, tab):
    tab.page.goto(site.url("/?doc=notes%3Aops%2Fdeploy.md"))
    tab.page.wait_for_selector("#page-body table")
    body = "#page-body"
    assert tab.page.text_content(f"{body} pre code") == "docdex serve --port 8085\n"
    cells = tab.page.eval_on_selector_all(f"{body} td", "ts => ts.map(t => t.className)")
    assert cells[:3] == ["align-left", "align-right", "align-center"]
    assert tab.page.get_attribute(f"{body} h2", "id") == "doc-ports"
    assert tab.page.get_attribute(f"{body} h2 a.anchor", "href") == "#doc-ports"
    external = tab.page.get_attribute(f"{body} a[rel]", "href")
    assert external == "https://example.com/docs"
    tab.page.set_viewport_size({"width": 1100, "height": 300})
    tab.page.click(f"{body} a >> text=the payload page")
    tab.page.wait_for_selector('#page-body[data-doc="notes:xss.md"]')
    assert "doc=notes%3Axss.md#doc-markdown-links" in tab.page.url
    top = "document.getElementById('doc-markdown-links').getBoundingClientRect().top"
    header = tab.page.evaluate("document.querySelector('.top').getBoundingClientRect().bottom")
    assert header - 2 < tab.page.evaluate(top) < header + 50  # scrolled to it, below the header


def test_a_page_renders_callouts_styled_and_details_that_fold(site, tab):
    page = tab.page
    page.goto(site.url("/?doc=notes%3Aops%2Fcallouts.md"))
    page.wait_for_selector("#page-body .callout")
    body = "#page-body"
    titles = page.eval_on_selector_all(
        f"{body} .callout-title", "ts => ts.map(t => [t.parentElement.className, t.textContent])"
    )
    assert titles == [
        ["callout callout-warning", "Rotate the key"],
        ["callout callout-note", "Why ninety days?"],
        ["callout callout-tip", "Tip"],
        ["callout callout-note", "Note"],
    ]
    last = page.eval_on_selector_all(f"{body} .callout", "cs => cs.at(-1).textContent")
    assert "Components show their children." in last
    edge = f"getComputedStyle(document.querySelector('{body} .callout-warning')).borderLeftColor"
    assert page.evaluate(edge) == "rgb(154, 103, 0)"  # the stylesheet's, under the CSP
    folded = f"{body} details.callout"
    assert not page.is_visible(f"{folded} p") and page.get_attribute(folded, "open") is None
    page.click(f"{folded} summary")
    page.wait_for_selector(f"{folded}[open] p")
    assert tab.console == []  # no CSP refusal
    shoot(page, "callouts-light")


def test_snippets_leave_the_generators_markup_out(site, tab):
    search(tab, site, "signing key expires ninety days", "/?source=notes")
    hit = next(h for h in hit_fields(tab.page) if h["title"] == "Callouts")
    assert "Rotate the key" in hit["snippet"] and "ninety days" in hit["snippet"]
    assert not [m for m in ("!!!", ":::", "[!TIP]", "<Note>") if m in hit["snippet"]], hit


# --- untrusted documents -------------------------------------------------------------------------


def test_xss_payloads_execute_nothing(site, tab):
    page = tab.page
    search(tab, site, "payload words script", "/?source=notes")
    hits = hit_fields(page)
    assert hits[0]["title"] == "Payloads"
    assert any("<script>window.__pwned" in h["snippet"] for h in hits), hits  # as text
    page.click("#results .hit-title >> nth=0")
    page.wait_for_selector('#page-body[data-doc="notes:xss.md"]')
    page.wait_for_timeout(300)  # time for anything that would run or load
    assert page.evaluate("window.__pwned") is None
    assert tab.dialogs == []
    assert [m for m in tab.console if "401" not in m] == []  # nor a CSP refusal
    body = page.inner_html("#page-body")
    found = page.evaluate(
        """() => {
            const all = [...document.querySelectorAll('*')];
            return {
                tags: document.getElementById('page-body')
                    .querySelectorAll('script, iframe, svg, img, object, embed, form').length,
                handlers: all.flatMap(e => [...e.attributes].map(a => a.name))
                    .filter(n => n.startsWith('on') || n === 'style' || n === 'srcdoc'),
                hrefs: [...document.querySelectorAll('[href]')].map(e => e.getAttribute('href')),
                scripts: [...document.scripts].map(s => s.src),
            };
        }"""
    )
    assert found["tags"] == 0 and found["handlers"] == []
    assert not [h for h in found["hrefs"] if re.match(r"\s*(javascript|data|vbscript):", h, re.I)]
    assert found["scripts"] == [site.url("/static/app.js")]
    assert "&lt;script&gt;window.__pwned" in body  # shown, as text
    assert "dead-link" in body and "image: remote image" in body
    assert not [u for u in tab.requests if not u.startswith(site.url())]  # nothing elsewhere
    shoot(page, "xss-light")


# --- sign-in -------------------------------------------------------------------------------------


def test_the_token_is_asked_once_refused_when_wrong_and_kept_out_of_urls(site):
    context = site.browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        tab = open_tab(context)
        page = tab.page
        page.goto(site.url("/?q=install"))
        page.wait_for_selector("#signin:not([hidden])")
        assert page.is_hidden("#search") and page.is_hidden("#nav")
        assert page.text_content("#results") == ""
        sign_in(tab, site, token="not-the-token")
        page.wait_for_selector("#signin-error:has-text('not this server')")
        assert page.is_hidden("#search")
        page.fill("#token", TOKEN)
        page.click("#signin-form button[type=submit]")
        page.wait_for_selector("#search:not([hidden])")
        page.goto(site.url("/?q=install"))  # a reload keeps it (this tab's session)
        page.wait_for_selector('#results[data-query="install"]', state="attached")
        assert page.query_selector_all("#results .hit")
        assert not [u for u in tab.requests if TOKEN in u or "not-the-token" in u]
        assert TOKEN not in page.url and TOKEN not in site.server.output()
        assert page.evaluate("localStorage.length") == 0  # not remembered unless asked
        page.click("#signout")
        page.wait_for_selector("#signin:not([hidden])")
        assert page.evaluate("sessionStorage.length") == 0
        assert tab.errors == [] and tab.dialogs == []
    finally:
        context.close()


def test_a_token_limited_to_one_source_shows_that_source_alone(site):
    """A named token that reads "docs" only: the page's source filter, its searches and its
    status hold nothing of "notes" (they read /api and /health, which answer it alone)."""
    store = OAuthStore(site.data.state)
    limited = store.add_static("page-reader", ["docdex:read"], ["docs"])
    context = site.browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        tab = open_tab(context)
        page = tab.page
        sign_in(tab, site, token=limited)
        page.wait_for_selector("#search:not([hidden])")
        options = "[...document.querySelectorAll('#source option')].map(o => o.value)"
        until(page, f"{options}.length > 1")
        assert page.evaluate(options) == ["", "docs"]
        search(tab, site, "zeppelin hangar budget")  # words only a page of notes holds
        assert all(hit["doc"].startswith("docs:") for hit in hit_fields(page))
        page.goto(site.url("/?view=status"))
        page.wait_for_selector("table.sources")
        rows = "[...document.querySelectorAll('table.sources tbody th')].map(t => t.textContent)"
        assert page.evaluate(rows) == ["docs"]
        assert "zeppelin" not in page.text_content("main").lower()
        assert tab.errors == []
    finally:
        context.close()
        store.revoke_client("page-reader")


# --- status ----------------------------------------------------------------------------------


def test_status_shows_the_new_commit_after_a_push(site, tab, embedder):
    page = tab.page
    page.goto(site.url("/?view=status"))
    page.wait_for_selector("table.sources")
    before = site.server.health()
    old = before["sources"]["docs"]["commit"]
    assert page.text_content("table.sources tr:has(th:text-is('docs')) .commit") == old[:7]
    assert f"Serving index version {before['index_version']}" in page.text_content("#status-body")
    assert "No indexing failure recorded." in page.text_content("#status-body")

    site.docs.write("faq.md", FAQ_E1234 + "\n## Pushed later\n\nA section from the second push.\n")
    new = site.docs.commit_and_push("second push")
    index_all(site.data, embedder)
    metrics.write_last_failure(
        site.data, metrics.IngestionFailure(failed_at="2026-01-02T04:00:00Z", error="disk full")
    )
    old_run = metrics.IngestionMetrics(
        completed_at="2026-01-02T03:00:00Z",
        duration_s=1.5,
        rss_at_end_mb=100.0,
        chunks_embedded=3,
        version=before["index_version"],
        sources=["docs"],
    )
    metrics.write_last_ingestion(site.data, old_run)  # a run whose version is no longer served
    try:
        wait_for(
            lambda: site.server.health()["sources"]["docs"]["commit"] == new, what="new version"
        )
        page.click("#status-refresh")
        page.wait_for_selector(f"table.sources .commit:text-is('{new[:7]}')")
        text = page.text_content("#status-body")
        assert f"Serving index version {before['index_version'] + 1}" in text
        assert "Last failure: 2026-01-02 09:30 (" in text and "disk full" in text  # in TIME_ZONE
        utc = "#status-body p.error time[datetime='2026-01-02T04:00:00.000Z']"
        assert page.get_attribute(utc, "title") == "2026-01-02 04:00 UTC"
        old, new = before["index_version"], before["index_version"] + 1
        assert "Last indexing run (docs): finished 2026-01-02 08:30 (" in text, text
        assert f"published version {old}; version {new} is served." in text, text
        shoot(page, "status-after-push")
    finally:
        metrics.last_failure_path(site.data).unlink()
        metrics.last_ingestion_path(site.data).unlink()


def test_status_says_how_far_the_vectors_of_a_keywords_version_are(site, tmp_path, embedder):
    pages = {f"guide/{n}.md": f"# Guide {n}\n\nThe wombat note number {n}.\n" for n in range(4)}
    ws = pushed_workspace(tmp_path / "kw", pages)
    data = DataDir(tmp_path / "data")
    data.ensure()
    source = SourceConfig(name="kw", location=str(ws.bare))
    config = Config(settings=Settings(keywords_first=2), sources=[source])
    save_config(data, config)
    index_sources(data, config, embedder=embedder, embed_while=None)  # keywords only
    with ServeProcess(data.root, tmp_path / "serve.log", token=TOKEN) as server:
        server.wait_serving()
        context = signed_in_context(site.browser, server.url)
        try:
            page = context.new_page()
            page.goto(server.url + "/?view=status")
            page.wait_for_selector("table.sources")
            text = page.text_content("#status-body")
            assert "Indexing: 4 of 4 chunks wait for vectors" in text, text
        finally:
            context.close()


# --- accessibility and the dark theme -----------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violation(site, tab, scheme):
    from axe_playwright_python.sync_playwright import Axe

    page = tab.page
    page.emulate_media(color_scheme=scheme)
    axe = Axe()
    views = {
        "search": (
            "/?q=python+compiler+to+install&source=docs",
            '#results[data-query="python compiler to install"]',
        ),
        "weak": ("/?q=zebra+migration+patterns", '#results[data-query="zebra migration patterns"]'),
        "page": ("/?doc=docs%3Afaq.md&lines=7-9&q=error+E1234", "#page-body .blk.hit"),
        "callouts": ("/?doc=notes%3Aops%2Fcallouts.md", "#page-body .callout"),
        "status": ("/?view=status", "table.sources"),
        "connect": ("/?view=connect", "#connect-body pre"),
    }
    background = {"light": "rgb(255, 255, 255)", "dark": "rgb(13, 17, 23)"}[scheme]
    for name, (path, ready) in views.items():
        page.goto(site.url(path))
        page.wait_for_selector(ready, state="attached")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == background
        results = axe.run(page)
        assert results.violations_count == 0, f"{name}, {scheme}:\n{results.generate_report()}"
        shoot(page, f"{name}-{scheme}")
    assert [m for m in tab.console if "401" not in m] == []


# --- everyday use, on a phone and on a desktop -----------------------------------------------


def test_the_empty_page_says_what_is_indexed_and_how_fresh(site, sized):
    page = sized.page
    page.goto(site.url("/"))
    page.wait_for_selector("#overview:not([hidden]) .source-list")
    health = site.server.health()
    pages = sum(s["files"] for s in health["sources"].values())
    lead = page.text_content("#overview .lead")
    assert re.fullmatch(
        rf"{pages} pages in 2 sources, index version {health['index_version']}, published "
        r"(just now|\d+ (minute|hour|day)s? ago)\.",
        lead,
    ), lead
    listed = page.eval_on_selector_all("#overview li", "ls => ls.map(l => l.textContent)")
    assert [item.split(" · ")[0] for item in listed] == ["docs", "notes"]
    assert page.get_attribute("#q", "placeholder") == f"Search {pages} pages in 2 sources"
    page.evaluate("document.activeElement.blur()")  # the box had the focus: no hint needed
    hint = page.evaluate("getComputedStyle(document.querySelector('.key-hint')).display")
    assert (hint == "none") == (width(sized) == "phone")  # no `/` to press on a touch screen
    assert_no_sideways_scroll(page)
    shoot(page, f"{width(sized)}-empty")


def test_results_fit_the_width_with_dates_on_one_line(site, sized):
    page = sized.page
    search(sized, site, "deploy port token")
    assert_no_sideways_scroll(page)
    lines = page.eval_on_selector_all(
        "#results .meta time", "ts => ts.map(t => [t.textContent, t.getClientRects().length])"
    )
    assert lines and all(count == 1 for _, count in lines), lines  # never "2026-/12-01"
    seen = "hs => hs.filter(h => h.getBoundingClientRect().bottom <= innerHeight).length"
    above_fold = page.eval_on_selector_all("#results .hit", seen)
    assert above_fold >= 3, above_fold
    shoot(page, f"{width(sized)}-results")


def test_consecutive_hits_of_one_page_show_its_title_once(site, sized):
    page = sized.page
    search(sized, site, "snapshot restore from the backup bucket", "/?source=notes")
    hits = hit_fields(page)
    runs = [hits[0]]
    for previous, hit in zip(hits, hits[1:], strict=False):
        if hit["doc"] != previous["doc"]:
            runs.append(hit)
        else:  # the same page again: its section is the link, no title, no breadcrumb
            assert hit["page_title"] == "" and hit["crumb"] == "", hit
            assert hit["title"] not in ("", "Operations runbook"), hit
    assert len(runs) < len(hits), [h["doc"] for h in hits]  # some page did come twice in a row
    assert all(h["page_title"] for h in runs), runs
    assert page.eval_on_selector_all("#results .hit-page", "ts => ts.length") == len(runs)
    assert_no_sideways_scroll(page)
    shoot(page, f"{width(sized)}-grouped")


def test_a_long_page_keeps_the_search_box_in_view(site, sized):
    page = sized.page
    page.goto(site.url("/?doc=notes%3Aops%2Frunbook.md&q=runbook"))
    page.wait_for_selector('#page-body[data-doc="notes:ops/runbook.md"]')
    assert_no_sideways_scroll(page)  # its wide table and long code line scroll inside
    gutter = page.evaluate(
        "parseFloat(getComputedStyle(document.getElementById('page-body')).paddingLeft)"
    )
    assert gutter <= (32 if width(sized) == "phone" else 60), gutter
    shoot(page, f"{width(sized)}-page")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    until(page, "window.scrollY > 2 * innerHeight")  # a long page, scrolled far down
    box = page.eval_on_selector("#q", "q => q.getBoundingClientRect().toJSON()")
    assert box["top"] >= 0 and box["bottom"] <= 120, box
    topmost = "document.elementFromPoint({x}, {y}).id".format(
        x=box["x"] + box["width"] / 2, y=box["y"] + box["height"] / 2
    )
    assert page.evaluate(topmost) == "q"  # the box itself, not a page block over it
    shoot(page, f"{width(sized)}-page-scrolled")
    page.click("#q")
    page.fill("#q", "")
    page.keyboard.type("certificate renewal", delay=20)
    page.wait_for_selector('#results[data-query="certificate renewal"]', state="attached")
    assert page.is_visible("#search") and "q=certificate+renewal" in page.url


def copy_labels(page, button):
    """A reader of the text and class `button` showed first after it changed (the "Copied"
    state lasts COPIED_MS: a slow machine could look too late)."""
    page.evaluate(
        """b => { window.__copyLabel = null;
            new MutationObserver(() => { window.__copyLabel ??= [b.textContent, b.className]; })
                .observe(b, {childList: true, characterData: true, subtree: true}); }""",
        button,
    )
    return lambda: page.evaluate("window.__copyLabel")


def test_connect_shows_this_servers_paths_and_copies_them(site, sized):
    page = sized.page
    page.goto(site.url("/?view=connect"))
    page.wait_for_selector("#connect-body .code pre")
    text = page.text_content("#connect-body")
    assert "/path/to" not in text
    assert str(DOCDEX) in text and str(site.data.root.absolute()) in text
    assert_no_sideways_scroll(page)
    cut = page.eval_on_selector_all(
        "#connect-body pre", "ps => ps.filter(p => p.scrollWidth > p.clientWidth).length"
    )
    assert cut == 0  # no code block cut off: long lines wrap
    shoot(page, f"{width(sized)}-connect")
    block = "#connect-body .code:has(pre code:text-matches('\"command\"')) >> nth=0"
    button = page.query_selector(f"{block} >> button.copy")
    labels = copy_labels(page, button)
    button.click()
    page.wait_for_selector("#announce:text-is('Copied to the clipboard.')", state="attached")
    assert labels() == ["Copied", "copy copied"]  # what the button said, however briefly
    copied = page.evaluate("navigator.clipboard.readText()")
    entry = json.loads(copied)
    (stdio,) = [s for s in entry.values() if "docdex" in s]
    assert stdio["docdex"]["command"] == str(DOCDEX)
    assert stdio["docdex"]["args"] == ["--data", str(site.data.root.absolute()), "mcp"]
    assert copied == page.text_content(f"{block} >> pre")
    shoot(page, f"{width(sized)}-connect-copied")


def test_without_the_clipboard_api_copy_falls_back(site, tab):
    page = tab.page
    page.goto(site.url("/?view=connect"))
    page.wait_for_selector("#connect-body .code pre")
    expected = page.text_content("#connect-body .code pre >> nth=0")
    page.evaluate("delete Navigator.prototype.clipboard")  # as on http:// from another machine
    assert page.evaluate("navigator.clipboard === undefined")
    button = page.query_selector("#connect-body .code button.copy")
    labels = copy_labels(page, button)
    button.click()
    page.wait_for_selector("#announce:text-is('Copied to the clipboard.')", state="attached")
    assert labels() == ["Copied", "copy copied"]
    other = tab.page.context.new_page()  # this page has no Clipboard API left to read it with
    try:
        other.goto(site.url("/static/icon.svg"))
        assert other.evaluate("navigator.clipboard.readText()") == expected
    finally:
        other.close()


def test_status_fits_a_phone(site, phone_context):
    tab = open_tab(phone_context)
    try:
        tab.page.goto(site.url("/?view=status"))
        tab.page.wait_for_selector("table.sources")
        assert_no_sideways_scroll(tab.page)
        labels = tab.page.eval_on_selector_all(
            "table.sources td", "ts => ts.map(t => getComputedStyle(t, '::before').content)"
        )
        assert '"Indexed commit: "' in labels  # one card per source, each value labelled
        words = tab.page.text_content("#status-body")
        assert re.search(r"Times are in Asia/(Kolkata|Calcutta) time, 24-hour", words), words
        shoot(tab.page, "phone-status")
        assert tab.errors == []
    finally:
        tab.page.close()


def test_emoji_have_a_font_to_render_with(site, tab):
    tab.page.goto(site.url("/?doc=notes%3Aops%2Frunbook.md"))
    tab.page.wait_for_selector('#page-body[data-doc="notes:ops/runbook.md"]')
    assert "✅ 🔥" in tab.page.text_content("#page-body")
    for selector in ("body", "#page-body code"):
        family = tab.page.eval_on_selector(selector, "e => getComputedStyle(e).fontFamily")
        assert family.endswith('"Segoe UI Symbol", "Noto Color Emoji"'), (selector, family)


# --- what changed ---------------------------------------------------------------------------


def test_what_changed_lists_a_source_s_pages_since_a_tag(site, tab, embedder):
    ws = site.docs
    git(ws.work, "tag", "web-before")
    git(ws.work, "push", "-q", "origin", "web-before")
    ws.write("guide/whatsnew.md", "# What is new\n\nThe quokka release.\n")
    ws.write("guide/install.md", INSTALL + "\n## Upgrading\n\nRun the upgrade.\n")
    ws.remove("reference/api.md")
    new = ws.commit_and_push("The quokka release")
    index_all(site.data, embedder)
    wait_for(lambda: site.server.health()["sources"]["docs"]["commit"] == new, what="served")
    page = tab.page
    page.goto(site.url("/"))
    page.click("#nav a[data-view=changes]")
    page.wait_for_selector("#changes:not([hidden])")
    page.select_option("#changes-source", "docs")
    page.fill("#since", "web-before")
    page.click("#changes-form button")
    page.wait_for_selector("#changes-list .change")
    changes = page.eval_on_selector_all(
        "#changes-list .change",
        """items => items.map(i => ({
            path: i.dataset.path,
            kind: i.querySelector('b').textContent,
            meta: i.querySelector('.meta').textContent,
            commits: i.querySelector('ul').textContent,
            link: i.querySelector('a')?.getAttribute('href') ?? '',
        }))""",
    )
    kinds = {change["path"]: change["kind"] for change in changes}
    assert kinds == {
        "guide/install.md": "modified",
        "guide/whatsnew.md": "added",
        "reference/api.md": "deleted",
    }
    by_path = {change["path"]: change for change in changes}
    assert "+4 −0" in by_path["guide/install.md"]["meta"], by_path
    assert "Upgrading" in by_path["guide/install.md"]["meta"]
    assert "The quokka release" in by_path["guide/whatsnew.md"]["commits"]
    assert by_path["reference/api.md"]["link"] == ""  # a deleted page has no page to open
    summary = page.text_content("#changes-summary")
    assert summary.startswith("3 pages changed in docs from web-before ("), summary
    assert page.url.endswith("/?view=changes&source=docs&since=web-before"), page.url
    shoot(page, "what-changed")
    page.click("#changes-list a[href*='whatsnew']")
    page.wait_for_selector('#page-body[data-doc="docs:guide/whatsnew.md"]')
    assert "The quokka release." in page.text_content("#page-body")
