"""The report of an interleaved comparison: the lines it prints (one fact each) and ``report.md``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean

from harness.judging import launches as la
from harness.judging.blocks import Analysis, Canary, GpuState, Mds, OtherCpus
from harness.judging.budget_plan import BudgetPlan, Drawn, _build_s, _prestarted, prestart_costs
from harness.judging.comparison_settings import ComparisonSettings
from harness.reporting.interleave_head import head_lines


def pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}%}"


def calibration_text(c: dict) -> str:
    """One line on what :func:`calibrate_injection` measured and chose (the terminal and report.md)."""
    what = "units of host work" if c.get("kind", "casts") == "host" else "casts"
    head = f"inject-work sized for +{round(c['target'] * 100, 6):g}%: {c['casts']:.2f} {what} per LoRA forward"
    if c.get("clock") == "own":
        return (
            f"{head} (calibration by the injection's own clock: "
            + ", ".join(f"{p['casts']:.2f} +{p['share']:.1%}" for p in c["probes"])
            + " of the rest of B's step; "
            + f"B/A wall x{c['ratio_with']:.3f} at the last probe over its {c['rounds']} rounds)"
        )
    return (
        f"{head} (calibration: B/A x{c['ratio_without']:.3f} "  # older reports: calibrated by a wall-time gain
        f"without casts, x{c['ratio_with']:.3f} with {c['probe_casts']:.2f}: +{c['gain']:.1%}; "
        f"last {c['rounds']} rounds)"
    )


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportText:
    """A comparison's report as text: ``head``, the verdict, the change and what to do next in plain words
    (:func:`harness.reporting.interleave_head.head_lines`); ``details``, how it was measured, one fact per line."""

    head: tuple[str, ...]
    details: tuple[str, ...]

    def lines(self) -> list[str]:
        """The terminal's: the head, then the details under their title."""
        return [*self.head, DETAILS + ":", *self.details]


DETAILS = "how this was measured"


def report_text(r: dict, a: Analysis, plan: BudgetPlan | None = None, extra: tuple[str, ...] = ()) -> ReportText:
    """The report of a comparison, from its report dict ``r``, its analysis ``a`` and its ``plan``: its head and its
    details (``extra`` lines appended to them)."""
    return ReportText(tuple(head_lines(r)), tuple(report_lines(r, a, plan)) + extra)


def report_lines(r: dict, a: Analysis, plan: BudgetPlan | None = None) -> list[str]:
    """The details: what the verdict rests on and what else was measured, one fact per line."""
    v = r.get("verdict")
    lines = [
        estimate_line(r, a, v) if v is not None else None,
        where_line(a.phases),
        sigma_line(a),
        mds_line(a.mds) if a.sigma is not None and a.mds is not None else None,
        launch_line(v),
        resume_line(a),
        plan_line(plan, a),
        injected_line(r),
        canary_line(a.canary),
        gpu_line(a.gpu_state),
        load_line(a.other_cpus),
        timing_line(r, a),
        prestart_line(r.get("launches") or [], a),
    ]
    return [ln for ln in lines if ln is not None]


def sigma_line(a: Analysis) -> str | None:
    """The per-pair noise of the log ratio, overall and per variant. None without a sigma."""
    if a.sigma is None:
        return None
    micro = (
        f", each made of {a.micro_per_step} single micro-batch turns" if a.grain == "micro" and a.micro_per_step else ""
    )
    return (
        f"per-pair sigma of the log ratio: {pct(a.sigma, 2)} "
        f"({a.block_metric} of {', '.join(map(str, a.k or ()))} step(s) per block{micro}"
        f"{', first step dropped' if a.drop_first_step else ''}); "
        + ", ".join(f"{k} {pct(x.sigma, 2)}" for k, x in (a.variants or {}).items() if x.sigma is not None)
    )


