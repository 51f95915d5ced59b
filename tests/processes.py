"""Which processes are alive: how the self-tests prove that no worker outlives its parent."""

from collections.abc import Callable
from pathlib import Path


def live_processes(module: bytes, where: Callable[[Path, list[bytes]], bool] = lambda pid_dir, argv: True) -> list[int]:
    """Pids of live (not zombie) processes on this machine whose command line runs ``module`` (e.g.
    ``b"harness.measuring.worker"``) and for which ``where(/proc/PID, argv)`` holds: no worker may outlive its
    parent. Linux only (reads /proc)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            if module in cmd and where(p, cmd) and (p / "stat").read_text().split()[2] != "Z":
                out.append(int(p.name))
        except OSError:
            continue
    return out
