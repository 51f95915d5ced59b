"""The block records of an interleaved comparison, judged: pairs, log ratios by launch, the comparison's one verdict
(:func:`comparison_verdict`) and the analysis its report states beside it (:func:`analyse`).

Pure: the same functions judge a running comparison, ``recover`` and a stored ``blocks.jsonl``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean, median
from typing import Any

from harness.judging import block_metrics as bm
from harness.judging import launches as la
from harness.judging import paired as pd
from harness.judging import planning as pn
from harness.judging import stats
from harness.judging.comparison_settings import ComparisonSettings
from harness.results.verdict import FIELDS, Verdict

SIDES = ("a", "b")
DEFAULT_METRIC = "median"  # of the block's step times, as a run is summarised by the median of its steps


def _finite(x, lo: float = float("-inf")) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > lo


def _whole(x, lo: int = 0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= lo


def _phases(ph) -> bool:
    """A block's ``phases_ms``: per phase, a list of its per-step times (finite);
    where in the step B's time moved reads it."""
    return (
        isinstance(ph, dict)
        and bool(ph)
        and all(isinstance(v, list) and all(_finite(x) for x in v) for v in ph.values())
    )


def block_problem(r: dict) -> str | None:
    """Why a block record cannot be judged (a key the analysis reads missing, of the wrong type or not finite), or None.
    Readers of a stored ``blocks.jsonl`` (``recover``) leave such a record out and name it, instead of a traceback."""
    steps = r.get("step_times_ms")
    why = [
        (r.get("side") in SIDES, f"side is {r.get('side')!r}, not 'a' or 'b'"),
        (_whole(r.get("launch"), 1), f"launch is {r.get('launch')!r}, not a launch number"),
        (isinstance(r.get("warmup"), bool), f"warmup is {r.get('warmup')!r}, not true or false"),
        (r.get("warmup") is not False or _whole(r.get("pair"), 1), f"pair is {r.get('pair')!r}, not a pair number"),
        (
            isinstance(steps, list) and bool(steps) and all(_finite(x, 0) for x in steps),
            "step_times_ms is not a list of finite positive numbers",
        ),
        (
            all(_finite(r.get(k)) for k in ("started_at", "wall_s", "cpu_s")),
            "started_at, wall_s or cpu_s is not a finite number",
        ),
        (
            r.get("canary_ms") is None or _finite(r["canary_ms"], 0),
            f"canary_ms is {r.get('canary_ms')!r}, not a finite positive number",
        ),
        (
            all(r.get(k) is None or _finite(r[k]) for k in ("other_cpus", "inject_ms")),
            "other_cpus or inject_ms is not a finite number",
        ),
        (
            r.get("gpu") is None
            or (
                isinstance(r["gpu"], dict)
                and all(r["gpu"].get(k) is None or _finite(r["gpu"][k]) for k in ("sm_clock_mhz", "power_w", "temp_c"))
                and (r["gpu"].get("throttle_reasons") is None or _whole(r["gpu"]["throttle_reasons"]))
            ),
            "gpu is not an object of finite readings",
        ),
        (
            r.get("unit") is None or all(_whole(r.get(k), 1) for k in ("unit", "units", "micro_per_step")),
            "unit, units or micro_per_step is not a whole number >= 1",
        ),
        (
            r.get("phases_ms") is None or _phases(r["phases_ms"]),
            f"phases_ms is {str(r.get('phases_ms'))[:40]}, not an object of per-step times per phase",
        ),
    ]
    return next((text for ok, text in why if not ok), None)


def pairs_of(blocks: list[dict], session: str | None = None) -> list[dict]:
    """Complete pairs (one measured block of each side), in pair order: ``{"pair", "launch", "order", "a", "b"}``. A
    pair of the micro grain (rows with a ``unit``) gets, per side, one block merged from its units
    (:func:`merge_units`)."""
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
    steps = [sum(walls[i : i + per]) for i in range(0, len(walls), per)]
    other = [r["other_cpus"] for r in rows if r.get("other_cpus") is not None]
    out = dict(
        rows[0],
        step_times_ms=steps,
        k=len(steps),
        wall_s=sum(r["wall_s"] for r in rows),
        cpu_s=sum(r["cpu_s"] for r in rows),
        canary_ms=median(r["canary_ms"] for r in rows),
        other_cpus=fmean(other) if other else None,
        phases_ms=None,
        losses=[x for r in rows for x in (r.get("losses") or [])],
        global_step=rows[-1]["global_step"],
        unit=None,
    )
    if all(r.get("inject_ms") is not None for r in rows):
        out["inject_ms"] = sum(r["inject_ms"] * r["k"] for r in rows) / len(steps)
    return out