def launch_line(v: dict | None) -> str | None:
    """The F test of the launches against the pairs within them, and what it made the unit. None without a verdict."""
    lc = (v or {}).get("launch_check")
    if lc and (v or {}).get("unit_rule") == "launch":
        return (
            f"launch variance: F({lc['df_between']}, {lc['df_within']}) = {lc['f']:.2f}, p = {lc['p']:.3g}; launch sd "
            f"{pct(lc['sigma_launch'], 2)} vs pair sd {pct(lc['sigma_pair'], 2)}; launch ratios "
            + ", ".join(f"x{x:.4f}" for x in lc["ratios"])
            + "; the launch is the unit whatever it adds"
        )
    if lc:
        differ = lc["p"] < la.LAUNCH_ALPHA
        return (
            f"launch variance: F({lc['df_between']}, {lc['df_within']}) = {lc['f']:.2f}, p = {lc['p']:.3g}; "
            f"launch sd {pct(lc['sigma_launch'], 2)} "
            f"vs pair sd {pct(lc['sigma_pair'], 2)}; launch ratios "
            + ", ".join(f"x{x:.4f}" for x in lc["ratios"])
            + ("; LAUNCHES DIFFER: the launch is the unit" if differ else "; no launch effect detected")
        )
    if v is not None:
        return "launch variance: not tested (fewer than 2 launches with pairs)"
    return None


def resume_line(a: Analysis) -> str | None:
    """How much slower a block's first step is than its others, or why that was not measured."""
    rp = a.resume_penalty or {}
    if any(rp.values()):
        return "resume penalty (first step / median of the others, 95% CI): " + "; ".join(
            f"{x.upper()} x{p.ratio:.3f} [{p.lo:.3f}, {p.hi:.3f}]" for x, p in rp.items() if p
        )
    if a.grain == "micro":
        return "resume penalty: not measured (micro grain: every micro-batch follows a wait, on both sides alike)"
    if a.k == (1,):
        return "resume penalty: not measured (blocks of 1 step: every step is a first step, on both sides alike)"
    return None


def injected_line(r: dict) -> str | None:
    """The injected work as its own clock measured it. None without injected work."""
    inj = r.get("injected")
    if inj is None:
        return None
    return (
        f"injected work by its own clock: {inj['inject_ms']:.1f} ms per step of B, "
        f"+{inj['share']:.1%} of the rest of its "
        f"step (median of {inj['blocks']} blocks): the nominal slowdown; the measured one is the estimate above"
    )


def canary_line(c: Canary | None) -> str | None:
    """The host canary against the step times and as a covariate. None without its correlations."""
    if c is None or (cov := c.covariate) is None:
        return None
    return (
        f"host canary: correlation with the block's step time A {c.corr_a:+.2f}, B {c.corr_b:+.2f}; "
        f"with the pair log ratio "
        f"{cov.corr:+.2f}; as a covariate sigma {pct(cov.sigma_plain, 2)} -> {pct(cov.sigma_adjusted, 2)} "
        f"(variance {-cov.reduction:+.0%}), ratio x{math.exp(cov.plain):.4f} -> x{math.exp(cov.adjusted):.4f}; "
        "not used by the verdict"
    )


def gpu_line(g: GpuState | None) -> str | None:
    """The GPU's clocks, power and temperature as each block ended. None without readings."""
    if g is None:
        return None
    ls, sm = g.launch_sm_clock_mhz, g.sm_clock_mhz
    return (
        f"GPU as each block ended ({g.readings} readings): SM clock median {sm.median:.0f} MHz "
        f"(min {sm.min:.0f}, max {sm.max:.0f}; "
        f"launch medians {min(ls):.0f}-{max(ls):.0f})"
        + (f", power median {g.power_w_median:.0f} W" if g.power_w_median is not None else "")
        + (f", up to {g.temp_c_max:.0f} C" if g.temp_c_max is not None else "")
        + (
            f"; a clock-event reason other than idle (power, thermal, slowdown) in {g.clock_event_share:.0%} of them"
            if g.clock_event_share is not None
            else ""
        )
    )


def load_line(o: OtherCpus | None) -> str | None:
    """The other load on the machine during the blocks. None without it."""
    if o is None:
        return None
    return (
        f"other load on this machine during the blocks: median {o.median:.2f} CPUs busy elsewhere, "
        f"max {o.max:.2f}; "
        f"{o.busy_share:.0%} of blocks ran beside more than half a busy CPU"
    )


