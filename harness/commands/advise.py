"""``python -m harness advise``: which micro-batch x grad-accum split of an effective batch is fastest on this GPU, with evidence.

1. **Enumerate** every split ``micro x grad_accum`` of the effective batch (world size 1), largest micro-batch first
   (:meth:`harness.spec.Workload.with_splits`).
2. **Check fit.** One short fresh-process run per split (``--probe-steps`` after the warm-up): an out-of-memory result
   means "does not fit", with the allocator's message; every probe is kept in ``<results-dir>/probe/runs.jsonl``. The
   runner kills each worker's process group, so no GPU process is left behind.
3. **Compare** the splits that fit: the fastest by the probes (F) against each other split S, block-interleaved on two
   resident workers (:func:`harness.commands.interleave.interleave` with ``decomposition_b``; blocks of about
   ``--block-seconds``), each comparison stopping at its first conclusive look or at its share of ``--budget-minutes``.
   Both sides train the same effective batch per optimizer step, so the ratio of step times is the ratio of throughput.
4. **Answer**: the recommended split with its ratio against every other split (and the interval), its peak memory and,
   with a census run per split, what limits each split (host-bound or GPU-bound, kernel launches per sample, GPU busy
   fraction); a terminal table, ``report.md`` / ``report.json``, ``advice.png`` (step time and peak memory against the
   micro-batch) and the workload TOML lines that pin the split.
5. **Sanity.** Splits within ``--threshold`` of the fastest (a ``pass`` verdict: S is not slower than F by more than the
   threshold) tie with it; among ties the one with the least peak memory is recommended. If only micro-batch 1 fits,
   gradient accumulation is the only option, and the answer says so.

Exit code 0 with a recommendation, 1 when no split fits, 2 on bad input.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

from harness.files import ensure_dir, new_id, write_atomic, write_json_atomic
from harness.measuring.runner import RunRequest, run_one
from harness.spec import Decomposition, Workload, load_workload

GIB = 1024**3


def probe(w: Workload, splits: tuple[Decomposition, ...], root: Path, *, gpu: str, probe_steps: int, run_timeout: float,
          memory_limit_micro: int | None, census: bool, out: Callable[[str], None]) -> dict[str, dict]:
    """One short fresh run per split (and a census run per split that fits, with ``census``); the records by split id."""
    steps = w.measure.warmup_steps + probe_steps
    short = w.with_overrides(max_steps=steps)
    session = new_id("advise-probe")
    got: dict[str, dict] = {}
    for i, d in enumerate(splits, 1):
        fault = "oom@1" if memory_limit_micro is not None and d.micro_batch > memory_limit_micro else None
        rec = run_one(RunRequest(short, d, 1, fault=fault), root / "probe", session, run_timeout, gpu)
        step = rec.get("step_time_median_ms") if rec["status"] == "ok" else None  # the worker's median of the steady steps
        peak = rec.get("peak_reserved_bytes")
        mem = f", peak reserved {peak / GIB:.2f} GiB" if peak else ""
        out(f"[probe {i}/{len(splits)}] {d.id}: " + (f"fits, median step {step:.1f} ms{mem}" if rec["status"] == "ok"
                                                     else f"{'does not fit' if rec['status'] == 'oom' else rec['status']}: {rec.get('error', '')}"))
        entry = {"status": rec["status"], "error": rec.get("error"), "step_ms": step, "peak_reserved_bytes": peak, "run_id": rec.get("run_id")}
        if census and rec["status"] == "ok":
            c = run_one(RunRequest(short, d, 1, census=True), root / "census", session, run_timeout, gpu)
            entry["census"] = c.get("census") if c["status"] == "ok" else None
        got[d.id] = entry
    return got


def block_steps_for(step_ms: float, block_seconds: float) -> int:
    """Optimizer steps per block: about ``block_seconds`` of the slower side's steps, at least 1."""
    return max(1, math.ceil(block_seconds * 1000 / step_ms)) if step_ms and step_ms > 0 else 1


