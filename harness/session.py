"""A measuring session: plan the runs of the selected cases, execute them in order, and judge them.

The pytest plugin builds one :class:`PerfSession` per pytest session; the CLI builds them too. Runs
are executed once, on first use; verdicts are computed lazily from the session's records and the
stored baselines.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from . import baseline as bl
from .runner import RunRequest, parse_faults, read_jsonl, run_one, schedule
from .spec import Workload
from .stats import LOSS_RTOL, EquivalenceCheck, MemoryCheck, OrderingCheck, RuntimeCheck, Sample, Verdict, smallest_flagged


@dataclass
class Options:
    gpu: str
    results_dir: Path = Path("perf-results")
    baselines_dir: Path = Path("baselines")
    repeats: int = 5
    max_repeats: int | None = None
    order: str = "interleaved"
    timeout_s: float = 1800.0
    inject_slowdown: float = 0.0
    phases: bool = True
    alpha: float | None = None
    threshold: float | None = None
    update_baselines: bool = False
    fail_inconclusive: bool = False
    faults: str | None = None  # test-only, from HARNESS_FAULTS
    profile_steps: int = 0
    command: str = ""
    resume: bool = False  # continue the last session in results_dir: its runs count, only the missing ones are made
    budget_s: float | None = None  # start no run that would end past this many seconds (see PerfSession._run_estimate)

    def __post_init__(self):
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")
        if self.max_repeats is not None and self.max_repeats < self.repeats:
            raise ValueError(f"--max-repeats ({self.max_repeats}) must be >= --repeats ({self.repeats})")
        if not 0 <= self.inject_slowdown < 10:
            raise ValueError(f"--inject-slowdown must be a fraction in [0, 10), got {self.inject_slowdown}")
        if self.timeout_s <= 0:
            raise ValueError(f"--timeout must be positive, got {self.timeout_s}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"--budget-minutes must be positive, got {self.budget_s / 60:g}")

    @property
    def looks(self) -> int:
        """Planned looks at the data: the first after --repeats, then one per extra block of --repeats runs."""
        extra = (self.max_repeats or self.repeats) - self.repeats
        return 1 + math.ceil(extra / self.repeats)


@dataclass
class PerfSession:
    options: Options
    workloads: dict[str, Workload]
    cases: list[tuple[str, str]]  # (workload name, decomposition id), in workload-file order
    progress: Callable[[str], None] = print
    session_id: str = field(default_factory=lambda: f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}")
    records: list[dict] = field(default_factory=list)
    executed: bool = False
    looks_used: int = 0
    left: int = 0  # planned runs not started because of --budget-minutes
    resumed: int = 0  # runs taken over from the session resumed with --resume
    clock: Callable[[], float] = time.monotonic  # for --budget-minutes; tests pass a fake one
    _t0: float = field(default=0.0, repr=False)

    # ---- execution --------------------------------------------------------------------------------
    def _execute(self, pairs, repeats, first_repeat, total_hint) -> None:
        o = self.options
        faults = parse_faults(o.faults)
        plan = schedule([(self.workloads[w], self.workloads[w].decomposition(d)) for w, d in pairs], repeats, o.order, first_repeat)
        done = {(r["workload"], r["decomposition_id"], r["repeat"]) for r in self.records}
        plan = [(w, d, rep) for w, d, rep in plan if (w.name, d.id, rep) not in done]
        for i, (w, d, rep) in enumerate(plan):
            if o.budget_s is not None:
                est = self._run_estimate(w.name, d.id)
                spent = self.clock() - self._t0
                if spent + est > o.budget_s:
                    self.left = len(plan) - i
                    self.progress(f"budget: {spent:.0f} s spent, {w.name}-{d.id} run {rep} would take ~{est:.0f} s more than the "
                                  f"{o.budget_s:.0f} s of --budget-minutes; {self.left} run(s) left: rerun the same command with --resume")
                    return
            n = len(self.records) + 1
            req = RunRequest(w, d, rep, phases=o.phases, inject_slowdown=o.inject_slowdown, fault=faults.get((d.id, rep)),
                             profile_steps=o.profile_steps)
            self.progress(f"[{n}/{total_hint}] {req.case_id} run {rep}: started")
            rec = run_one(req, o.results_dir, self.session_id, o.timeout_s, o.gpu)
            self.records.append(rec)
            self.progress(f"[{n}/{total_hint}] {req.case_id} run {rep}: {headline(rec)}")

    def _run_estimate(self, workload: str, decomp: str) -> float:
        """Seconds the next run of a case is expected to take, for --budget-minutes; erring long.

        The case's slowest run in this session; before its first, the session's slowest run so far;
        before any, the baseline's slowest train_runtime of the case (a run takes at least that); else 0.
        """
        walls = [r.get("wall_s") or 0.0 for r in self.runs(workload, decomp, ok_only=False)] or [r.get("wall_s") or 0.0 for r in self.records]
        if walls:
            return max(walls)
        b = self.baselines.get(workload)
        return max(b.values(decomp, "train_runtime_s"), default=0.0) if isinstance(b, bl.Baseline) else 0.0

    def run(self) -> "PerfSession":
        """Execute the planned runs once; then, while runtime verdicts are inconclusive, more rounds up to --max-repeats."""
        if self.executed:
            return self
        self.executed = True
        o = self.options
        Path(o.results_dir).mkdir(parents=True, exist_ok=True)
        self._t0 = self.clock()
        if o.resume:
            self._take_over()
        self._execute(self.cases, o.repeats, 1, len(self.cases) * o.repeats)
        self.looks_used = 1
        done = o.repeats
        while not self.left and not o.update_baselines and done < (o.max_repeats or o.repeats):
            verdicts = self.runtime_verdicts()
            todo = [c for c, v in verdicts.items() if v.outcome == "inconclusive" and c in self._case_index]
            # with the machine as the unit, more runs on this one machine do not narrow the interval: no extra runs
            stuck = [c for c in todo if verdicts[c].details.get("unit") == "machine"]
            if stuck:
                self.progress(f"inconclusive against a baseline from several machines: {', '.join(stuck)}; more runs here would not "
                              "narrow it (record runs from more machines into the baseline), so none are added")
            todo = [c for c in todo if c not in stuck]
            if not todo:
                break
            more = min(o.repeats, o.max_repeats - done)
            pairs = [self._case_index[c] for c in todo]
            self.progress(f"inconclusive: {', '.join(todo)}; {more} more run(s) each (up to --max-repeats {o.max_repeats})")
            self._execute(pairs, more, done + 1, len(self.records) + len(pairs) * more)
            if self.left:
                break
            done += more
            self.looks_used += 1
            self.__dict__.pop("_runtime", None)
        return self

    def _take_over(self) -> None:
        """--resume: adopt the last session recorded in results_dir (its id and its runs of the selected cases).

        Raises ValueError, with one line, when that session ran with other settings than this one.
        """
        o = self.options
        recs = load_records(o.results_dir)
        if not recs:
            self.progress(f"resume: nothing recorded in {o.results_dir} yet; starting session {self.session_id}")
            return
        last = recs[-1].get("session_id")
        theirs = [r for r in recs if r.get("session_id") == last]
        selected = set(self.cases)
        for r in theirs:
            w = self.workloads.get(r["workload"])
            diffs = [f"{what} {a!r} != {b!r}" for what, a, b in (
                ("gpu", r.get("gpu"), o.gpu),
                ("workload hash", r.get("workload_hash"), w.hash if w else None),
                ("--inject-slowdown", r.get("inject_slowdown") or 0.0, o.inject_slowdown),
                ("phases", r.get("phases_enabled", True), o.phases),
                ("--profile-steps", r.get("profile_steps") or 0, o.profile_steps)) if a != b]
            if (r["workload"], r["decomposition_id"]) in selected and diffs:
                raise ValueError(f"--resume: session {last} in {o.results_dir} ran {r['workload']}-{r['decomposition_id']} with other settings "
                                 f"({'; '.join(diffs)}); rerun with its settings, or without --resume in a fresh --results-dir")
        self.session_id = last
        self.records = [r for r in theirs if (r["workload"], r["decomposition_id"]) in selected]
        self.resumed = len(self.records)
        self.progress(f"resume: session {last}, {self.resumed} run(s) already in {o.results_dir} count toward --repeats")

    def plan_notes(self) -> list[str]:
        """Before any run: what the runtime verdicts can detect against baselines gathered on several machines."""
        out = []
        for w in self.workload_names:
            b = self.baselines[w]
            if not isinstance(b, bl.Baseline):
                continue
            t = self.thresholds(b)
            alpha = t["alpha"] / max(1, len(self.cases)) / self.options.looks  # Holm's first step: the strictest
            groups = {d: g for d in self.decomps(w) if len(g := b.grouped(d, b.runtime_metric(d))) >= 2}
            if groups:
                flagged = {d: smallest_flagged(g, alpha, t["runtime"]) for d, g in groups.items()}
                k = len(b.data.get("provenance", {}).get("machines") or []) or "several"
                # the interval assumes this session's mean is as noisy as a baseline machine's mean: as many runs as its fullest machine
                enough = max(len(m) for g in groups.values() for m in g)
                cost = (f"; --repeats {enough} is enough (the baseline's machines have at most {enough} runs each)"
                        if enough < self.options.repeats else "")
                out.append(f"note: the baseline of {w} spans {k} machines, so the machine is the unit: a runtime regression is flagged "
                           f"only above {', '.join(f'{d} x{v:.2f}' for d, v in flagged.items())} (at the strictest Holm step); "
                           f"more runs here do not change that, more machines in the baseline do{cost}")
        return out

    @property
    def incomplete(self) -> str | None:
        """None when every planned run was made; else one line saying how many are left and how to finish."""
        if not self.left:
            return None
        return f"INCOMPLETE: {self.left} planned run(s) left by --budget-minutes; rerun the same command with --resume to finish"

    @cached_property
    def _case_index(self) -> dict[str, tuple[str, str]]:
        return {f"{w}-{d}": (w, d) for w, d in self.cases}

    # ---- records ---------------------------------------------------------------------------------
    def runs(self, workload: str, decomp: str, ok_only: bool = True) -> list[dict]:
        return [r for r in self.records if r["workload"] == workload and r["decomposition_id"] == decomp and (r["status"] == "ok" or not ok_only)]

    def metric(self, workload: str, decomp: str, key: str) -> Sample:
        return Sample(tuple(r[key] for r in self.runs(workload, decomp) if r.get(key) is not None))

    @property
    def workload_names(self) -> list[str]:
        return list(dict.fromkeys(w for w, _ in self.cases))

    def decomps(self, workload: str) -> list[str]:
        return [d for w, d in self.cases if w == workload]

    # ---- baselines ---------------------------------------------------------------------------------
    @cached_property
    def baselines(self) -> dict[str, bl.Baseline | bl.BaselineError]:
        out = {}
        for name in self.workload_names:
            try:
                out[name] = bl.load(self.options.baselines_dir, self.options.gpu, self.workloads[name])
            except bl.BaselineError as exc:
                out[name] = exc
        return out

    def thresholds(self, b: bl.Baseline) -> dict[str, float]:
        t = dict(b.thresholds)
        if self.options.alpha is not None:
            t["alpha"] = self.options.alpha
        if self.options.threshold is not None:
            t["runtime"] = self.options.threshold
        return t

    # ---- verdicts --------------------------------------------------------------------------------
    def runtime_verdicts(self) -> dict[str, Verdict]:
        if "_runtime" in self.__dict__:
            return self.__dict__["_runtime"]
        out: dict[str, Verdict] = {}
        groups: dict[tuple[float, float], dict] = {}
        metrics: dict[str, str] = {}
        for w, d in self.cases:
            case = f"{w}-{d}"
            b = self.baselines[w]
            if isinstance(b, bl.BaselineError):
                out[case] = Verdict("runtime", case, "skip" if isinstance(b, bl.MissingBaseline) else "fail", str(b), _missing(b))
                continue
            key = b.runtime_metric(d)
            base, cur = b.grouped(d, key), self.metric(w, d, key).values
            if not base:
                out[case] = Verdict("runtime", case, "skip", f"baseline {b.path} has no {d}; record it with --update-baselines")
                continue
            if not cur and self.left and not self.runs(w, d, ok_only=False):
                out[case] = Verdict("runtime", case, "skip", f"{case} not run yet: {self.incomplete}")
                continue
            if not cur:
                out[case] = Verdict("runtime", case, "fail", f"no successful run of {case} to compare")
                continue
            t = self.thresholds(b)
            metrics[case] = "train_runtime" if key == "train_runtime_s" else "steady-state median step time"
            groups.setdefault((t["alpha"], t["runtime"]), {})[case] = (base, cur)
        for (alpha, thr), cases in groups.items():
            out.update(RuntimeCheck(alpha, thr).decide(cases, metrics, looks=self.options.looks))
        self.__dict__["_runtime"] = out
        return out

    def memory_verdict(self, workload: str, decomp: str) -> Verdict:
        case = f"{workload}-{decomp}"
        b = self.baselines[workload]
        if isinstance(b, bl.BaselineError):
            return Verdict("memory", case, "skip" if isinstance(b, bl.MissingBaseline) else "fail", str(b), _missing(b))
        cur = self.metric(workload, decomp, "peak_reserved_bytes").values
        base = b.values(decomp, "peak_reserved_bytes")
        if b.imported:
            return Verdict("memory", case, "skip", f"baseline {b.path} is imported from a published source; only runtime and ordering apply")
        if not cur or not base:
            return Verdict("memory", case, "skip", f"no peak memory on {self.options.gpu} (CPU runs record none)" if not cur else f"baseline {b.path} has no peak memory for {decomp}")
        t = self.thresholds(b)
        return MemoryCheck(t["memory_rel"], int(t["memory_abs_mib"] * 2**20)).decide(case, base, cur)

    def ordering_verdicts(self, workload: str) -> list[Verdict]:
        b = self.baselines[workload]
        if isinstance(b, bl.BaselineError):
            return [Verdict("ordering", workload, "skip" if isinstance(b, bl.MissingBaseline) else "fail", str(b), _missing(b))]
        base, cur = {}, {}
        for d in self.decomps(workload):
            key = b.runtime_metric(d)
            if b.values(d, key) and self.metric(workload, d, key).values:
                base[d], cur[d] = b.values(d, key), self.metric(workload, d, key).values
        if len(base) < 2:
            return [Verdict("ordering", workload, "skip", "fewer than two decompositions with runs in both the baseline and this session")]
        return OrderingCheck(self.thresholds(b)["alpha"]).decide(workload, base, cur)

    def equivalence_verdict(self, workload: str) -> Verdict:
        losses = {}
        for d in self.decomps(workload):
            runs = self.runs(workload, d)
            if runs and runs[0].get("losses"):
                losses[d] = runs[0]["losses"]
        if len(losses) < 2:
            return Verdict("equivalence", workload, "skip", "fewer than two decompositions ran successfully")
        return EquivalenceCheck(LOSS_RTOL[self.workloads[workload].train.precision]).decide(workload, losses)

    def all_verdicts(self) -> list[Verdict]:
        out = list(self.runtime_verdicts().values())
        for w in self.workload_names:
            out += [self.memory_verdict(w, d) for d in self.decomps(w)]
            out += self.ordering_verdicts(w)
            out.append(self.equivalence_verdict(w))
        return out

    # ---- recording -------------------------------------------------------------------------------
    def update_baselines_for(self, name: str, min_repeats: int = bl.MIN_REPEATS) -> list[tuple[Path, dict | None, dict]]:
        """Write ``name``'s baseline from this session's runs; return [(path, old data, new data)].

        Raises BaselineError, writing nothing, on a refusal (failed runs, too few repeats, missing decompositions).
        """
        w = self.workloads[name]
        if self.left:
            raise bl.BaselineError(f"refusing to record a baseline for {name}: {self.incomplete}")
        self.baselines  # load the previous baselines first, so the summary compares against them
        missing = [d.id for d in w.decompositions if d.id not in self.decomps(name)]
        if missing:
            raise bl.BaselineError(f"refusing to record a baseline for {name}: decomposition(s) {', '.join(missing)} were not run (drop -k to run all)")
        data = bl.from_runs(w, self.options.gpu, [r for r in self.records if r["workload"] == name], self.options.command, min_repeats=min_repeats)
        path = bl.path_for(self.options.baselines_dir, self.options.gpu, name)
        old = bl.read_any(path)
        bl.write(self.options.baselines_dir, data)
        return [(path, old, data)]


def _missing(err: Exception) -> dict:
    return {"missing_baseline": isinstance(err, bl.MissingBaseline)}


def headline(rec: dict) -> str:
    """One line for progress output: status and the run's headline figures."""
    if rec["status"] != "ok":
        kind = "OOM (does not fit)" if rec["status"] == "oom" else rec["status"].upper()
        return f"{kind}: {rec.get('error', '')}"
    parts = [f"ok in {rec['wall_s']:.1f} s", f"median step {rec['step_time_median_ms']:.1f} ms", f"train_runtime {rec['train_runtime_s']:.2f} s"]
    if rec.get("peak_reserved_bytes"):
        parts.append(f"peak reserved {rec['peak_reserved_bytes'] / 2**30:.2f} GiB")
    return ", ".join(parts)


def load_records(results_dir: str | Path) -> list[dict]:
    return read_jsonl(Path(results_dir) / "runs.jsonl")
