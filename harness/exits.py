"""The exit codes of ``python -m harness`` (docs/exit-codes.md), in one place, and the one line a command ends with when
it fails in a way the user did not ask for (an I/O error, an unexpected exception): its cause, and the log file that
holds the traceback.

Nothing here imports torch.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback

OK = 0  # every verdict passed (or nothing to compare)
REGRESSION = 1  # a regression, or a check that failed (memory, ordering, equivalence, work)
BAD_INPUT = 2  # a bad option, workload, baseline, report or results dir: one line, nothing measured
MEASUREMENT_FAILED = 3  # a measurement failed: a worker died, ran out of memory, crashed or timed out
SUITE_ERROR = 4  # the suite's own error: I/O (a read-only results dir, a full disk) or an unexpected exception
INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + 2, as a shell reports it
TERMINATED = 143  # SIGTERM (a cancelled CI job): 128 + 15


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same cleanup runs; the command line and a pytest
    session then exit 143, not Ctrl-C's 130."""


def of_interrupt(exc: BaseException) -> int:
    """:data:`TERMINATED` for a SIGTERM (:class:`Terminated`), else :data:`INTERRUPTED`."""
    return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED


def write_traceback(exc: BaseException, command: str) -> str | None:
    """Write ``exc``'s traceback to a new log file in the temporary directory (never the results dir, which may be the
    cause); its path, or None when even that cannot be written."""
    try:
        with tempfile.NamedTemporaryFile(
            "w", prefix=f"harness-error-{time.strftime('%Y%m%dT%H%M%S')}-", suffix=".log", delete=False
        ) as fh:
            fh.write(f"python -m harness {command}\n\n")
            fh.write("".join(traceback.format_exception(exc)))
            return fh.name
    except OSError:
        return None


def os_error_text(exc: OSError) -> str:
    """An OSError in words: the file it names (when it names one) and the errno's text, as
    ``out/runs.jsonl: No space left on device``."""
    what = exc.strerror or (os.strerror(exc.errno) if isinstance(exc.errno, int) else "") or str(exc)
    return f"{exc.filename}: {what or type(exc).__name__}" if exc.filename else what or type(exc).__name__


def suite_error_line(exc: BaseException, command: str) -> str:
    """One line for an error of the suite itself: what failed, and where the traceback is (:func:`write_traceback`)."""
    log = write_traceback(exc, command)
    where = f"traceback in {log}" if log else "no log could be written"
    if isinstance(exc, OSError):
        folder = os.path.dirname(exc.filename) if isinstance(exc.filename, str) and exc.filename else None
        return (
            f"error: I/O error: {os_error_text(exc)}; check that {folder or 'the results dir'} is writable "
            f"and its disk has room ({where})"
        )
    message = str(exc).splitlines()[0][:300] if str(exc) else "(no message)"
    return f"error: unexpected {type(exc).__name__}: {message}; a bug of the suite, please report it ({where})"
