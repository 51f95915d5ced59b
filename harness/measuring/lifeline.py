"""A worker dies with its parent: no training outlives a killed pytest or ``interleave`` (a SIGKILL, an OOM killer, a
lost CI job) to overlap the next job's timed runs.

Workers run in their own process group, so that the parent can kill a worker's whole tree; but then nothing kills them
when the parent itself is killed without its cleanup. On Linux the kernel does: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``,
set in the child between fork and exec (:func:`preexec`), sends it SIGKILL when its parent dies. It survives the exec,
so it covers ``torchrun`` too; torchrun's ranks set it for themselves (:func:`die_with_parent`, at the worker's start).

The kernel sends the signal when the *thread* that forked the child exits, not only the process: so it is set only for
workers started from the main thread (as every command and the pytest plugin start them). A worker started from another
thread keeps no such line; resident workers also stop at the end of their command pipe. Elsewhere than Linux, a no-op.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the child die with this process (SIGKILL); None where
    that cannot be set (not Linux, not the main thread). The child exits at once if this process is already gone."""
    prctl = _prctl()
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def die_with_this_parent() -> (
        None
    ):  # runs in the child, after fork, before exec: no imports, no allocation to speak of
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the line was set
            os._exit(1)

    return die_with_this_parent


def die_with_parent() -> None:
    """Make this process die (SIGKILL) when its parent does: for a process started by a launcher that does not set it
    (torchrun's ranks). Exits at once when the parent is already gone."""
    prctl = _prctl()
    if prctl is None:
        return
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line was set
        os._exit(1)
