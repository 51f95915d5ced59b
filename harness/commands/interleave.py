"""``python -m harness interleave``: A against B on one machine, in many short blocks instead of a few whole runs.

Two resident workers (:mod:`harness.measuring.resident`), one per side, build their trainers once and then
take turns: a **pair** is one block of k optimizer steps of each, in an order drawn per pair from a
seeded RNG (the seed is recorded), and only one side trains at a time (the other waits, blocked on its
pipe). The pairs are spread over ``--launches`` launches (launch 1 serves the first 1/L of the pairs,
then both workers are closed and started again), so that the launch can be the unit of the verdict
(:mod:`harness.judging.paired`). With ``--budget-minutes``, a launch that would leave too little time for the
launches after it is cut short at its share of the budget (at the costs measured so far), so that every planned
launch is made. Before its first pair, each launch runs one unrecorded-in-the-verdict warm-up block of
``[measure] warmup_steps`` steps per side (``--warmup-steps`` sets it: on the H200 only a launch's first step
is slow, and 5 warm-up steps per side were 17 of a pre-started 1x4 launch's 22 s).

Every block is appended at once to ``<results-dir>/blocks.jsonl`` (side, launch, pair, position in the
pair, k, step times, canary, wall clock, CPU time, phases), so an interrupted comparison keeps what it
measured; ``progress.json`` (settings and launches) is rewritten at each launch's start and end, so that
``python -m harness recover DIR`` (:func:`recover`) can judge a run that never wrote its report (the machine lost,
a kill -9, a job's timeout) from what it kept. The statistics (:mod:`harness.judging.paired`): per pair the log ratio of B's block metric
over A's, a one-sided signed-rank test (or t, ``--test t``) against log(1 + threshold) at looks every ``--look-every`` pairs, alpha
split over the planned looks, until conclusive or the pairs or ``--budget-minutes`` are spent.

At the end: the verdict, the interval, the per-pair sigma, the minimum detectable slowdown, the launch
check, the resume penalty, the host canary's correlation and the time spent; ``report.json`` and
``report.md`` in the results dir. Exit code 1 on a regression, 3 when a worker died (one ``error:``
line), 2 on bad input, 130 when interrupted (Ctrl-C or SIGTERM: the workers are killed first), else 0.

**Memory.** When a worker runs out of memory before the first pair (the two sides do not fit on the GPU
at once), the workers are killed and the comparison falls back to fresh-process runs, one at a time
(``python -m harness ab`` with ``--fallback-repeats`` runs per side, in ``<results-dir>/fresh``), with a
line that says so; its verdict, at the fresh-run thresholds, becomes the report's verdict.
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import time
from collections.abc import Callable
from pathlib import Path
from statistics import fmean, median

from harness.commands.ab import interpreter, same_versions
from harness.files import append_jsonl, ensure_dir, new_id, read_jsonl, write_atomic, write_json_atomic
from harness.judging import paired as pd
from harness.judging import simulate as sim
from harness.judging.baseline import default_thresholds
from harness.measuring.resident import ResidentWorker, WorkerDied
from harness.measuring.runner import parse_faults, sigterm_as_interrupt
from harness.spec import Workload, load_workload

SIDES = ("a", "b")
DEFAULT_THRESHOLD = 0.02
DEFAULT_METRIC = "median"  # of the block's step times: a smaller pair sigma than the mean in 12 of 15 stored runs with fixed malloc (docs/results/interleave-cpu/)
EXIT_REGRESSION, EXIT_WORKER_DIED, EXIT_INTERRUPTED = 1, 3, 130


# ---------------------------------------------------------------------------------------------
# Analysis of blocks.jsonl (pure: also used to re-analyse stored measurements)
# ---------------------------------------------------------------------------------------------
def pairs_of(blocks: list[dict], session: str | None = None) -> list[dict]:
    """Complete pairs (one measured block of each side), in pair order: ``{"pair", "launch", "order", "a", "b"}``. A pair
    of the micro grain (rows with a ``unit``) gets, per side, one block merged from its units (:func:`merge_units`)."""
    by: dict[int, dict] = {}
    units: dict[tuple[int, str], list[dict]] = {}
    for r in blocks:
        if r.get("warmup") or (session and r.get("session_id") != session):
            continue
        p = by.setdefault(r["pair"], {"pair": r["pair"], "launch": r["launch"], "order": r.get("order")})
        if r.get("unit") is None:
            p[r["side"]] = r
        else:
            units.setdefault((r["pair"], r["side"]), []).append(r)
    for (pair, side), rows in units.items():
        if len(rows) == rows[0]["units"]:  # a pair cut short by an interrupt is not complete
            by[pair][side] = merge_units(rows)
    return [p for _, p in sorted(by.items()) if "a" in p and "b" in p]


def merge_units(rows: list[dict]) -> dict:
    """One side's block of a micro-grain pair, from its units (one micro-batch each, in unit order): step j's time is
    the sum of the synchronized wall times of its ``micro_per_step`` units, so the pair's ratio is a ratio of step
    times, as at the step grain; wall and CPU time, the injected work and the losses add up, the canary is the
    median, the other CPUs the mean; no phases (a unit's recorder spans the waits)."""
    rows = sorted(rows, key=lambda r: r["unit"])
    per = rows[0]["micro_per_step"]
    walls = [r["step_times_ms"][0] for r in rows]
    steps = [sum(walls[i:i + per]) for i in range(0, len(walls), per)]
    other = [r["other_cpus"] for r in rows if r.get("other_cpus") is not None]
    out = dict(rows[0], step_times_ms=steps, k=len(steps), wall_s=sum(r["wall_s"] for r in rows), cpu_s=sum(r["cpu_s"] for r in rows),
               canary_ms=median(r["canary_ms"] for r in rows), other_cpus=fmean(other) if other else None, phases_ms=None,
               losses=[x for r in rows for x in (r.get("losses") or [])], global_step=rows[-1]["global_step"], unit=None)
    if all(r.get("inject_ms") is not None for r in rows):
        out["inject_ms"] = sum(r["inject_ms"] * r["k"] for r in rows) / len(steps)
    return out


def grouped(pairs: list[dict], metric: str = DEFAULT_METRIC, drop_first: bool = False) -> list[list[float]]:
    """Pair log ratios log(B/A), grouped by launch in launch order."""
    out: dict[int, list[float]] = {}
    for p in pairs:
        a = pd.block_metric(p["a"]["step_times_ms"], metric, drop_first)
        b = pd.block_metric(p["b"]["step_times_ms"], metric, drop_first)
        out.setdefault(p["launch"], []).append(math.log(b / a))
    return [out[k] for k in sorted(out)]


def _sd(xs: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = fmean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


PROGRESS = "progress.json"  # settings and launches so far, rewritten at each launch's start and end (recover)
AUTO_BLOCK_STEPS = {"step": 1, "micro": 1}  # measured on the H200: k = 1 for 4x1 blocks of steps (session 19), k = 1 at 1x4's micro grain


def resolve_grain(grain: str, block_steps: int | str, dec, dec_b) -> tuple[str, int]:
    """``--grain auto``: micro where the one decomposition of both sides accumulates gradients, else step.
    ``--block-steps auto``: the block length that had the least variance per GPU-second on the H200 at that grain
    (docs/results/interleave-h200/: for 4x1 steps k = 1, against k = 2 on the same lease and k = 3 on two others, session 19,
    judged as the verdict judges, by launch Hodges-Lehmann summaries, which absorb the single slow steps that had made k = 3
    the choice of the first sweep; k = 1 at the micro grain of 1x4, sessions 12-13)."""
    if grain not in ("step", "micro", "auto"):
        raise ValueError(f"--grain must be step, micro or auto, got {grain!r}")
    if grain == "auto":
        grain = "micro" if dec.grad_accum > 1 and dec_b == dec else "step"
    block_steps = AUTO_BLOCK_STEPS[grain] if block_steps == "auto" else block_steps
    if not isinstance(block_steps, int) or block_steps < 1:
        raise ValueError(f"--block-steps must be a whole number of at least 1, or auto, got {block_steps}")
    return grain, block_steps


def warm_cpus(hold: list[int]) -> dict[str, list[int]]:
    """Where each side of a launch warming up apart builds and warms up: A the first half of the hold CPUs, B the rest
    (one hold CPU: both on it, still at once)."""
    half = max(1, len(hold) // 2)
    return {"a": hold[:half], "b": hold[half:] or hold[:half]}


CLOCK_EVENT_ROUTINE = 0x1 | 0x2  # NVML clock-event reasons that are no slowdown: the GPU idle, application clocks


def gpu_state(blocks: list[dict], session: str | None = None) -> dict | None:
    """The GPU as the measured blocks ended (each block's one NVML reading, ``gpu``): SM clock overall and per launch,
    power, temperature, and the share of readings with a clock-event reason other than idle or application clocks
    (power cap, thermal, hardware slowdown). None without readings (a CPU run, no NVML, blocks from before session 16)."""
    xs = [b for b in blocks if not b.get("warmup") and not b.get("calibration") and b.get("gpu")
          and (session is None or b.get("session_id") == session)]
    xs = [b for b in xs if b["gpu"].get("sm_clock_mhz") is not None]
    if not xs:
        return None
    sm = [b["gpu"]["sm_clock_mhz"] for b in xs]
    per: dict[int, list[float]] = {}
    for b in xs:
        per.setdefault(b["launch"], []).append(b["gpu"]["sm_clock_mhz"])
    power = [b["gpu"]["power_w"] for b in xs if b["gpu"].get("power_w") is not None]
    temp = [b["gpu"]["temp_c"] for b in xs if b["gpu"].get("temp_c") is not None]
    events = [b["gpu"]["throttle_reasons"] & ~CLOCK_EVENT_ROUTINE for b in xs if b["gpu"].get("throttle_reasons") is not None]
    return {"readings": len(xs), "sm_clock_mhz": {"median": median(sm), "min": min(sm), "max": max(sm)},
            "launch_sm_clock_mhz": [median(per[n]) for n in sorted(per)], "power_w_median": median(power) if power else None,
            "temp_c_max": max(temp) if temp else None, "clock_event_share": sum(e != 0 for e in events) / len(events) if events else None}


def default_unit(launches: int) -> str:
    """The unit of replication when none is asked for: the launch from :data:`paired.MIN_LAUNCH_UNIT` launches on."""
    return "launch" if launches >= pd.MIN_LAUNCH_UNIT else "pair"


def analyse(blocks: list[dict], *, alpha: float, threshold: float, looks: int = 1, metric: str = DEFAULT_METRIC,
            drop_first: bool = False, session: str | None = None, test: str = "rank", unit: str | None = None) -> dict:
    """Everything the report says, from the block records: verdict, sigma, sensitivity, launches, resume penalty, canary.
    ``unit`` None: :func:`default_unit` of the launches with pairs. The minimum detectable slowdown is the verdict's:
    from the sd of its units (launch summaries, or pairs) and their number."""
    pairs = pairs_of(blocks, session)
    if len(pairs) < 2:
        return {"pairs": len(pairs), "verdict": None}
    groups = grouped(pairs, metric, drop_first)
    check = pd.PairedCheck(alpha, threshold, looks, test=test, unit=unit or default_unit(len(groups)))
    v = check.decide(groups)
    d = [x for g in groups for x in g]
    n = len(d)
    sigma = _sd(d)
    u_sd, u_n = (v.details["sd"], v.details["n_units"]) if v.details["unit"] == "launch" else (sigma, n)
    u_sd = u_sd if u_sd is not None and math.isfinite(u_sd) and u_sd > 0 else None
    comp = pd.launch_components(groups, check.summary if v.details["unit"] == "launch" and check.summary in pd.SUMMARIES else "hl")
    variants = {}
    for how in pd.METRICS:
        for drop in (False, True):
            dd = [x for g in grouped(pairs, how, drop) for x in g]
            variants[f"{how}{'-drop-first' if drop else ''}"] = {"sigma": _sd(dd), "ratio": math.exp(fmean(dd))}
    resume = {}
    grain = "micro" if any(p["a"].get("micro_per_step") for p in pairs) else "step"
    for s in SIDES if grain == "step" else ():  # at the micro grain every micro-batch follows a wait: no first step to single out
        rp = pd.resume_penalty([p[s]["step_times_ms"] for p in pairs])
        resume[s] = None if rp is None else {"ratio": rp.ratio, "lo": rp.lo, "hi": rp.hi, "blocks": rp.blocks}
    canary: dict = {}
    if all(p[s].get("canary_ms") for p in pairs for s in SIDES):
        for s in SIDES:
            canary[f"corr_{s}"] = pd.correlation([math.log(p[s]["canary_ms"]) for p in pairs],
                                                  [math.log(pd.block_metric(p[s]["step_times_ms"], metric, drop_first)) for p in pairs])
        c = [math.log(p["b"]["canary_ms"] / p["a"]["canary_ms"]) for p in pairs]
        cov = pd.canary_covariate(d, c)
        if cov is not None:
            canary.update(pair_corr=cov.corr, slope=cov.slope, sigma_plain=cov.sigma_plain, sigma_adjusted=cov.sigma_adjusted,
                          reduction=cov.reduction, ratio_plain=math.exp(cov.plain), ratio_adjusted=math.exp(cov.adjusted),
                          se_plain=cov.plain_se, se_adjusted=cov.adjusted_se)
        canary["median_ms"] = {s: median(p[s]["canary_ms"] for p in pairs) for s in SIDES}
    other = [p[s]["other_cpus"] for p in pairs for s in SIDES if p[s].get("other_cpus") is not None]
    cpu = [p["a"].get("cpu_s", 0) + p["b"].get("cpu_s", 0) for p in pairs]
    wall = [p["a"].get("wall_s", 0) + p["b"].get("wall_s", 0) for p in pairs]
    steps = [p[s]["step_times_ms"] for p in pairs for s in SIDES]
    return {
        "micro_per_step": pairs[0]["a"].get("micro_per_step"), "pairs": n, "launch_sizes": [len(g) for g in groups], "metric": metric, "drop_first": drop_first, "grain": grain,
        "verdict": {"outcome": v.outcome, "message": v.message, **v.details},
        "sigma": sigma, "variants": variants,
        "mds": {"alpha": 0.01, "power": 0.9, "unit": v.details["unit"], "units": u_n, "unit_sd": u_sd,
                "slowdown": pd.min_detectable(u_sd, u_n, 0.01, 0.9) if u_sd else None,
                "approx_3_6": 3.6 * u_sd / math.sqrt(u_n) if u_sd else None,
                "with_settings": pd.min_detectable(u_sd, u_n, check.per_look, 0.9, threshold) if u_sd else None,
                "units_for_3pct": pd.pairs_needed(u_sd, 0.03, 0.01, 0.9) if u_sd else None,
                "pairs_for_3pct": pd.pairs_needed(sigma, 0.03, 0.01, 0.9) if sigma else None},  # by the pair-level t test
        "launch_components": None if comp is None else {"pair_sd": comp.pair_sd, "launch_sd": comp.launch_sd, "summary": comp.summary,
                                                         "launch_sd_upper": comp.launch_sd_upper, "level": comp.level},
        "resume_penalty": resume, "canary": canary,
        "step_ms_median": {s: median(x for p in pairs for x in p[s]["step_times_ms"]) for s in SIDES},
        "k": sorted({len(x) for x in steps}),
        "cpu_s_per_pair": fmean(cpu) if cpu else None, "wall_s_per_pair": fmean(wall) if wall else None,
        "other_cpus": {"median": median(other), "max": max(other), "busy_share": sum(x > 0.5 for x in other) / len(other)} if other else None,
        "gpu_state": gpu_state(blocks, session),
    }


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------
def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}%}"


CALIBRATION_PROBE_CASTS = 4.0  # units (or casts) per LoRA forward that calibrate_injection tries first
CALIBRATION_ROUNDS = 2  # rounds per probe: the injection's own clock needs few
CALIBRATION_PROBES = 3  # 4 units, then twice the amount that the measured curve puts at the target


def _amount(inject: float | None) -> dict:
    return {} if inject is None else {"inject": inject}


def calibrate_injection(workers: dict, k: int, target: float, record: Callable[[str, dict, float | None], object] = lambda s, rep, amt: None,
                        kind: str = "host") -> dict:
    """The amount of injected work per LoRA forward (fractional; units of host work, or casts with ``kind="casts"``:
    :class:`~harness.measuring.census.InjectWork`) that makes side B's step about ``target`` slower (0.05 = 5%) on this
    machine, aimed by the injection's own clock. A round is an A block (its hook at 0) and a B block at ``probe``, each
    ``k`` steps. B's worker reports the host time of its injected work per step (``inject_ms``, ``InjectWork.spent_s``),
    and the probe's ``share`` is the median over its rounds of ``inject_ms / (B's mean step - inject_ms)``: the work
    against the rest of the same block's step, so that the CPU's speed, which moves both, cancels. The probes walk a
    piecewise-linear curve through (0, 0) and every probe so far (casts cost more for the first of a call than for the
    next): 4 first, then the amount that the curve puts at the target, twice; the answer is the last such amount.

    Why the injection's clock and not a wall-time ratio: the B/A ratio of two blocks has the pair sigma of the
    comparison itself (10-18% on the H200), so 8 + 8 rounds of it sized the work within several points (x1.068-1.099
    for a 5% target in session 10) and took 286 s of a 9-minute 1x4 comparison (session 11). The clock is the added
    step time where the step is host-bound (the CPU runner; the H200 at micro-batch 1-4, which waits on kernel
    launches) and the work touches no memory that the step reads (host work; casts do, and read more in the
    comparison than by their clock on the CPU runner: 3.85 casts at +5% read x1.082). Either way the comparison's
    estimate is the measured slowdown; ``inject_ms`` of every block of B is in ``blocks.jsonl`` and the report
    (:func:`injected_share`).

    The injected work is all that differs between the sides: side A carries the same forward hook on every LoRA layer,
    at 0 (:func:`interleave` starts it so); without it B's hook calls alone (hundreds per step) slowed B as well.
    ``record(side, report, amount)`` sees every calibration block; each probe's B/A wall ratio is kept as a check."""
    a_amount = 0.0 if workers["a"].inject_work else None  # A's hook, where it has one, does no work
    probe, rounds = CALIBRATION_PROBE_CASTS, CALIBRATION_ROUNDS
    curve: list[tuple[float, float]] = [(0.0, 0.0)]
    probes: list[dict] = []
    for _ in range(CALIBRATION_PROBES):
        shares: list[float] = []
        logs: list[float] = []
        for _ in range(rounds):
            a = workers["a"].block(k, inject=a_amount)
            record("a", a, a_amount)
            b = workers["b"].block(k, inject=probe)
            record("b", b, probe)
            step_b = fmean(b["step_times_ms"])
            shares.append(b["inject_ms"] / max(step_b - b["inject_ms"], 1e-9))
            logs.append(math.log(median(b["step_times_ms"]) / median(a["step_times_ms"])))
        probes.append({"casts": probe, "share": median(shares), "ratio": math.exp(median(logs))})
        curve = sorted(set(curve) | {(probe, median(shares))})
        probe = min(256.0, max(0.05, _at_target(curve, target)))
    last = probes[-1]
    return {"target": target, "clock": "own", "kind": kind, "block_steps": k, "rounds": rounds, "probes": probes,
            "probe_casts": last["casts"], "share": last["share"], "ratio_with": last["ratio"], "casts": probe}


def _at_target(curve: list[tuple[float, float]], target: float) -> float:
    """The amount at which the piecewise-linear curve through ``curve`` (amount, share; sorted, with (0, 0)) reaches
    ``target``: interpolated inside the bracket that holds it, else extrapolated along the last segment that rises."""
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if y0 <= target <= y1 and y1 > y0:
            return x0 + (target - y0) * (x1 - x0) / (y1 - y0)
    rising = [(p, q) for p, q in zip(curve, curve[1:]) if q[1] > p[1]]
    if not rising:
        return 4 * max(x for x, _ in curve)  # no cost measured yet: try far more
    (x0, y0), (x1, y1) = rising[-1] if target > curve[-1][1] else rising[0]
    return max(0.0, x0 + (target - y0) * (x1 - x0) / (y1 - y0))


def calibration_text(c: dict) -> str:
    """One line on what :func:`calibrate_injection` measured and chose (the terminal and report.md)."""
    what = "units of host work" if c.get("kind", "casts") == "host" else "casts"
    head = f"inject-work sized for +{round(c['target'] * 100, 6):g}%: {c['casts']:.2f} {what} per LoRA forward"
    if c.get("clock") == "own":
        return (f"{head} (calibration by the injection's own clock: " + ", ".join(f"{p['casts']:.2f} +{p['share']:.1%}" for p in c["probes"])
                + f" of the rest of B's step; B/A wall x{c['ratio_with']:.3f} at the last probe over its {c['rounds']} rounds)")
    return (f"{head} (calibration: B/A x{c['ratio_without']:.3f} "  # reports written before session 11: a wall-time gain
            f"without casts, x{c['ratio_with']:.3f} with {c['probe_casts']:.2f}: +{c['gain']:.1%}; last {c['rounds']} rounds)")


def injected_share(blocks: list[dict]) -> dict | None:
    """The sized injection as its own clock saw it over the measured blocks of B: the median of ``inject_ms`` / (the
    block's mean step - ``inject_ms``), the nominal slowdown to set beside the measured one; None without the clock. At the
    micro grain a block is B's side of a pair, its units merged into steps (:func:`pairs_of`)."""
    if any(x.get("unit") is not None for x in blocks):
        blocks = [p["b"] for p in pairs_of(blocks)]
    b = [x for x in blocks if x["side"] == "b" and not x["warmup"] and x.get("inject_ms") is not None]
    if not b:
        return None
    shares = [x["inject_ms"] / max(fmean(x["step_times_ms"]) - x["inject_ms"], 1e-9) for x in b]
    return {"inject_ms": median(x["inject_ms"] for x in b), "share": median(shares), "blocks": len(b)}


def interleave(*, gpu: str, workload: str | Workload, decomposition: str, python_a: str | None = None, python_b: str | None = None,
               decomposition_b: str | None = None,
               inject_slowdown_b: float = 0.0, inject_work_b: int = 0, inject_work_b_percent: float = 0.0, block_steps: int | str = 1, grain: str = "step", pairs: int = 60, launches: int = 6,
               look_every: int | None = None, budget_minutes: float | None = None, alpha: float | None = None,
               threshold: float | None = None, seed: int | None = None, drop_first_step: bool = False, no_phases: bool = False,
               cpus: list[int] | None = None, malloc_default: bool = False, block_metric: str = DEFAULT_METRIC,
               workloads_dir: str | Path = "workloads", results_dir: str | Path = "perf-results/interleave", run_timeout: float = 1800.0,
               fallback_repeats: int = 5, skip_same_versions: bool = False, test: str = "rank", unit: str | None = None, prestart: bool = False,
               warmup_steps: int | None = None, warm_apart: bool = False, faults: str | None = None, out: Callable[[str], None] = print) -> int:
    """Run the interleaved comparison (module docstring); exit code 1 on a regression, 3 when a worker died, else 0.

    ``faults`` (test-only, as ``HARNESS_FAULTS``): ``"b#2=sigkill@6"`` kills side B's worker of launch 2 at its step 6.
    ``prestart``: the next launch's two workers import on the CPUs outside ``cpus`` while this launch runs
    (:class:`~harness.measuring.resident.ResidentWorker` ``hold_cpus``), so a launch's start-up is only their build.
    ``warmup_steps``: steps per side at the start of every launch, left out of the verdict (default: the workload's
    ``[measure] warmup_steps``).
    ``warm_apart`` (with ``prestart``): each side of a pre-started launch builds its trainer and runs its warm-up on its own
    half of the hold CPUs, both sides at once, and moves to ``cpus`` before the first pair; a later launch then costs about
    the slower side's build and warm-up instead of both sides' in turn on the measured CPU (:func:`warm_cpus`).
    ``grain`` "micro": A and B take turns at single micro-batches of gradient accumulation, in an order drawn per unit;
    the ``block_steps`` x grad-accum units of each side make a pair's blocks (:func:`merge_units`), whose ratio is
    a ratio of step times as at the default "step" grain. The warm-up and the calibration stay in steps. "auto": micro where
    the decomposition accumulates gradients (and B runs the same one), step elsewhere (the pytest session, ``confirm``).
    ``inject_work_b_percent`` (test-only): side B does injected work sized on this machine to slow its step by that many
    percent (:func:`calibrate_injection`, once, after launch 1's warm-up; every later block of B uses that amount).
    """
    t_start, cpu_start = time.time(), _children_cpu()
    w = workload if isinstance(workload, Workload) else load_workload(workloads_dir, workload)
    dec = w.decomposition(decomposition)
    dec_b = w.decomposition(decomposition_b) if decomposition_b else dec  # side B may run another split of the same batch (the advisor)
    case = f"{w.name}-{dec.id}" if dec_b == dec else f"{w.name}-{dec_b.id}-vs-{dec.id}"
    grain, block_steps = resolve_grain(grain, block_steps, dec, dec_b)
    if grain == "micro" and (dec.grad_accum < 2 or dec_b != dec):
        raise ValueError(f"--grain micro needs one decomposition with gradient accumulation (grad-accum > 1), got {dec.id}"
                         + (f" against {dec_b.id}" if dec_b != dec else "") + ": use the default --grain step")
    if warmup_steps is not None and warmup_steps < 1:
        raise ValueError(f"--warmup-steps must be at least 1 (a launch's first step carries its CUDA set-up), got {warmup_steps}")
    warmup = warmup_steps if warmup_steps is not None else max(w.measure.warmup_steps, 1)
    plan = pd.Plan(pairs, launches, look_every)
    alpha = alpha if alpha is not None else default_thresholds(gpu)["alpha"]
    threshold = threshold if threshold is not None else DEFAULT_THRESHOLD
    hold_cpus = None
    if prestart:
        hold_cpus = sorted(set(os.sched_getaffinity(0)) - set(cpus or ()))
        if not cpus or not hold_cpus:
            raise ValueError("--prestart needs --cpus and CPUs outside them to import the next launch's workers on "
                             f"(this process may use {sorted(os.sched_getaffinity(0))}; pass --cpus with fewer of them)")
    if warm_apart and not prestart:
        raise ValueError("--warm-apart needs --prestart: only a pre-started launch has CPUs outside --cpus to warm up on")
    unit = unit or default_unit(launches)
    check = pd.PairedCheck(alpha, threshold, len(plan.looks), test=test, unit=unit)
    py = {"a": interpreter(python_a, "a"), "b": interpreter(python_b, "b")}
    if inject_work_b_percent < 0 or inject_work_b_percent and inject_work_b:
        raise ValueError(f"--inject-work-b-percent must be positive and without --inject-work-b, got {inject_work_b_percent} (and {inject_work_b})")
    if inject_work_b_percent:
        inject_work_b = CALIBRATION_PROBE_CASTS  # B starts with the hook; the amount per block is set after calibrating
    calibration: dict | None = None
    if skip_same_versions and not inject_slowdown_b and not inject_work_b and (same := same_versions(py["a"], py["b"])):
        out(f"A and B have the same versions ({same}): nothing to compare, no runs made (--skip-same-versions)")
        return 0
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    orders = ["ab" if rng.random() < 0.5 else "ba" for _ in range(pairs)]
    n_units = block_steps * dec.grad_accum if grain == "micro" else 1  # turns per side in one pair
    unit_orders = [["ab" if rng.random() < 0.5 else "ba" for _ in range(n_units)] for _ in range(pairs)] if grain == "micro" else None
    fault = parse_faults(faults)
    root = ensure_dir(results_dir)
    blocks_path = root / "blocks.jsonl"
    session = new_id("interleave")
    metric = block_metric
    if metric not in pd.METRICS:
        raise ValueError(f"--block-metric must be one of {', '.join(pd.METRICS)}, got {metric!r}")
    switches = {"a": {"inject_slowdown": 0.0, "inject_work": 0}, "b": {"inject_slowdown": inject_slowdown_b, "inject_work": inject_work_b}}
    inject_kind = "host" if inject_work_b_percent else "casts"  # sized injection: host work, whose own clock is its whole cost
    hook_a = 0.0 if inject_work_b_percent else None  # sized work: A carries the same hook, at 0 (calibrate_injection)
    if hook_a is not None:
        switches["a"]["inject_work"] = CALIBRATION_PROBE_CASTS  # installs the hook; every block of A asks for 0
    settings = {"gpu": gpu, "workload": w.name, "workload_hash": w.hash, "decomposition": dec.id, "decomposition_b": dec_b.id, "python_a": py["a"], "python_b": py["b"],
                "inject_slowdown_b": inject_slowdown_b, "inject_work_b": inject_work_b, "inject_work_b_percent": inject_work_b_percent,
                "inject_kind": inject_kind, "block_steps": block_steps, "grain": grain, "pairs": pairs,
                "launches": launches, "look_every": look_every, "looks": list(plan.looks), "budget_minutes": budget_minutes, "alpha": alpha,
                "threshold": threshold, "seed": seed, "drop_first_step": drop_first_step, "phases": not no_phases, "metric": metric, "test": test, "unit": unit, "prestart": prestart, "prestart_at": "ready" if prestart else None, "hold_cpus": hold_cpus, "warm_apart": warm_apart, "cpus": cpus, "malloc_default": malloc_default,
                "warmup_steps": warmup, "session_id": session}
    injected = ", ".join(x for x in (f"+{inject_slowdown_b:.0%} injected sleep" if inject_slowdown_b else "",
                                     f"inject-work sized on this machine for +{inject_work_b_percent:g}%" if inject_work_b_percent
                                     else f"inject-work {inject_work_b}" if inject_work_b else "") if x)
    out(f"interleave {case} on {gpu}: A {py['a']}, B {py['b']}{f' ({injected})' if injected else ''}"
        + (f"; A runs {dec.id}, B runs {dec_b.id}" if dec_b != dec else ""))
    if grain == "micro":
        out(f"  micro grain: A and B take turns at single micro-batches ({n_units} per side and pair, each order drawn), summed into steps")
    out(f"  {block_steps} steps per block after a warm-up of {warmup} per side and launch, up to {pairs} pairs over {launches} launches, looks at {', '.join(map(str, plan.looks))} pairs "
        f"(alpha {alpha:g} / {len(plan.looks)} per look), threshold +{threshold:.1%}, seed {seed}; blocks in {blocks_path}")
    out("  unit of replication: the launch (each launch's " + ("Hodges-Lehmann estimate" if check.summary == "hl" else "mean") + " of its pair log "
        f"ratios, t over the {launches} launches)" if unit == "launch" else
        f"  unit of replication: the pair (pooled over {launches} launch(es): valid only if launches add nothing; F screen at {pd.LAUNCH_ALPHA:g}, "
        f"the launch as the unit needs {pd.MIN_LAUNCH_UNIT} or more launches)")

    groups: list[list[float]] = []
    verdict = None
    stopped = None
    launch_info: list[dict] = []
    blocks: list[dict] = []
    pair_wall: list[float] = []

    def save_progress() -> None:  # what recover() needs if the run never reaches its report
        write_json_atomic(root / PROGRESS, {"case": case, "t_start": t_start, "settings": settings, "orders": orders, "launches": launch_info})

    save_progress()

    def over_budget(need_s: float) -> bool:
        return budget_minutes is not None and time.time() - t_start + need_s > budget_minutes * 60

    def record(side: str, launch: int, rep: dict, **where) -> dict:
        rec = {"session_id": session, "side": side, "launch": launch, **where, "k": rep["k"], "step_times_ms": rep["step_times_ms"],
               "canary_ms": rep["canary_ms"], "started_at": rep["started_at"], "wall_s": rep["wall_s"], "cpu_s": rep["cpu_s"],
               "global_step": rep["global_step"], "other_cpus": rep.get("other_cpus"), "steal_cpus": rep.get("steal_cpus"), "gpu": rep.get("gpu"),
               "phases_ms": rep.get("phases_ms"), "losses": rep.get("losses"),
               "inject_slowdown": switches[side]["inject_slowdown"], "inject_work": switches[side]["inject_work"]}
        if rep.get("inject") is not None:
            rec["inject_work"] = rep["inject"]
        if rep.get("inject_ms") is not None:
            rec["inject_ms"] = rep["inject_ms"]
        append_jsonl(blocks_path, rec)
        blocks.append(rec)
        return rec

    def make_workers(launch: int, hold: list[int] | None) -> dict:
        apart = warm_cpus(hold) if hold and warm_apart else {}
        return {s: ResidentWorker(s.upper(), w, dec if s == "a" else dec_b, root / "work", gpu=gpu, launch=launch, python=py[s], phases=not no_phases,
                                  fault=fault.get((s, launch)), cpus=cpus, malloc_default=malloc_default, timeout_s=run_timeout, hold_cpus=hold,
                                  inject_kind=inject_kind, warm_cpus=apart.get(s), **switches[s]) for s in SIDES}

    nxt: dict | None = None  # the next launch's pre-started workers (--prestart)

    def fit_to_budget(launch: int, made: int) -> int:
        """How many pairs launch ``launch`` (``made`` so far) should make so that it and every later launch get about as
        many, all within ``--budget-minutes``, at the costs measured so far: a launch's start-up, warm-up and stopping
        (the latest launch's; without the imports of a pre-started one) and the mean pair. With the launch as the unit,
        launches count more than pairs. m solves (m - made) p + later (over + m p) = time left. Unbounded without a
        budget or before a pair."""
        if budget_minutes is None or not launch_info or not pair_wall:
            return pairs
        last = launch_info[-1]
        over = last["startup_s"] + last.get("warmup_s", 0.0) + last.get("close_s", 0.0)
        if hold_cpus and not last["prestarted"]:  # its start-up included the imports, which a pre-started launch does early
            over -= max((last["ready"][s].get("timing_s") or {}).get("import_s", 0.0) for s in SIDES)
        p, later = fmean(pair_wall), launches - launch
        left = budget_minutes * 60 - (time.time() - t_start)
        return max(0, int((left - later * over + made * p) / (p * (1 + later))))
    try:
        with sigterm_as_interrupt():
            for launch in range(1, launches + 1):
                start = sum(map(len, groups))  # pairs made so far: an earlier launch may have been fitted to the budget
                planned = (plan.starts[launch] if launch < launches else pairs) - plan.starts[launch - 1]
                end = start + planned
                startup_est = (launch_info[-1]["startup_s"] if nxt and launch_info else
                               max((li["startup_s"] for li in launch_info), default=0.0))
                if verdict is not None and verdict.outcome in pd.CONCLUSIVE:
                    break
                if launch > 1 and over_budget(startup_est + 2 * (fmean(pair_wall) if pair_wall else 0.0)):
                    stopped = f"budget of {budget_minutes:g} min spent before launch {launch}"
                    out(f"{stopped}: judging the pairs made")
                    break
                workers, nxt = nxt or make_workers(launch, None), None
                try:
                    t_launch = time.time()
                    for s in SIDES:
                        if workers[s].hold_cpus:
                            workers[s].release()
                        else:
                            workers[s].start(wait=False)
                    ready = {s: workers[s].wait_ready() for s in SIDES}
                    info = {"launch": launch, "startup_s": time.time() - t_launch, "ready": {s: {k: ready[s].get(k) for k in
                            ("timing_s", "host_probe", "cuda", "cpus", "torch_threads", "malloc", "startup_wall_s", "inject_work_layers", "prestarted")} for s in SIDES},
                            "env": {s: ready[s].get("env") for s in SIDES}, "prestarted": bool(workers["a"].hold_cpus)}
                    info["pairs_planned"] = planned
                    launch_info.append(info)
                    save_progress()
                    out(f"launch {launch}: A and B ready in {info['startup_s']:.1f} s{' (pre-started)' if info['prestarted'] else ''} "
                        f"(pairs {start + 1}-{end} planned)")
                    if hold_cpus and launch < launches:  # the next launch imports on the other CPUs meanwhile, from here on:
                        nxt = make_workers(launch + 1, hold_cpus)  # beside the warm-up too, which short launches need to hide it
                        for s in SIDES:
                            nxt[s].start(wait=False)
                    t_warm = time.time()
                    amount = {"a": hook_a, "b": calibration["casts"] if calibration else None}
                    if workers["a"].warm_cpus:  # both sides at once, each on its own CPUs, then home to the measured ones
                        for s in SIDES:
                            workers[s].send_block(warmup, inject=amount[s])
                        for s in SIDES:
                            record(s, launch, workers[s].recv_block() | _amount(amount[s]), pair=None, position=None, order=None, warmup=True)
                        info["warm_apart"] = {s: {"warm_cpus": workers[s].warm_cpus, "home": workers[s].pin_home()} for s in SIDES}
                    else:
                        for s in (SIDES if launch % 2 else SIDES[::-1]):
                            record(s, launch, workers[s].block(warmup, inject=amount[s]) | _amount(amount[s]), pair=None, position=None, order=None,
                                   warmup=True)
                    info["warmup_s"] = time.time() - t_warm
                    if inject_work_b_percent and calibration is None:
                        calibration = calibrate_injection(
                            workers, block_steps, inject_work_b_percent / 100.0, kind=inject_kind,
                            record=lambda side, rep, amt, at=launch: record(side, at, rep | _amount(amt), pair=None, position=None, order=None,
                                                                            warmup=True, calibration=True))
                        settings["inject_calibration"] = calibration
                        amount["b"] = calibration["casts"]
                        out(calibration_text(calibration))
                    for i in range(start, end):
                        if launch < launches and i - start >= 2 and i - start >= fit_to_budget(launch, i - start):
                            info["fitted"] = f"{i - start} of its {planned} planned pairs, so that the {launches - launch} later launch(es) fit in the budget"
                            out(f"launch {launch}: {info['fitted']}")
                            break
                        if over_budget(fmean(pair_wall) if pair_wall else 0.0):
                            stopped = f"budget of {budget_minutes:g} min spent after {sum(map(len, groups))} pairs"
                            break
                        t_pair = time.time()
                        got = {}
                        if unit_orders is None:
                            for pos, s in enumerate(orders[i], 1):
                                got[s] = record(s, launch, workers[s].block(block_steps, inject=amount[s]) | _amount(amount[s]), pair=i + 1,
                                                position=pos, order=orders[i], warmup=False)
                        else:
                            rows: dict = {s: [] for s in SIDES}
                            for u, order in enumerate(unit_orders[i], 1):
                                for pos, s in enumerate(order, 1):
                                    rows[s].append(record(s, launch, workers[s].block(1, inject=amount[s], micro=True) | _amount(amount[s]),
                                                          pair=i + 1, position=pos, order=order, warmup=False, unit=u, units=n_units,
                                                          micro_per_step=dec.grad_accum))
                            got = {s: merge_units(rows[s]) for s in SIDES}
                        pair_wall.append(time.time() - t_pair)
                        d = math.log(pd.block_metric(got["b"]["step_times_ms"], metric, drop_first_step)
                                     / pd.block_metric(got["a"]["step_times_ms"], metric, drop_first_step))
                        while len(groups) < launch:
                            groups.append([])
                        groups[launch - 1].append(d)
                        n = i + 1
                        if n in plan.looks and launch == launches and len(groups[-1]) >= 2:  # once every launch has 2 pairs
                            verdict = check.decide(groups, case, plan.looks.index(n) + 1)
                            out(f"look {plan.looks.index(n) + 1}/{len(plan.looks)} at {n} pairs: {verdict.message}")
                            if verdict.outcome in pd.CONCLUSIVE:
                                break
                        elif n % 10 == 0:
                            allv = [x for g in groups for x in g]
                            out(f"[{n}/{pairs}] launch {launch}: B/A so far x{math.exp(fmean(allv)):.4f}, pair sigma {_pct(_sd(allv))}")
                except BaseException:
                    for s in SIDES:
                        workers[s].kill()
                        if nxt:
                            nxt[s].kill()
                    raise
                t_close = time.time()
                for s in SIDES:
                    workers[s].stop()
                for s in SIDES:
                    workers[s].close()
                info["close_s"] = time.time() - t_close
                save_progress()
                if stopped:
                    out(f"{stopped}: judging the pairs made")
                    break
    except WorkerDied as exc:
        if exc.oom and not any(not b["warmup"] for b in blocks) and dec_b == dec:
            return _fresh_fallback(exc, settings=settings, root=root, gpu=gpu, workload=workload, dec=dec.id, python_a=python_a, python_b=python_b,
                                   repeats=fallback_repeats, workloads_dir=workloads_dir, run_timeout=run_timeout,
                                   inject_slowdown_b=inject_slowdown_b, inject_work_b=inject_work_b, out=out)
        out(f"error: {exc}")
        return EXIT_WORKER_DIED
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM under sigterm_as_interrupt: the workers are already killed
        out(f"interrupted ({exc or 'Ctrl-C'}): workers killed; {len(blocks)} block(s) kept in {blocks_path}")
        return EXIT_INTERRUPTED
    finally:
        for wk in (nxt or {}).values():  # pre-started for a launch that did not come (a conclusive verdict, the budget)
            wk.kill()

    return _finish(root, settings=settings, orders=orders, stopped=stopped, launch_info=launch_info, blocks=blocks, groups=groups,
                   verdict=verdict, check=check, case=case, wall=time.time() - t_start, cpu=_children_cpu() - cpu_start,
                   calibrated=calibration is not None, out=out)


def _finish(root: Path, *, settings: dict, orders: list, stopped: str | None, launch_info: list[dict], blocks: list[dict],
            groups: list[list[float]], verdict, check: pd.PairedCheck, case: str, wall: float, cpu: float | None, calibrated: bool,
            out: Callable[[str], None], recovered: dict | None = None) -> int:
    """The report of a comparison, from what it measured: the verdict (a last look at the pairs made where the run stopped
    between looks), the analysis, the timing and the plan; printed, and written to report.json and report.md."""
    n_pairs = sum(map(len, groups))
    if n_pairs and (verdict is None or verdict.details.get("pairs") != n_pairs):
        # a budget stop between looks: this last look replaces the next planned one, so alpha per look still holds
        verdict = check.decide(groups, case, None) if n_pairs >= 2 else None
    summary = analyse(blocks, alpha=settings["alpha"], threshold=settings["threshold"], looks=len(settings["looks"]), metric=settings["metric"],
                      drop_first=settings["drop_first_step"], session=settings["session_id"], test=settings["test"], unit=settings["unit"])
    cuda = any(li["ready"][s].get("cuda") for li in launch_info for s in SIDES)
    apart = {li["launch"]: li["warmup_s"] for li in launch_info if li.get("warm_apart") and li.get("warmup_s") is not None}
    warm_wall = sum(b["wall_s"] for b in blocks if b["warmup"] and b["launch"] not in apart) + sum(apart.values())  # at once: its wall, once
    timing = {"wall_s": wall, "startup_s": sum(li["startup_s"] for li in launch_info), "close_s": sum(li.get("close_s", 0) for li in launch_info),
              "blocks_wall_s": sum(b["wall_s"] for b in blocks if not b["warmup"]) + warm_wall,
              "warmup_blocks_wall_s": warm_wall, "workers_cpu_s": cpu,
              "blocks_cpu_s": sum(b["cpu_s"] for b in blocks), "device": "gpu" if cuda else "cpu"}
    report = {"settings": settings, "orders": orders, "stopped": stopped, "timing": timing, "launches": launch_info, **summary,
              "injected": injected_share(blocks) if calibrated else None,
              "verdict": None if verdict is None else {"outcome": verdict.outcome, "message": verdict.message, **verdict.details}}
    if recovered:
        report["recovered"] = recovered
    report["plan"] = plan_for(report, groups=groups)
    # what the regression-issue script reads from any report (.github/scripts/regression-issues.sh)
    env_b = next((li["env"]["b"] for li in launch_info if (li.get("env") or {}).get("b")), None) or {}
    report.update(gpu=settings["gpu"], session_id=settings["session_id"], rows=[], versions=env_b.get("versions", {}),
                  verdicts=[] if verdict is None else [{"kind": "interleaved", "case": case, "outcome": verdict.outcome,
                                                        "message": verdict.message}])
    lines = report_lines(report)
    for ln in lines:
        out(ln)
    write_json_atomic(root / "report.json", report)
    write_atomic(root / "report.md", markdown(report, lines))
    return EXIT_REGRESSION if verdict is not None and verdict.outcome == "regression" else 0


def recover(results_dir: str | Path, *, out: Callable[[str], None] = print) -> int:
    """Judge a comparison that stopped before writing its report (the machine lost, a kill -9, a job's timeout) from what
    its results dir kept: every block (``blocks.jsonl``, appended as measured) and the settings and launches
    (``progress.json``, rewritten at each launch's start and end). The verdict is a last look at the complete pairs kept,
    as after a budget stop, so alpha per look holds; the report says what was recovered. Writes report.json and report.md,
    never over a report the run wrote itself. Exit code as the run's: 1 on a regression, else 0."""
    root = Path(results_dir)
    if (root / "report.json").exists():
        raise ValueError(f"{root} already has report.json: the run wrote its own report, nothing to recover")
    if not (root / "blocks.jsonl").exists():
        raise ValueError(f"no blocks.jsonl in {root}: not the results dir of an interleave run (its --results-dir)")
    if not (root / PROGRESS).exists():
        raise ValueError(f"no {PROGRESS} in {root}: it was written by a harness older than recover; judge its blocks.jsonl with "
                         "harness.commands.interleave.analyse and the run's settings")
    prog = json.loads((root / PROGRESS).read_text())
    settings, launch_info = prog["settings"], prog["launches"]
    blocks = [b for b in read_jsonl(root / "blocks.jsonl") if b.get("session_id") == settings["session_id"]]
    groups = grouped(pairs_of(blocks), settings["metric"], settings["drop_first_step"])
    n_pairs, ended = sum(map(len, groups)), max((b["started_at"] + b["wall_s"] for b in blocks), default=prog["t_start"])
    made = max((b["launch"] for b in blocks), default=0)
    recovered = {"pairs": n_pairs, "launches": made, "launches_planned": settings["launches"], "blocks": len(blocks),
                 "last_block_end_s": ended - prog["t_start"]}
    stopped = (f"stopped before its report, after {n_pairs} complete pairs in {made} of {settings['launches']} launches; "
               f"recovered from {root}")
    out(f"{prog['case']}: {stopped}")
    check = pd.PairedCheck(settings["alpha"], settings["threshold"], len(settings["looks"]), test=settings["test"], unit=settings["unit"])
    return _finish(root, settings=settings, orders=prog["orders"], stopped=stopped, launch_info=launch_info, blocks=blocks, groups=groups,
                   verdict=None, check=check, case=prog["case"], wall=ended - prog["t_start"], cpu=None,
                   calibrated=settings.get("inject_calibration") is not None, out=out, recovered=recovered)


def _fresh_fallback(exc: Exception, *, settings: dict, root: Path, dec: str, repeats: int, out: Callable[[str], None], **ab_args) -> int:
    """A and B do not fit on the device at once: fresh-process runs, one at a time (``ab``), judged at the fresh-run thresholds.
    The interleave report (``report.json``, ``report.md``) points to them and carries their runtime verdict."""
    from harness.commands.ab import ab

    fresh = root / "fresh"
    out(f"A and B do not fit on the device at once ({exc}); falling back to fresh-process runs, one at a time: {repeats} per side in "
        f"{fresh}, judged as `python -m harness ab` does (the fresh-run thresholds: far coarser than an interleaved comparison)")
    code = ab(decompositions=[dec], repeats=repeats, results_dir=fresh, out=out, **ab_args)
    case = f"{settings['workload']}-{dec}"
    got = json.loads((fresh / "report.json").read_text()) if (fresh / "report.json").exists() else {}
    v = next((x for x in got.get("verdicts", []) if x.get("kind") == "runtime" and x.get("case") == case), None)
    verdict = ({"outcome": v["outcome"], "message": f"{v['message']} (fresh-process runs: A and B did not fit on the device at once)"}
               if v else {"outcome": "inconclusive", "message": f"no runtime verdict from the fresh-process runs (exit code {code})"})
    report = {"settings": settings, "fallback": {"reason": str(exc), "results_dir": str(fresh), "repeats": repeats, "exit_code": code},
              "verdict": verdict}
    write_json_atomic(root / "report.json", report)
    write_atomic(root / "report.md", f"# interleave {case}: fresh-process fallback\n\n{exc}\n\n**{verdict['message']}**\n\n"
                 f"The runs and their full report: `{fresh}`.\n")
    return code


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
def report_lines(r: dict) -> list[str]:
    """The end-of-command summary, one fact per line."""
    t, v = r["timing"], r.get("verdict")
    out = []
    if v is None:
        out.append(f"no verdict: {r.get('pairs', 0)} complete pair(s); at least 2 are needed" + (f" ({r['stopped']})" if r.get("stopped") else ""))
    else:
        out.append(v["message"])
        out.append(f"interval (level {1 - 2 * v['alpha']:.4g}, one-sided {v['alpha']:.3g} each end): B/A x{v['ratio']:.4f} "
                   f"[{v['lo']:.4f}, {v['hi']:.4f}], {v['pairs']} pairs in {len(r.get('launch_sizes') or [])} launch(es), unit {v['unit']}"
                   + (f"; {r['stopped']}" if r.get("stopped") else ""))
    if r.get("sigma") is not None:
        m = r["mds"]
        micro = f", each made of {r['micro_per_step']} single micro-batch turns" if r.get("grain") == "micro" and r.get("micro_per_step") else ""
        out.append(f"per-pair sigma of the log ratio: {_pct(r['sigma'], 2)} ({r['metric']} of {', '.join(map(str, r['k']))} step(s) per block{micro}"
                   f"{', first step dropped' if r['drop_first'] else ''}); "
                   + ", ".join(f"{k} {_pct(x['sigma'], 2)}" for k, x in r["variants"].items() if x["sigma"] is not None))
        units = "pairs" if m.get("unit", "pair") == "pair" else "launches"
        out.append(f"minimum detectable slowdown at alpha 0.01, power 0.9, {m.get('units', r['pairs'])} {units} (sd {_pct(m.get('unit_sd', r['sigma']), 2)} "
                   f"per {units[:-1] if units == 'pairs' else 'launch'}): {_pct(m['slowdown'], 2)} "
                   f"(3.6 sd/sqrt(n) = {_pct(m['approx_3_6'], 2)}); with this run's alpha per look and threshold: {_pct(m['with_settings'], 2)}; "
                   f"{units} for 3%: {m.get('units_for_3pct', m.get('pairs_for_3pct')) or 'n/a'}")
    lc = (v or {}).get("launch_check")
    if lc and (v or {}).get("unit_rule") == "launch":
        out.append(f"launch variance: F({lc['df_between']}, {lc['df_within']}) = {lc['f']:.2f}, p = {lc['p']:.3g}; launch sd "
                   f"{_pct(lc['sigma_launch'], 2)} vs pair sd {_pct(lc['sigma_pair'], 2)}; launch ratios " + ", ".join(f"x{x:.4f}" for x in lc["ratios"])
                   + "; the launch is the unit whatever it adds")
    elif lc:
        differ = lc["p"] < pd.LAUNCH_ALPHA
        out.append(f"launch variance: F({lc['df_between']}, {lc['df_within']}) = {lc['f']:.2f}, p = {lc['p']:.3g}; launch sd {_pct(lc['sigma_launch'], 2)} "
                   f"vs pair sd {_pct(lc['sigma_pair'], 2)}; launch ratios " + ", ".join(f"x{x:.4f}" for x in lc["ratios"])
                   + ("; LAUNCHES DIFFER: the launch is the unit" if differ else "; no launch effect detected"))
    elif v is not None:
        out.append("launch variance: not tested (fewer than 2 launches with pairs)")
    rp = r.get("resume_penalty") or {}
    if any(rp.values()):
        out.append("resume penalty (first step / median of the others, 95% CI): "
                   + "; ".join(f"{x.upper()} x{p['ratio']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]" for x, p in rp.items() if p))
    elif r.get("grain") == "micro":
        out.append("resume penalty: not measured (micro grain: every micro-batch follows a wait, on both sides alike)")
    elif r.get("k") == [1]:
        out.append("resume penalty: not measured (blocks of 1 step: every step is a first step, on both sides alike)")
    if (pl := plan_line(r)) is not None:
        out.append(pl)
    if (inj := r.get("injected")) is not None:
        out.append(f"injected work by its own clock: {inj['inject_ms']:.1f} ms per step of B, +{inj['share']:.1%} of the rest of its "
                   f"step (median of {inj['blocks']} blocks): the nominal slowdown; the measured one is the estimate above")
    c = r.get("canary") or {}
    if c.get("pair_corr") is not None:
        out.append(f"host canary: correlation with the block's step time A {c['corr_a']:+.2f}, B {c['corr_b']:+.2f}; with the pair log ratio "
                   f"{c['pair_corr']:+.2f}; as a covariate sigma {_pct(c['sigma_plain'], 2)} -> {_pct(c['sigma_adjusted'], 2)} "
                   f"(variance {-c['reduction']:+.0%}), ratio x{c['ratio_plain']:.4f} -> x{c['ratio_adjusted']:.4f}; not used by the verdict")
    if r.get("gpu_state"):
        g = r["gpu_state"]
        ls, sm = g["launch_sm_clock_mhz"], g["sm_clock_mhz"]
        out.append(f"GPU as each block ended ({g['readings']} readings): SM clock median {sm['median']:.0f} MHz (min {sm['min']:.0f}, max {sm['max']:.0f}; "
                   f"launch medians {min(ls):.0f}-{max(ls):.0f})"
                   + (f", power median {g['power_w_median']:.0f} W" if g.get("power_w_median") is not None else "")
                   + (f", up to {g['temp_c_max']:.0f} C" if g.get("temp_c_max") is not None else "")
                   + (f"; a clock-event reason other than idle (power, thermal, slowdown) in {g['clock_event_share']:.0%} of them"
                      if g.get("clock_event_share") is not None else ""))
    if r.get("other_cpus"):
        o = r["other_cpus"]
        out.append(f"other load on this machine during the blocks: median {o['median']:.2f} CPUs busy elsewhere, max {o['max']:.2f}; "
                   f"{o['busy_share']:.0%} of blocks ran beside more than half a busy CPU")
    dev = "GPU" if t["device"] == "gpu" else "CPU"
    out.append(f"time: {t['wall_s']:.0f} s wall ({dev} held), of which start-up {t['startup_s']:.0f} s over {len(r.get('launches') or [])} launch(es), "
               f"blocks {t['blocks_wall_s']:.0f} s (warm-up {t['warmup_blocks_wall_s']:.0f} s), stopping {t.get('close_s', 0):.0f} s; "
               + (f"worker CPU {t['workers_cpu_s']:.0f} s " if t.get("workers_cpu_s") is not None else "worker CPU not known (recovered) ")
               + f"(blocks {t['blocks_cpu_s']:.0f} s" + (f", {r['cpu_s_per_pair']:.2f} s per pair)" if r.get("cpu_s_per_pair") else ")"))
    if (pw := prestart_line(r)) is not None:
        out.append(pw)
    return out


def prestart_line(r: dict) -> str | None:
    """How long the pre-started launches waited for their imports beyond their build, and from how many pairs a launch
    hides the next one's (:func:`prestart_costs`). None without pre-started launches."""
    pre, costs = _prestarted(r), prestart_costs(r)
    if not pre or costs is None or not r.get("wall_s_per_pair"):
        return None
    builds = [_build_s(li) for li in pre]
    waits = [li["startup_s"] - b for li, b in zip(pre, builds)]
    m = math.ceil(costs[1] / r["wall_s_per_pair"])
    hides = f"from about {m} pairs on" if m > 0 else "with its warm-up alone"
    return (f"pre-start: the {len(pre)} later launch(es) were built in {fmean(builds):.1f} s and waited {max(fmean(waits), 0.0):.1f} s more "
            f"for their imports; a launch, pre-starting the next at its ready, hides the next one's imports {hides}")


PLAN_BUDGET_S = 600.0  # the budget a plan is made for when the run had none: the 10 GPU-minutes of a nightly comparison


def launch_cost(li: dict) -> float:
    """What a launch cost besides its pairs: start-up, warm-up blocks, stopping."""
    return li["startup_s"] + (li.get("warmup_s") or 0.0) + (li.get("close_s") or 0.0)


def _prestarted(r: dict) -> list[dict]:
    return [li for li in (r.get("launches") or [])[1:] if li.get("prestarted")]


def _build_s(li: dict) -> float:
    """A pre-started launch's build after its release: the slower side's."""
    return max(li["ready"][s]["startup_wall_s"] for s in SIDES)


def prestart_costs(r: dict) -> tuple[float, float] | None:
    """(launch_s, hide_s) of the pre-started launches, for :func:`paired.launch_plan` of a next run with this code: what a
    later launch costs when its imports were done beside the launch before it (its build after the release, warm-up,
    stopping), and how much of those imports the launch before must hide with its pairs (the imports, less the warm-up
    and stopping they run beside: this code pre-starts at the ready, ``settings["prestart_at"]``; runs before it
    pre-started after the warm-up). None without pre-started launches that record their imports."""
    pre = _prestarted(r)
    if not pre:
        return None
    try:
        ready = fmean(map(_build_s, pre))
        imports = fmean(max(li["ready"][s]["timing_s"]["preload_s"] for s in SIDES) for li in pre)
    except (KeyError, TypeError):
        return None
    warm, close = (fmean(li.get(k) or 0.0 for li in pre) for k in ("warmup_s", "close_s"))
    return ready + warm + close, max(0.0, imports - warm - close)


def plan_for(r: dict, budget_s: float | None = None, groups: list[list[float]] | None = None) -> dict | None:
    """The launches this comparison's costs and noise call for within ``budget_s`` (default: the run's own budget, else
    :data:`PLAN_BUDGET_S`), by :func:`paired.launch_plan`: the first launch's cost, the later ones' (with pre-started
    workers by :func:`prestart_costs`: a launch too short to hide the next one's imports waits for the rest; else the
    mean later launch; the first one's when there was none), the mean pair, and the variance components of the launch
    summaries (``analyse``'s ``launch_components``: the pair sd as the summary sees it, and the launch sd, by moments). A
    guide for the next run's ``--launches``. The launch sd of a few launches is a rough estimate, so the plan is the one of
    least regret between the estimate and its one-sided 90% upper bound (``launch_sd_upper``): ``mds_at_estimate`` and
    ``mds`` are its MDS at the two, ``regret`` the most it gives away in between, ``at_estimate`` the plan for the
    estimate alone. None below 2 launches with pairs (no launch sd to plan with).

    With the run's pair log ratios by launch (``groups``), ``drawn`` checks the model against them
    (:func:`harness.judging.simulate.drawn_mds`, at the launch sd measured): the MDS of the plan's launches, and of this
    run's number of launches within the same budget, drawn from the run's own pairs. Heavy-tailed pairs make short
    launches noisier than the model says, and then more launches can lose where the model says they gain."""
    lis, comp = r.get("launches") or [], r.get("launch_components")
    if not comp or not lis or not r.get("wall_s_per_pair"):
        return None
    budget = budget_s or ((r["settings"].get("budget_minutes") or 0) * 60) or PLAN_BUDGET_S
    first, later = launch_cost(lis[0]), [launch_cost(li) for li in lis[1:]]
    c, hide = prestart_costs(r) or (fmean(later) if later else first, 0.0)
    tau = comp.get("launch_sd_upper", comp["launch_sd"])
    plan = pd.launch_plan(budget, first, c, r["wall_s_per_pair"], comp["pair_sd"], comp["launch_sd"], launch_sd_hi=tau, hide_s=hide)
    if plan is None:
        return None
    at_estimate = pd.launch_plan(budget, first, c, r["wall_s_per_pair"], comp["pair_sd"], comp["launch_sd"], hide_s=hide)
    drawn = None
    if groups:
        ran = len(r.get("launch_sizes") or [])
        fits = dict(pd.plans_within(budget, first, c, r["wall_s_per_pair"], max(ran, plan.launches), 1, hide))
        drawn = {"plan": sim.drawn_mds(groups, plan.launches, plan.pairs_per_launch, comp["launch_sd"], comp["summary"]),
                 "launches": ran, "pairs_per_launch": fits.get(ran)}
        drawn["as_run"] = sim.drawn_mds(groups, ran, fits[ran], comp["launch_sd"], comp["summary"]) if fits.get(ran) else None
    return {"budget_s": budget, "first_s": first, "launch_s": c, "hide_s": hide, "pair_s": r["wall_s_per_pair"], "pair_sd": comp["pair_sd"],
            "launch_sd": comp["launch_sd"], "launch_sd_planned": tau, "level": comp.get("level"), "summary": comp["summary"],
            "at_estimate": None if at_estimate is None else {"launches": at_estimate.launches, "pairs_per_launch": at_estimate.pairs_per_launch,
                                                             "mds": at_estimate.mds},
            "mds_at_estimate": plan.mds, "regret": plan.regret,
            "launches": plan.launches, "pairs_per_launch": plan.pairs_per_launch, "unit_sd": plan.unit_sd,
            "mds": plan.mds_hi, "drawn": drawn}


def plan_line(r: dict) -> str | None:
    p = r.get("plan")
    if not p:
        return None
    m = r.get("mds") or {}
    here = (f" (this run: {len(r.get('launch_sizes') or [])} launches of about {round(r['pairs'] / max(len(r.get('launch_sizes') or [1]), 1))} pairs"
            + (f", {_pct(m['slowdown'], 2)}" if m.get("unit") == "launch" and m.get("slowdown") else "") + ")")
    hide = f" plus any of the next one's {p['hide_s']:.1f} s of imports its pairs do not hide" if p.get("hide_s") else ""
    return (f"plan for {p['budget_s'] / 60:g} min at this run's costs (first launch {p['first_s']:.1f} s, later {p['launch_s']:.1f} s{hide}, "
            f"{p['pair_s']:.2f} s per pair) and noise (pair sd {_pct(p['pair_sd'], 2)} as the "
            f"{'Hodges-Lehmann summary' if p.get('summary') == 'hl' else 'mean'} sees it; launch sd {_pct(p['launch_sd'], 2)} by moments, "
            f"{p.get('level') or 0.9:.0%} upper bound {_pct(p.get('launch_sd_planned', p['launch_sd']), 2)}): --launches {p['launches']} "
            f"({p['pairs_per_launch']} pairs each) detects {_pct(p.get('mds_at_estimate', p['mds']), 2)} at the launch sd measured and "
            f"{_pct(p['mds'], 2)} at its bound, alpha 0.01, power 0.9, giving away at most {p.get('regret', 0.0) * 100:.2f} points of MDS between them"
            + (f" (for the estimate alone: --launches {e['launches']}, {_pct(e['mds'], 2)})" if (e := p.get("at_estimate")) else "") + here
            + drawn_text(p))


def drawn_text(p: dict) -> str:
    """The plan line's check of its model against the run's own pairs (``plan_for``'s ``drawn``)."""
    d = p.get("drawn") or {}
    if d.get("plan") is None:
        return ""
    text = f"; drawn from this run's own pairs at the launch sd measured: {_pct(d['plan'], 2)} for the plan"
    if d.get("as_run") is None or d["launches"] == p["launches"]:
        return text
    text += f", {_pct(d['as_run'], 2)} for {d['launches']} launches of {d['pairs_per_launch']} pairs"
    if d["as_run"] <= d["plan"]:
        text += f": the plan draws no better than this run's launches here, keep --launches {d['launches']}"
    return text


def markdown(r: dict, lines: list[str]) -> str:
    s = r["settings"]
    pair = s["decomposition"] if s.get("decomposition_b", s["decomposition"]) == s["decomposition"] else f"{s['decomposition_b']}-vs-{s['decomposition']}"
    head = [f"# interleave {s['workload']}-{pair} on {s['gpu']}", "",
            f"- A: `{s['python_a']}`", f"- B: `{s['python_b']}`" + (f" (inject_slowdown {s['inject_slowdown_b']}, inject_work {s['inject_work_b']})"
                                                                    if s['inject_slowdown_b'] or s['inject_work_b'] else ""),
            *([f"- {calibration_text(c)}"] if (c := s.get("inject_calibration")) else []),
            f"- {s['block_steps']} steps per block, {s['pairs']} pairs planned over {s['launches']} launches, looks at {s['looks']}, "
            f"alpha {s['alpha']}, threshold {s['threshold']}, seed {s['seed']}, metric {s['metric']}"
            + (", first step dropped" if s["drop_first_step"] else ""), "", "## Result", ""]
    return "\n".join(head + [f"- {ln}" for ln in lines]) + "\n"


def reanalyse(results_dir: str | Path, metric: str = DEFAULT_METRIC, drop_first: bool = False, test: str = "rank", unit: str | None = None) -> dict:
    """The analysis of a stored ``blocks.jsonl`` (its own report.json's settings), with another metric, first-step policy, test or unit
    (default: the one it ran with; reports from before ``unit`` existed ran with the pair)."""
    root = Path(results_dir)
    rep = json.loads((root / "report.json").read_text())
    s = rep["settings"]
    return analyse(read_jsonl(root / "blocks.jsonl"), alpha=s["alpha"], threshold=s["threshold"], looks=len(s["looks"]), metric=metric,
                   drop_first=drop_first, session=s["session_id"], test=test, unit=unit or s.get("unit", "pair"))
