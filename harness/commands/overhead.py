"""Instrumentation overhead: the same decomposition with phase timing on and off, in ABBA order.

Unit: the run. Metric: steady-state median step time. Reported: the ratio on/off of geometric means
with its 90% Welch interval (harness.judging.stats.log_ratio), and the per-pair ratios.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from harness.exits import MEASUREMENT_FAILED
from harness.files import ensure_dir, new_id, results_lock
from harness.judging.stats import log_ratio
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.spec_folder import load_workload


def measure(
    *,
    gpu: str,
    workload: str,
    decomposition: str,
    pairs: int = 5,
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/overhead",
    run_timeout: float = RUN_TIMEOUT_S,
    out: Callable[[str], None] = print,
) -> int:
    w = load_workload(workloads_dir, workload, steps)
    d = w.decomposition(decomposition)
    root, session = ensure_dir(results_dir), new_id("overhead")
    sides = [FreshSide("on", root, session, phases=True), FreshSide("off", root, session, phases=False)]
    times: dict[str, list[float]] = {"on": [], "off": []}
    failed: list[dict] = []

    def keep(slot, rec):
        if rec["status"] != "ok":
            failed.append(rec)
        else:
            times[slot.side.name].append(rec["step_time_median_ms"])

    # ABBA: drift lands on both sides
    with results_lock(root):  # refused at once beside a session or another command writing there
        run_slots(
            schedule(sides, [(w, d)], pairs, alternate=True),
            timeout_s=run_timeout,
            gpu=gpu,
            progress=out,
            on_record=keep,
            stop=lambda _s: f"error: run failed ({failed[0]['status']}); see {failed[0]['log']}" if failed else None,
        )
    if failed:
        return MEASUREMENT_FAILED
    on, off = times["on"], times["off"]
    e = log_ratio(off, on, 0.05)
    out(f"\n{w.name}-{d.id}, {w.train.max_steps} steps, {pairs} pairs, on {gpu}")
    out("per pair (on/off): " + ", ".join(f"{a / b:.4f}" for a, b in zip(on, off)))
    out(
        f"phase instrumentation overhead: {(e.ratio - 1) * 100:+.2f}% of step time, "
        f"90% CI [{(e.lo - 1) * 100:+.2f}%, {(e.hi - 1) * 100:+.2f}%]"
    )
    return 0


def micro(n: int = 20000) -> dict:
    """Direct cost of the instrumentation on this device: one clock mark, and the two forward hooks per call.

    Per optimizer step the recorder makes 4 marks per micro-batch (forward start/end, loss, backward
    end) plus 2 (optimizer), and runs the hook pair once per micro-batch.
    """
    import torch

    from harness.measuring.callbacks import CudaClock, HostClock, Recorder

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    clock = CudaClock() if cuda else HostClock()
    for _ in range(100):
        clock.mark()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        clock.mark()
    sync()
    mark_us = (time.perf_counter() - t) / n * 1e6
    m = torch.nn.Linear(16, 16).to(dev)
    x = torch.randn(4, 16, device=dev)

    def loop() -> float:
        with torch.no_grad():
            for _ in range(100):
                m(x)
            sync()
            t0 = time.perf_counter()
            for _ in range(n):
                m(x)
            sync()
        return (time.perf_counter() - t0) / n * 1e6

    plain = loop()
    rec = Recorder(clock)
    rec.forward_pre = rec.forward_post = lambda *a, **k: None  # the hook call itself, marks counted above
    hooks = [m.register_forward_pre_hook(rec.forward_pre), m.register_forward_hook(rec.forward_post)]
    hooked = loop()
    for h in hooks:
        h.remove()
    return {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "mark_us": mark_us,
        "hook_pair_us": max(hooked - plain, 0.0),
        "n": n,
    }


def micro_report(res: dict, step_ms: dict[str, tuple[int, float]]) -> list[str]:
    """Overhead per optimizer step for decompositions given as id -> (grad_accum, median step ms)."""
    out = [
        f"{res['device']}: one clock mark {res['mark_us']:.2f} us, "
        f"forward hook pair {res['hook_pair_us']:.2f} us (n={res['n']})"
    ]
    for d, (ga, ms) in step_ms.items():
        cost_us = (4 * ga + 2) * res["mark_us"] + ga * res["hook_pair_us"]
        out.append(
            f"  {d}: {4 * ga + 2} marks + {ga} hook pairs = {cost_us:.0f} us per step = "
            f"{cost_us / 1000 / ms:.4%} of a {ms:.0f} ms step"
        )
    return out
