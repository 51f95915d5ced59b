"""The bisection loop: measure the two ends, find which package moved the work (or the time), then which release or
commit of it, asking :mod:`harness.bisect.plan` what to measure next and :mod:`harness.bisect.steps` to measure it.

1. A census of good and of bad. Where a count differs, or a peak of memory moved beyond the memory tolerance, the
   search is by census: each package of the range is
   swapped alone on good's environment and censused (only when several moved), and on the ladder of each package
   whose swap changed the counts, :func:`~harness.bisect.plan.census_search` finds every boundary.
2. Where every count and the peak memory are equal at both ends (and not ``census_only``), the search is by interleaved
   comparisons against good: bad first, then, with several packages, each swap, then
   :func:`~harness.bisect.plan.timing_search` on the ladder of each package whose swap is a regression.

``predict(base, cur)`` is the hook of the cost model: given the measured censuses at a boundary (each a
:class:`~harness.bisect.steps.CensusProbe`), the predicted change of the step time (``delta_pct``, ``lo``, ``hi``,
...), or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.bisect import plan
from harness.bisect.axes import Axis, Range, base_python, resolve
from harness.bisect.config import BisectConfig
from harness.bisect.envs import EnvCache, default_cache
from harness.bisect.steps import CensusProbe, Steps
from harness.judging import census_diff
from harness.judging.judge import CENSUS_TOLERANCES
from harness.results.bisection import Bisection, CensusChange, Change, PackageRange, TimingStep, Unmeasured

Predict = Callable[[CensusProbe, CensusProbe], dict | None]


def differ(a: CensusProbe, b: CensusProbe) -> bool:
    """Whether two measured censuses differ in any judged count (Python calls within their tolerance) or in a peak of
    memory beyond the memory tolerance."""
    return census_diff.diff(a.census, b.census, CENSUS_TOLERANCES).changed


def predicted_cost(base: CensusProbe, cur: CensusProbe) -> dict | None:
    """The predicted change from ``base`` to ``cur``, from the base census run's own median step, by the model that can
    give it (:func:`harness.judging.cost_path.predict_pair`: the critical path where both censuses carry a timeline;
    ``model`` says which); ``{"reason"}`` where it cannot say."""
    from harness.judging import cost_path

    if base.step_ms is None:
        return {"reason": "no prediction: case timing: the base's census run has no median step"}
    return cost_path.pair_record(base.census, cur.census, base.step_ms)


@dataclass
class _Found:
    """What the search has decided so far, made into the :class:`Bisection` at its end."""

    outcome: str = "no_change"
    search: str = "none"
    census: CensusChange | None = None
    alone: dict[str, str] = field(default_factory=dict)  # package -> its swap alone on good's environment
    changes: list[Change] = field(default_factory=list)
    inconclusive: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    attribution: dict[str, list[str]] = field(default_factory=dict)


def bisect(
    cfg: BisectConfig,
    *,
    envs: EnvCache | None = None,
    census_fn=None,
    compare_fn=None,
    predict: Predict | None = predicted_cost,
    out: Callable[[str], None] = print,
) -> Bisection:
    """Run the bisection ``cfg`` asks for and return its result (what :mod:`harness.bisect.report` writes)."""
    Path(cfg.results_dir).mkdir(parents=True, exist_ok=True)
    envs = envs or EnvCache(
        cfg.env_cache or default_cache(),
        base_python(cfg),
        wheels=cfg.wheel_dir,
        index_url=cfg.index_url,
        no_index=cfg.no_index,
        move_deps=cfg.move_deps,
        out=out,
    )
    rng = resolve(cfg, envs)
    steps = Steps(cfg, envs, census_fn=census_fn, compare_fn=compare_fn, out=out)
    case = f"{cfg.workload}-{cfg.decomposition}"
    res = _Found()
    if rng.left_out:
        res.notes.append("moved as well, not tried (not among --packages): " + ", ".join(rng.left_out))
    out(
        f"bisect {case} on {cfg.gpu}: {rng.good.label} (good) -> {rng.bad.label} (bad)"
        + (f"; packages that moved: {', '.join(a.package for a in rng.axes)}" if len(rng.axes) > 1 else "")
    )
    g, b = steps.census(rng.good), steps.census(rng.bad)
    if g.dead or b.dead:
        res.outcome = "ends_failed"
        res.notes += [
            f"{side} ({lab}): {m.reason}"
            for side, lab, m in (("good", rng.good.label, g), ("bad", rng.bad.label, b))
            if m.dead
        ]
    else:
        good, bad = g.value.census, b.value.census
        d = census_diff.diff(good, bad, CENSUS_TOLERANCES)
        res.census = CensusChange(d.changed, tuple(census_diff.lines(d, good, bad)), census_diff.time_line(d))
        if d.changed:
            _by_census(rng, steps, g, plan.moved(d), res, predict)
        elif cfg.census_only:
            res.outcome, res.search = "no_change", "census"
            res.notes.append(
                f"no count or peak memory changed between {rng.good.label} and {rng.bad.label}; "
                "the timing was not compared (--census-only)"
            )
        else:
            _by_timing(rng, steps, res)
    dead = {s.label: s.outcome.split(": ", 1)[-1] for s in steps.log if s.kind == "install"}  # each once
    return Bisection(
        case=case,
        gpu=cfg.gpu,
        mode=rng.mode,
        good=rng.good.label,
        bad=rng.bad.label,
        outcome=res.outcome,
        search=res.search,
        packages=tuple(PackageRange(a.package, a.good, a.bad, res.alone.get(a.package)) for a in rng.axes),
        one_side=tuple(rng.one_side),
        left_out=tuple(rng.left_out),
        move_deps=cfg.move_deps,
        census=res.census,
        changes=tuple(res.changes),
        inconclusive=tuple(res.inconclusive),
        uninstallable=tuple(Unmeasured(k, v) for k, v in dead.items()),
        notes=tuple(res.notes),
        attribution={k: tuple(v) for k, v in res.attribution.items()},
        spent=steps.spent(),
        steps=tuple(steps.log),
    )


def _culprits(rng: Range, judge: Callable[[Axis], str], res: _Found) -> list[Axis]:
    """The axes to search: the only one, or each whose swap alone ``judge`` calls ``changed`` (recorded per package)."""
    if len(rng.axes) == 1 and rng.mode != "interpreters":
        return rng.axes  # its swap is bad itself
    found = []
    for axis in rng.axes:
        res.alone[axis.package] = judge(axis)
        if res.alone[axis.package] == "changed":
            found.append(axis)
    if not found:
        res.notes.append(
            "no package swapped alone on good's environment reproduces the change: it needs several of them together"
        )
    return found


def _by_census(
    rng: Range, steps: Steps, good: plan.Measured, keys: list[str], res: _Found, predict: Predict | None
) -> None:
    res.search = "census"

    def alone(axis: Axis) -> str:
        m = steps.census(axis.swap)
        return f"{m.status}: {m.reason}" if m.dead else "changed" if differ(good.value, m.value) else "unchanged"

    at: list[list[str]] = []
    for axis in _culprits(rng, alone, res):
        ladder = axis.ladder()
        found = plan.census_search(len(ladder), lambda i, lad=ladder: steps.census(lad[i]), differ)
        if found.outcome == "ends_failed":
            res.notes.append(
                f"{axis.package}: an end of its ladder could not be measured: {'; '.join(found.dead.values())}"
            )
        for bd in found.boundaries:
            lo, hi = steps.census(ladder[bd.lo]).value, steps.census(ladder[bd.hi]).value
            d = census_diff.diff(lo.census, hi.census, CENSUS_TOLERANCES)
            at.append(plan.moved(d))
            res.changes.append(
                _change(
                    axis,
                    ladder,
                    bd,
                    found,
                    "census",
                    counts=tuple(at[-1]),
                    memory=tuple(census_diff.memory_lines(d)),
                    diff=tuple(census_diff.lines(d, lo.census, hi.census)),
                    time_line=census_diff.time_line(d),
                    predicted=predict(lo, hi) if predict else None,
                    measured_inside=_inside(found, len(ladder)),
                )
            )
    labels = [c.boundary for c in res.changes]
    res.attribution = {k: [labels[i] for i in ix] for k, ix in plan.attribute(keys, at).items()}
    res.outcome = "changed" if res.changes else "no_change"
    if any(not v for v in res.attribution.values()):
        res.notes.append(
            "counts that moved from good to bad but at no boundary found: "
            + ", ".join(k for k, v in res.attribution.items() if not v)
        )


def _by_timing(rng: Range, steps: Steps, res: _Found) -> None:
    res.search = "timing"

    def compare(cand) -> plan.Measured:
        return steps.compare(rng.good, cand)

    top = compare(rng.bad)
    if top.dead or top.value != plan.REGRESSION:
        what = top.reason if top.dead else top.value
        res.outcome = (
            "inconclusive"
            if not top.dead and top.value == plan.INCONCLUSIVE
            else "no_change"
            if not top.dead
            else "ends_failed"
        )
        res.notes.append(
            f"no count changed, and {rng.bad.label} against {rng.good.label} interleaved: {what}"
            + ("; nothing to bisect" if not top.dead else "")
        )
        return

    def alone(axis: Axis) -> str:
        m = compare(axis.swap)
        return f"{m.status}: {m.reason}" if m.dead else "changed" if m.value == plan.REGRESSION else m.value

    for axis in _culprits(rng, alone, res):
        ladder = axis.ladder()
        found = plan.timing_search(len(ladder), lambda i, lad=ladder: compare(lad[i]))
        if found.boundary is None:
            res.notes.append(
                f"{axis.package}: {ladder[-1].label} against good: {found.outcome} ({'; '.join(found.dead.values())})"
            )
            continue
        said = {s.label: s.verdict.message if s.verdict else None for s in steps.log if s.kind == "interleave"}
        walked = tuple(TimingStep(ladder[i].label, o, said.get(ladder[i].label)) for i, o in found.steps)
        if found.outcome == plan.INCONCLUSIVE:
            at = ladder[found.inconclusive_at].label if found.inconclusive_at is not None else None
            res.inconclusive.append(_change(axis, ladder, found.boundary, found, "timing", steps=walked, at=at))
        else:
            res.changes.append(_change(axis, ladder, found.boundary, found, "timing", steps=walked))
    res.outcome = "changed" if res.changes else "inconclusive" if res.inconclusive else "no_change"


def _change(axis: Axis, ladder: list, bd: plan.Boundary, found: plan.Search, kind: str, **found_there) -> Change:
    """The change at the boundary ``bd`` of ``axis``'s ``ladder``, of ``kind``, with what was found there."""
    return Change(
        axis.package,
        ladder[bd.lo].label,
        ladder[bd.hi].label,
        bd.exact,
        len(ladder),
        kind,
        skipped=tuple(Unmeasured(ladder[i].label, found.dead.get(i, "")) for i in bd.skipped),
        **found_there,
    )


def _inside(found: plan.Search, n: int) -> int:
    """Candidates measured inside the ladder (its two ends not counted), the uninstallable ones included."""
    return sum(1 for i in found.measured if 0 < i < n - 1)
