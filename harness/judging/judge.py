"""The judge: every verdict of a set of records against baselines. Pure: it makes no runs and writes nothing.

Built from workloads, the cases to judge, records, baselines (loaded with :func:`load_baselines`, or
built from other records) and overrides (alpha, threshold). The pytest session, ``compare``,
``report``, ``ab`` and the tests all build one directly. Verdicts are computed once per judge;
a session that makes more runs builds a new judge for its next look.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from harness.judging import baseline as bl
from harness.judging import census_diff
from harness.judging.decomposition_checks import LOSS_RTOL, EquivalenceCheck, OrderingCheck
from harness.judging.stats import (
    MemoryCheck,
    RuntimeCheck,
    Sample,
    Verdict,
    estimate,
    fmt_ratio,
    holm,
    smallest_flagged,
)
from harness.judging.thresholds import ALPHA
from harness.results.run import Run
from harness.spec import Workload

Case = tuple[str, str]  # (workload name, decomposition id)
# Census counts are compared exactly, except Python calls, which differ slightly between runs of one environment
# (docs/evidence/are-census-counts-deterministic/): 0.1% is allowed there.
CENSUS_TOLERANCES = {"python_calls": "0.1%"}


def load_baselines(
    baselines_dir: str | Path, gpu: str, workloads: Mapping[str, Workload]
) -> dict[str, bl.Baseline | bl.BaselineError]:
    """The stored baseline of each workload on ``gpu``, or the BaselineError that says why there is none."""
    out: dict[str, bl.Baseline | bl.BaselineError] = {}
    for name, w in workloads.items():
        try:
            out[name] = bl.load(baselines_dir, gpu, w)
        except bl.BaselineError as exc:
            out[name] = exc
    return out


def _unusable(kind: str, case: str, err: bl.BaselineError) -> Verdict:
    """A missing baseline skips (or fails with --require-baseline); an unusable one fails."""
    missing = isinstance(err, bl.MissingBaseline)
    return Verdict(kind, case, "skip" if missing else "fail", str(err), {"missing_baseline": missing})


@dataclass(frozen=True)
class Judge:
    workloads: Mapping[str, Workload]
    cases: tuple[Case, ...]  # in workload-file order
    records: tuple[Run, ...]
    baselines: Mapping[str, bl.Baseline | bl.BaselineError]
    gpu: str = ""
    alpha: float | None = None  # overrides of the baselines' thresholds
    threshold: float | None = None
    looks: int = 1  # planned sequential looks: alpha is split over them
    incomplete: str | None = None  # why some planned runs were not made (--total-budget-minutes); their cases skip

    # ---- records -----------------------------------------------------------------------------------
    def runs(self, workload: str, decomp: str, ok_only: bool = True, census: bool = False) -> list[Run]:
        """The timed runs of a case (``census=True``: its census runs instead, which never enter a timing)."""
        return [
            r
            for r in self.records
            if r.workload == workload
            and r.decomposition_id == decomp
            and (r.ok or not ok_only)
            and r.is_census == census
        ]

    def metric(self, workload: str, decomp: str, key: str) -> Sample:
        """The values of the field ``key`` of a case's timed runs (``step_time_median_ms``, ...) where they have one."""
        return Sample(tuple(v for r in self.runs(workload, decomp) if (v := getattr(r, key)) is not None))

    @property
    def workload_names(self) -> list[str]:
        return list(dict.fromkeys(w for w, _ in self.cases))

    def decomps(self, workload: str) -> list[str]:
        return [d for w, d in self.cases if w == workload]

    def thresholds(self, b: bl.Baseline) -> bl.Thresholds:
        """The baseline's thresholds with this judge's overrides."""
        t = b.thresholds
        if self.alpha is not None:
            t = replace(t, alpha=self.alpha)
        if self.threshold is not None:
            t = replace(t, runtime=self.threshold)
        return t

    # ---- before any run ----------------------------------------------------------------------------
    def plan_notes(self, repeats: int) -> list[str]:
        """What the runtime verdicts can detect against baselines gathered on several machines
        (said before a session runs)."""
        out = []
        for w in self.workload_names:
            b = self.baselines[w]
            if not isinstance(b, bl.Baseline):
                continue
            t = self.thresholds(b)
            alpha = t.alpha / max(1, len(self.cases)) / self.looks  # Holm's first step: the strictest
            groups = {d: g for d in self.decomps(w) if len(g := b.grouped(d, b.runtime_metric(d))) >= 2}
            if groups:
                flagged = {d: smallest_flagged(g, alpha, t.runtime) for d, g in groups.items()}
                k = len(b.data.provenance.machines or ()) or "several"
                # the interval assumes this session's mean is as noisy as a baseline machine's mean:
                # as many runs as its fullest machine
                enough = max(len(m) for g in groups.values() for m in g)
                cost = (
                    f"; --repeats {enough} is enough (the baseline's machines have at most {enough} runs each)"
                    if enough < repeats
                    else ""
                )
                out.append(
                    f"note: the baseline of {w} spans {k} machines, so the machine is the unit: a runtime regression "
                    f"is flagged only above {', '.join(f'{d} x{v:.2f}' for d, v in flagged.items())} (at the strictest "
                    f"Holm step); more runs here do not change that, more machines in the baseline do{cost}"
                )
        return out

    # ---- verdicts ------------------------------------------------------------------------------------
    @cached_property
    def runtime(self) -> dict[str, Verdict]:
        """Runtime verdict per case id (``workload-decomp``), Holm over the cases that share alpha and threshold."""
        out: dict[str, Verdict] = {}
        groups: dict[tuple[float, float], dict] = {}
        metrics: dict[str, str] = {}
        for w, d in self.cases:
            case = f"{w}-{d}"
            b = self.baselines[w]
            if isinstance(b, bl.BaselineError):
                out[case] = _unusable("runtime", case, b)
                continue
            key = b.runtime_metric(d)
            base, cur = b.grouped(d, key), self.metric(w, d, key).values
            if not cur and self.runs(w, d, census=True) and not self.runs(w, d, ok_only=False):
                out[case] = Verdict("runtime", case, "skip", f"{case} has census runs only: no timed run to compare")
                continue
            if not base:
                why = (
                    f"baseline {b.path} has census runs only of {d}: no timed run to compare"
                    if b.census(d)
                    else f"baseline {b.path} has no {d}; record it with --update-baselines"
                )
                out[case] = Verdict("runtime", case, "skip", why)
                continue
            if not cur and self.incomplete and not self.runs(w, d, ok_only=False):
                out[case] = Verdict("runtime", case, "skip", f"{case} not run yet: {self.incomplete}")
                continue
            if not cur:
                out[case] = Verdict("runtime", case, "fail", f"no successful run of {case} to compare")
                continue
            t = self.thresholds(b)
            metrics[case] = "train_runtime" if key == "train_runtime_s" else "steady-state median step time"
            groups.setdefault((t.alpha, t.runtime), {})[case] = (base, cur)
        for (alpha, thr), cases in groups.items():
            out.update(RuntimeCheck(alpha, thr).decide(cases, metrics, looks=self.looks))
        return out

    def peaks(self, workload: str, decomp: str) -> tuple[float, ...]:
        """The peak reserved bytes of the case's timed runs, else (a census-only session) of its census runs."""
        return self.metric(workload, decomp, "peak_reserved_bytes").values or tuple(
            r.peak_reserved_bytes for r in self.runs(workload, decomp, census=True) if r.peak_reserved_bytes is not None
        )

    def memory(self, workload: str, decomp: str) -> Verdict:
        case = f"{workload}-{decomp}"
        b = self.baselines[workload]
        if isinstance(b, bl.BaselineError):
            return _unusable("memory", case, b)
        cur = self.peaks(workload, decomp)
        base = b.values(decomp, "peak_reserved_bytes") or b.values(decomp, "peak_reserved_bytes", census=True)
        if b.imported:
            return Verdict(
                "memory",
                case,
                "skip",
                f"baseline {b.path} is imported from a published source; only runtime and ordering apply",
            )
        if not cur or not base:
            return Verdict(
                "memory",
                case,
                "skip",
                f"no peak memory on {self.gpu} (CPU runs record none)"
                if not cur
                else f"baseline {b.path} has no peak memory for {decomp}",
            )
        t = self.thresholds(b)
        return MemoryCheck(t.memory_rel, int(t.memory_abs_mib * 2**20)).decide(case, base, cur)

    def ordering(self, workload: str) -> list[Verdict]:
        b = self.baselines[workload]
        if isinstance(b, bl.BaselineError):
            return [_unusable("ordering", workload, b)]
        base, cur = {}, {}
        for d in self.decomps(workload):
            key = b.runtime_metric(d)
            if b.values(d, key) and self.metric(workload, d, key).values:
                base[d], cur[d] = b.values(d, key), self.metric(workload, d, key).values
        if len(base) < 2:
            return [
                Verdict(
                    "ordering",
                    workload,
                    "skip",
                    self._fewer_than_two(workload, "with runs in both the baseline and this session"),
                )
            ]
        return OrderingCheck(self.thresholds(b).alpha).decide(workload, base, cur)

    def equivalence(self, workload: str) -> Verdict:
        losses = {}
        census_only = not any(self.runs(workload, d) for d in self.decomps(workload))
        for d in self.decomps(workload):
            runs = self.runs(workload, d, census=census_only)  # a census-only session compares its census runs' losses
            if runs and runs[0].losses:
                losses[d] = list(runs[0].losses)
        if len(losses) < 2:
            return Verdict("equivalence", workload, "skip", self._fewer_than_two(workload, "ran successfully"))
        return EquivalenceCheck(LOSS_RTOL[self.workloads[workload].train.precision]).decide(workload, losses)

    def _fewer_than_two(self, workload: str, why: str) -> str:
        """Why a check across decompositions has nothing to compare: the session ran one,
        or fewer than two did ``why``."""
        ran = list(self.decomps(workload))
        if len(ran) < 2:
            return f"{workload} ran {' '.join(ran) or 'no decomposition'} alone: there is nothing to compare it with"
        return f"fewer than two decompositions {why}"

    def censuses(self, workload: str, decomp: str) -> list[dict]:
        """This session's censuses of a case (from its ok census runs whose window fitted)."""
        return [
            census_diff.normalize(r.census.to_json())
            for r in self.runs(workload, decomp, census=True)
            if r.census is not None and r.census.fits
        ]

    @cached_property
    def _kernel_time(self) -> dict[str, tuple]:
        """Per case with censuses on both sides: (estimate, flagged, smallest flagged, threshold) of the GPU kernel
        time per step, current against the baseline's census runs (the machine as the unit when they span
        several, else the run); flagged: above 1 + ``kernel_time`` at alpha, Holm over the cases."""
        est, thr, alpha = {}, {}, {}
        for w, d in self.cases:
            b = self.baselines[w]
            if not isinstance(b, bl.Baseline):
                continue
            groups = b.census_grouped(d, "kernel_ms")
            cur = [c["kernel_ms"] for c in self.censuses(w, d) if c.get("kernel_ms")]
            if groups and cur and sum(map(len, groups)) + len(cur) >= 4:
                t = self.thresholds(b)
                est[f"{w}-{d}"] = (estimate(groups, cur, t.alpha), groups)
                thr[f"{w}-{d}"], alpha[f"{w}-{d}"] = t.kernel_time, t.alpha
        names = list(est)
        a = min(alpha.values(), default=ALPHA)
        flagged = dict(zip(names, holm([est[c][0].p_above(1 + thr[c]) for c in names], a)))
        return {
            c: (
                est[c][0],
                flagged[c],
                smallest_flagged(est[c][1], a / len(names), thr[c]) if len(est[c][1]) >= 2 else None,
                thr[c],
            )
            for c in names
        }

    def work(self, workload: str, decomp: str) -> Verdict | None:
        """The work verdict of a case, when it has a census: its counts against the baseline's first census, exactly
        (Python calls within ``CENSUS_TOLERANCES``; ``changed`` fails with the lines that say what changed; a change
        of the resolved configuration is listed, not failed), and its GPU kernel time per step (:attr:`_kernel_time`:
        ``regression`` when flagged); ``skip`` with the reason when the case's runs are too short for a census window.
        None when this session made no census of the case."""
        case = f"{workload}-{decomp}"
        cur = self.censuses(workload, decomp)
        if not cur:
            unfit = [
                r.census.reason for r in self.runs(workload, decomp, census=True) if r.census and not r.census.fits
            ]
            return Verdict("work", case, "skip", f"no census: {unfit[0]}") if unfit else None
        b = self.baselines[workload]
        if isinstance(b, bl.BaselineError):
            return _unusable("work", case, b)
        base = b.census(decomp)
        if not base:
            return Verdict(
                "work",
                case,
                "skip",
                f"baseline {b.path} has no census of {decomp}; record one with --census --update-baselines",
            )
        v = census_diff.verdict(base[0], cur[0], CENSUS_TOLERANCES)
        details: dict = {"lines": v.lines, "counts": v.outcome}
        kt = census_diff.time_line(v.diff)
        flagged = False  # the kernel time flagged above its threshold
        if case in self._kernel_time:
            e, flagged, smallest, thr = self._kernel_time[case]
            kt = (
                f"kernel time per step {fmt_ratio(e.ratio, e.lo, e.hi)} vs baseline, threshold +{thr:.1%} (unit: "
                f"{e.unit}, Holm over the censused cases)"
            )
            details.update(
                kernel_ratio=e.ratio,
                kernel_lo=e.lo,
                kernel_hi=e.hi,
                kernel_flagged=flagged,
                kernel_unit=e.unit,
                kernel_smallest_flagged=smallest,
            )
        text = (
            "; ".join(v.lines)
            if v.lines
            else "the work per optimizer step is the same as the baseline's (every count equal)"
        )
        text += f"; {kt}" if kt else ""
        if v.outcome == "unknown":
            return Verdict("work", case, "skip", text, details)
        if v.outcome == "changed":
            return Verdict("work", case, "changed", f"WORK CHANGED: {text}", details)
        if flagged:
            return Verdict("work", case, "regression", f"REGRESSION: {text}", details)
        return Verdict("work", case, "pass", f"pass: {text}", details)

    def all(self) -> list[Verdict]:
        out = list(self.runtime.values())
        for w in self.workload_names:
            out += [v for d in self.decomps(w) if (v := self.work(w, d)) is not None]
            out += [self.memory(w, d) for d in self.decomps(w)]
            out += self.ordering(w)
            out.append(self.equivalence(w))
        return out
