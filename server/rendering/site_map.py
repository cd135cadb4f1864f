"""Links written as a docs site's addresses, mapped to the pages the index holds.

Sites are written for their generator, not for the repository: VitePress and Docusaurus
pages link `/guide/features` (or `./features`, `/guide/features.html`), Hugo pages
`/functions/collections/first/` for `content/en/functions/collections/First.md`, MkDocs
pages `../install/`. An address is tried, in order, under the site's folder (the source's
`site_dir`, else `docs/`, `content/`, `content/LANG/` or `src/` when the page is inside one)
and then under each folder around the page, deepest first; for each, as the page itself,
with a markdown extension, and as the folder page (`index.md`, `_index.md`, `README.md`).
Relative addresses count from the page's folder, and then (Hugo and MkDocs serve
`guide/a.md` at `guide/a/`) from the page's own address. Case is ignored, as Hugo lowers it.
The first candidate the index holds wins; an address that names none stays text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterator
from functools import cached_property

SITE_DIRS = ("docs/", "content/")  # where a repository keeps its site's pages, most often
SITE_EXTENSIONS = (".md", ".mdx", ".markdown")
FOLDER_PAGES = ("index", "_index", "readme")  # the pages that stand for their folder
_SITE_FOLDERS = (*(folder.strip("/") for folder in SITE_DIRS), "src")  # mdBook's src/ too
_LANGUAGE = re.compile(r"[a-z]{2}(?:-[a-z]{2,4})?")


class SiteMap:
    """One source's pages, by the addresses its site gives them."""

    def __init__(self, source: str, doc_ids: Collection[str] = (), site_dir: str = ""):
        self.source = source
        self.doc_ids = doc_ids  # ids of the index's pages ("source:path"); others are ignored
        self.site_dir = site_dir.strip("/")

    @cached_property
    def _paths(self) -> dict[str, str]:
        """The source's page paths, case-folded -> as stored."""
        prefix = self.source + ":"
        return {
            doc_id[len(prefix) :].casefold(): doc_id[len(prefix) :]
            for doc_id in self.doc_ids
            if doc_id.startswith(prefix)
        }

    def page(self, address: str, from_page: str) -> str | None:
        """The path of the page `address` (a link's path, no query or fragment) leads to from
        `from_page`, or None."""
        for candidate in self._candidates(address, from_page):
            found = self._paths.get(candidate.casefold())
            if found is not None:
                return found
        return None

    def _candidates(self, address: str, from_page: str) -> Iterator[str]:
        folder = posixpath.dirname(from_page)
        if address.startswith("/"):
            for root in self._roots(folder):
                yield from _forms(posixpath.join(root, address.lstrip("/")))
            return
        yield from _forms(posixpath.join(folder, address))
        stem, extension = posixpath.splitext(posixpath.basename(from_page))
        if extension.lower() in SITE_EXTENSIONS and stem.lower() not in FOLDER_PAGES:
            yield from _forms(posixpath.join(folder, stem, address))

    def _roots(self, folder: str) -> list[str]:
        """Folders a site-absolute address may count from, most likely first."""
        around = [folder]
        while around[-1]:
            around.append(posixpath.dirname(around[-1]))
        parts = folder.split("/")
        known = [part for part in (self.site_dir,) if part]
        known += [name for name in _SITE_FOLDERS if parts[0] == name]
        if parts[0] == "content" and len(parts) > 1 and _LANGUAGE.fullmatch(parts[1]):
            known.append(f"content/{parts[1]}")
        return list(dict.fromkeys([*known, *around]))


def _forms(joined: str) -> Iterator[str]:
    """The page paths an address under a folder may name."""
    path = posixpath.normpath(joined) if joined else "."
    if path == ".." or path.startswith("../"):
        return
    path = "" if path == "." else path
    if path.lower().endswith(SITE_EXTENSIONS):
        yield path
        return
    if path.lower().endswith(".html"):
        path = path[: -len(".html")]
    if path:  # `guide/install/` too: MkDocs and Hugo serve install.md at install/
        yield from (path + extension for extension in SITE_EXTENSIONS)
    for name in FOLDER_PAGES:
        yield from (posixpath.join(path, name + extension) for extension in SITE_EXTENSIONS)
