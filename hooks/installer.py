"""Install and uninstall the post-receive hook in a bare repository.

The hook is `post-receive.sh` beside this file with the venv's python, the data directory,
the sources that track the repository and the worker's idle timeout written into it. A hook
already in place is kept: it moves to `post-receive.docdex-chained` (a rename, so its bytes
and mode stay exactly as they were), ours runs it first, and uninstall renames it back.
`docdex source add`, `set` and `remove` rewrite an installed hook when the sources that track
its repository, or their branch and refs, change (`refresh_hooks`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from docdex.errors import DocdexError
from docdex.index_format.config import (
    Config,
    ConfigError,
    SourceConfig,
    load_config,
    save_config,
    source_kind,
    validate_ref_pattern,
    validate_source_name,
)
from docdex.index_format.layout import DataDir

HOOK = "post-receive"
CHAINED = "post-receive.docdex-chained"
SIGNATURE = b"# docdex post-receive hook"
WORKER_IDLE_EXIT_S = 30


class HookError(DocdexError):
    """The hook cannot be installed or removed as asked."""


@dataclass(frozen=True)
class Installed:
    hook: Path
    source: str
    registered: bool  # the source was added to docdex.toml by this install
    chained: bool  # an earlier hook runs first
    tracked: list[SourceConfig]  # the sources of this repository (branch, refs patterns)


@dataclass(frozen=True)
class Refreshed:
    hook: Path
    repository: Path
    tracked: list[SourceConfig]  # what pushes index now ([]: no source tracks it any more)


@dataclass(frozen=True)
class Uninstalled:
    hook: Path
    removed: bool  # False: there was no docdex hook
    restored: bool  # an earlier hook is back in place


def install_hook(
    data: DataDir,
    repo: str | os.PathLike[str],
    source: str | None = None,
    python: str | None = None,
    idle_exit_s: int = WORKER_IDLE_EXIT_S,
    settings: Mapping[str, Any] | None = None,
) -> Installed:
    """Register the repository as a source if needed (with these SourceConfig `settings`)
    and (re)write its post-receive hook."""
    bare = _bare_repository(repo)
    data.ensure()
    config = load_config(data)
    name, registered = _register(data, config, source, bare, settings or {})
    config = load_config(data)
    tracked = [s for s in config.sources if _same_repo(s.location, bare)]
    script = render_hook(python or sys.executable, data, tracked, idle_exit_s)
    hooks = _hooks_dir(bare)
    hooks.mkdir(parents=True, exist_ok=True)
    hook, chained = hooks / HOOK, hooks / CHAINED
    if _exists(hook) and not is_docdex_hook(hook):
        if _exists(chained):
            raise HookError(
                f"{hook} is not docdex's and {chained} already exists; move one of them away"
            )
        os.rename(hook, chained)
    _write_executable(hook, script)
    return Installed(hook, name, registered, _exists(chained), tracked)


def refresh_hooks(data: DataDir, locations: Iterable[str]) -> list[Refreshed]:
    """Rewrite the docdex hook of each of these locations that is a bare repository with one
    installed for this data directory, from the sources docdex.toml now has for it (their
    branch and refs are written into the hook). The hook keeps the python and the worker's
    idle timeout it was installed with; an earlier hook it chains to stays as it is."""
    config = load_config(data)
    refreshed = []
    for bare in _bare_repositories(locations):
        hook = _installed_hook(bare)
        installed = _installed_values(hook) if hook else None
        if hook is None or installed is None or installed.data != data.root.resolve():
            continue
        tracked = [s for s in config.sources if _same_repo(s.location, bare)]
        script = render_hook(installed.python, data, tracked, installed.idle_exit_s)
        if _rewrite(hook, bare, script):
            refreshed.append(Refreshed(hook, bare, tracked))
    return refreshed


def uninstall_hook(repo: str | os.PathLike[str]) -> Uninstalled:
    """Remove docdex's hook; put back the hook it replaced, byte for byte."""
    bare = _bare_repository(repo)
    hooks = _hooks_dir(bare)
    hook, chained = hooks / HOOK, hooks / CHAINED
    if not is_docdex_hook(hook):
        return Uninstalled(hook, removed=False, restored=False)
    if _exists(chained):
        os.replace(chained, hook)  # one rename: there is always a post-receive hook
        return Uninstalled(hook, removed=True, restored=True)
    os.unlink(hook)
    return Uninstalled(hook, removed=True, restored=False)