def grouped(pairs: list[dict], block_metric: str = DEFAULT_METRIC, drop_first_step: bool = False) -> list[list[float]]:
    """Pair log ratios log(B/A), each side's block summarised by ``block_metric`` (:mod:`block_metrics`), grouped by
    launch in launch order."""
    out: dict[int, list[float]] = {}
    for p in pairs:
        a = bm.block_metric(p["a"]["step_times_ms"], block_metric, drop_first_step)
        b = bm.block_metric(p["b"]["step_times_ms"], block_metric, drop_first_step)
        out.setdefault(p["launch"], []).append(math.log(b / a))
    return [out[k] for k in sorted(out)]


CLOCK_EVENT_ROUTINE = 0x1 | 0x2  # NVML clock-event reasons that are no slowdown: the GPU idle, application clocks


def gpu_state(blocks: list[dict], session: str | None = None) -> dict | None:
    """The GPU as the measured blocks ended (each block's one NVML reading, ``gpu``): SM clock overall and per launch,
    power, temperature, and the share of readings with a clock-event reason other than idle or application clocks
    (power cap, thermal, hardware slowdown). None without readings (a CPU run, no NVML,
    blocks recorded without them)."""
    xs = [
        b
        for b in blocks
        if not b.get("warmup")
        and not b.get("calibration")
        and b.get("gpu")
        and (session is None or b.get("session_id") == session)
    ]
    xs = [b for b in xs if b["gpu"].get("sm_clock_mhz") is not None]
    if not xs:
        return None
    sm = [b["gpu"]["sm_clock_mhz"] for b in xs]
    per: dict[int, list[float]] = {}
    for b in xs:
        per.setdefault(b["launch"], []).append(b["gpu"]["sm_clock_mhz"])
    power = [b["gpu"]["power_w"] for b in xs if b["gpu"].get("power_w") is not None]
    temp = [b["gpu"]["temp_c"] for b in xs if b["gpu"].get("temp_c") is not None]
    events = [
        b["gpu"]["throttle_reasons"] & ~CLOCK_EVENT_ROUTINE for b in xs if b["gpu"].get("throttle_reasons") is not None
    ]
    return {
        "readings": len(xs),
        "sm_clock_mhz": {"median": median(sm), "min": min(sm), "max": max(sm)},
        "launch_sm_clock_mhz": [median(per[n]) for n in sorted(per)],
        "power_w_median": median(power) if power else None,
        "temp_c_max": max(temp) if temp else None,
        "clock_event_share": sum(e != 0 for e in events) / len(events) if events else None,
    }


def default_unit(launches: int) -> str:
    """The unit of replication when none is asked for: the launch from :data:`paired.MIN_LAUNCH_UNIT` launches on."""
    return "launch" if launches >= la.MIN_LAUNCH_UNIT else "pair"


def _variants(pairs: list[dict]) -> dict[str, dict]:
    """The pairs' sigma and ratio under every block metric, with and without each block's first step."""
    variants = {}
    for how in bm.METRICS:
        for drop in (False, True):
            dd = [x for g in grouped(pairs, how, drop) for x in g]
            variants[f"{how}{'-drop-first' if drop else ''}"] = {
                "sigma": stats.sd(dd, None),
                "ratio": math.exp(fmean(dd)),
            }
    return variants


def _resume(pairs: list[dict], grain: str) -> dict:
    """Per side, the penalty of a block's first step after the wait (:func:`block_metrics.resume_penalty`)."""
    if grain != "step":  # at the micro grain every micro-batch follows a wait: no first step to single out
        return {}
    resume = {}
    for s in SIDES:
        rp = bm.resume_penalty([p[s]["step_times_ms"] for p in pairs])
        resume[s] = None if rp is None else {"ratio": rp.ratio, "lo": rp.lo, "hi": rp.hi, "blocks": rp.blocks}
    return resume


def _canary(pairs: list[dict], d: list[float], block_metric: str, drop_first_step: bool) -> dict:
    """The canary beside the pairs' log ratios ``d``: its correlation with each side's block metric, the covariate
    adjustment (:func:`block_metrics.canary_covariate`) and its median per side; empty without a canary on every
    block."""
    canary: dict = {}
    if not all(p[s].get("canary_ms") for p in pairs for s in SIDES):
        return canary
    for s in SIDES:
        canary[f"corr_{s}"] = bm.correlation(
            [math.log(p[s]["canary_ms"]) for p in pairs],
            [math.log(bm.block_metric(p[s]["step_times_ms"], block_metric, drop_first_step)) for p in pairs],
        )
    c = [math.log(p["b"]["canary_ms"] / p["a"]["canary_ms"]) for p in pairs]
    cov = bm.canary_covariate(d, c)
    if cov is not None:
        canary.update(
            pair_corr=cov.corr,
            slope=cov.slope,
            sigma_plain=cov.sigma_plain,
            sigma_adjusted=cov.sigma_adjusted,
            reduction=cov.reduction,
            ratio_plain=math.exp(cov.plain),
            ratio_adjusted=math.exp(cov.adjusted),
            se_plain=cov.plain_se,
            se_adjusted=cov.adjusted_se,
        )
    canary["median_ms"] = {s: median(p[s]["canary_ms"] for p in pairs) for s in SIDES}
    return canary


