"""A broken workload is its own failure: one failed pytest item per workload file that cannot run, the others run.

:mod:`harness.suite.selection` sets such a workload aside with its one line, whether ``--workload`` named it or not;
the plugin adds one :class:`BrokenWorkload` item for each (after ``-k`` and ``-m``: a bad input is always reported) and
the session's report gives it one failed verdict (kind ``bad-workload``), so that a night of several workloads measures
the others and says why this one was not. :class:`BrokenFails` makes the session's exit say so where no item ran
(``--collect-only``): pytest's 1, a failed test, as when the items run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SUFFIX = "::bad-workload"


class BrokenWorkload(pytest.Item):
    """The item of one workload file that cannot run; it fails with that file's one line."""

    def __init__(self, *, line: str, **kwargs):
        super().__init__(**kwargs)
        self.line = line

    def runtest(self) -> None:
        # the item's id names the file: the message starts with what is wrong, which a -q summary line keeps
        head, sep, rest = self.line.partition(": ")
        pytest.fail(rest if sep and Path(head) == self.path else self.line, pytrace=False)

    def reportinfo(self):
        return self.path, None, f"bad workload {self.path.name}"


def relative_line(line: str, root: Path) -> str:
    """``line`` with the file it starts with named relative to ``root`` (where pytest was started): a summary line
    trimmed to the terminal's width keeps the file's name and what is wrong with it, not a long absolute path."""
    head, sep, rest = line.partition(": ")
    path = Path(head)
    if sep and path.is_absolute():
        for p, r in ((path, root), (path.resolve(), root.resolve())):
            if p.is_relative_to(r):
                return f"{p.relative_to(r).as_posix()}: {rest}"
    return line


def _nodeid(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() + SUFFIX
    except ValueError:
        return path.as_posix() + SUFFIX


def items_for(broken: dict[Path, str], session) -> list[BrokenWorkload]:
    """One item per broken workload file, children of the pytest session."""
    root = Path(session.config.rootpath)
    return [
        BrokenWorkload.from_parent(session, name=path.name, path=path, nodeid=_nodeid(path, root), line=line)
        for path, line in broken.items()
    ]


class BrokenFails:
    """Exit 1 (a failed test) where a broken workload's item was collected but none ran (``--collect-only``): its one
    line is in the summary, and the session must not pass (a plugin object, registered by the plugin)."""

    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus == pytest.ExitCode.OK and any(isinstance(i, BrokenWorkload) for i in session.items):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