def is_docdex_hook(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    with open(path, "rb") as f:
        return SIGNATURE in f.read(512)


def render_hook(python: str, data: DataDir, tracked: list[SourceConfig], idle_exit_s: int) -> str:
    template = resources.files("docdex.hooks").joinpath("post-receive.sh").read_text("utf-8")
    values = {
        "@PYTHON@": shlex.quote(os.path.abspath(python)),  # the venv's python, not its target
        "@DATA@": shlex.quote(str(data.root.resolve())),
        "@SOURCES@": shlex.quote(" ".join(_entries(tracked))),
        "@IDLE_EXIT@": str(int(idle_exit_s)),
    }
    for key, value in values.items():
        template = template.replace(key, value)
    return template


# --- helpers -------------------------------------------------------------------------------


def _entries(tracked: list[SourceConfig]) -> list[str]:
    """What the hook matches a pushed ref against (post-receive.sh, DOCDEX_SOURCES): per
    source "name=refs/heads/BRANCH" ("name=" for HEAD's branch), then "name:PATTERN" for
    each of its `refs`."""
    entries = []
    for source in tracked:
        branch = source.branch.removeprefix("refs/heads/")
        entries.append(f"{source.name}=" + (f"refs/heads/{branch}" if branch else ""))
        entries += [f"{source.name}:{_pattern(source, p)}" for p in source.refs]
    return entries


def _pattern(source: SourceConfig, pattern: str) -> str:
    """A valid pattern (one with a space would split in the hook's list)."""
    try:
        return validate_ref_pattern(pattern)
    except ConfigError as exc:
        raise HookError(f"source {source.name!r}: {exc}") from None


@dataclass(frozen=True)
class _HookValues:
    """What an installed hook was rendered with, besides the sources."""

    python: str
    data: Path
    idle_exit_s: int


def _installed_values(hook: Path) -> _HookValues | None:
    """The values written into a docdex hook (None when they cannot be read back)."""
    values: dict[str, str] = {}
    for line in hook.read_text("utf-8", errors="replace").splitlines():
        name, is_value, value = line.partition("=")
        if is_value and name in ("DOCDEX_PYTHON", "DOCDEX_DATA", "DOCDEX_IDLE_EXIT"):
            values.setdefault(name, value)
    try:
        [python], [data] = shlex.split(values["DOCDEX_PYTHON"]), shlex.split(values["DOCDEX_DATA"])
        return _HookValues(python, Path(data), int(values["DOCDEX_IDLE_EXIT"]))
    except (KeyError, ValueError):
        return None


def _installed_hook(bare: Path) -> Path | None:
    """The repository's post-receive hook when it is docdex's."""
    try:
        hook = _hooks_dir(bare) / HOOK
    except HookError:  # a shared core.hooksPath: install refuses it, so no hook of ours
        return None
    return hook if is_docdex_hook(hook) else None


def _bare_repositories(locations: Iterable[str]) -> list[Path]:
    """The distinct bare repositories among these source locations."""
    found: list[Path] = []
    for location in locations:
        try:
            bare = source_kind(location) == "bare"
            path = Path(location).expanduser().resolve()
        except (DocdexError, OSError, RuntimeError):  # a path that is no repository (any more)
            continue
        if bare and path not in found:
            found.append(path)
    return found


def _bare_repository(repo: str | os.PathLike[str]) -> Path:
    path = Path(repo).expanduser().resolve()
    kind = source_kind(str(path))  # SourceError when it is no repository
    if kind != "bare":
        raise HookError(
            f"{path} is a work tree, not a bare repository: post-receive hooks run in the "
            "repository you push to (for a checkout you edit, use `docdex watch`)"
        )
    return path


def _default_name(bare: Path) -> str:
    return bare.name.removesuffix(".git") or bare.name


def _register(
    data: DataDir, config: Config, asked: str | None, bare: Path, settings: Mapping[str, Any]
) -> tuple[str, bool]:
    """The source the hook indexes, and whether it was added: the one named `asked`, else
    the one already registered at this location (a repository indexed twice would answer
    every hit twice), else a new source named after the repository, with `settings`."""
    here = [s.name for s in config.sources if _same_repo(s.location, bare)]
    name = validate_source_name(asked or (here[0] if here else _default_name(bare)))
    for existing in config.sources:
        if existing.name != name:
            continue
        if not _same_repo(existing.location, bare):
            raise HookError(
                f"source {name!r} already exists for {existing.location}; "
                "choose another name with --source"
            )
        return name, False
    if here:
        raise HookError(
            f"{bare} is already the source {here[0]!r}: its pushes are indexed under that name "
            f"(`docdex hook install {bare}` without --source), or remove it first"
        )
    source = SourceConfig(name=name, location=str(bare), **settings)
    save_config(data, msgspec.structs.replace(config, sources=[*config.sources, source]))
    return name, True


def _same_repo(location: str, bare: Path) -> bool:
    try:
        return Path(location).expanduser().resolve() == bare
    except (OSError, RuntimeError):
        return False


def _hooks_dir(bare: Path) -> Path:
    """hooks/, or where the repository's own core.hooksPath points. A global or system
    core.hooksPath is shared by every repository: we refuse to install there."""
    local, any_level = _git_config(bare, "--local"), _git_config(bare)
    if local:
        return bare / Path(local).expanduser()  # an absolute path stays absolute
    if any_level:
        raise HookError(
            f"core.hooksPath is set to {any_level} outside {bare}, a directory git uses for "
            f"every repository; set `git -C {bare} config core.hooksPath hooks` first"
        )
    return bare / "hooks"


def _git_config(bare: Path, *scope: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(bare), "config", *scope, "--get", "core.hooksPath"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def _rewrite(hook: Path, bare: Path, script: str) -> bool:
    """Write `script` as the hook unless it is that already; whether it was written."""
    try:
        if hook.read_text("utf-8") == script:
            return False
        _write_executable(hook, script)
    except OSError as exc:
        raise HookError(
            f"cannot rewrite {hook} ({exc.strerror or exc}): pushes still match what it had; "
            f"run `docdex hook install {bare}` once it can be written"
        ) from None
    return True


def _exists(path: Path) -> bool:
    return path.is_symlink() or path.exists()


def _write_executable(path: Path, text: str) -> None:
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