def _mds(v: Verdict, sigma: float | None, n: int, threshold: float) -> dict:
    """The verdict's minimum detectable slowdown: from the sd of its units (launch summaries, or pairs) and their
    number, at alpha 0.01 and power 0.9 and at the verdict's own alpha per look and the threshold, and the units and
    pairs a 3% slowdown needs."""
    u_sd, u_n = (v.details["sd"], v.details["n_units"]) if v.unit == "launch" else (sigma, n)
    u_sd = u_sd if u_sd is not None and math.isfinite(u_sd) and u_sd > 0 else None
    return {
        "alpha": 0.01,
        "power": 0.9,
        "unit": v.unit,
        "units": u_n,
        "unit_sd": u_sd,
        "slowdown": pn.min_detectable(u_sd, u_n, 0.01, 0.9) if u_sd else None,
        "approx_3_6": 3.6 * u_sd / math.sqrt(u_n) if u_sd else None,
        "with_settings": pn.min_detectable(u_sd, u_n, v.alpha, 0.9, threshold) if u_sd else None,
        "units_for_3pct": pn.pairs_needed(u_sd, 0.03, 0.01, 0.9) if u_sd else None,
        "pairs_for_3pct": pn.pairs_needed(sigma, 0.03, 0.01, 0.9) if sigma else None,
    }  # by the pair-level t test


def _components(comp: la.LaunchComponents | None) -> dict | None:
    """The launch summaries' variance components as the report keeps them; None without them."""
    if comp is None:
        return None
    return {
        "pair_sd": comp.pair_sd,
        "launch_sd": comp.launch_sd,
        "summary": comp.summary,
        "launch_sd_upper": comp.launch_sd_upper,
        "level": comp.level,
    }


def _host_load(pairs: list[dict]) -> dict:
    """What the host spent per pair (CPU and wall seconds of both sides) and the other processes' CPUs beside it."""
    other = [p[s]["other_cpus"] for p in pairs for s in SIDES if p[s].get("other_cpus") is not None]
    cpu = [p["a"].get("cpu_s", 0) + p["b"].get("cpu_s", 0) for p in pairs]
    wall = [p["a"].get("wall_s", 0) + p["b"].get("wall_s", 0) for p in pairs]
    return {
        "cpu_s_per_pair": fmean(cpu) if cpu else None,
        "wall_s_per_pair": fmean(wall) if wall else None,
        "other_cpus": {
            "median": median(other),
            "max": max(other),
            "busy_share": sum(x > 0.5 for x in other) / len(other),
        }
        if other
        else None,
    }


def comparison_verdict(
    groups: list[list[float]], check: pd.PairedCheck, looked: stats.Verdict | None = None, case: str = "B/A"
) -> Verdict | None:
    """The one verdict of a comparison, from its pair log ratios by launch (:func:`grouped`) and its check (alpha per
    look, threshold, test, unit): ``looked``, the verdict of its last planned look, when that judged every pair made;
    else a last look at the pairs made (a budget stop between looks, or a run recovered from what it kept: this look
    replaces the next planned one, so alpha per look holds); None below two pairs. The report states it as returned,
    and :func:`analyse` analyses beside it without judging again."""
    n_pairs = sum(map(len, groups))
    if looked is None or looked.details.get("pairs") != n_pairs:
        looked = check.decide(groups, case, None) if n_pairs >= 2 else None
    if looked is None:
        return None
    d = looked.details
    return Verdict(
        looked.outcome,
        looked.message,
        {k: x for k, x in d.items() if k not in FIELDS},
        ratio=d["ratio"],
        interval=(d["lo"], d["hi"]),
        test=d["test"],
        alpha=d["alpha"],
        unit=d["unit"],
    )


