"""What the worker process and its block gate share: the pipes to the parent, the host's speed canary, the machine's CPU
times and pinning to CPUs. No torch here, as in the worker's entry module."""

from __future__ import annotations

import json
import os
import time

from harness.measuring.resident.messages import Command, Report, read_command

CANARY_ITERATIONS = 50_000  # a loop of plain Python short beside any block, long enough to time


def canary(n: int = CANARY_ITERATIONS) -> float:
    """Milliseconds of a fixed plain-Python loop: how fast this host runs the interpreter right now."""
    t = time.perf_counter()
    acc = 0
    for i in range(n):
        acc += i
    return (time.perf_counter() - t) * 1000.0


def host_cpu_times() -> tuple[float, float] | None:
    """(busy, steal) seconds of the whole machine so far, from /proc/stat (Linux); None elsewhere. Busy is every
    non-idle state, steal included: CPU time taken from this VM by its host."""
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    steal = f[7] if len(f) > 7 else 0
    return (sum(f[:8]) - idle) / hz, steal / hz


class Channel:
    """The worker's end of the two pipes: commands in, reports out, one JSON object per line
    (:mod:`harness.measuring.resident.messages`)."""

    def __init__(self, cmd_fd: int, rep_fd: int):
        self.cmd = os.fdopen(cmd_fd, "r", encoding="utf-8")
        self.rep = os.fdopen(rep_fd, "w", encoding="utf-8")

    def send(self, report: Report) -> None:
        self.rep.write(json.dumps(report.to_json(), separators=(",", ":")) + "\n")
        self.rep.flush()

    def recv(self) -> Command | None:
        """The next command; None at the end of the pipe (the parent closed it or died)."""
        line = self.cmd.readline()
        return read_command(json.loads(line)) if line.strip() else None


def pin(cpus: list[int]) -> None:
    """Every thread of this process onto ``cpus`` (``sched_setaffinity(0)`` would move the calling thread only)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, OSError):  # a thread that ended meanwhile
            pass
