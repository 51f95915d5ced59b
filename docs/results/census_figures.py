"""Figures of the H200 census (docs/results/census-h200/README.md): determinism of the counts, the spread
of the GPU kernel time within and between machines, what the kernel-time verdict can flag, the cost of a
census run, and the release pair (transformers 5.17.0 -> 5.24.0).

    python docs/results/census_figures.py docs/results/census-h200
"""

import json
import math
import sys
from pathlib import Path
from statistics import fmean, median, stdev

from harness.judging import census_diff as cd
from harness.judging.baseline import DEFAULT_THRESHOLDS
from harness.judging.judge import CENSUS_TOLERANCES
from harness.judging.stats import smallest_flagged


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def main(root: Path) -> None:
    a = [r for p in sorted(root.glob("*/a/runs.jsonl")) + sorted(root.glob("smoke/smoke/runs.jsonl")) for r in load(p)]
    b = load(root / "lease-b" / "b" / "runs.jsonl")
    machines = sorted({r["env"]["boot_id"] for r in a})
    label = {m: f"M{i + 1}" for i, m in enumerate(machines)}
    print(f"Census runs of qwen3-1.7b-lora with transformers 5.17.0 (A): {len(a)} on {len(machines)} machines "
          f"({', '.join(f'{label[m]} {m[:8]}' for m in machines)}); with transformers 5.24.0 (B): {len(b)} on {label[b[0]['env']['boot_id']]}.\n")
    print("| split | runs (machines) | aten ops | kernels | syncs: stream / D2H / cudaMemcpyAsync | cudaMalloc | Python calls (distinct values) | attention | counts identical |")
    print("|---|---|---:|---:|---|---:|---|---|---|")
    by = {}
    for r in a:
        by.setdefault(r["decomposition_id"], []).append(r)
    for d in ("1x4", "2x2", "4x1"):
        rs = by[d]
        cs = [cd.normalize(r["census"]) for r in rs]
        same = all(not cd.diff(cs[0], c, CENSUS_TOLERANCES).counts_changed for c in cs[1:])
        exact = all(not cd.diff(cs[0], c).counters.get("ops") and not cd.diff(cs[0], c).ops and not cd.diff(cs[0], c).kernels for c in cs[1:])
        py = sorted({c["python_calls"] for c in cs})
        s = cs[0]["syncs"]
        print(f"| {d} | {len(rs)} ({len({r['env']['boot_id'] for r in rs})}) | {cd.num(cs[0]['ops'])} | {cd.num(cs[0]['kernels'])} | "
              f"{cd.num(s['cudaStreamSynchronize'])} / {cd.num(s['memcpy_dtoh'])} / {cd.num(s['cudaMemcpyAsync'])} | {cd.num(cs[0]['alloc']['cudaMalloc'])} | "
              f"{', '.join(cd.num(x) for x in py)} | {cs[0]['attention_backend']} | {'yes' if same and exact else 'NO'} |")
    thr, alpha = DEFAULT_THRESHOLDS["kernel_time"], DEFAULT_THRESHOLDS["alpha"]
    print(f"\nGPU kernel time per optimizer step (ms, the optimizer's user annotation removed), by machine; CVs of log values; "
          f"smallest change the machine-unit verdict flags with threshold +{thr:.1%}, alone (alpha {alpha}) and at the strictest Holm step over the "
          f"three splits (alpha {alpha}/3), and with threshold 0 alone:\n")
    print("| split | " + " | ".join(label[m] for m in machines) + " | CV within machines | CV of machine means | smallest flagged | at Holm's first step | at threshold 0 | raw CV (annotation kept) |")
    print("|---|" + "---|" * len(machines) + "---:|---:|---:|---:|---:|---:|")
    for d in ("1x4", "2x2", "4x1"):
        groups = {m: [cd.normalize(r["census"])["kernel_ms"] for r in by[d] if r["env"]["boot_id"] == m] for m in machines}
        within = [math.log(x) - fmean(math.log(y) for y in g) for g in groups.values() if len(g) > 1 for x in g]
        dfw = sum(len(g) - 1 for g in groups.values() if len(g) > 1)
        cv_within = math.sqrt(sum(x * x for x in within) / dfw) if dfw else float("nan")
        means = [fmean(math.log(x) for x in g) for g in groups.values()]
        raw = [math.log(r["census"]["kernel_ms"]) for r in by[d]]
        gl = [g for g in groups.values() if g]
        print(f"| {d} | " + " | ".join(", ".join(f"{x:.1f}" for x in groups[m]) for m in machines)
              + f" | {cv_within:.2%} | {stdev(means):.2%} | x{smallest_flagged(gl, alpha, thr):.3f} | x{smallest_flagged(gl, alpha / 3, thr):.3f} "
              f"| x{smallest_flagged(gl, alpha, 0.0):.3f} | {stdev(raw):.2%} |")
    walls = [r["wall_s"] for r in a]
    imports = median(r["timing_s"]["import_s"] for r in a)
    per_split = {d: median(r["wall_s"] for r in by[d]) for d in by}
    profiled = ", ".join(f"{d} {median(r['census']['overhead']['profiled_ms'] for r in by[d]):.0f} ms" for d in ("1x4", "2x2", "4x1"))
    print(f"\nCost: a census run takes {min(walls):.0f}-{max(walls):.0f} s of wall time (median {median(walls):.0f} s; imports {imports:.0f} s): "
          + ", ".join(f"{d} {v:.0f} s" for d, v in sorted(per_split.items()))
          + f", so a census of all three splits costs about {sum(per_split.values()) / 60:.1f} GPU-minutes; profiled steps take {profiled}.\n")
    print("Release pair on machine " + label[b[0]["env"]["boot_id"]] + ", census B (transformers 5.24.0) against census A of the same machine:\n")
    for rb in b:
        ra = next(r for r in a if r["env"]["boot_id"] == rb["env"]["boot_id"] and r["decomposition_id"] == rb["decomposition_id"])
        v = cd.verdict(ra["census"], rb["census"], CENSUS_TOLERANCES)
        print(f"- {rb['decomposition_id']}: {v.outcome}")
        for line in v.lines:
            print(f"  - {line}")
        t = cd.time_line(v.diff)
        print(f"  - {t}" if t else "", end="\n" if t else "")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