def recommend(splits: list[str], probes: dict[str, dict], compared: dict[str, dict], fastest: str | None) -> dict:
    """The answer from the probes and the interleaved verdicts of each split S against the fastest F (outcome of S/F).

    Pure: no runs. ``compared[S]`` has ``outcome`` (regression: S slower than F by more than the threshold; pass: not
    slower by more than it, a tie; improvement: S faster by more than it; inconclusive) and ``ratio``/``lo``/``hi`` of S/F."""
    fits = [s for s in splits if probes[s]["status"] == "ok"]
    if not fits:
        return {"recommended": None, "lines": ["no split fits on this device: every probe ran out of memory or failed"], "ties": []}
    lines = []
    best = fastest or fits[0]
    faster = [s for s in fits if compared.get(s, {}).get("outcome") == "improvement"]
    if faster:
        best = min(faster, key=lambda s: compared[s]["ratio"])
        lines.append(f"the probes ranked {fastest} first, but the interleaved comparison found {best} faster by more than the threshold")
    ties = sorted([best] + [s for s in fits if s != best and compared.get(s, {}).get("outcome") == "pass" and not faster],
                  key=lambda s: splits.index(s))
    rec = best
    if len(ties) > 1:
        mem = {s: probes[s].get("peak_reserved_bytes") for s in ties}
        if all(v is not None for v in mem.values()):
            rec = min(ties, key=lambda s: (mem[s], splits.index(s)))
            lines.append(f"{', '.join(ties)} tie (within the threshold of each other's speed): {rec} needs the least memory "
                         f"({mem[rec] / GIB:.2f} GiB)")
        else:
            lines.append(f"{', '.join(ties)} tie (within the threshold); no peak memory was measured here, so the fastest estimate, {best}, stays")
    open_ = [s for s in fits if s != best and compared.get(s, {}).get("outcome") in (None, "inconclusive") and s not in ties]
    if open_:
        lines.append(f"not separated from {best} with confidence within the budget: {', '.join(open_)} (more minutes narrow them)")
    elif len(fits) > 1 and not faster and len(ties) == 1:
        lines.append(f"{best} is faster than every other split that fits, each by more than the threshold, with confidence")
    if fits == [splits[-1]] and len(splits) > 1:
        lines.append(f"only micro-batch {splits[-1].split('x')[0]} fits: gradient accumulation is the only option on this device")
    return {"recommended": rec, "fastest": best, "ties": ties, "fits": fits, "open": open_, "lines": lines}


def toml_lines(w: Workload, rec: str, gpu: str, note: str) -> str:
    return (f"# {w.name} on {gpu}: {note} (python -m harness advise)\n[batch]\neffective = {w.effective_batch}\n"
            f'decompositions = ["{rec}"]\n')


