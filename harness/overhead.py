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
from .spec import load_workloads
from .stats import log_ratio


def measure(args) -> int:
    ws = load_workloads(args.workloads_dir)
    if args.workload not in ws:
        raise ValueError(f"no workload {args.workload!r} in {args.workloads_dir}; known: {', '.join(ws)}")
    w = ws[args.workload].with_overrides(max_steps=args.steps)
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
