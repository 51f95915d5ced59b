"""A worker's end without the interpreter's teardown.

Once a worker has written its result, nothing it holds is needed again, yet Python's finalization with torch,
transformers, trl and peft loaded (clearing every module and collecting their objects) costs CPU time on every run, and
on a shared machine it overlaps the next run's start. A worker therefore ends as a C program does after ``exit()``: the
atexit handlers run (the libraries' own cleanup: logging, multiprocessing, torch.distributed), Python's and C's
standard streams are flushed, and the process ends with ``os._exit``.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
from typing import NoReturn


def end(code: int) -> NoReturn:
    """End this process with exit code ``code`` after its atexit handlers and with its output flushed, skipping the
    interpreter's teardown."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # closed or replaced by something without flush
                pass
        try:
            ctypes.CDLL(None).fflush(None)  # what C libraries printed with stdio, still in its buffers
        except (OSError, AttributeError):
            pass
        os._exit(code)
