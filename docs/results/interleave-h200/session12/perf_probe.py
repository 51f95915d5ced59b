"""Can a worker count its own host instructions? A probe of perf_event_open (no package needed: ctypes).

Prints perf_event_paranoid, then for each counter (instructions, cycles: hardware; task-clock: software) whether it
opens, and over 30 repeats of a fixed Python loop the coefficient of variation of the count against that of the wall
time. A count whose CV is far below the wall time's would be a quieter metric of host work than wall time.
usage: python3 perf_probe.py
"""

import ctypes
import os
import platform
import struct
import time
from statistics import fmean, pstdev

NR = {"x86_64": 298, "aarch64": 241}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
COUNTERS = {"instructions": (0, 1), "cycles": (0, 0), "task-clock": (1, 1)}  # (type, config)


def open_counter(kind: int, config: int) -> int:
    flags = (1 << 5) | (1 << 6)  # exclude_kernel, exclude_hv
    attr = struct.pack("IIQQQQQ", kind, 64, config, 0, 0, 0, flags).ljust(64, b"\0")
    buf = ctypes.create_string_buffer(attr, 64)
    fd = libc.syscall(NR, buf, 0, -1, -1, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return fd


def read(fd: int) -> int:
    return struct.unpack("Q", os.read(fd, 8))[0]


def work() -> int:
    return sum(i * i for i in range(200_000))


def main() -> None:
    try:
        print("perf_event_paranoid", open("/proc/sys/kernel/perf_event_paranoid").read().strip())
    except OSError as e:
        print("perf_event_paranoid unreadable:", e)
    for name, (kind, config) in COUNTERS.items():
        try:
            fd = open_counter(kind, config)
        except OSError as e:
            print(f"{name}: cannot open ({e})")
            continue
        counts, walls = [], []
        for _ in range(30):
            c0, t0 = read(fd), time.perf_counter()
            work()
            t1, c1 = time.perf_counter(), read(fd)
            counts.append(c1 - c0)
            walls.append(t1 - t0)
        os.close(fd)
        cv = lambda xs: pstdev(xs) / fmean(xs) if fmean(xs) else float("nan")  # noqa: E731
        print(f"{name}: mean {fmean(counts):.4g} per loop, CV {cv(counts):.3%}; wall {fmean(walls) * 1e3:.2f} ms, CV {cv(walls):.3%}")


if __name__ == "__main__":
    main()
