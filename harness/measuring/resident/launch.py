"""Starting a resident worker's process (:mod:`harness.measuring.resident`): glibc malloc on fixed thresholds for its
environment (:data:`STABLE_MALLOC`), and the process itself, in a process group of its own that dies with this one
(:mod:`harness.measuring.lifeline`), with the two pipes the parent and the worker talk over.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.measuring import lifeline

# glibc malloc with fixed thresholds. By default glibc moves its mmap threshold as the process frees large
# chunks and trims the heap top back to the OS, so each process settles into its own mix of mmap/munmap
# and page faults per step, and processes of one build differ in step time and system time. Fixed thresholds
# (a constant 32 MiB mmap threshold, no trimming below 1 GiB, the heap grown 64 MiB at a time) keep the
# system time near zero and narrow the launch-to-launch spread; both sides get the same setting.
STABLE_MALLOC = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
    "MALLOC_TOP_PAD_": str(64 << 20),
}


def spawn(
    python: str | None, req_path: Path, log_path: Path, env: dict[str, str], hold_cpus: list[int] | None
) -> tuple[subprocess.Popen, int, int]:
    """Start the worker of the request at ``req_path`` with ``python`` (default: this one), its output to ``log_path``;
    ``(process, write end of its command pipe, read end of its report pipe)``. A pre-started worker is moved onto
    ``hold_cpus`` at once."""
    cmd_r, cmd_w = os.pipe()
    rep_r, rep_w = os.pipe()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [python or sys.executable, "-m", "harness.measuring.resident", str(req_path), str(cmd_r), str(rep_w)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                pass_fds=(cmd_r, rep_w),
                preexec_fn=lifeline.preexec(),
            )
    except BaseException:
        for fd in (cmd_r, cmd_w, rep_r, rep_w):
            os.close(fd)
        raise
    os.close(cmd_r)
    os.close(rep_w)
    if hold_cpus:  # the interpreter's own start-up too, not only the imports in main(), off the measured CPUs
        try:
            os.sched_setaffinity(proc.pid, hold_cpus)
        except OSError:
            pass
    return proc, cmd_w, rep_r