def advise(*, gpu: str, workload: str, effective: int | None = None, budget_minutes: float = 10.0, probe_steps: int = 3,
           block_seconds: float = 0.8, pairs: int = 200, launches: int = 2, alpha: float = 0.05, threshold: float = 0.02,
           census: bool = True, cpus: list[int] | None = None, memory_limit_micro: int | None = None,
           workloads_dir: str | Path = "workloads", results_dir: str | Path = "perf-results/advise", run_timeout: float = 1800.0,
           out: Callable[[str], None] = print) -> int:
    """Run the advice (module docstring); ``memory_limit_micro`` (test-only) makes splits with a larger micro-batch run out of
    memory at their first step, as a GPU too small for them would."""
    from harness.commands.interleave import interleave

    t0 = time.time()
    if budget_minutes <= 0:
        raise ValueError(f"--budget-minutes must be positive, got {budget_minutes}")
    base = load_workload(workloads_dir, workload)
    w = base.with_splits(effective)
    splits = [d.id for d in w.decompositions]
    root = ensure_dir(results_dir)
    out(f"advise {w.name} on {gpu}: effective batch {w.effective_batch}, splits {', '.join(splits)} (largest micro-batch first); "
        f"budget {budget_minutes:g} min; results in {root}")
    probes = probe(w, w.decompositions, root, gpu=gpu, probe_steps=probe_steps, run_timeout=run_timeout,
                   memory_limit_micro=memory_limit_micro, census=census, out=out)
    fits = [s for s in splits if probes[s]["status"] == "ok"]
    fastest = min(fits, key=lambda s: probes[s]["step_ms"]) if fits else None
    compared: dict[str, dict] = {}
    others = sorted((s for s in fits if s != fastest), key=lambda s: probes[s]["step_ms"])
    for i, s in enumerate(others):
        left = budget_minutes - (time.time() - t0) / 60
        share = left / (len(others) - i)
        if share < 0.5:
            out(f"{s} against {fastest}: not compared, {left:.1f} min of the budget left")
            continue
        k = block_steps_for(max(probes[s]["step_ms"], probes[fastest]["step_ms"]), block_seconds)
        code = interleave(gpu=gpu, workload=w, decomposition=fastest, decomposition_b=s, block_steps=k, pairs=pairs, launches=launches,
                          look_every=max(2, pairs // 8), budget_minutes=share, alpha=alpha, threshold=threshold, cpus=cpus,
                          results_dir=root / f"{s}-vs-{fastest}", run_timeout=run_timeout, out=lambda line: out(f"  {line}"))
        rep_path = root / f"{s}-vs-{fastest}" / "report.json"
        v = (json.loads(rep_path.read_text()).get("verdict") if rep_path.exists() else None) or {}
        compared[s] = {"outcome": v.get("outcome", "inconclusive"), "ratio": v.get("ratio"), "lo": v.get("lo"), "hi": v.get("hi"),
                       "message": v.get("message", f"no verdict (exit code {code})"), "block_steps": k}
    answer = recommend(splits, probes, compared, fastest)
    report = {"workload": w.name, "gpu": gpu, "effective_batch": w.effective_batch, "splits": splits, "probes": probes, "fastest_probe": fastest,
              "compared": compared, "answer": answer, "threshold": threshold, "alpha": alpha, "budget_minutes": budget_minutes,
              "wall_s": time.time() - t0}
    lines = report_lines(report, w)
    for ln in lines:
        out(ln)
    write_json_atomic(root / "report.json", report)
    write_atomic(root / "report.md", "# advise " + w.name + f" on {gpu}, effective batch {w.effective_batch}\n\n```\n" + "\n".join(lines) + "\n```\n")
    try:
        plot(report, root / "advice.png")
    except Exception as exc:  # a plot never costs the measurements
        out(f"(no plot: {exc})")
    return 0 if answer["recommended"] else 1


def report_lines(r: dict, w: Workload) -> list[str]:
    from harness.reporting.report import diagnosis, diagnosis_text

    a = r["answer"]
    rec = a.get("recommended")
    head = f"{'split':<7} {'fits':<13} {'probe step ms':>13} {'peak GiB':>9} {'vs ' + (rec or '-') + ' [interval]':>28}  diagnosis"
    lines = [head, "-" * len(head)]
    for s in r["splits"]:
        p = r["probes"][s]
        fits = "yes" if p["status"] == "ok" else ("no (OOM)" if p["status"] == "oom" else p["status"])
        step = f"{p['step_ms']:.1f}" if p.get("step_ms") else "-"
        peak = f"{p['peak_reserved_bytes'] / GIB:.2f}" if p.get("peak_reserved_bytes") else "-"
        c = r["compared"].get(s)
        if s == rec:
            vs = "recommended"
        elif c and c.get("ratio") and rec == r["fastest_probe"]:
            vs = f"x{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] {c['outcome']}"
        elif c and c.get("ratio"):
            vs = f"x{c['ratio']:.3f} vs {r['fastest_probe']} {c['outcome']}"
        else:
            vs = "-"
        diag = ""
        if p.get("census"):
            diag = diagnosis_text(diagnosis(p["census"], p.get("step_ms"), w, r["gpu"]))
        lines.append(f"{s:<7} {fits:<13} {step:>13} {peak:>9} {vs:>28}  {diag}")
    lines.append("")
    for s in r["splits"]:
        if r["probes"][s]["status"] == "oom":
            lines.append(f"{s} does not fit: {r['probes'][s]['error']}")
    if rec:
        lines.append(f"RECOMMENDED: {rec} (effective batch {r['effective_batch']} on {r['gpu']})")
    lines += a["lines"]
    if rec:
        note = "; ".join(a["lines"][:1]) or "fastest split"
        lines += ["", "pin it in the workload:", *toml_lines(w, rec, r["gpu"], note).splitlines()]
    return lines


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    micro = [int(s.split("x")[0]) for s in r["splits"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    ok = [(m, r["probes"][s]) for m, s in zip(micro, r["splits"]) if r["probes"][s]["status"] == "ok"]
    ax.plot([m for m, _ in ok], [p["step_ms"] for _, p in ok], "o-", color="C0", label="median step (probe)")
    for m, s in zip(micro, r["splits"]):
        if r["probes"][s]["status"] != "ok":
            ax.axvline(m, color="C3", ls=":", lw=1)
            ax.annotate("does not fit", (m, ax.get_ylim()[1] if ok else 1), color="C3", rotation=90, va="top", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("micro-batch (grad accum = effective / micro)")
    ax.set_ylabel("ms per optimizer step", color="C0")
    mem = [(m, p["peak_reserved_bytes"] / GIB) for m, p in ok if p.get("peak_reserved_bytes")]
    if mem:
        ax2 = ax.twinx()
        ax2.plot([m for m, _ in mem], [g for _, g in mem], "s--", color="C1", label="peak reserved")
        ax2.set_ylabel("peak reserved GiB", color="C1")
    rec = r["answer"].get("recommended")
    ax.set_title(f"{r['workload']} on {r['gpu']}, effective batch {r['effective_batch']}: recommended {rec or 'none'}")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