@dataclass(frozen=True)
class Analysis:
    """What a comparison's report states beside its verdict, from its block records (:func:`analyse`): ``pairs``
    judged, their ``launch_sizes`` (pairs per launch with pairs), the per-pair ``sigma`` of the log ratio and its
    ``variants`` (every block metric, with and without each block's first step), the minimum detectable slowdown
    (``mds``), the launch summaries' variance components, the resume penalty, the canary, where in the step B's time
    moved (``phases``), the median step per side, the block lengths ``k``, the host's load and the GPU's state. Below
    two complete pairs only ``pairs`` and ``verdict``. ``skipped``: the lines of a stored ``blocks.jsonl`` left out
    (:func:`harness.sidebyside.finish.reanalyse`)."""

    pairs: int
    verdict: Verdict | None
    micro_per_step: int | None = None
    launch_sizes: tuple[int, ...] | None = None
    block_metric: str | None = None
    drop_first_step: bool | None = None
    grain: str | None = None
    sigma: float | None = None
    variants: Mapping[str, Mapping] | None = None
    mds: Mapping[str, Any] | None = None
    launch_components: Mapping[str, Any] | None = None
    resume_penalty: Mapping[str, Any] | None = None
    canary: Mapping[str, Any] | None = None
    phases: Mapping[str, Any] | None = None
    step_ms_median: Mapping[str, float] | None = None
    k: tuple[int, ...] | None = None
    cpu_s_per_pair: float | None = None
    wall_s_per_pair: float | None = None
    other_cpus: Mapping[str, float] | None = None
    gpu_state: Mapping[str, Any] | None = None
    skipped: tuple[str, ...] = ()

    @property
    def judged(self) -> bool:
        """Whether there were pairs enough (two) to analyse."""
        return self.launch_sizes is not None

    def to_json(self) -> dict:
        """The analysis as the report writes it, beside the settings: the block metric as ``metric``; ``skipped`` only
        where lines were left out."""
        verdict = None if self.verdict is None else self.verdict.to_json()
        out: dict[str, Any] = {"pairs": self.pairs, "verdict": verdict}
        if self.judged:
            out = {
                "micro_per_step": self.micro_per_step,
                "pairs": self.pairs,
                "launch_sizes": list(self.launch_sizes or ()),
                "metric": self.block_metric,
                "drop_first_step": self.drop_first_step,
                "grain": self.grain,
                "verdict": verdict,
                "sigma": self.sigma,
                "variants": self.variants,
                "mds": self.mds,
                "launch_components": self.launch_components,
                "resume_penalty": self.resume_penalty,
                "canary": self.canary,
                "phases": self.phases,
                "step_ms_median": self.step_ms_median,
                "k": list(self.k or ()),
                "cpu_s_per_pair": self.cpu_s_per_pair,
                "wall_s_per_pair": self.wall_s_per_pair,
                "other_cpus": self.other_cpus,
                "gpu_state": self.gpu_state,
            }
        return {**out, "skipped": list(self.skipped)} if self.skipped else out


def analyse(blocks: list[dict], settings: ComparisonSettings, verdict: Verdict | None = None) -> Analysis:
    """Everything the report says beside the verdict (:class:`Analysis`), from the block records judged with
    ``settings``. ``verdict``: the comparison's (:func:`comparison_verdict`'s, which the report passes: it is
    analysed, never judged again); without one (blocks judged alone: a stored ``blocks.jsonl``),
    :func:`comparison_verdict` of these blocks at these settings, a unit of None being :func:`default_unit` of the
    launches with pairs. The minimum detectable slowdown is the verdict's: from the sd of its units (launch summaries,
    or pairs) and their number."""
    pairs = pairs_of(blocks, settings.session_id)
    if len(pairs) < 2:
        return Analysis(len(pairs), verdict)
    metric, drop = settings.block_metric, settings.drop_first_step
    groups = grouped(pairs, metric, drop)
    check = settings.check(default_unit(len(groups)))
    v = verdict if verdict is not None else comparison_verdict(groups, check)
    d = [x for g in groups for x in g]
    sigma = stats.sd(d, None)
    comp = la.launch_components(groups, check.summary if v.unit == "launch" and check.summary in la.SUMMARIES else "hl")
    grain = "micro" if any(p["a"].get("micro_per_step") for p in pairs) else "step"
    steps = [p[s]["step_times_ms"] for p in pairs for s in SIDES]
    load = _host_load(pairs)
    return Analysis(
        len(d),
        v,
        micro_per_step=pairs[0]["a"].get("micro_per_step"),
        launch_sizes=tuple(len(g) for g in groups),
        block_metric=metric,
        drop_first_step=drop,
        grain=grain,
        sigma=sigma,
        variants=_variants(pairs),
        mds=_mds(v, sigma, len(d), settings.threshold),
        launch_components=_components(comp),
        resume_penalty=_resume(pairs, grain),
        canary=_canary(pairs, d, metric, drop),
        phases=bm.phase_deltas(pairs),
        step_ms_median={s: median(x for p in pairs for x in p[s]["step_times_ms"]) for s in SIDES},
        k=tuple(sorted({len(x) for x in steps})),
        cpu_s_per_pair=load["cpu_s_per_pair"],
        wall_s_per_pair=load["wall_s_per_pair"],
        other_cpus=load["other_cpus"],
        gpu_state=gpu_state(blocks, settings.session_id),
    )
