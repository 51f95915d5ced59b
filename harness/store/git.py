"""A results store on a git branch (the nightly's ``perf-results``), through the ``git`` command line.

The branch is kept in a cache clone (``--cache``, by default one per URL under ``$XDG_CACHE_HOME/harness-store``): each
use fetches the branch and checks it out there, reads or writes the session files as a :class:`DirStore` of that work
tree, commits and pushes. A push rejected because another job pushed first (the pinned and latest jobs of several GPUs
finish at about the same time) is retried: fetch, rebase the commit onto the branch (on a conflict: take the branch and
write the sessions again), push, up to ``retries`` times. The branch is made on the first push when the remote has none.
Credentials are git's own (a credential helper, an SSH key, or ``http.extraheader`` set for the job).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.files import cache_dir
from harness.store.local import Added, DirStore
from harness.store.session import Session

BRANCH = "perf-results"
RETRIES = 8
GIT_TIMEOUT_S = 300  # one git command (a fetch or push over the network) at most
AUTHOR = ("harness-store", "harness-store@localhost")  # the commits' author when git has no user.email configured


class GitStoreError(RuntimeError):
    """A git command of the store failed; the message is one line naming the command and what git said."""


def default_cache(url: str) -> Path:
    return cache_dir("harness-store") / hashlib.sha1(url.encode()).hexdigest()[:16]


class GitStore:
    """Session records on branch ``branch`` of the repository at ``url`` (a URL or a path), through a cache clone."""

    def __init__(self, url: str, cache: str | Path | None = None, branch: str = BRANCH, retries: int = RETRIES):
        self.url, self.branch, self.retries = url, branch, retries
        self.cache = Path(cache) if cache else default_cache(url)
        self.local = DirStore(self.cache)

    def __str__(self) -> str:
        return f"{self.url} (branch {self.branch})"

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        try:
            p = subprocess.run(
                ["git", "-C", str(self.cache), *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            )
        except subprocess.TimeoutExpired:
            raise GitStoreError(
                f"git {' '.join(args[:2])} in {self.cache} took over {GIT_TIMEOUT_S} s; "
                f"check that {self.url} is reachable"
            ) from None
        except FileNotFoundError:
            raise GitStoreError(
                "a git store needs the git command line; install git or pass a directory as --store"
            ) from None
        if check and p.returncode:
            said = (p.stderr.strip() or p.stdout.strip()).splitlines()
            raise GitStoreError(
                f"git {' '.join(args[:2])} in {self.cache} failed: {said[-1] if said else f'exit {p.returncode}'}; "
                f"check that {self.url} is reachable and writable"
            )
        return p

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One user of the cache clone at a time (two jobs on one runner share it)."""
        self.cache.mkdir(parents=True, exist_ok=True)
        with open(self.cache.parent / f".{self.cache.name}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _remote_has_branch(self) -> bool:
        return bool(self._git("ls-remote", "--heads", "origin", f"refs/heads/{self.branch}").stdout.strip())

    def _fetch(self) -> None:
        self._git("fetch", "-q", "origin", f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}")

    def sync(self) -> None:
        """The cache clone at the remote branch's tip (made first if missing; on an unborn branch when the remote has
        none)."""
        if not (self.cache / ".git").is_dir():
            self.cache.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q")
            self._git("remote", "add", "--", "origin", self.url)  # "--": the URL is never taken for an option
        else:
            self._git("remote", "set-url", "--", "origin", self.url)
        if self._remote_has_branch():
            self._fetch()
            self._git("checkout", "-q", "-f", "-B", self.branch, f"origin/{self.branch}")
        else:
            self._git("symbolic-ref", "HEAD", f"refs/heads/{self.branch}")

    def _identity(self) -> list[str]:
        if self._git("config", "user.email", check=False).stdout.strip():
            return []
        return ["-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}"]

    def commit(self, records: list[Session]) -> list[Added]:
        """Write the records in the cache clone and commit what changed (nothing when every session is stored already).
        Every record's file is staged, also an unchanged one: a file written by an add that failed before its commit is
        committed now."""
        done = self.local.write(records)
        for a in done:
            for p in a.removed:
                self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", p)
            self._git("add", "--", a.path)
        staged = self._git("diff", "--cached", "--name-only").stdout.split()
        if staged:
            sessions = ", ".join(a.session_id for a in done if a.path in staged)
            self._git(
                *self._identity(), "commit", "-q", "-m", f"store: {len(staged)} file(s): {sessions or 'sessions moved'}"
            )
        return done

    def _ahead(self) -> bool:
        """Whether the branch has commits the remote's does not (always, before the remote has the branch)."""
        if self._git("rev-parse", "-q", "--verify", "HEAD", check=False).returncode:
            return False  # nothing committed
        if self._git("rev-parse", "-q", "--verify", f"refs/remotes/origin/{self.branch}", check=False).returncode:
            return True
        return self._git("rev-list", "--count", f"origin/{self.branch}..HEAD").stdout.strip() != "0"

    def push(self, records: list[Session]) -> int:
        """Push the branch; on a rejection fetch, rebase (or write ``records`` again on the fetched tip) and retry.
        Returns the number of retries it took."""
        for attempt in range(self.retries + 1):
            if not self._ahead():
                return attempt
            if self._git("push", "-q", "origin", f"HEAD:refs/heads/{self.branch}", check=False).returncode == 0:
                return attempt
            time.sleep(random.uniform(0.05, 0.3) * (attempt + 1))  # let the other pusher finish; jittered
            self._fetch()
            if self._git("rebase", "-q", f"origin/{self.branch}", check=False).returncode:
                self._git("rebase", "--abort", check=False)
                self._git("checkout", "-q", "-f", "-B", self.branch, f"origin/{self.branch}")
                self.commit(records)
        raise GitStoreError(
            f"git push to {self.url} branch {self.branch} was rejected {self.retries + 1} times; "
            "another job keeps pushing, or the branch is protected: run store add again"
        )

    def add(self, records: list[Session]) -> list[Added]:
        with self._locked():
            self.sync()
            done = self.commit(records)
            self.push(records)
            return done

    def records(self, warn=print) -> list[Session]:
        with self._locked():
            self.sync()
            return list(self.local.records(warn))
