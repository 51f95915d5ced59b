"""The results store: one compact, versioned record per session (``docs/store.md``), kept in a local directory or on a
git branch, from which the history page is built and environment regressions are found (:mod:`harness.store.alerts`).

:func:`open_store` picks the kind from ``--store``: a git URL (``https://``, ``ssh://``, ``git://``, ``file://``,
``user@host:path``, or any name ending in ``.git``) or the path of a git repository (bare, or with a ``.git``) is a git
store on branch ``perf-results``; an existing directory is a local store; anything else is refused (a value that is
neither is a typo or an option, and would silently become a new local folder), and so is a git store named by a value
that starts with ``-`` (git would take it for one of its options)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import BadInput
from harness.store.git import GitStore
from harness.store.local import DirStore

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[A-Za-z0-9_.-]+@[^:/]+:)")


def is_git(spec: str) -> bool:
    """Whether ``--store`` names a git repository rather than a local directory."""
    if _URL.match(spec) or spec.rstrip("/").endswith(".git"):
        return True
    p = Path(spec)
    return (p / ".git").exists() or ((p / "HEAD").is_file() and (p / "objects").is_dir() and (p / "refs").is_dir())


def open_store(spec: str, cache: str | None = None) -> DirStore | GitStore:
    """The store ``--store`` names: a :class:`GitStore` (cache clone at ``cache``) or a :class:`DirStore`."""
    if not spec:
        raise BadInput("--store is empty; pass a directory or a git URL for the results store")
    if is_git(spec):
        if spec.startswith("-"):  # git would read it as one of its options (--mirror=fetch.git, -f.git)
            raise BadInput(
                f"--store {spec}: starts with '-', so git would take it for an option; pass a git URL "
                f"(./{spec} for a repository of that name)"
            )
        url = spec if _URL.match(spec) or not Path(spec).exists() else str(Path(spec).resolve())
        return GitStore(url, cache)
    if not Path(spec).is_dir():  # e.g. github.com/org/repo or --upload-pack=...: no local folder of that name was meant
        raise BadInput(
            f"--store {spec}: not a git URL (https://, ssh://, file://, git@host:path) and no such directory, "
            "so no session stored there; pass a git URL, or create the directory first for a local store"
        )
    return DirStore(spec)
