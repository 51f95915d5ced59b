"""Section-2 figures of docs/results/h200.md from the raw runs under docs/results/h200-raw/.

    python docs/results/h200_figures.py docs/results/h200-raw > docs/results/h200-figures.md
"""

import json
import math
import sys
from pathlib import Path
from statistics import fmean, median

from harness.judging.simulate import min_detectable_slowdown
from harness.judging.stats import RuntimeCheck, Sample, log_ratio, smallest_flagged
from harness.record import PHASES, median_phases, run_phases


def runs(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "runs.jsonl").read_text().splitlines() if x.strip()]


def log_cv(values):
    lv = [math.log(v) for v in values]
    m = fmean(lv)
    return math.sqrt(sum((x - m) ** 2 for x in lv) / (len(lv) - 1)) if len(lv) > 1 else float("nan")


BASELINE_DIRS = ("100steps", "100steps-s2")  # device session 1 (rounds 1-2) and session 2 (rounds 3-5): the first baseline
CHECK_DIR = "aa-s3"  # device sessions 3-4, leases 3 and 4: `pytest perftests --gpu=h200 -k qwen3` against the first baseline
LEASE5 = "lease5"  # device session 4, lease 5: one plain round, then 4x1 with --inject-slowdown 0.5 against leases 1-4
LEASE6 = "lease6"  # device session 4, lease 6: one plain round; its runs.jsonl did not come back, report.json did
COMMITTED = (*BASELINE_DIRS, CHECK_DIR, f"{LEASE5}/round")  # the committed baseline: 11 runs each over leases 1-5


def medians(d: Path, dec: str) -> list[float]:
    return [r["step_time_median_ms"] for r in runs(d) if r["decomposition_id"] == dec and r["status"] == "ok"]


def machines(root: Path, dirs, dec: str) -> dict[str, list[float]]:
    """Run medians of ``dec`` per machine, as the baseline groups them: boot id, else the results dir."""
    out: dict[str, list[float]] = {}
    for d in dirs:
        for r in runs(root / d):
            if r["decomposition_id"] == dec and r["status"] == "ok":
                out.setdefault(r["env"].get("boot_id") or f"dir:{d}", []).append(r["step_time_median_ms"])
    return out


def gmean(values) -> float:
    return math.exp(fmean(map(math.log, values)))


def leases(root: Path, decs: list[str]) -> None:
    """Each lease's mean step time: how far machines of one kind differ, against how far runs on one differ."""
    print("\n### Between machine leases (one row per lease; machine = boot id, or results dir for runs made before boot ids were recorded)\n")
    per = {d: list(machines(root, COMMITTED, d).values()) for d in decs}
    six = {r["decomposition"]: [r["step_time_ms"]["median"]] for r in json.loads((root / LEASE6 / "report.json").read_text())["rows"]}
    for d in decs:
        per[d].append(six[d])
    names = ["1 (100steps)", "2 (100steps-s2)", "3 (aa-s3, rounds 1-4)", "4 (aa-s3, round 5)", "5 (lease5/round)", "6 (lease6, report.json)"]
    print("| lease | runs | " + " | ".join(f"{d.replace('x', ' × ')} mean step ms" for d in decs) + " | " + " / ".join(decs) + " vs lease 1 |")
    print("|---|---:|" + "---:|" * len(decs) + "---|")
    for i, name in enumerate(names):
        means = [gmean(per[d][i]) for d in decs]
        print(f"| {name} | {len(per[decs[0]][i])} | " + " | ".join(f"{m:.0f}" for m in means) + " | "
              + " / ".join(f"x{m / gmean(per[d][0]):.2f}" for m, d in zip(means, decs)) + " |")
    between = {d: log_cv([gmean(g) for g in per[d]]) for d in decs}
    within = {d: math.sqrt(fmean([log_cv(g) ** 2 for g in per[d] if len(g) > 1])) for d in decs}
    print("\nLog-sd of the 6 lease means: " + ", ".join(f"{d} {between[d]:.1%}" for d in decs)
          + "; of runs within a lease (pooled over leases with 2+ runs): " + ", ".join(f"{d} {within[d]:.1%}" for d in decs) + ".")
    t = {d: gmean([v for g in per[d] for v in g]) for d in decs}
    print(f"Over all 6 leases 1 × 4 takes x{t['1x4'] / t['4x1']:.2f} the step time of 4 × 1 and 2 × 2 x{t['2x2'] / t['4x1']:.2f} (geometric means of run medians).")


