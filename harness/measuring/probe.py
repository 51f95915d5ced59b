"""How fast this machine's host drives the device: a short timing recorded beside a run and its census."""

from __future__ import annotations

import time

import torch


def host_probe(device: torch.device, n: int = 2000, repeats: int = 5) -> dict:
    """How fast this machine's host drives the device, measured (before training, and again next to a census's
    traced window) the way a host-bound step spends its time: ``launch_us``, the time per launch of a tiny in-place
    op on ``device`` (dispatcher and kernel launch; the device finishes each tiny kernel before the host issues the
    next), and ``python_ns``, the time per iteration of a plain Python loop. Each is the median of ``repeats``
    timings of ``n`` launches (``10 n`` iterations); about 0.1 s in all. Recorded with every run so that
    lease-to-lease differences in step time can be checked against it; no verdict uses it."""
    x = torch.zeros(16, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(n // 10):  # warm-up: allocator, kernel cache
        x.add_(1)
    sync()
    launch, loop = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        sync()
        launch.append((time.perf_counter() - t) / n * 1e6)
        t = time.perf_counter()
        acc = 0
        for i in range(10 * n):
            acc += i
        loop.append((time.perf_counter() - t) / (10 * n) * 1e9)
    return {
        "launch_us": sorted(launch)[repeats // 2],
        "python_ns": sorted(loop)[repeats // 2],
        "n": n,
        "repeats": repeats,
    }
