"""The block records of an interleaved comparison, judged: pairs, log ratios by launch, the comparison's one verdict
(:func:`comparison_verdict`) and the analysis its report states beside it (:func:`analyse`).

Pure: the same functions judge a running comparison, ``recover`` and a stored ``blocks.jsonl``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from statistics import fmean, median
from typing import Any

from harness.judging import block_metrics as bm
from harness.judging import launches as la
from harness.judging import paired as pd
from harness.judging import planning as pn
from harness.judging import stats
from harness.judging.comparison_settings import ComparisonSettings
from harness.results.block import SIDES, Block
from harness.results.verdict import FIELDS, Verdict

DEFAULT_METRIC = "median"  # of the block's step times, as a run is summarised by the median of its steps


@dataclass(frozen=True)
class Pair:
    """A complete pair: one measured block of each side (at the micro grain, each merged from its units), its launch
    and its order ("ab" or "ba")."""

    pair: int
    launch: int
    order: str | None
    a: Block
    b: Block

    def side(self, s: str) -> Block:
        return self.a if s == "a" else self.b


def pairs_of(blocks: Sequence[Block], session: str | None = None) -> list[Pair]:
    """Complete pairs (one measured block of each side), in pair order. A pair of the micro grain (rows with a
    ``unit``) gets, per side, one block merged from its units (:func:`merge_units`)."""
    first: dict[int, Block] = {}
    sides: dict[tuple[int, str], Block] = {}
    units: dict[tuple[int, str], list[Block]] = {}
    for r in blocks:
        if r.warmup or (session and r.session_id != session):
            continue
        first.setdefault(r.pair, r)
        if r.unit is None:
            sides[r.pair, r.side] = r
        else:
            units.setdefault((r.pair, r.side), []).append(r)
    for key, rows in units.items():
        if len(rows) == rows[0].units:  # a pair cut short by an interrupt is not complete
            sides[key] = merge_units(rows)
    return [
        Pair(n, f.launch, f.order, sides[n, "a"], sides[n, "b"])
        for n, f in sorted(first.items())
        if (n, "a") in sides and (n, "b") in sides
    ]


def merge_units(rows: list[Block]) -> Block:
    """One side's block of a micro-grain pair, from its units (one micro-batch each, in unit order): step j's time is
    the sum of the synchronized wall times of its ``micro_per_step`` units, so the pair's ratio is a ratio of step
    times, as at the step grain; wall and CPU time, the injected work and the losses add up, the canary is the
    median, the other CPUs the mean; no phases (a unit's recorder spans the waits)."""
    rows = sorted(rows, key=lambda r: r.unit)
    per = rows[0].micro_per_step
    walls = [r.step_times_ms[0] for r in rows]
    steps = tuple(sum(walls[i : i + per]) for i in range(0, len(walls), per))
    other = [r.other_cpus for r in rows if r.other_cpus is not None]
    inject = rows[0].inject_ms
    if all(r.inject_ms is not None for r in rows):
        inject = sum(r.inject_ms * r.k for r in rows) / len(steps)
    return replace(
        rows[0],
        step_times_ms=steps,
        k=len(steps),
        wall_s=sum(r.wall_s for r in rows),
        cpu_s=sum(r.cpu_s for r in rows),
        canary_ms=median(r.canary_ms for r in rows),
        other_cpus=fmean(other) if other else None,
        phases_ms=None,
        losses=tuple(x for r in rows for x in (r.losses or ())),
        global_step=rows[-1].global_step,
        unit=None,
        inject_ms=inject,
    )


def grouped(pairs: list[Pair], block_metric: str = DEFAULT_METRIC, drop_first_step: bool = False) -> list[list[float]]:
    """Pair log ratios log(B/A), each side's block summarised by ``block_metric`` (:mod:`block_metrics`), grouped by
    launch in launch order."""
    out: dict[int, list[float]] = {}
    for p in pairs:
        a = bm.block_metric(p.a.step_times_ms, block_metric, drop_first_step)
        b = bm.block_metric(p.b.step_times_ms, block_metric, drop_first_step)
        out.setdefault(p.launch, []).append(math.log(b / a))
    return [out[k] for k in sorted(out)]


CLOCK_EVENT_ROUTINE = 0x1 | 0x2  # NVML clock-event reasons that are no slowdown: the GPU idle, application clocks


@dataclass(frozen=True)
class SmClock:
    """The SM clock of the GPU readings, MHz."""

    median: float
    min: float
    max: float

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class GpuState:
    """The GPU as the measured blocks ended (:func:`gpu_state`): its ``readings``, the SM clock overall and per launch
    (``launch_sm_clock_mhz``, in launch order), the median power, the highest temperature and the share of readings
    with a clock-event reason other than idle or application clocks (None where no reading had it)."""

    readings: int
    sm_clock_mhz: SmClock
    launch_sm_clock_mhz: tuple[float, ...]
    power_w_median: float | None
    temp_c_max: float | None
    clock_event_share: float | None

    def to_json(self) -> dict:
        return {
            "readings": self.readings,
            "sm_clock_mhz": self.sm_clock_mhz.to_json(),
            "launch_sm_clock_mhz": list(self.launch_sm_clock_mhz),
            "power_w_median": self.power_w_median,
            "temp_c_max": self.temp_c_max,
            "clock_event_share": self.clock_event_share,
        }


def gpu_state(blocks: Sequence[Block], session: str | None = None) -> GpuState | None:
    """The GPU as the measured blocks ended (each block's one NVML reading, ``gpu``): SM clock overall and per launch,
    power, temperature, and the share of readings with a clock-event reason other than idle or application clocks
    (power cap, thermal, hardware slowdown). None without readings (a CPU run, no NVML,
    blocks recorded without them)."""
    read = [
        (b.launch, g)
        for b in blocks
        if not b.warmup
        and not b.calibration
        and (session is None or b.session_id == session)
        and (g := b.reading) is not None
        and g.sm_clock_mhz is not None
    ]
    if not read:
        return None
    readings = [g for _, g in read]
    sm = [g.sm_clock_mhz for g in readings]
    per: dict[int, list[float]] = {}
    for launch, g in read:
        per.setdefault(launch, []).append(g.sm_clock_mhz)
    power = [g.power_w for g in readings if g.power_w is not None]
    temp = [g.temp_c for g in readings if g.temp_c is not None]
    events = [g.throttle_reasons & ~CLOCK_EVENT_ROUTINE for g in readings if g.throttle_reasons is not None]
    return GpuState(
        len(read),
        SmClock(median(sm), min(sm), max(sm)),
        tuple(median(per[n]) for n in sorted(per)),
        median(power) if power else None,
        max(temp) if temp else None,
        sum(e != 0 for e in events) / len(events) if events else None,
    )


def default_unit(launches: int) -> str:
    """The unit of replication when none is asked for: the launch from :data:`paired.MIN_LAUNCH_UNIT` launches on."""
    return "launch" if launches >= la.MIN_LAUNCH_UNIT else "pair"


@dataclass(frozen=True)
class Variant:
    """The pairs' per-pair ``sigma`` of the log ratio and their mean ``ratio`` under one block metric and first-step
    policy."""

    sigma: float | None
    ratio: float

    def to_json(self) -> dict:
        return {"sigma": self.sigma, "ratio": self.ratio}


def _variants(pairs: list[Pair]) -> dict[str, Variant]:
    """The pairs' sigma and ratio under every block metric, with and without each block's first step."""
    variants = {}
    for how in bm.METRICS:
        for drop in (False, True):
            dd = [x for g in grouped(pairs, how, drop) for x in g]
            variants[f"{how}{'-drop-first' if drop else ''}"] = Variant(stats.sd(dd, None), math.exp(fmean(dd)))
    return variants


def _resume(pairs: list[Pair], grain: str) -> dict[str, bm.ResumePenalty | None]:
    """Per side, the penalty of a block's first step after the wait (:func:`block_metrics.resume_penalty`)."""
    if grain != "step":  # at the micro grain every micro-batch follows a wait: no first step to single out
        return {}
    return {s: bm.resume_penalty([p.side(s).step_times_ms for p in pairs]) for s in SIDES}


def _resume_json(rp: bm.ResumePenalty | None) -> dict | None:
    return None if rp is None else {"ratio": rp.ratio, "lo": rp.lo, "hi": rp.hi, "blocks": rp.blocks}


@dataclass(frozen=True)
class Canary:
    """The host canary beside the pairs (:func:`_canary`): its correlation with each side's block metric
    (``corr_a``, ``corr_b``), the covariate adjustment of the pair log ratios (None where it cannot be made) and its
    median per side."""

    corr_a: float | None
    corr_b: float | None
    covariate: bm.CanaryCovariate | None
    median_ms: Mapping[str, float]

    def to_json(self) -> dict:
        out: dict[str, Any] = {"corr_a": self.corr_a, "corr_b": self.corr_b}
        if (cov := self.covariate) is not None:
            out.update(
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
        out["median_ms"] = dict(self.median_ms)
        return out


def _canary(pairs: list[Pair], d: list[float], block_metric: str, drop_first_step: bool) -> Canary | None:
    """The canary beside the pairs' log ratios ``d``: its correlation with each side's block metric, the covariate
    adjustment (:func:`block_metrics.canary_covariate`) and its median per side; None without a canary on every
    block."""
    if not all(p.side(s).canary_ms for p in pairs for s in SIDES):
        return None
    corr_a, corr_b = (
        bm.correlation(
            [math.log(p.side(s).canary_ms) for p in pairs],
            [math.log(bm.block_metric(p.side(s).step_times_ms, block_metric, drop_first_step)) for p in pairs],
        )
        for s in SIDES
    )
    c = [math.log(p.b.canary_ms / p.a.canary_ms) for p in pairs]
    return Canary(
        corr_a,
        corr_b,
        bm.canary_covariate(d, c),
        {s: median(p.side(s).canary_ms for p in pairs) for s in SIDES},
    )


@dataclass(frozen=True)
class Mds:
    """The verdict's minimum detectable slowdown (:func:`_mds`), from the sd of its ``units`` (``unit``: launch
    summaries, or pairs): at ``alpha`` and ``power`` with no threshold (``slowdown``, and its approximation
    3.6 sd/sqrt(n)), at the verdict's own alpha per look and threshold (``with_settings``), and the units and pairs a 3%
    slowdown needs. None where the sd is not a finite positive number."""

    alpha: float
    power: float
    unit: str | None
    units: int
    unit_sd: float | None
    slowdown: float | None
    approx_3_6: float | None
    with_settings: float | None
    units_for_3pct: int | None
    pairs_for_3pct: int | None

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _mds(v: Verdict, sigma: float | None, n: int, threshold: float) -> Mds:
    """The verdict's minimum detectable slowdown: from the sd of its units (launch summaries, or pairs) and their
    number, at alpha 0.01 and power 0.9 and at the verdict's own alpha per look and the threshold, and the units and
    pairs a 3% slowdown needs."""
    u_sd, u_n = (v.details["sd"], v.details["n_units"]) if v.unit == "launch" else (sigma, n)
    u_sd = u_sd if u_sd is not None and math.isfinite(u_sd) and u_sd > 0 else None
    return Mds(
        alpha=0.01,
        power=0.9,
        unit=v.unit,
        units=u_n,
        unit_sd=u_sd,
        slowdown=pn.min_detectable(u_sd, u_n, 0.01, 0.9) if u_sd else None,
        approx_3_6=3.6 * u_sd / math.sqrt(u_n) if u_sd else None,
        with_settings=pn.min_detectable(u_sd, u_n, v.alpha, 0.9, threshold) if u_sd else None,
        units_for_3pct=pn.pairs_needed(u_sd, 0.03, 0.01, 0.9) if u_sd else None,
        pairs_for_3pct=pn.pairs_needed(sigma, 0.03, 0.01, 0.9) if sigma else None,  # by the pair-level t test
    )


def _components_json(comp: la.LaunchComponents | None) -> dict | None:
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


@dataclass(frozen=True)
class OtherCpus:
    """The CPUs other processes kept busy beside the blocks: median, most, and the share of blocks beside more than
    half a busy CPU."""

    median: float
    max: float
    busy_share: float

    def to_json(self) -> dict:
        return {"median": self.median, "max": self.max, "busy_share": self.busy_share}


@dataclass(frozen=True)
class HostLoad:
    """What the host spent per pair (CPU and wall seconds of both sides) and the other processes' CPUs beside it."""

    cpu_s_per_pair: float | None
    wall_s_per_pair: float | None
    other_cpus: OtherCpus | None


def _host_load(pairs: list[Pair]) -> HostLoad:
    """What the host spent per pair (CPU and wall seconds of both sides) and the other processes' CPUs beside it."""
    other = [b.other_cpus for p in pairs for b in (p.a, p.b) if b.other_cpus is not None]
    cpu = [p.a.cpu_s + p.b.cpu_s for p in pairs]
    wall = [p.a.wall_s + p.b.wall_s for p in pairs]
    return HostLoad(
        fmean(cpu) if cpu else None,
        fmean(wall) if wall else None,
        OtherCpus(median(other), max(other), sum(x > 0.5 for x in other) / len(other)) if other else None,
    )


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
    variants: Mapping[str, Variant] | None = None
    mds: Mds | None = None
    launch_components: la.LaunchComponents | None = None
    resume_penalty: Mapping[str, bm.ResumePenalty | None] | None = None
    canary: Canary | None = None
    phases: Mapping[str, Any] | None = None
    step_ms_median: Mapping[str, float] | None = None
    k: tuple[int, ...] | None = None
    cpu_s_per_pair: float | None = None
    wall_s_per_pair: float | None = None
    other_cpus: OtherCpus | None = None
    gpu_state: GpuState | None = None
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
                "variants": {k: x.to_json() for k, x in (self.variants or {}).items()},
                "mds": None if self.mds is None else self.mds.to_json(),
                "launch_components": _components_json(self.launch_components),
                "resume_penalty": {s: _resume_json(rp) for s, rp in (self.resume_penalty or {}).items()},
                "canary": {} if self.canary is None else self.canary.to_json(),
                "phases": self.phases,
                "step_ms_median": self.step_ms_median,
                "k": list(self.k or ()),
                "cpu_s_per_pair": self.cpu_s_per_pair,
                "wall_s_per_pair": self.wall_s_per_pair,
                "other_cpus": None if self.other_cpus is None else self.other_cpus.to_json(),
                "gpu_state": None if self.gpu_state is None else self.gpu_state.to_json(),
            }
        return {**out, "skipped": list(self.skipped)} if self.skipped else out


def analyse(blocks: Sequence[Block], settings: ComparisonSettings, verdict: Verdict | None = None) -> Analysis:
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
    grain = "micro" if any(p.a.micro_per_step for p in pairs) else "step"
    steps = [b.step_times_ms for p in pairs for b in (p.a, p.b)]
    load = _host_load(pairs)
    return Analysis(
        len(d),
        v,
        micro_per_step=pairs[0].a.micro_per_step,
        launch_sizes=tuple(len(g) for g in groups),
        block_metric=metric,
        drop_first_step=drop,
        grain=grain,
        sigma=sigma,
        variants=_variants(pairs),
        mds=_mds(v, sigma, len(d), settings.threshold),
        launch_components=comp,
        resume_penalty=_resume(pairs, grain),
        canary=_canary(pairs, d, metric, drop),
        phases=bm.phase_deltas(pairs),
        step_ms_median={s: median(x for p in pairs for x in p.side(s).step_times_ms) for s in SIDES},
        k=tuple(sorted({len(x) for x in steps})),
        cpu_s_per_pair=load.cpu_s_per_pair,
        wall_s_per_pair=load.wall_s_per_pair,
        other_cpus=load.other_cpus,
        gpu_state=gpu_state(blocks, settings.session_id),
    )
