"""The critical-path model on a toy training loop on a GPU: the timeline read from a real CUDA trace, and device-only
work placed before and after the loop's read-backs, predicted beside measured (section 6 of this page).

    python3 docs/evidence/what-does-the-census-predict/toy_cuda.py [OUT.json]

No transformers, peft or trl: a 24-layer MLP of width 256 on 8 rows (host-bound: many small kernels), two micro-batches
per step, each reading back its loss and a metric with ``.item()`` (4 syncs per step), AdamW. The variants: ``base``;
``before`` and ``after``, ``US`` microseconds of spin kernel per read-back (``InjectWork`` kinds ``device_before_sync``,
``device_after_sync``); ``host``, host-only work per micro-batch. Each variant's census (``summarize`` of a profiled
window of ``N`` steps: the counts and the timeline) and its timed steps, the variants taking turns, in a random order
per round, in ``ROUNDS`` rounds of ``BLOCK`` steps so that drift is shared; the measured change is the median over
rounds of the variant's median step over base's. The predictions are made from base's census and timed step, as an
interleaved report makes them.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import torch  # noqa: E402

from harness.judging import cost_model as cm  # noqa: E402
from harness.judging import cost_path  # noqa: E402
from harness.measuring.census_counts import summarize  # noqa: E402
from harness.measuring.gpu_monitors import GpuSampler  # noqa: E402
from harness.measuring.injected_work import InjectWork  # noqa: E402

US, N, ROUNDS, BLOCK, HOST_UNITS = 400.0, 6, 12, 20, 3000


def make():
    torch.manual_seed(0)
    layers = [m for _ in range(24) for m in (torch.nn.Linear(256, 256), torch.nn.GELU())]
    model = torch.nn.Sequential(*layers).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), torch.randn(8, 256, device="cuda")


def step(model, opt, x, host: bool) -> None:
    for _ in range(2):
        out = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        loss.item()
        (out > 0).float().mean().item()
        if host:
            sum(range(HOST_UNITS))
    opt.step()
    opt.zero_grad(set_to_none=True)


def census(model, opt, x, host: bool) -> dict:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.start()
    for _ in range(N):
        step(model, opt, x, host)
    torch.cuda.synchronize()
    prof.stop()
    return {"fits": True, "python_calls": 0.0, **summarize(prof.profiler.kineto_results.events(), N, True)}


def block(model, opt, x, host: bool) -> float:
    times = []
    for _ in range(BLOCK):
        t0 = time.perf_counter()
        step(model, opt, x, host)
        times.append(time.perf_counter() - t0)
    return 1000.0 * statistics.median(times)


def main(out: str | None = None) -> int:
    model, opt, x = make()
    variants = {
        "base": (None, False),
        "before": ("device_before_sync", False),
        "after": ("device_after_sync", False),
        "host": (None, True),
    }
    injects = {k: InjectWork(model, 0.0, kind=kind) for k, (kind, _) in variants.items() if kind}
    for _ in range(30):
        step(model, opt, x, False)
    for inj in injects.values():  # each measures its spin kernel once, outside the windows
        inj.n = US
        torch.ones(1, device="cuda").item()
        inj.n = 0.0
    censuses, steps, clocks = {}, {k: [] for k in variants}, {k: [] for k in variants}
    gpu = GpuSampler()  # the SM clock as each block ends: the spin kernel counts cycles, not microseconds

    def run(name, fn):
        kind, host = variants[name]
        if kind:
            injects[name].n = US
        try:
            return fn(model, opt, x, host)
        finally:
            if kind:
                injects[name].n = 0.0

    census(model, opt, x, False)  # the first profiled window is the slowest: none of the variants' takes it
    for name in variants:
        censuses[name] = run(name, census)
    order = random.Random(0)
    for _ in range(ROUNDS):  # each round in its own order: no variant always follows the same one
        for name in order.sample(list(variants), len(variants)):
            steps[name].append(run(name, block))
            clocks[name].append(gpu.sample()["sm_clock_mhz"] if gpu.available else None)
    base_ms = statistics.median(steps["base"])
    rows = []
    print(
        f"toy loop on {torch.cuda.get_device_name()}: base step {base_ms:.2f} ms (median of {ROUNDS} blocks of "
        f"{BLOCK}); {censuses['base']['timeline']['syncs']:g} syncs per step, traced host "
        f"{censuses['base']['timeline']['host_ms']:.2f} ms, "
        f"device {censuses['base']['timeline']['device_ms']:.2f} ms; SM clock as the blocks ended: "
        + ", ".join(f"{k} {statistics.median(v):.0f} MHz" for k, v in clocks.items() if None not in v)
    )
    for name in ("before", "after", "host"):
        measured = 100 * (statistics.median(b / a for a, b in zip(steps["base"], steps[name])) - 1)
        cp = cost_path.predict_pair(censuses["base"], censuses[name], base_ms)
        two = cm.beside_measured(censuses["base"], censuses[name], base_ms, None)
        rows.append(
            {
                "variant": name,
                "measured_pct": round(measured, 2),
                "critical_path": cp,
                "two_path": two,
                "device_ms_per_step": {k: censuses[k]["timeline"]["device_ms"] for k in ("base", name)},
            }
        )
        print(
            f"{name}: measured {measured:+.1f}%; "
            f"critical path {cp['delta_pct']:+.1f}% [{cp['lo']:+.1f}, {cp['hi']:+.1f}] "
            f"(host {cp['host_part']:+.1f}, GPU {cp['gpu_part']:+.1f}; "
            f"waits {cp['waits_ms'][0]:.2f} -> {cp['waits_ms'][1]:.2f} ms)"
            + (f" [{cp['note']}]" if cp.get("note") else "")
            + f"; two-path {two['delta_pct']:+.1f}% [{two['lo']:+.1f}, {two['hi']:+.1f}]"
        )
    for inj in reversed(list(injects.values())):  # each put its wrapper over the one before
        inj.remove()
    if out:
        Path(out).write_text(
            json.dumps({"steps_ms": steps, "clocks_mhz": clocks, "censuses": censuses, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