def timing_line(r: dict, a: Analysis) -> str:
    """Where the comparison's wall and CPU time went."""
    t = r["timing"]
    dev = "GPU" if t["device"] == "gpu" else "CPU"
    return (
        f"time: {t['wall_s']:.0f} s wall ({dev} held), of which start-up {t['startup_s']:.0f} s "
        f"over {len(r.get('launches') or [])} launch(es), "
        f"blocks {t['blocks_wall_s']:.0f} s (warm-up {t['warmup_blocks_wall_s']:.0f} s), "
        f"stopping {t.get('close_s', 0):.0f} s; "
        + (
            f"worker CPU {t['workers_cpu_s']:.0f} s "
            if t.get("workers_cpu_s") is not None
            else "worker CPU not known (recovered) "
        )
        + f"(blocks {t['blocks_cpu_s']:.0f} s"
        + (f", {a.cpu_s_per_pair:.2f} s per pair)" if a.cpu_s_per_pair else ")")
    )


def estimate_line(r: dict, a: Analysis, v: dict) -> str:
    """The estimate the verdict rests on, with its unit and test (its α is said once, in the head)."""
    lc = v.get("launch_check") or {}
    if v.get("unit") == "launch" and v.get("unit_rule", "launch") == "launch":
        summary = "Hodges-Lehmann estimates" if v.get("launch_summary") == "hl" else "means"
        unit = f"unit: launch, t test over {v.get('n_units', '?')} launch {summary}"
    elif v.get("unit") == "launch":
        unit = (
            f"unit: launch, t test over {v.get('n_units', '?')} launch means "
            f"(the launches differ, F test p = {lc.get('p', float('nan')):.2g})"
        )
    else:
        unit = "unit: pair, " + (
            "signed-rank test, Hodges-Lehmann interval" if v.get("test") == "signed-rank" else "t test"
        )
    p = f"; p of a slowdown past the threshold {v['p_regression']:.2g}" if v.get("p_regression") is not None else ""
    return (
        f"estimate: B/A x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}], "
        f"{v['pairs']} pairs in {len(a.launch_sizes or ())} "
        f"launch(es); {unit}{p}" + (f"; {r['stopped']}" if r.get("stopped") else "")
    )


def mds_line(m: Mds) -> str:
    """The smallest slowdown found 9 times in 10: at this run's own α per look and threshold (what its verdict could
    see), and its resolution at α 0.01 with no threshold (the convention plans are compared at)."""
    units = "pairs" if m.unit == "pair" else "launches"
    one = "pair" if units == "pairs" else "launch"
    return (
        f"smallest slowdown found with power {m.power:g}: {pct(m.with_settings, 2)} "
        "at this run's α and threshold; "
        f"resolution at α {m.alpha:g} and no threshold, as plans are compared: {pct(m.slowdown, 2)} "
        f"(3.6 sd/sqrt(n) = {pct(m.approx_3_6, 2)}); {m.units} {units}, "
        f"sd {pct(m.unit_sd, 2)} per {one}; "
        f"{units} for a 3% resolution: {m.units_for_3pct or 'n/a'}"
    )


def where_line(ph: dict | None) -> str | None:
    """Where the step moved from A to B, the phases in order of their change
    (:func:`harness.judging.block_metrics.phase_deltas`)."""
    if not ph:
        return None
    order = sorted(ph["delta_ms"], key=lambda k: -abs(ph["delta_ms"][k]))
    return f"where, B less A per step (median over {ph['pairs']} pairs; descriptive): " + ", ".join(
        f"{k} {ph['delta_ms'][k]:+.2f} ms (of {ph['a_ms'][k]:.1f})" for k in order
    )


def prestart_line(launches: list[dict], a: Analysis) -> str | None:
    """How long the pre-started launches waited for their imports beyond their build, and from how many pairs a launch
    hides the next one's (:func:`prestart_costs`). None without pre-started launches."""
    pre, costs = _prestarted(launches), prestart_costs(launches)
    if not pre or costs is None or not a.wall_s_per_pair:
        return None
    builds = [_build_s(li) for li in pre]
    waits = [li["startup_s"] - b for li, b in zip(pre, builds)]
    m = math.ceil(costs[1] / a.wall_s_per_pair)
    hides = f"from about {m} pairs on" if m > 0 else "with its warm-up alone"
    return (
        f"pre-start: the {len(pre)} later launch(es) were built in {fmean(builds):.1f} s "
        f"and waited {max(fmean(waits), 0.0):.1f} s more "
        f"for their imports; a launch, pre-starting the next at its ready, hides the next one's imports {hides}"
    )


