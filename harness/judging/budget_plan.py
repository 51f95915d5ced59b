"""The launches that a comparison's own costs and noise call for within a budget (the report's plan line): the
launch costs of a finished or recovered comparison, and :func:`paired.launch_plan` over them.
"""

from __future__ import annotations

from statistics import fmean

from harness.judging import planning as pn
from harness.judging import simulate as sim
from harness.judging.blocks import SIDES

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
    """(launch_s, hide_s) of the pre-started launches, for :func:`paired.launch_plan` of a next run with this code: what
    a later launch costs when its imports were done beside the launch before it (its build after the release, warm-up,
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
    summaries (``analyse``'s ``launch_components``: the pair sd as the summary sees it, and the launch sd, by moments).
    A guide for the next run's ``--launches``. The launch sd of a few launches is a rough estimate, so the plan is the
    one of least regret between the estimate and its one-sided 90% upper bound (``launch_sd_upper``):
    ``mds_at_estimate`` and ``mds`` are its MDS at the two, ``regret`` the most it gives away in between,
    ``at_estimate`` the plan for the estimate alone. None below 2 launches with pairs (no launch sd to plan with).

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
    plan = pn.launch_plan(
        budget, first, c, r["wall_s_per_pair"], comp["pair_sd"], comp["launch_sd"], launch_sd_hi=tau, hide_s=hide
    )
    if plan is None:
        return None
    at_estimate = pn.launch_plan(
        budget, first, c, r["wall_s_per_pair"], comp["pair_sd"], comp["launch_sd"], hide_s=hide
    )
    drawn = None
    if groups:
        ran = len(r.get("launch_sizes") or [])
        fits = dict(pn.plans_within(budget, first, c, r["wall_s_per_pair"], max(ran, plan.launches), 1, hide))
        drawn = {
            "plan": sim.drawn_mds(groups, plan.launches, plan.pairs_per_launch, comp["launch_sd"], comp["summary"]),
            "launches": ran,
            "pairs_per_launch": fits.get(ran),
        }
        drawn["as_run"] = (
            sim.drawn_mds(groups, ran, fits[ran], comp["launch_sd"], comp["summary"]) if fits.get(ran) else None
        )
    return {
        "budget_s": budget,
        "first_s": first,
        "launch_s": c,
        "hide_s": hide,
        "pair_s": r["wall_s_per_pair"],
        "pair_sd": comp["pair_sd"],
        "launch_sd": comp["launch_sd"],
        "launch_sd_planned": tau,
        "level": comp.get("level"),
        "summary": comp["summary"],
        "at_estimate": None
        if at_estimate is None
        else {
            "launches": at_estimate.launches,
            "pairs_per_launch": at_estimate.pairs_per_launch,
            "mds": at_estimate.mds,
        },
        "mds_at_estimate": plan.mds,
        "regret": plan.regret,
        "launches": plan.launches,
        "pairs_per_launch": plan.pairs_per_launch,
        "unit_sd": plan.unit_sd,
        "mds": plan.mds_hi,
        "drawn": drawn,
    }