def main(root: Path) -> None:
    full = [r for d in BASELINE_DIRS for r in runs(root / d)]
    decs = ["1x4", "2x2", "4x1"]
    by = {d: [r for r in full if r["decomposition_id"] == d and r["status"] == "ok"] for d in decs}
    print("### Per decomposition, 100 steps (qwen3-1.7b-lora, fp16; rounds 1-5 on leases 1-2, the first baseline)\n")
    print("| micro × GA | runs | train_runtime s | median step ms | CV step (log sd) | CV train_runtime | peak reserved GiB | tokens/s | phases ms/step data / fwd / bwd / opt / other | NVML busy | process wall s | outside training s |")
    print("|---|---:|---|---|---:|---:|---:|---:|---|---:|---|---|")
    wall_total = {}
    for d in decs:
        rs = by[d]
        st = [r["step_time_median_ms"] for r in rs]
        rt = [r["train_runtime_s"] for r in rs]
        ph = median_phases([run_phases(r) for r in rs])
        util = median(g["util_pct"] for r in rs for g in r["gpu_samples"]) / 100
        outside = [r["wall_s"] - r["train_runtime_s"] for r in rs]
        wall_total[d] = fmean(r["wall_s"] for r in rs)
        walls = ", ".join(f"{r['wall_s']:.0f}" for r in rs)
        print(f"| {d.replace('x', ' × ')} | {len(rs)} | {', '.join(f'{x:.1f}' for x in rt)} | {', '.join(f'{x:.0f}' for x in st)} | {log_cv(st):.1%} | {log_cv(rt):.1%} | "
              f"{rs[0]['peak_reserved_bytes'] / 2**30:.2f} | {median(r['tokens_per_s'] for r in rs):.0f} | "
              f"{' / '.join(f'{ph[p]:.1f}' for p in ph)} | {util:.0%} | {walls} | {', '.join(f'{x:.1f}' for x in outside)} |")
    leases(root, decs)
    t = {d: Sample(tuple(r["step_time_median_ms"] for r in by[d])).median for d in decs}
    print(f"\nRounds 1-5: 1 × 4 takes x{t['1x4'] / t['4x1']:.2f} the step time of 4 × 1, 2 × 2 x{t['2x2'] / t['4x1']:.2f} (medians of run medians).\n")
    imports = ", ".join(f"{r['timing_s']['import_s']:.1f}" for d in decs for r in by[d])
    print("Time outside training per run (process wall − train_runtime): start-up, imports "
          f"({imports} s), model build "
          f"({median(r['timing_s']['model_build_s'] for d in decs for r in by[d]):.1f} s), data "
          f"({median(r['timing_s']['data_build_s'] for d in decs for r in by[d]):.2f} s), trainer setup "
          f"({median(r['timing_s']['trainer_setup_s'] for d in decs for r in by[d]):.1f} s) and the Trainer's own start/stop.")
    session = sum(wall_total.values())
    outside = sum(fmean(r["wall_s"] - r["train_runtime_s"] for r in by[d]) for d in decs)
    print(f"One interleaved round of the three decompositions: {session:.0f} s of GPU time, of which {outside:.0f} s ({outside / session:.0%}) outside training.")
    print(f"A full session at the default 5 repeats: {5 * session / 60:.0f} GPU minutes; recording a baseline costs the same.\n")

    ov = runs(root / "overhead-4x1-15steps")
    on = [r["step_time_median_ms"] for r in ov if r["phases_enabled"]]
    off = [r["step_time_median_ms"] for r in ov if not r["phases_enabled"]]
    e = log_ratio(off, on, 0.05)
    print("### Run-to-run variation and instrumentation overhead (4 × 1, 15 steps, ABBA, 5 pairs)\n")
    print(f"Run medians, phases on: {', '.join(f'{x:.0f}' for x in on)} ms; off: {', '.join(f'{x:.0f}' for x in off)} ms.")
    print(f"Log-sd between runs, all 10: {log_cv(on + off):.1%}. Overhead on/off: {(e.ratio - 1) * 100:+.2f}%, 90% CI [{(e.lo - 1) * 100:+.1f}%, {(e.hi - 1) * 100:+.1f}%]:"
          " the between-run noise is far larger than any overhead, so this A/B cannot resolve 1%.\n")
    cv_all = {d: log_cv([r["step_time_median_ms"] for r in by[d]]) for d in decs}
    cv_short = log_cv(on + off)
    print("### Minimum detectable slowdown (power 0.9, alpha 0.05, threshold 5%, Holm over 3 runtime comparisons)\n")
    print("| CV used | baseline 5 vs session 5 (default) | 5 vs 10 | 10 vs 10 | 20 vs 20 |")
    print("|---|---:|---:|---:|---:|")
    for name, cv in [*((f"{d}, 100 steps, {len(by[d])} runs: {cv_all[d]:.1%}", cv_all[d]) for d in decs), (f"4x1, 15 steps, 10 runs: {cv_short:.1%}", cv_short)]:
        print(f"| {name} | " + " | ".join(f"{min_detectable_slowdown(cv, nb, nc, 0.05, 0.05, cases=3):.1%}" for nb, nc in ((5, 5), (5, 10), (10, 10), (20, 20))) + " |")
    print()
    check = root / "check-4x1-s2"
    aa, inj = (medians(check / k, "4x1") for k in ("aa", "inj"))
    print("### Verdicts on the GPU: A/A and --inject-slowdown 0.05, 4 × 1, 100 steps, 3 runs each, interleaved\n")
    print(f"Run medians, plain: {', '.join(f'{x:.0f}' for x in aa)} ms; injected 5%: {', '.join(f'{x:.0f}' for x in inj)} ms.")
    e = log_ratio(aa, inj, 0.05)
    print(f"Injected / plain in the same lease: x{e.ratio:.3f}, 90% CI [{e.lo:.3f}, {e.hi:.3f}].\n")
    groups = [medians(root / d, "4x1") for d in BASELINE_DIRS]
    print("| session against the baseline | unit: machine (the suite; 2 baseline machines) | unit: run (pooling the baseline's 5 runs) |")
    print("|---|---|---|")
    for name, cur in (("A/A", aa), ("injected 5%", inj)):
        cells = []
        for base in (groups, [v for g in groups for v in g]):  # grouped by machine (the suite), then pooled
            v = RuntimeCheck(0.05, 0.05).decide({"4x1": (base, cur)})["4x1"]
            e = v.details
            cells.append(f"x{e['ratio']:.3f} [{e['lo']:.3f}, {e['hi']:.3f}], p(ratio <= 1.05) = {e['p_regression']:.3f}: {v.outcome}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    print("\nSmallest estimate flagged as a regression against this baseline (unit: machine, threshold 5%):")
    for d in decs:
        g = [medians(root / name, d) for name in BASELINE_DIRS]
        print(f"- {d}: x{smallest_flagged(g, 0.05, 0.05):.2f} alone (alpha 0.05), x{smallest_flagged(g, 0.05 / 3, 0.05):.2f} at the first Holm step of 3")
    print()
    print(f"Minimum detectable slowdown of this check if all runs came from one machine (run as unit, 3 vs 5 runs, one comparison, CV {cv_all['4x1']:.1%}): "
          f"{min_detectable_slowdown(cv_all['4x1'], 5, 3, 0.05, 0.05):.1%}; at 5 vs 5: {min_detectable_slowdown(cv_all['4x1'], 5, 5, 0.05, 0.05):.1%}.\n")
    aa_session(root, decs)
    inject_half(root)
    committed(root, decs)
    prof = runs(root / "profile-12steps")
    print("### GPU kernel time against step time (torch.profiler over steps 6–9 of 12)\n")
    print("| micro × GA | wall ms/step (profiled) | kernel ms/step | kernel launches/step | GPU busy (kernel/wall) | median step ms, same run |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in prof:
        p = r["profile"]
        print(f"| {r['decomposition_id'].replace('x', ' × ')} | {p['wall_ms_per_step']:.0f} | {p['kernel_ms_per_step']:.0f} | {p['kernels_per_step']:.0f} | {p['gpu_busy_fraction']:.0%} | {r['step_time_median_ms']:.0f} |")
    oom = runs(root / "oom-probe")[0]
    print(f"\n### Out of memory\n\n`oom-probe` ({oom['decomposition_id']}): status `{oom['status']}`, `{oom['error']}`; wall {oom['wall_s']:.0f} s; the session went on.")


def aa_session(root: Path, decs: list[str]) -> None:
    """The full A/A session of a fresh checkout (rounds 1-4 on lease 3, round 5 with --resume on lease 4)
    against the first baseline: the suite's verdicts and the run-level counterfactual."""
    recs = runs(root / CHECK_DIR)
    print(f"### A/A: a fresh checkout, `pytest perftests --gpu=h200 -k qwen3` against the first baseline (leases 1-2), "
          f"on leases 3 and 4 ({CHECK_DIR}/, {len(recs)} runs)\n")
    groups = {d: [medians(root / name, d) for name in BASELINE_DIRS] for d in decs}
    cur = {d: medians(root / CHECK_DIR, d) for d in decs}
    print("| micro × GA | run medians ms | unit: machine (the suite; Holm over 3) | unit: run (pooled baseline runs; Holm over 3) |")
    print("|---|---|---|---|")
    verdicts = [RuntimeCheck(0.05, 0.05).decide({d: (base[d], cur[d]) for d in decs}) for base in
                (groups, {d: [v for g in groups[d] for v in g] for d in decs})]
    for d in decs:
        cells = [f"x{v[d].details['ratio']:.3f} [{v[d].details['lo']:.3f}, {v[d].details['hi']:.3f}], "
                 f"p(ratio <= 1.05) = {v[d].details['p_regression']:.3f}: {v[d].outcome}" for v in verdicts]
        print(f"| {d.replace('x', ' × ')} | {', '.join(f'{x:.0f}' for x in cur[d])} | {cells[0]} | {cells[1]} |")
    print()


def inject_half(root: Path) -> None:
    """4x1 slowed by 50% on a fifth lease, judged against leases 1-4, next to that lease's own plain round."""
    inj = runs(root / LEASE5 / "inj")
    plain = {r["decomposition_id"]: r for r in runs(root / LEASE5 / "round")}
    base4 = {d: list(machines(root, (*BASELINE_DIRS, CHECK_DIR), d).values()) for d in plain}
    cur = [r["step_time_median_ms"] for r in inj]
    v = RuntimeCheck(0.05, 0.05).decide({"4x1": (base4["4x1"], cur)})["4x1"]
    e = v.details
    print(f"### --inject-slowdown 0.5, 4 × 1, 3 runs on a fifth lease, against the baseline of leases 1-4 ({LEASE5}/inj)\n")
    print(f"Run medians: {', '.join(f'{x:.0f}' for x in cur)} ms. The suite: x{e['ratio']:.3f} [{e['lo']:.3f}, {e['hi']:.3f}], "
          f"p(ratio <= 1.05) = {e['p_regression']:.3f}: {v.outcome} (flagged above x{smallest_flagged(base4['4x1'], 0.05, 0.05):.2f}).")
    print("The same lease's plain round, against the mean of leases 1-4: "
          + ", ".join(f"{d} {plain[d]['step_time_median_ms']:.0f} ms (x{plain[d]['step_time_median_ms'] / gmean([gmean(g) for g in base4[d]]):.2f})" for d in plain) + ".")
    ph = PHASES
    a, b = run_phases(plain["4x1"]), median_phases([run_phases(r) for r in inj])
    print("Phases, ms per step, plain 4 × 1 run → injected runs (median): " + ", ".join(f"{p} {a[p]:.0f} → {b[p]:.0f}" for p in ph)
          + f"; without `other` (where the injected sleep lives): {sum(a[p] for p in ph[:4]):.0f} → {sum(b[p] for p in ph[:4]):.0f}.\n")


def committed(root: Path, decs: list[str]) -> None:
    """What the committed baseline (leases 1-5) can flag, against the first one (leases 1-2)."""
    print("### What the committed baseline can flag (leases 1-5, 11 runs each; unit: machine, threshold 5%)\n")
    for d in decs:
        g = list(machines(root, COMMITTED, d).values())
        first = [medians(root / name, d) for name in BASELINE_DIRS]
        print(f"- {d}: x{smallest_flagged(g, 0.05, 0.05):.2f} alone, x{smallest_flagged(g, 0.05 / 3, 0.05):.2f} at the first Holm step of 3"
              f" (first baseline, 2 machines: x{smallest_flagged(first, 0.05, 0.05):.2f}, x{smallest_flagged(first, 0.05 / 3, 0.05):.2f})")
    print()
    imports(root)


def imports(root: Path) -> None:
    """Where the 12-20 s of imports per run go (python3 -X importtime on the H200, second of two runs)."""
    lines = (root / "importtime" / "importtime-2.txt").read_text().splitlines()
    top = [(ln.split("|")[2].strip(), int(ln.split("|")[1]) / 1e6) for ln in lines
           if ln.startswith("import time:") and ln.split("|")[1].strip().isdigit() and not ln.split("|")[2].startswith("  ")]
    nested = {n.strip(): int(c) / 1e6 for ln in lines if ln.startswith("import time:") and (c := ln.split("|")[1].strip()).isdigit()
              for n in [ln.split("|")[2]]}
    walls = [ln for f in ("importtime-1.txt", "importtime-2.txt") for ln in (root / "importtime" / f).read_text().splitlines() if ln.startswith("wall")]
    print("### Imports (`python3 -X importtime -c \"import torch, transformers, peft, trl, datasets; import harness.worker\"`, twice)\n")
    print(f"Wall: {', '.join(w.split()[1] for w in walls)} s. Top-level, cumulative: "
          + ", ".join(f"{n} {t:.1f} s" for n, t in sorted(top, key=lambda x: -x[1]) if t >= 0.3)
          + f". Inside peft: transformers.models.auto.auto_factory {nested['transformers.models.auto.auto_factory']:.1f} s, of which "
          f"sklearn {nested['sklearn']:.1f} s (through transformers.generation.candidate_generator) and torch._dynamo {nested['torch._dynamo']:.1f} s.\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
