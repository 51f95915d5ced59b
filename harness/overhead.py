"""Instrumentation overhead: the same decomposition with phase timing on and off, in ABBA order.

Unit: the run. Metric: steady-state median step time. Reported: the ratio on/off of geometric means
with its 90% Welch interval (harness.stats.log_ratio), and the per-pair ratios.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from .runner import RunRequest, run_one
from .session import headline
from .spec import load_workload
from .stats import log_ratio


def measure(args) -> int:
    w = load_workload(args.workloads_dir, args.workload, args.steps)
    d = w.decomposition(args.decomposition)
    session = f"overhead-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    on, off = [], []
    Path(args.results_dir).mkdir(parents=True, exist_ok=True)
    for i in range(args.pairs):
        order = (True, False) if i % 2 == 0 else (False, True)  # ABBA: drift lands on both sides
        for phases in order:
            rec = run_one(RunRequest(w, d, i + 1, phases=phases), Path(args.results_dir), session, args.timeout, args.gpu)
            print(f"pair {i + 1} phases {'on ' if phases else 'off'}: {headline(rec)}", flush=True)
            if rec["status"] != "ok":
                print(f"error: run failed ({rec['status']}); see {rec['log']}")
                return 1
            (on if phases else off).append(rec["step_time_median_ms"])
    e = log_ratio(off, on, 0.05)
    print(f"\n{w.name}-{d.id}, {w.train.max_steps} steps, {args.pairs} pairs, on {args.gpu}")
    print("per pair (on/off): " + ", ".join(f"{a / b:.4f}" for a, b in zip(on, off)))
    print(f"phase instrumentation overhead: {(e.ratio - 1) * 100:+.2f}% of step time, 90% CI [{(e.lo - 1) * 100:+.2f}%, {(e.hi - 1) * 100:+.2f}%]")
    return 0


def micro(n: int = 20000) -> dict:
    """Direct cost of the instrumentation on this device: one clock mark, and the two forward hooks per call.

    Per optimizer step the recorder makes 4 marks per micro-batch (forward start/end, loss, backward
    end) plus 2 (optimizer), and runs the hook pair once per micro-batch.
    """
    import torch

    from .callbacks import CudaClock, HostClock, Recorder

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
    return {"device": torch.cuda.get_device_name(0) if cuda else "cpu", "mark_us": mark_us, "hook_pair_us": max(hooked - plain, 0.0), "n": n}


def micro_report(res: dict, step_ms: dict[str, tuple[int, float]]) -> list[str]:
    """Overhead per optimizer step for decompositions given as id -> (grad_accum, median step ms)."""
    out = [f"{res['device']}: one clock mark {res['mark_us']:.2f} us, forward hook pair {res['hook_pair_us']:.2f} us (n={res['n']})"]
    for d, (ga, ms) in step_ms.items():
        cost_us = (4 * ga + 2) * res["mark_us"] + ga * res["hook_pair_us"]
        out.append(f"  {d}: {4 * ga + 2} marks + {ga} hook pairs = {cost_us:.0f} us per step = {cost_us / 1000 / ms:.4%} of a {ms:.0f} ms step")
    return out
