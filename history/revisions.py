"""The points a range of history runs between, resolved against a repository: `since` and
`until` as a branch, a tag (annotated tags peeled), a commit id (full or at least 7 hex
digits), a date ("2026-11-01", "2026-11-01T09:30:00Z") or an age ("7d", "12h", "2w").

A name is looked up as git reads one: a full ref (refs/...), else a tag, a branch, a
remote-tracking branch, then an age, a date and a commit id, so a tag named like a date is
the tag. A date or an age is the newest commit at or before that moment along the first
parents of the branch read (committer dates: when a commit landed there). Before the first
commit is the start of history (`commit` ""); a branch whose history the repository cuts
earlier (a shallow clone) stops at the cut, and the point says so in its `note`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

import msgspec
from dulwich.object_store import peel_sha
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from docdex.errors import InvalidArgument, NotFound, shown
from docdex.index_format.config import SourceError
from docdex.runtime.times import iso_utc

from .bounds import Budget
from .repositories import Ancestry

PointKind = Literal["branch", "tag", "commit", "date", "age", "start"]

AGE = re.compile(r"(\d{1,6})([hdw])")
_AGE_SECONDS = {"h": 3600, "d": 86_400, "w": 7 * 86_400}
_DATE_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ].*)?")
_COMMIT_ID = re.compile(r"[0-9a-f]{7,64}")
_REF_KINDS: tuple[tuple[str, PointKind], ...] = (
    ("refs/tags/", "tag"),
    ("refs/heads/", "branch"),
    ("refs/remotes/", "branch"),
)


class Point(msgspec.Struct, frozen=True, omit_defaults=True):
    """One end of a range: what was asked and the commit it resolved to."""

    asked: str  # as given ("" = the default: the ref's tip, or the start of history)
    kind: PointKind
    commit: str = ""  # "" = before the first commit (every page there is counts as added)
    date: str = ""  # the commit's committer date, ISO 8601 UTC
    note: str = ""  # why the commit is not quite what was asked (history cut, a bound)


def start_point(asked: str = "") -> Point:
    return Point(asked, "start")


def resolve_ref(repo: Repo, ref: str, default_branch: str) -> Point:
    """The tip of the branch or tag whose history is read: `ref`, else the source's
    default branch (its `branch` setting, else the branch HEAD names)."""
    if ref:
        found = named_point(repo, ref)
        if found is None:
            raise NotFound(f"{shown(ref)} names no branch or tag of this repository")
        return found
    branch = default_branch or _head_branch(repo)
    found = named_point(repo, "refs/heads/" + branch) if branch else named_point(repo, "HEAD")
    if found is None:
        raise SourceError(
            f"branch {branch!r} has no commits in {repo.path!r}"
            if branch
            else f"nothing has been pushed to {repo.path!r} yet (HEAD names no commit)"
        )
    return msgspec.structs.replace(found, asked=branch or "HEAD")


def _head_branch(repo: Repo) -> str:
    """The branch HEAD names ("" when it is detached)."""
    chain, _sha = repo.refs.follow(Ref(b"HEAD"))
    if len(chain) < 2 or not chain[1].startswith(b"refs/heads/"):
        return ""
    return chain[1].removeprefix(b"refs/heads/").decode("utf-8", "surrogateescape")


def resolve_point(
    repo: Repo, asked: str, along: Commit, ancestry: Ancestry, budget: Budget, now: float
) -> Point:
    """`asked` as a commit; a date or an age along the first parents of `along`."""
    text = asked.strip()
    if not text:
        return start_point()
    found = named_point(repo, text)
    if found is not None:
        return found
    if age := AGE.fullmatch(text):
        moment = now - int(age.group(1)) * _AGE_SECONDS[age.group(2)]
        return _before(asked, "age", moment, along, ancestry, budget)
    if _DATE_SHAPE.fullmatch(text):
        return _before(asked, "date", _timestamp(text), along, ancestry, budget)
    if _COMMIT_ID.fullmatch(text.lower()):
        return _commit_point(repo, asked, text.lower())
    raise NotFound(
        f"{shown(asked)} names no branch, tag or commit of this repository, and is neither "
        "a date (2026-11-01) nor an age (7d, 12h, 2w)"
    )


def named_point(repo: Repo, name: str) -> Point | None:
    """The commit a ref name leads to (None: no such ref)."""
    if name == "HEAD":
        candidates: list[tuple[str, PointKind]] = [("HEAD", "branch")]
    elif name.startswith("refs/"):
        kinds = (k for prefix, k in _REF_KINDS if name.startswith(prefix))
        candidates = [(name, next(kinds, "branch"))]
    else:
        candidates = [(prefix + name, kind) for prefix, kind in _REF_KINDS]
    for full, kind in candidates:
        ref = Ref(full.encode("utf-8", "surrogateescape"))
        if full != "HEAD" and not check_ref_format(ref):
            continue
        try:
            sha = repo.refs[ref]
        except KeyError:
            continue
        return Point(name, kind, *_peeled(repo, name, sha))
    return None


def _peeled(repo: Repo, name: str, sha: ObjectID) -> tuple[str, str]:
    """(commit id, its date) a ref's object leads to through annotated tags."""
    try:
        _tag, target = peel_sha(repo.object_store, sha)
    except KeyError:
        raise NotFound(f"{shown(name)} names a commit this repository lacks{_cut(repo)}") from None
    if not isinstance(target, Commit):
        raise InvalidArgument(f"{shown(name)} names a {target.type_name.decode()}, not a commit")
    return target.id.decode("ascii"), iso_utc(target.commit_time)


def _commit_point(repo: Repo, asked: str, digits: str) -> Point:
    store = repo.object_store
    matches = [sha for sha in store.iter_prefix(digits.encode("ascii")) if sha in store]
    commits = [c for c in (store[sha] for sha in matches) if isinstance(c, Commit)]
    if len(commits) > 1:
        raise InvalidArgument(
            f"{shown(asked)} is the start of {len(commits)} commit ids: give more"
        )
    if not commits:
        raise NotFound(f"{shown(asked)} names no commit of this repository{_cut(repo)}")
    commit = commits[0]
    return Point(asked, "commit", commit.id.decode("ascii"), iso_utc(commit.commit_time))


def _cut(repo: Repo) -> str:
    """What to add to "not in this repository" when its history is cut."""
    shallow = sorted(sha.decode("ascii")[:12] for sha in repo.get_shallow())
    if not shallow:
        return ""
    return f" (a shallow clone: its history stops at {', '.join(shallow)})"


def _timestamp(text: str) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(
            f"{shown(text)} is not a date: give 2026-11-01 or 2026-11-01T09:30:00Z"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _before(
    asked: str,
    kind: PointKind,
    moment: float,
    along: Commit,
    ancestry: Ancestry,
    budget: Budget,
) -> Point:
    """The newest commit at or before `moment` along the first parents of `along`."""
    commit = along
    while commit.commit_time > moment:
        if not budget.spend_commit():
            note = budget.spent_note(f"{commit.id.decode('ascii')[:12]} is as far back as it went")
            return _at(asked, kind, commit, note)
        parent = ancestry.first_parent(commit)
        if parent is None:
            if ancestry.is_root(commit):
                return Point(asked, kind)  # before the first commit
            return _at(asked, kind, commit, ancestry.stops_note())
        commit = parent
    return _at(asked, kind, commit)


def _at(asked: str, kind: PointKind, commit: Commit, note: str = "") -> Point:
    return Point(asked, kind, commit.id.decode("ascii"), iso_utc(commit.commit_time), note)