def plan_line(p: BudgetPlan | None, a: Analysis) -> str | None:
    """The launches this run's costs and noise call for within its budget (:func:`plan_for`), beside this run's own."""
    if p is None:
        return None
    m, n = a.mds, len(a.launch_sizes or ())
    here = (
        f" (this run: {n} launches of about {round(a.pairs / max(n, 1))} pairs"
        + (f", {pct(m.slowdown, 2)}" if m is not None and m.unit == "launch" and m.slowdown else "")
        + ")"
    )
    hide = f" plus any of the next one's {p.hide_s:.1f} s of imports its pairs do not hide" if p.hide_s else ""
    e = p.at_estimate
    return (
        f"plan for {p.budget_s / 60:g} min at this run's costs "
        f"(first launch {p.first_s:.1f} s, later {p.launch_s:.1f} s{hide}, "
        f"{p.pair_s:.2f} s per pair) and noise (pair sd {pct(p.pair_sd, 2)} as the "
        f"{'Hodges-Lehmann summary' if p.summary == 'hl' else 'mean'} sees it; "
        f"launch sd {pct(p.launch_sd, 2)} by moments, "
        f"{p.level or 0.9:.0%} upper bound {pct(p.launch_sd_planned, 2)}): "
        f"launches={p.launches} "
        f"({p.pairs_per_launch} pairs each) detects {pct(p.mds_at_estimate, 2)} "
        "at the launch sd measured and "
        f"{pct(p.mds, 2)} at its bound (resolutions, as above)"
        + (f" (for the estimate alone: launches={e.launches}, {pct(e.mds, 2)})" if e else "")
        + here
        + drawn_text(p.drawn, p.launches)
    )


def drawn_text(d: Drawn | None, launches: int) -> str:
    """The plan line's check of its model against the run's own pairs (``plan_for``'s ``drawn``), for a plan of
    ``launches``."""
    if d is None or d.plan is None:
        return ""
    text = f"; drawn from this run's own pairs at the launch sd measured: {pct(d.plan, 2)} for the plan"
    if d.as_run is None or d.launches == launches:
        return text
    text += f", {pct(d.as_run, 2)} for {d.launches} launches of {d.pairs_per_launch} pairs"
    if d.as_run <= d.plan:
        text += f": the plan draws no better than this run's launches here, keep launches={d.launches}"
    return text


def markdown(s: ComparisonSettings, text: ReportText) -> str:
    """report.md: the head first, then the sides, the settings and the details under "How this was measured"."""
    pair = (
        s.decomposition
        if (s.decomposition_b or s.decomposition) == s.decomposition
        else f"{s.decomposition_b}-vs-{s.decomposition}"
    )
    head = [
        f"# interleave {s.workload}-{pair} on {s.gpu}",
        "",
        f"**{text.head[0]}**",
        "",
        *[f"- {ln}" for ln in text.head[1:]],
        "",
        f"## {DETAILS.capitalize()}",
        "",
        f"- A: `{s.python_a}`",
        f"- B: `{s.python_b}`"
        + (
            f" (inject_slowdown {s.inject_slowdown_b}, inject_work {s.inject_work_b})"
            if s.inject_slowdown_b or s.inject_work_b
            else ""
        ),
        *([f"- {calibration_text(s.inject_calibration)}"] if s.inject_calibration else []),
        f"- {s.block_steps} steps per block, {s.max_pairs} pairs planned over {s.launches_planned} launches, "
        f"looks at {list(s.looks)}, "
        f"seed {s.seed}, metric {s.block_metric}" + (", first step dropped" if s.drop_first_step else ""),
    ]
    return "\n".join(head + [f"- {ln}" for ln in text.details]) + "\n"
