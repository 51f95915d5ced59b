"""Sigma of the pair log ratio against block length k, per decomposition, on resident workers (A/A), and the
slowdown that a given --inject-work N makes. Writes every block to OUT/sweep.jsonl and prints the tables.

    PYTHONPATH=. python docs/results/interleave-cpu/sweep.py OUT [--rounds R] [--ks 1,2,4,8,16] [--decs 1x4,2x2,4x1] [--work 1,2,4,8]
        [--workload tiny-qwen3] [--gpu cpu] [--cpus 2,3] [--work-dec 2x2] [--work-k 10]

Part 1, per decomposition: one launch of A and B (same interpreter), a warm-up block each, then R rounds; each round runs
one pair per k, the ks in a shuffled order, the order inside each pair random. Part 2 (--work): one A and one B per N
(inject_work N), all resident at once on --work-dec (2x2) and k = --work-k (10); R rounds of one pair A/B_N per N, shuffled.
"""

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from statistics import fmean, median, stdev

from harness.files import append_jsonl
from harness.judging import paired as pd
from harness.measuring.resident import ResidentWorker
from harness.spec import Workload

ROOT = Path(__file__).resolve().parents[3]


def pair(a, b, k, rng):
    order = "ab" if rng.random() < 0.5 else "ba"
    got = {}
    for s in order:
        got[s] = (a if s == "a" else b).block(k)
    return order, got


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--ks", default="1,2,4,8,16")
    ap.add_argument("--decs", default="1x4,2x2,4x1")
    ap.add_argument("--work", default="")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workload", default="tiny-qwen3")
    ap.add_argument("--gpu", default="cpu")
    ap.add_argument("--cpus", default="", help="pin every worker to these CPUs, e.g. 2,3")
    ap.add_argument("--work-dec", default="2x2")
    ap.add_argument("--work-k", type=int, default=10)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "sweep.jsonl"
    w = Workload.load(ROOT / "workloads" / f"{a.workload}.toml")
    opts = {"gpu": a.gpu, "cpus": [int(x) for x in a.cpus.split(",") if x] or None}
    rng = random.Random(a.seed)
    ks = [int(x) for x in a.ks.split(",") if x]
    rows = []
    for dec_id in [d for d in a.decs.split(",") if d]:
        dec = w.decomposition(dec_id)
        t0 = time.time()
        with ResidentWorker("A", w, dec, out / "work", **opts) as wa, ResidentWorker("B", w, dec, out / "work", **opts) as wb:
            wa.start(wait=False), wb.start(wait=False)
            wa.wait_ready(), wb.wait_ready()
            start = time.time() - t0
            wa.block(w.measure.warmup_steps), wb.block(w.measure.warmup_steps)
            data = {k: [] for k in ks}
            for r in range(a.rounds):
                for k in rng.sample(ks, len(ks)):
                    order, got = pair(wa, wb, k, rng)
                    for s, rep in got.items():
                        append_jsonl(log, {"part": "k", "decomposition": dec_id, "round": r, "k": k, "side": s, "order": order,
                                           **{x: rep[x] for x in ("step_times_ms", "canary_ms", "wall_s", "cpu_s", "started_at", "other_cpus")}})
                    data[k].append(got)
        for k in ks:
            g = data[k]
            cpu = fmean(x["a"]["cpu_s"] + x["b"]["cpu_s"] for x in g)
            res = {"decomposition": dec_id, "k": k, "pairs": len(g), "cpu_s_per_pair": cpu, "startup_s": start,
                   "wall_s_per_pair": fmean(x["a"]["wall_s"] + x["b"]["wall_s"] for x in g),
                   "step_ms": median(t for x in g for s in "ab" for t in x[s]["step_times_ms"])}
            for how in ("mean", "median"):
                for drop in (False, True):
                    if drop and k == 1:
                        continue
                    d = [math.log(pd.block_metric(x["b"]["step_times_ms"], how, drop) / pd.block_metric(x["a"]["step_times_ms"], how, drop)) for x in g]
                    res[f"sigma_{how}{'_drop' if drop else ''}"] = stdev(d)
            res["resume"] = {s: (lambda rp: rp and round(rp.ratio, 3))(pd.resume_penalty([x[s]["step_times_ms"] for x in g])) for s in "ab"}
            c = [math.log(x["b"]["canary_ms"] / x["a"]["canary_ms"]) for x in g]
            d = [math.log(pd.block_metric(x["b"]["step_times_ms"], "mean") / pd.block_metric(x["a"]["step_times_ms"], "mean")) for x in g]
            res["canary_pair_corr"] = pd.correlation(c, d)
            rows.append(res)
            print(json.dumps(res), flush=True)
    print("\ndecomposition k pairs step_ms cpu_s/pair wall_s/pair sigma(mean) sigma(median) sigma(mean,drop1) sigma*sqrt(cpu) sigma(median)*sqrt(wall) "
          "resume(A,B) canary-corr")
    for r in rows:
        print(f"{r['decomposition']:>5} {r['k']:>3} {r['pairs']:>4} {r['step_ms']:7.1f} {r['cpu_s_per_pair']:7.3f} {r['wall_s_per_pair']:7.3f} {r['sigma_mean']:8.2%} "
              f"{r['sigma_median']:8.2%} {r.get('sigma_mean_drop', float('nan')):8.2%} {r['sigma_mean'] * math.sqrt(r['cpu_s_per_pair']):8.4f} "
              f"{r['sigma_median'] * math.sqrt(r['wall_s_per_pair']):8.4f} {r['resume']} {r['canary_pair_corr']:+.2f}")
    ns = [int(x) for x in a.work.split(",") if x]
    if ns:
        dec = w.decomposition(a.work_dec)
        workers = {"a": ResidentWorker("A", w, dec, out / "work", **opts)}
        workers.update({f"b{n}": ResidentWorker(f"B{n}", w, dec, out / "work", inject_work=n, **opts) for n in ns})
        try:
            for x in workers.values():
                x.start(wait=False)
            for x in workers.values():
                x.wait_ready()
                x.block(w.measure.warmup_steps)
            d = {(n, how): [] for n in ns for how in pd.METRICS}
            for r in range(a.rounds):
                for n in rng.sample(ns, len(ns)):
                    order, got = pair(workers["a"], workers[f"b{n}"], a.work_k, rng)
                    for s, rep in got.items():
                        append_jsonl(log, {"part": "work", "inject_work": n if s == "b" else 0, "round": r, "k": a.work_k, "side": s, "order": order,
                                           **{x: rep[x] for x in ("step_times_ms", "canary_ms", "wall_s", "cpu_s", "started_at", "other_cpus")}})
                    for how in pd.METRICS:
                        d[n, how].append(math.log(pd.block_metric(got["b"]["step_times_ms"], how) / pd.block_metric(got["a"]["step_times_ms"], how)))
        finally:
            for x in workers.values():
                x.close()
        print(f"\ninject_work N on {a.work_dec}, k={a.work_k}: slowdown B/A (mean of pair log ratios, 95% CI)")
        for n in ns:
            for how in pd.METRICS:
                e = pd.paired_estimate(d[n, how], 0.025)
                print(f"  N={n} ({how} of the block): x{e.ratio:.4f} [{e.lo:.4f}, {e.hi:.4f}] over {e.n} pairs")


if __name__ == "__main__":
    main(sys.argv[1:])
