"""Where people read what a hit cites: a permalink to the lines at their commit on the
source's forge, and the page's address on a published docs site.

A source's `url_template` names the permalink; without one, a preset applies when the
source's location, or a checkout's or bare repository's `origin` remote, is on a forge
whose URLs we know (GitHub, GitLab, Gitea/Forgejo, Bitbucket). `site_url` maps a path to
its page the way MkDocs, Docusaurus and Hugo do: the site's folder and the extension
dropped, `index.md`, `_index.md` and `README.md` standing for their folder.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path, PurePosixPath
from urllib.parse import quote

import msgspec
from dulwich.config import ConfigFile

from docdex.index_format.config import ConfigError, SourceConfig, load_config
from docdex.index_format.layout import DataDir
from docdex.server.engine import Hit, SearchResult
from docdex.server.rendering.site_map import FOLDER_PAGES, SITE_DIRS, SITE_EXTENSIONS

from .shapes import Document, PageSummary

log = logging.getLogger("docdex.server")

PRESETS = {
    "github": "{base}/blob/{{commit}}/{{path}}#L{{start_line}}-L{{end_line}}",
    "gitlab": "{base}/-/blob/{{commit}}/{{path}}#L{{start_line}}-{{end_line}}",
    "gitea": "{base}/src/commit/{{commit}}/{{path}}#L{{start_line}}-L{{end_line}}",
    "bitbucket": "{base}/src/{{commit}}/{{path}}#lines-{{start_line}}:{{end_line}}",
}
_FORGE_HOSTS = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "codeberg.org": "gitea",
    "gitea.com": "gitea",
    "bitbucket.org": "bitbucket",
}
_SCP_LIKE = re.compile(r"^(?:[^@/:\s]+@)?(?P<host>[^@/:\s]+):(?P<path>[^/].*)$")
_URL = re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$")
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


class Links(msgspec.Struct, frozen=True):
    """A source's two ways to a page; "" where it has none."""

    template: str = ""
    site_url: str = ""
    site_dir: str = ""

    def permalink(
        self, source: str, ref: str, commit: str, path: str, start_line: int, end_line: int
    ) -> str:
        if not self.template or not _SHA.match(commit):  # no URL shows a working tree's edits
            return ""
        values = {
            "commit": commit,
            "path": quote(path),
            "start_line": str(start_line),
            "end_line": str(end_line),
            "ref": quote(ref, safe=""),
            "source": source.partition("@")[0],  # the configured source, for any of its refs
        }
        url = re.sub(r"\{(\w+)\}", lambda m: values.get(m[1], m[0]), self.template)
        return url if start_line else url.partition("#")[0]  # a whole file: no line anchor

    def page_url(self, path: str) -> str:
        if not self.site_url:
            return ""
        return self.site_url.rstrip("/") + "/" + quote(site_path(path, self.site_dir))


def source_links(config: SourceConfig) -> Links:
    template = config.url_template or preset(_remote_url(config.location))
    return Links(template=template, site_url=config.site_url, site_dir=config.site_dir)


def preset(remote_url: str) -> str:
    """The permalink template for a repository URL on a known forge ("" for others)."""
    match = _URL.match(remote_url) or _SCP_LIKE.match(remote_url)
    if not match:
        return ""
    host = match["host"].lower()
    forge = _FORGE_HOSTS.get(host) or next(
        (name for name in ("gitlab", "gitea", "forgejo", "bitbucket") if name in host), ""
    )
    repo = match["path"].strip("/").removesuffix(".git")
    if not forge or repo.count("/") < 1:
        return ""
    return PRESETS["gitea" if forge == "forgejo" else forge].format(base=f"https://{host}/{repo}")


def site_path(path: str, site_dir: str = "") -> str:
    """A page's path on its site: `docs/guide/install.md` -> `guide/install/`."""
    prefixes = [site_dir.strip("/") + "/"] if site_dir else list(SITE_DIRS)
    for prefix in prefixes:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    pure = PurePosixPath(path)
    stem = pure.name
    for extension in SITE_EXTENSIONS:
        if stem.lower().endswith(extension):
            stem = stem[: -len(extension)]
            break
    folder = "" if str(pure.parent) == "." else f"{pure.parent}/"
    return folder if stem.lower() in FOLDER_PAGES else f"{folder}{stem}/"


def _remote_url(location: str) -> str:
    """The location itself when it is a URL, else its repository's `origin` remote."""
    if _URL.match(location) or (_SCP_LIKE.match(location) and not Path(location).exists()):
        return location
    root = Path(location)
    for config in (root / ".git" / "config", root / "config"):
        if config.is_file():
            try:
                url = ConfigFile.from_path(str(config)).get((b"remote", b"origin"), b"url")
            except (KeyError, OSError, ValueError):
                return ""
            return url.decode("utf-8", "replace")
    return ""


class LinkBook:
    """Each source's Links, read again from docdex.toml whenever the file changes; the
    answers' `url` and `page_url` filled in from them."""

    def __init__(self, data: DataDir):
        self.data = data
        self._lock = threading.Lock()
        self._stamp: float | None = None
        self._links: dict[str, Links] = {}  # configured source -> its links

    def of(self, entry: str) -> Links:
        """The links of a manifest entry's source ("name", or "name@ref" for another ref)."""
        return self._current().get(entry.partition("@")[0], Links())

    def hits(self, result: SearchResult) -> SearchResult:
        return msgspec.structs.replace(result, results=[self._hit(h) for h in result.results])

    def _hit(self, hit: Hit) -> Hit:
        links = self.of(hit.source)
        url = links.permalink(
            hit.source, hit.ref, hit.commit, hit.path, hit.start_line, hit.end_line
        )
        return msgspec.structs.replace(hit, url=url, page_url=links.page_url(hit.path))

    def document(self, doc: Document) -> Document:
        links = self.of(doc.source)
        url = links.permalink(
            doc.source, doc.ref, doc.commit, doc.path, doc.start_line, doc.end_line
        )
        return msgspec.structs.replace(doc, url=url, page_url=links.page_url(doc.path))

    def summary(self, page: PageSummary) -> PageSummary:
        links = self.of(page.source)
        url = links.permalink(page.source, page.ref, page.commit, page.path, 0, 0)
        return msgspec.structs.replace(page, url=url, page_url=links.page_url(page.path))

    def _current(self) -> dict[str, Links]:
        try:
            stamp = self.data.config.stat().st_mtime_ns
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._links = self._read()
                self._stamp = stamp
            return self._links

    def _read(self) -> dict[str, Links]:
        try:
            sources = load_config(self.data).sources
        except ConfigError as exc:
            log.warning("cannot read %s: %s", self.data.config, exc)
            return {}
        return {s.name: source_links(s) for s in sources}
