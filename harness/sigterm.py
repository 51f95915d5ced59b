"""A SIGTERM (a cancelled CI job) ends the pytest session as Ctrl-C does, but with one line and exit 143.

:class:`SigtermStops` is the plugin object that :mod:`harness.plugin` registers for it.
"""

from __future__ import annotations

import signal

import pytest

from harness.exits import TERMINATED, Terminated
from harness.suite.session import PerfSession


class SigtermStops:
    """A SIGTERM (a cancelled CI job) stops the session as Ctrl-C does (the running worker killed, the finished runs
    kept in runs.jsonl), but ends it with one line and exit 143, no traceback. A plugin object of its own (registered
    by :func:`harness.plugin.pytest_configure`), since the plugin module's own ``pytest_runtestloop`` is the
    --calibrate loop that it wraps."""

    def __init__(self, session_key: pytest.StashKey[PerfSession]):
        self.session_key = session_key  # where the plugin keeps the session whose finished runs are counted
        self.previous, self.received = None, False

    def pytest_sessionstart(self, session):
        def handler(signum, frame):
            self.received = True
            raise Terminated(f"received {signal.Signals(signum).name}")

        try:
            self.previous = signal.signal(signal.SIGTERM, handler)
        except ValueError:  # not the main thread: the default action stays
            pass

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        """Every test and the session's runs inside (also a fresh run's own handler raises Terminated)."""
        try:
            return (yield)
        except Terminated:
            s = session.config.stash.get(self.session_key, None)
            kept = (
                (
                    f", its running worker killed; {len(s.records)} finished run(s) kept in "
                    f"{s.options.results_dir / 'runs.jsonl'} "
                    "(rerun the same command with --resume to finish)"
                )
                if s is not None and s.executed
                else ""
            )
            pytest.exit(f"SIGTERM: the session stopped{kept}", returncode=TERMINATED)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if self.received:  # a SIGTERM outside the tests (collection, reports): 143 as well
            session.exitstatus = TERMINATED

    def pytest_unconfigure(self, config):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
            self.previous = None
