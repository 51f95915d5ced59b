"""The critical path on a GPU (section 6 of this page): its predictions, made again from the committed censuses with
this checkout's model, beside the measured changes.

    python docs/evidence/what-does-the-census-predict/gpu_check.py [critical-path-h100.jsonl.gz]

``toy-without-bins`` and ``toy-with-bins``: ``toy_cuda.py``'s output (the censuses and the timed blocks of each variant)
from a census without and with the launch bins (``device_at``); ``toy-warm-window-1`` and ``-2``: two runs on a third
lease, with the launch bins and a first profiled window that none of the variants' censuses takes. ``before-sync-4x1``:
the censuses of qwen3-1.7b-lora 4x1 without and with 2000 microseconds of spin kernel before each CUDA
``Tensor.item()``, and the interleaved comparison's blocks (A's median step, B/A by pair).

``critical-path-h100-10000us.jsonl.gz`` (two later leases, read too): ``toy_cuda.py`` with a random order of variants
per round and the SM clock per block; qwen3-1.7b-lora 4x1 with 10,000 microseconds of spin before each CUDA read-back,
the same after it, and 10 units of host work per LoRA layer; and transformers 5.17.0 -> 5.25.0 at 4x1.

``critical-path-1x4-h100.jsonl.gz`` (a fourth lease, read too, as the files named after it): qwen3-1.7b-lora 1x4 with
10,000 microseconds of spin before and after each CUDA read-back and 10 units of host work per LoRA layer; the
GPU-bound case, 16x1 of qwen3-1.7b-lora-mb16 with the spin before each read-back; and ``pair-1x4/census-a``, the
first census of the transformers pair at 1x4 (the lease ran out before the rest). Its censuses without injected work
show which host probe tracks the traced host time (:func:`probes`).

``critical-path-1x4-pair-h100.jsonl.gz`` (a fifth and a sixth lease, read too, a folder each, named by its boot
id): the transformers pair at 1x4, the host work at 1x4 and on the GPU-bound 16x1 (``lease-d7767793``); the host work
at 1x4 again (``lease-e27a7a10``; its host work at 4x1 was cut off by the session's device budget and left out).

Each further file named (``gpu_check.py FIRST MORE...``) is read as the packed results dir of a later
``critical_path_gpu.sh`` run: every comparison in it (a folder with ``blocks.jsonl`` and a census of each side) is
predicted and counted in the calibration the same way.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent)]

import raw  # noqa: E402

from harness.judging import cost_path, critical_path  # noqa: E402
from harness.judging.blocks import pairs_of  # noqa: E402
from harness.results.block import Block  # noqa: E402

COVERED: list[bool] = []  # per prediction: does its interval cover the measured change
ROWS: list[tuple] = []  # per qwen comparison: (change, split, the verdict's change or None, median pair's, p)
# a later file's comparisons, named by the folder's first word (critical_path_gpu.sh's names)
CHANGES = {
    "before": "10,000 us of spin before each CUDA read-back",
    "after": "10,000 us of spin after each CUDA read-back",
    "host": "10 units of host work per LoRA layer",
    "pair": "transformers 5.17.0 -> 5.25.0",
}


def line(name: str, measured: float, p: dict) -> str:
    COVERED.append(p["lo"] <= measured <= p["hi"])
    inside = "inside" if COVERED[-1] else "OUTSIDE"
    return (
        f"  {name}: measured {measured:+.1f}%; critical path {p['delta_pct']:+.1f}% [{p['lo']:+.1f}, {p['hi']:+.1f}] "
        f"(host {p['host_part']:+.1f}, GPU {p['gpu_part']:+.1f}; waits {p['waits_ms'][0]:.2f} -> "
        f"{p['waits_ms'][1]:.2f} ms per step), measured {inside}, off by {measured - p['delta_pct']:+.1f} points"
        + trace_reads(p)
    )


def trace_reads(p: dict) -> str:
    """B's trace read at A's host speed, with the profiler's overhead in proportion to the host time and per aten op,
    where the prediction carries them."""
    reads = [f"{p[k]:+.1f}%" for k in ("traced_pct", "traced_per_op_pct") if k in p]
    return f"; B's trace reads {' and '.join(reads)}" if reads else ""


def toy(data: dict, title: str) -> None:
    steps, censuses = data["steps_ms"], data["censuses"]
    base_ms = statistics.median(steps["base"])
    clocks = data.get("clocks_mhz")  # the SM clock as each block ended, where the toy recorded it
    seen = sorted({c for v in (clocks or {}).values() for c in v})
    print(f"{title}: base step {base_ms:.2f} ms" + (f"; SM clocks seen {seen} MHz" if clocks else ""))
    for name in ("before", "after", "host"):
        measured = 100 * (statistics.median(b / a for a, b in zip(steps["base"], steps[name])) - 1)
        print(line(name, measured, cost_path.predict_pair(censuses["base"], censuses[name], base_ms)))


def measured_pairs(blocks: list) -> tuple[float, float, int]:
    """(A's median step, the median pair's B/A change in percent, pairs) of an interleaved comparison's blocks; a pair
    of the micro grain (1x4: the sides take turns at single micro-batches) is merged into steps as the verdict merges
    it (:func:`harness.judging.blocks.pairs_of`)."""
    pairs = [
        {s: statistics.median(p.side(s).step_times_ms) for s in "ab"}
        for p in pairs_of([Block.from_json(b) for b in blocks])
    ]
    step_a = statistics.median(p["a"] for p in pairs)
    return step_a, 100 * (math.exp(statistics.median(math.log(p["b"] / p["a"]) for p in pairs)) - 1), len(pairs)


def qwen(files: dict, case: str, title: str) -> None:
    step_a, measured, n = measured_pairs(files[f"{case}/blocks.jsonl"])
    runs = [files[f"{case}/census-{s}/runs.jsonl"][0] for s in "ab"]
    # the first runs recorded the host probe beside the census; a census now carries its own
    ca, cb = ({**r["census"], "host_probe": r["host_probe"]} for r in runs)
    print(
        f"{runs[0]['workload']} {runs[0]['decomposition_id']}, {title}: A's step {step_a:.1f} ms over {n} pairs; "
        + (
            f"kernel time {ca['kernel_ms']:.2f} -> {cb['kernel_ms']:.2f} ms per step"
            if ca["kernel_ms"]
            else "on the CPU"
        )
    )
    for key, what in (("host_probe", "host probes"), ("window_probe", "probes next to the window")):
        pa, pb = ca.get(key), cb.get(key)
        if pa and pb:
            print(
                f"  {what}: A {pa['launch_us']:.2f} us per launch, {pa['python_ns']:.1f} ns per loop; B "
                f"{pb['launch_us']:.2f} us, {pb['python_ns']:.1f} ns; "
                f"B/A per launch x{pb['launch_us'] / pa['launch_us']:.3f}"
            )
    p = cost_path.predict_pair(ca, cb, step_a)
    print(line(title, measured, p) + " (median pair; the verdict's: report)")
    verdict = (files.get(f"{case}/report.json") or {}).get("verdict") or {}
    change = CHANGES.get(case.split("/")[-1].split("-")[0], case) if ": " in title else title
    verdict_pct = 100 * (verdict["ratio"] - 1) if "ratio" in verdict else None
    ROWS.append((change, runs[0]["decomposition_id"], verdict_pct, measured, p))


def table() -> None:
    """Every qwen comparison in one markdown table: the verdict's change (the median pair's where the comparison kept
    no report), the prediction, whether its interval covers the change, and how far the point is from it."""
    print("| change | split | measured | predicted [interval] | covered | off by |")
    print("|---|---|---|---|---|---|")
    for change, dec, verdict_pct, median_pct, p in ROWS:
        m = verdict_pct if verdict_pct is not None else median_pct
        what = f"{m:+.1f}%" + ("" if verdict_pct is not None else " (median pair)")
        print(
            f"| {change} | {dec} | {what} | {p['delta_pct']:+.1f}% [{p['lo']:+.1f}, {p['hi']:+.1f}] | "
            f"{'yes' if p['lo'] <= m <= p['hi'] else 'no'} | {m - p['delta_pct']:+.1f} points |"
        )


def comparisons(files: dict) -> list[str]:
    """The comparisons of a packed ``critical_path_gpu.sh`` results dir: folders with blocks and a census of each
    side."""
    ends = "/blocks.jsonl"
    return sorted(
        k[: -len(ends)] for k in files if k.endswith(ends) and f"{k[: -len(ends)]}/census-b/runs.jsonl" in files
    )


def probes(files: dict, dec: str = "1x4") -> None:
    """The traced host time per step of each census of ``dec`` without injected work (``census-a`` of each
    comparison), as traced and per unit of each yardstick of the host's speed: either host probe's time per launch, and
    (censuses that record it) the host's time in the outermost aten ops of the traced window itself (``aten_ms``); the
    spread (coefficient of variation) each leaves."""
    rows = []
    for k in sorted(files):
        if k.endswith("/census-a/runs.jsonl") and files[k][0]["decomposition_id"] == dec:
            c = files[k][0]["census"]
            t = critical_path.Timeline.of(c)
            probes_us = c["window_probe"]["launch_us"], c["host_probe"]["launch_us"]
            aten = c["timeline"].get("aten_ms")
            rows.append((k.removesuffix("/census-a/runs.jsonl"), t.host_ms, *probes_us, aten))
            print(
                f"  {rows[-1][0]}: traced host {t.host_ms:.0f} ms per step; per us of launch: window probe "
                f"{t.host_ms / rows[-1][2]:.0f}, probe before training {t.host_ms / rows[-1][3]:.0f}"
                + (f"; per ms in aten ops {t.host_ms / aten:.3f}" if aten else "")
            )
    if len(rows) < 2:
        return
    ways = [(None, "as traced"), (2, "per window probe"), (3, "per probe before training")]
    for i, what in ways + ([(4, "per ms in aten ops")] if all(r[4] for r in rows) else []):
        v = [r[1] / (r[i] if i else 1.0) for r in rows]
        print(f"  spread over {len(v)} censuses, {what}: {100 * statistics.stdev(v) / statistics.mean(v):.1f}%")


def main(path: str = str(HERE / "critical-path-h100.jsonl.gz"), *more: str) -> int:
    files = raw.load(path)
    toy(files["toy-without-bins/toy_cuda.json"], "toy loop, census without launch bins (lease 7bdafb10)")
    toy(files["toy-with-bins/toy_cuda.json"], "toy loop, census with launch bins (lease a415930c)")
    for i in (1, 2):
        toy(
            files[f"toy-warm-window-{i}/toy_cuda.json"],
            f"toy loop, launch bins, a first window profiled apart, run {i}",
        )
    qwen(files, "before-sync-4x1", "2000 us before each CUDA read")
    later = raw.load(str(Path(path).parent / "critical-path-h100-10000us.jsonl.gz"))
    toy(later["lease-f35cf60e/toy_cuda.json"], "toy loop, rounds in a random order (lease f35cf60e)")
    for case, title in (
        ("lease-f35cf60e/before-4x1", "10,000 us before each CUDA read"),
        ("lease-f35cf60e/after-4x1", "10,000 us after each CUDA read"),
        ("lease-f35cf60e/host-4x1", "10 units of host work per LoRA layer"),
        ("lease-7d06fe60/pair-4x1", "transformers 5.17.0 -> 5.25.0"),
    ):
        qwen(later, case, title)
    runs_after = ("critical-path-1x4-h100.jsonl.gz", "critical-path-1x4-pair-h100.jsonl.gz")
    for extra in (*(str(Path(path).parent / name) for name in runs_after), *more):
        files = raw.load(extra)
        for case in comparisons(files):
            qwen(files, case, f"{Path(extra).name}: {case}")
        if all("window_probe" in r["census"] for k, v in files.items() if k.endswith("runs.jsonl") for r in v):
            print(f"{Path(extra).name}: the host probes beside the traced host time")
            probes(files)
    table()
    print(f"the interval covers the measured change in {sum(COVERED)} of {len(COVERED)} predictions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
