"""A source's history, read from its git repository by both sides (adr/0043): the pages
changed between two points (a tag, a branch, a commit, a date, an age), the commits that
touched each, lines added and removed and the sections whose text changed; a page's text
as of any commit; a page's own commits. Every call is bounded (`HistoryBounds`) and ranges
are kept once read (`History`). The rename matching (`match_renames`) is the indexer's too.
Everything else here is the package's inside: other packages use these names only
(tests/support/lint_imports.py checks it).
"""

from .bounds import HistoryBounds
from .change_sets import RENAMES_UNCHECKED, ChangeKind, PageChange, Selection
from .page_contents import Unreadable
from .reader import (
    DEFAULT_HISTORY,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    ChangedPaths,
    ChangeSet,
    History,
    PageHistory,
    PageVersion,
)
from .renames import match_renames
from .repositories import CommitInfo, SourceRepository, repository_location
from .revisions import Point, PointKind

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "RENAMES_UNCHECKED",
    "ChangeKind",
    "ChangeSet",
    "ChangedPaths",
    "CommitInfo",
    "History",
    "HistoryBounds",
    "PageChange",
    "PageHistory",
    "PageVersion",
    "Point",
    "PointKind",
    "Selection",
    "SourceRepository",
    "Unreadable",
    "match_renames",
    "repository_location",
]
