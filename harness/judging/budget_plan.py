"""The launches that a comparison's own costs and noise call for within a budget (the report's plan line): the
launch costs of a finished or recovered comparison, and :func:`paired.launch_plan` over them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from statistics import fmean

from harness.judging import planning as pn
from harness.judging import simulate as sim
from harness.judging.blocks import SIDES, Analysis

PLAN_BUDGET_S = 600.0  # the budget a plan is made for when the run had none: the 10 GPU-minutes of a nightly comparison


def launch_cost(li: dict) -> float:
    """What a launch cost besides its pairs: start-up, warm-up blocks, stopping."""
    return li["startup_s"] + (li.get("warmup_s") or 0.0) + (li.get("close_s") or 0.0)


def _prestarted(launches: list[dict]) -> list[dict]:
    """The launch records of the pre-started launches (every launch after the first that was)."""
    return [li for li in launches[1:] if li.get("prestarted")]


def _build_s(li: dict) -> float:
    """A pre-started launch's build after its release: the slower side's."""
    return max(li["ready"][s]["startup_wall_s"] for s in SIDES)


def prestart_costs(launches: list[dict]) -> tuple[float, float] | None:
    """(launch_s, hide_s) of the pre-started launches among a comparison's launch records, for
    :func:`paired.launch_plan` of a next run with this code: what a later launch costs when its imports were done beside
    the launch before it (its build after the release, warm-up, stopping), and how much of those imports the launch
    before must hide with its pairs (the imports, less the warm-up and stopping they run beside: this code pre-starts at
    the ready, ``settings["prestart_at"]``; runs before it pre-started after the warm-up). None without pre-started
    launches that record their imports."""
    pre = _prestarted(launches)
    if not pre:
        return None
    try:
        ready = fmean(map(_build_s, pre))
        imports = fmean(max(li["ready"][s]["timing_s"]["preload_s"] for s in SIDES) for li in pre)
    except (KeyError, TypeError):
        return None
    warm, close = (fmean(li.get(k) or 0.0 for li in pre) for k in ("warmup_s", "close_s"))
    return ready + warm + close, max(0.0, imports - warm - close)


@dataclass(frozen=True)
class Drawn:
    """The plan's model checked against the run's own pairs (:func:`harness.judging.simulate.drawn_mds`): the MDS of
    the plan's launches (``plan``), and of the run's own number of ``launches`` (of ``pairs_per_launch`` pairs within
    the same budget: ``as_run``)."""

    plan: float | None
    launches: int
    pairs_per_launch: int | None
    as_run: float | None

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class AtEstimate:
    """The plan for the launch sd's estimate alone: its launches, their pairs and its MDS."""

    launches: int
    pairs_per_launch: int
    mds: float

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class BudgetPlan:
    """The launches a comparison's costs and noise call for within ``budget_s`` (:func:`plan_for`): the costs it was
    made from (first launch, later launch, imports to hide, pair), the noise (pair sd, launch sd and the upper bound
    planned for, at ``level``, as the ``summary`` sees it), the plan (``launches`` of ``pairs_per_launch``, its MDS at
    the estimate and at the bound: ``mds``, its ``regret``), the plan for the estimate alone and the draws' check."""

    budget_s: float
    first_s: float
    launch_s: float
    hide_s: float
    pair_s: float
    pair_sd: float
    launch_sd: float
    launch_sd_planned: float
    level: float | None
    summary: str
    at_estimate: AtEstimate | None
    mds_at_estimate: float
    regret: float
    launches: int
    pairs_per_launch: int
    unit_sd: float
    mds: float
    drawn: Drawn | None

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("at_estimate", "drawn"):
            out[k] = None if out[k] is None else out[k].to_json()
        return out


def plan_for(
    a: Analysis,
    launches: list[dict],
    budget_minutes: float | None = None,
    budget_s: float | None = None,
    groups: list[list[float]] | None = None,
) -> BudgetPlan | None:
    """The launches this comparison's costs and noise call for within ``budget_s`` (default: the run's own
    ``budget_minutes``, else :data:`PLAN_BUDGET_S`), by :func:`paired.launch_plan`: the first launch's cost (of its
    launch records ``launches``), the later ones' (with pre-started workers by :func:`prestart_costs`: a launch too
    short to hide the next one's imports waits for the rest; else the mean later launch; the first one's when there was
    none), the mean pair, and the variance components of the launch summaries (the analysis ``a``'s
    ``launch_components``: the pair sd as the summary sees it, and the launch sd, by moments).
    A guide for the next run's ``--launches``. The launch sd of a few launches is a rough estimate, so the plan is the
    one of least regret between the estimate and its one-sided 90% upper bound (``launch_sd_upper``):
    ``mds_at_estimate`` and ``mds`` are its MDS at the two, ``regret`` the most it gives away in between,
    ``at_estimate`` the plan for the estimate alone. None below 2 launches with pairs (no launch sd to plan with).

    With the run's pair log ratios by launch (``groups``), ``drawn`` checks the model against them
    (:func:`harness.judging.simulate.drawn_mds`, at the launch sd measured): the MDS of the plan's launches, and of this
    run's number of launches within the same budget, drawn from the run's own pairs. Heavy-tailed pairs make short
    launches noisier than the model says, and then more launches can lose where the model says they gain."""
    comp, pair_s = a.launch_components, a.wall_s_per_pair
    if comp is None or not launches or not pair_s:
        return None
    budget = budget_s or ((budget_minutes or 0) * 60) or PLAN_BUDGET_S
    first, later = launch_cost(launches[0]), [launch_cost(li) for li in launches[1:]]
    c, hide = prestart_costs(launches) or (fmean(later) if later else first, 0.0)
    tau = comp.launch_sd_upper
    plan = pn.launch_plan(budget, first, c, pair_s, comp.pair_sd, comp.launch_sd, launch_sd_hi=tau, hide_s=hide)
    if plan is None:
        return None
    at_estimate = pn.launch_plan(budget, first, c, pair_s, comp.pair_sd, comp.launch_sd, hide_s=hide)
    drawn = None
    if groups:
        ran = len(a.launch_sizes or ())
        fits = dict(pn.plans_within(budget, first, c, pair_s, max(ran, plan.launches), 1, hide))
        drawn = Drawn(
            sim.drawn_mds(groups, plan.launches, plan.pairs_per_launch, comp.launch_sd, comp.summary),
            ran,
            fits.get(ran),
            sim.drawn_mds(groups, ran, fits[ran], comp.launch_sd, comp.summary) if fits.get(ran) else None,
        )
    return BudgetPlan(
        budget_s=budget,
        first_s=first,
        launch_s=c,
        hide_s=hide,
        pair_s=pair_s,
        pair_sd=comp.pair_sd,
        launch_sd=comp.launch_sd,
        launch_sd_planned=tau,
        level=comp.level,
        summary=comp.summary,
        at_estimate=None
        if at_estimate is None
        else AtEstimate(at_estimate.launches, at_estimate.pairs_per_launch, at_estimate.mds),
        mds_at_estimate=plan.mds,
        regret=plan.regret,
        launches=plan.launches,
        pairs_per_launch=plan.pairs_per_launch,
        unit_sd=plan.unit_sd,
        mds=plan.mds_hi,
        drawn=drawn,
    )
