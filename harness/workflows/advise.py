"""``python -m harness advise``: which micro-batch x grad-accum split of an effective batch is fastest on this GPU, with evidence.

1. **Enumerate** every split ``micro x grad_accum`` of the effective batch (world size 1), largest micro-batch first
   (:meth:`harness.spec.Workload.with_splits`).
2. **Check fit.** A probe per split ``m x G``: a short run of ``m x 1`` (``--probe-steps`` timed steps after the warm-up,
   then a census window), every probe in one worker process (the imports are paid once), largest micro-batch first. An
   out-of-memory result means "does not fit", with the allocator's message, and the next probe runs; every probe is kept
   in ``<results-dir>/probe/runs.jsonl`` as soon as it ends. The runner kills the worker's process group, so no GPU process
   is left behind. A split's step is estimated from its probe (:func:`estimate_step`): a probe of a whole ``1 x 64``
   step would take 64 micro-batches, and the time per micro-batch does not depend on how many are accumulated.
3. **Compare** the splits that fit: the fastest by the estimates (F) against each other split S, block-interleaved on two
   resident workers that train the real splits (:func:`harness.sidebyside.run.interleave` with ``decomposition_b``;
   blocks of about ``--block-seconds``), each comparison stopping at its first conclusive look or at its share of
   ``--budget-minutes``. Both sides train the same effective batch per optimizer step, so the ratio of step times is the
   ratio of throughput. The nearest split is always compared; a split beyond it estimated more than ``--screen`` times
   slower than F (default 1.5, several times the launch-to-launch spread of one machine; widened by the probe series'
   drift) is called slower without a comparison: its ratio is the estimate, marked "screened", with no interval.
4. **Answer**: the recommended split with its ratio against every other split (and the interval), its peak memory and,
   from each probe's census, what limits each split (host-bound or GPU-bound, kernel launches per sample, GPU busy
   fraction); a terminal table, ``report.md`` / ``report.json``, ``advice.png`` (step time and peak memory against the
   micro-batch) and the workload TOML lines that pin the split.
5. **Sanity.** Splits within ``--threshold`` of the fastest (a ``pass`` verdict: S is not slower than F by more than the
   threshold) tie with it; among ties the one with the least peak memory is recommended. If only micro-batch 1 fits,
   gradient accumulation is the only option, and the answer says so.

Each comparison is read from its own report only (one with the id of the run advise started); an earlier advice's
report in the results dir is removed when this one starts. Exit code 0 with a recommendation; 3 when no split fits (every
probe out of memory or failed) or a comparison failed to measure (a worker died; the answer is still written); 2 on bad
input; 130 and 143 on Ctrl-C and SIGTERM (docs/exit-codes.md).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

from harness import exits
from harness.errors import BadInput
from harness.files import ensure_dir, new_id, refuse_link, write_atomic, write_json_atomic
from harness.judging.census_diff import window_plan
from harness.judging.thresholds import ALPHA, INTERLEAVED
from harness.measuring.runner import RUN_TIMEOUT_S, RunRequest, run_one
from harness.results.advice import Advice
from harness.sidebyside.config import ComparisonConfig
from harness.spec import Decomposition, Workload, load_workload

GIB = 1024**3


def probe(w: Workload, splits: tuple[Decomposition, ...], root: Path, *, gpu: str, probe_steps: int, run_timeout: float,
          memory_limit_micro: int | None, census: bool, out: Callable[[str], None]) -> tuple[dict[str, dict], dict | None]:
    """The fit probes: for each split ``m x G``, a short run of ``m x 1`` (one micro-batch per optimizer step), all in one
    worker process (:func:`harness.measuring.worker.train_series`), largest micro-batch first; each record is kept in
    ``<root>/probe/runs.jsonl``. Per split: fits or not (with the allocator's message), peak memory (a LoRA split's memory
    is its micro-batch's: the accumulated adapter gradients are tiny), the median of ``probe_steps`` steps after the warm-up,
    the census of the steps after those (with ``census``), and :func:`estimate_step` of the whole split.

    Drift check: the series opens with the smallest micro-batch's probe (timed steps only) and ends with it, so a process
    or machine that slows down over the series shows as ``drift``, the ratio of the last to the first of those two
    (None when that probe failed). The estimates of splits probed later carry up to that factor."""
    session = new_id("advise-probe")
    items = []
    for d in splits:
        wm = w.with_splits(d.micro_batch)
        one = wm.decomposition(f"{d.micro_batch}x1")
        warm = wm.measure.warmup_steps
        steps = warm + probe_steps
        if census:  # the census window: whole logging periods after the timed steps (harness.judging.census_diff.window_plan)
            plan = window_plan(steps, wm.train.logging_steps, 10**9)
            steps = plan["start"] + plan["n"]
        fault = "oom@1" if memory_limit_micro is not None and d.micro_batch > memory_limit_micro else None
        items.append(RunRequest(wm.with_overrides(max_steps=steps), one, 1, fault=fault, census=census, timed_steps=probe_steps))
    out(f"probing {len(splits)} micro-batch sizes in one worker process ({probe_steps} timed steps each after the warm-up"
        + (", then a census window" if census else "") + ")")
    anchor = dataclasses.replace(items[-1], census=False, workload=items[-1].workload.with_overrides(
        max_steps=items[-1].workload.measure.warmup_steps + probe_steps))
    rec = run_one(dataclasses.replace(items[0], series=(anchor, *items)), root / "probe", session, run_timeout, gpu)
    first, *series = rec["series"]
    last = series[-1]
    drift = None
    if first["status"] == last["status"] == "ok" and first.get("step_time_median_ms") and last.get("step_time_median_ms"):
        drift = {"first_ms": first["step_time_median_ms"], "last_ms": last["step_time_median_ms"],
                 "ratio": last["step_time_median_ms"] / first["step_time_median_ms"], "probe": items[-1].decomposition.id}
        out(f"drift check: {drift['probe']} probed first and last in the series: {drift['first_ms']:.1f} -> {drift['last_ms']:.1f} ms "
            f"(x{drift['ratio']:.3f})")
    got: dict[str, dict] = {}
    for i, (d, r) in enumerate(zip(splits, series), 1):
        ok = r["status"] == "ok"
        step = r.get("step_time_median_ms") if ok else None
        peak = r.get("peak_reserved_bytes")
        est = estimate_step(r, d.grad_accum, probe_steps) if ok else None
        mem = f", peak reserved {peak / GIB:.2f} GiB" if peak else ""
        out(f"[probe {i}/{len(splits)}] {d.id}: " + (f"fits; {d.micro_batch}x1 median step {step:.1f} ms, so about {est:.0f} ms per {d.id} step{mem}"
                                                     if ok else f"{'does not fit' if r['status'] == 'oom' else r['status']}: {r.get('error', '')}"))
        got[d.id] = {"status": r["status"], "error": r.get("error"), "probe_ms": step, "step_ms": est, "peak_reserved_bytes": peak,
                     "run_id": r.get("run_id"), "census": r.get("census") if ok and census else None, "probe_workload": f"{d.micro_batch}x1"}
    return got, drift


def estimate_step(rec: dict, grad_accum: int, timed: int) -> float:
    """Milliseconds per optimizer step of ``m x grad_accum`` from a probe of ``m x 1``: the per-micro-batch part of the probe's
    ``timed`` steps after the warm-up (data, forward, backward: the phase medians) ``grad_accum`` times, plus the per-step rest (optimizer,
    logging, everything else) once. Without phases, ``grad_accum`` times the whole median step (an overestimate by the
    per-step rest, ``grad_accum - 1`` times)."""
    step = rec["step_time_median_ms"]
    warm = rec.get("warmup_steps") or 0
    ph = rec.get("phases_ms") or {}
    micro = [median(v[warm:warm + timed] or v) for k in ("data", "forward", "backward") if (v := ph.get(k))]
    if len(micro) < 3:
        return grad_accum * step
    per_micro = min(sum(micro), step)
    return grad_accum * per_micro + (step - per_micro)


def block_steps_for(step_ms: float, block_seconds: float) -> int:
    """Optimizer steps per block: about ``block_seconds`` of the slower side's steps, at least 1."""
    return max(1, math.ceil(block_seconds * 1000 / step_ms)) if step_ms and step_ms > 0 else 1


STARTUP_S = 30.0  # what a launch of two resident workers is planned to cost, with a margin (docs/evidence/the-advisor-on-an-h200/)


def pairs_for(seconds: float, k: int, pair_step_ms: float, launches: int, most: int) -> int:
    """Pairs to plan for a comparison of ``seconds``: what fits after ``launches`` start-ups, at ``k`` steps of each side per
    pair (``pair_step_ms``: one step of each, estimated), so that every launch gets its share of the pairs before the budget
    ends; at least 4 per launch and at most ``most``."""
    fit = (seconds - launches * STARTUP_S) / (k * pair_step_ms / 1000.0) if pair_step_ms > 0 else most
    return int(min(most, max(4 * launches, fit)))


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
           block_seconds: float = 0.8, pairs: int = 200, launches: int = 2, alpha: float = ALPHA, threshold: float = INTERLEAVED,
           census: bool = True, screen: float = 1.5, cpus: list[int] | None = None, memory_limit_micro: int | None = None,
           workloads_dir: str | Path = "workloads", results_dir: str | Path = "perf-results/advise", run_timeout: float = RUN_TIMEOUT_S,
           out: Callable[[str], None] = print) -> Advice:
    """Run the advice (module docstring) and return it; ``memory_limit_micro`` (test-only) makes splits with a larger micro-batch run out of
    memory at their first step, as a GPU too small for them would."""
    from harness.sidebyside.run import interleave

    t0 = time.time()
    if budget_minutes <= 0:
        raise BadInput(f"--budget-minutes must be positive, got {budget_minutes}")
    if screen <= 1:
        raise BadInput(f"--screen must be above 1 (a ratio of estimated step times), got {screen}")
    base = load_workload(workloads_dir, workload)
    w = base.with_splits(effective)
    splits = [d.id for d in w.decompositions]
    root = ensure_dir(results_dir)
    for name in ("report.json", "report.md", "probe"):
        refuse_link(root / name)
    for name in ("report.json", "report.md"):  # an earlier advice's: never read as this one's, whatever stops this
        (root / name).unlink(missing_ok=True)
    out(f"advise {w.name} on {gpu}: effective batch {w.effective_batch}, splits {', '.join(splits)} (largest micro-batch first); "
        f"budget {budget_minutes:g} min; results in {root}")
    probes, drift = probe(w, w.decompositions, root, gpu=gpu, probe_steps=probe_steps, run_timeout=run_timeout,
                   memory_limit_micro=memory_limit_micro, census=census, out=out)
    fits = [s for s in splits if probes[s]["status"] == "ok"]
    fastest = min(fits, key=lambda s: probes[s]["step_ms"]) if fits else None
    compared: dict[str, dict] = {}
    failed: list[str] = []
    others = sorted((s for s in fits if s != fastest), key=lambda s: probes[s]["step_ms"])
    # the screen widens by the drift seen over the probe series; the nearest split is always compared
    wide = screen * (max(drift["ratio"], 1 / drift["ratio"]) if drift else 1.0)
    for s in [s for s in others[1:] if probes[s]["step_ms"] > wide * probes[fastest]["step_ms"]]:
        r = probes[s]["step_ms"] / probes[fastest]["step_ms"]
        compared[s] = {"outcome": "regression", "ratio": r, "lo": None, "hi": None, "screened": True,
                       "message": f"estimated x{r:.2f} of {fastest} by the probes, beyond the screen x{wide:.2f}: not interleaved"}
        out(f"{s}: estimated x{r:.2f} of {fastest} by the probes (beyond the screen, x{wide:.2f}): slower, not interleaved")
    others = [s for s in others if s not in compared]
    for i, s in enumerate(others):
        left = budget_minutes - (time.time() - t0) / 60
        share = left / (len(others) - i)
        if share < 0.5:
            out(f"{s} against {fastest}: not compared, {left:.1f} min of the budget left")
            continue
        k = block_steps_for(max(probes[s]["step_ms"], probes[fastest]["step_ms"]), block_seconds)
        n = pairs_for(share * 60, k, probes[fastest]["step_ms"] + probes[s]["step_ms"], launches, pairs)
        cfg = ComparisonConfig(workload=w.name, decomposition=fastest, decomposition_b=s, gpu=gpu, block_steps=k, pairs=n, launches=launches,
                               look_every=max(2, n // 8), budget_minutes=share, alpha=alpha, threshold=threshold, cpus=tuple(cpus or ()),
                               warmup_steps=max(w.measure.warmup_steps, 1), results_dir=str(root / f"{s}-vs-{fastest}"), run_timeout=run_timeout)
        refuse_link(root / f"{s}-vs-{fastest}")
        made = interleave(cfg, workload=w, out=lambda line: out(f"  {line}"))
        if made.exit_code == exits.MEASUREMENT_FAILED:
            failed.append(s)
        v = made.verdict.to_json() if made.verdict is not None else {}
        compared[s] = {"outcome": v.get("outcome", "inconclusive"), "ratio": v.get("ratio"), "lo": v.get("lo"), "hi": v.get("hi"),
                       "message": v.get("message", f"no verdict from this run (exit code {made.exit_code})"), "block_steps": k}
    answer = recommend(splits, probes, compared, fastest)
    report = {"workload": w.name, "gpu": gpu, "effective_batch": w.effective_batch, "splits": splits, "probes": probes, "fastest_probe": fastest,
              "compared": compared, "answer": answer, "threshold": threshold, "alpha": alpha, "budget_minutes": budget_minutes, "screen": screen,
              "screen_used": wide if fits else None, "drift": drift,
              "probe_steps": probe_steps, "failed": failed, "session_id": new_id("advise"),
              "wall_s": time.time() - t0}
    lines = report_lines(report, w)
    for ln in lines:
        out(ln)
    advice = Advice(report, exits.OK if answer["recommended"] and not failed else exits.MEASUREMENT_FAILED)
    write_json_atomic(root / "report.json", advice.to_json())
    write_atomic(root / "report.md", "# advise " + w.name + f" on {gpu}, effective batch {w.effective_batch}\n\n```\n" + "\n".join(lines) + "\n```\n")
    try:
        plot(report, root / "advice.png")
    except Exception as exc:  # a plot never costs the measurements
        out(f"(no plot: {exc})")
    return advice


def report_lines(r: dict, w: Workload) -> list[str]:
    from harness.reporting.report import diagnosis, diagnosis_text

    a = r["answer"]
    rec = a.get("recommended")
    head = (f"{'split':<7} {'fits':<9} {'m x 1 ms':>9} {'est. step ms':>12} {'peak GiB':>9} {'vs ' + (rec or '-') + ' [interval]':>34}"
            "  diagnosis (per micro-batch, from the m x 1 probe's census)")
    lines = [head, "-" * len(head)]
    for s in r["splits"]:
        p = r["probes"][s]
        fits = "yes" if p["status"] == "ok" else ("no (OOM)" if p["status"] == "oom" else p["status"])
        probe_ms = f"{p['probe_ms']:.1f}" if p.get("probe_ms") else "-"
        step = f"{p['step_ms']:.0f}" if p.get("step_ms") else "-"
        peak = f"{p['peak_reserved_bytes'] / GIB:.2f}" if p.get("peak_reserved_bytes") else "-"
        c = r["compared"].get(s)
        if s == rec:
            vs = "recommended"
        elif c and c.get("screened"):
            vs = f"~x{c['ratio']:.2f} by the probes, screened"
        elif c and c.get("ratio") and rec == r["fastest_probe"]:
            vs = f"x{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] {c['outcome']}"
        elif c and c.get("ratio"):
            vs = f"x{c['ratio']:.3f} vs {r['fastest_probe']} {c['outcome']}"
        else:
            vs = "-"
        diag = ""
        if p.get("census"):
            m = int(s.split("x")[0])
            diag = diagnosis_text(diagnosis(p["census"], p.get("probe_ms"), w.with_splits(m), r["gpu"]))
        lines.append(f"{s:<7} {fits:<9} {probe_ms:>9} {step:>12} {peak:>9} {vs:>34}  {diag}")
    lines.append(f"(m x 1 ms: median step of the probe, one micro-batch per step; est. step ms: a whole m x G step from it, see "
                 f"estimate_step; the nearest split is compared block-interleaved, and so is every split estimated within "
                 f"x{r.get('screen_used') or r.get('screen', 1.5):.2f} of the fastest; the rest are screened)")
    if r.get("drift"):
        lines.append(f"drift check: the {r['drift']['probe']} probe at the start and at the end of the probe series: "
                     f"{r['drift']['first_ms']:.1f} -> {r['drift']['last_ms']:.1f} ms (x{r['drift']['ratio']:.3f})")
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
    ax.plot([m for m, _ in ok], [p["step_ms"] for _, p in ok], "o-", color="C0", label="estimated step (m x 1 probe)")
    f = r.get("fastest_probe")
    meas = [(int(s.split("x")[0]), r["probes"][f]["step_ms"] * c["ratio"]) for s, c in r["compared"].items()
            if f and c.get("ratio") and not c.get("screened")]
    if meas:  # the interleaved ratios, placed on the fastest split's estimate
        ax.plot([m for m, _ in meas], [v for _, v in meas], "D", color="C2", mfc="none", ms=9, label="fastest x interleaved ratio")
        ax.legend(loc="upper center", fontsize=8)
    ax.set_yscale("log")
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
