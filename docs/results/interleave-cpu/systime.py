"""User and system CPU time of one resident worker over 3 blocks of 10 steps (tiny-qwen3 2x2), with glibc's default
malloc or the fixed thresholds of harness.measuring.resident.STABLE_MALLOC.

    PYTHONPATH=. python docs/results/interleave-cpu/systime.py [--malloc-default] [--runs N]
"""

import sys
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory

from harness.measuring.resident import ResidentWorker
from harness.spec import Workload

ROOT = Path(__file__).resolve().parents[3]


def cpu_times(pid: int) -> tuple[float, float]:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) / 100, int(f[12]) / 100


def main(argv: list[str]) -> None:
    default = "--malloc-default" in argv
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 3
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    for i in range(runs):
        with TemporaryDirectory() as tmp, ResidentWorker("A", w, w.decomposition("2x2"), tmp, gpu="cpu", malloc_default=default).start() as a:
            a.block(5)
            u0, s0 = cpu_times(a.proc.pid)
            steps = [x for _ in range(3) for x in a.block(10)["step_times_ms"]]
            u1, s1 = cpu_times(a.proc.pid)
            print(f"{'glibc default' if default else 'fixed (STABLE_MALLOC)'} process {i + 1}: user {u1 - u0:.2f} s, system {s1 - s0:.2f} s "
                  f"over 30 steps; median step {median(steps):.1f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
