"""A broken workload is its own failure: one failed pytest item per workload file that cannot run, the others run.

:mod:`harness.suite.selection` sets such a workload aside with its one line; the plugin adds one :class:`BrokenWorkload`
item for each (after ``-k`` and ``-m``: a bad input is always reported), and :class:`BadInputExit` ends the session
with exit 2 (bad input) when those items are all that failed, as a broken workload named with ``--workload`` does at
collection; a regression or another failure keeps pytest's 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.exits import BAD_INPUT

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


class BadInputExit:
    """Exit 2 where the broken workloads' items are the only failures (a plugin object, registered by the plugin)."""

    def __init__(self):
        self.other_failed = False

    def pytest_runtest_logreport(self, report):
        if report.failed and not report.nodeid.endswith(SUFFIX):
            self.other_failed = True

    def pytest_sessionfinish(self, session, exitstatus):
        broken = any(isinstance(i, BrokenWorkload) for i in session.items)
        if broken and not self.other_failed and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = BAD_INPUT
