"""A measuring session: plan the runs of the selected cases and execute them under a time budget,
resuming an earlier session when asked, with more looks while runtime verdicts are inconclusive.

The pytest plugin builds one :class:`PerfSession` per pytest session. The session makes runs and
hands its records to a :class:`~harness.judging.judge.Judge`, which holds every verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from harness.errors import BadInput
from harness.files import ensure_dir, new_id, read_records
from harness.judging import baseline as bl
from harness.judging.judge import Judge, load_baselines
from harness.measuring.loop import FreshSide, Slot, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S, parse_faults
from harness.record import run_problem
from harness.results import formats
from harness.results.run import Run
from harness.spec import Workload


@dataclass(frozen=True)
class Options:
    """A session's settings. Values are validated where they are parsed (:mod:`harness.options`); every rule across
    options lives here (the plugin adds only those of its own options: --calibrate, --interleave-python-b)."""

    gpu: str
    results_dir: Path = Path("perf-results")
    baselines_dir: Path = Path("baselines")
    repeats: int = 5
    max_repeats: int | None = None
    order: str = "interleaved"
    timeout_s: float = RUN_TIMEOUT_S
    inject_slowdown: float = 0.0
    inject_work: int = 0
    census: bool = False  # one census run per case after the timed runs (with repeats 0: a census-only session)
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
        if self.repeats == 0 and not self.census:
            raise BadInput(
                "--repeats 0 makes no timed run: add --census for a census-only session, or give --repeats 1 or more"
            )
        if self.repeats == 0 and (self.max_repeats or self.update_baselines):
            raise BadInput(
                "--repeats 0 (a census-only session) takes neither --max-repeats nor --update-baselines, "
                "which need timed runs"
            )
        if self.max_repeats is not None and self.max_repeats < self.repeats:
            raise BadInput(f"--max-repeats ({self.max_repeats}) must be >= --repeats ({self.repeats})")
        if self.update_baselines and self.repeats < bl.MIN_REPEATS:
            raise BadInput(
                f"--update-baselines records a baseline from at least {bl.MIN_REPEATS} runs per decomposition, "
                "got --repeats "
                f"{self.repeats}; pass --repeats {bl.MIN_REPEATS} or more"
            )
        injected = [
            f
            for f, v in (
                ("--inject-slowdown", self.inject_slowdown),
                ("--inject-work", self.inject_work),
                ("--profile-steps", self.profile_steps),
            )
            if v
        ]
        if self.update_baselines and injected:
            raise BadInput(f"--update-baselines records plain runs only; drop {', '.join(injected)}")

    @property
    def looks(self) -> int:
        """Planned looks at the data: the first after --repeats, then one per extra block of --repeats runs."""
        extra = (self.max_repeats or self.repeats) - self.repeats
        return 1 + math.ceil(extra / self.repeats) if self.repeats else 1


@dataclass
class PerfSession:
    options: Options
    workloads: dict[str, Workload]
    cases: list[tuple[str, str]]  # (workload name, decomposition id), in workload-file order
    progress: Callable[[str], None] = print
    session_id: str = field(default_factory=new_id)
    records: list[Run] = field(default_factory=list)
    executed: bool = False
    looks_used: int = 0
    left: int = 0  # planned runs not started because of --total-budget-minutes
    resumed: int = 0  # runs taken over from the session resumed with --resume
    notes: list[str] = field(
        default_factory=list
    )  # lines of runs.jsonl that --resume skipped (torn, malformed): said in the report
    recorded: list = field(default_factory=list)  # (path, old, new) of baselines written with --update-baselines
    broken: dict[str, str] = field(default_factory=dict)  # workloads not run, by name: the one line of each
    clock: Callable[[], float] = time.monotonic  # for --total-budget-minutes; tests pass a fake one
    _t0: float = field(default=0.0, repr=False)
    _judged: tuple | None = field(default=None, repr=False)

    @cached_property
    def baselines(self) -> dict[str, bl.Baseline | bl.BaselineError]:
        return load_baselines(
            self.options.baselines_dir,
            self.options.gpu,
            {n: self.workloads[n] for n in dict.fromkeys(w for w, _ in self.cases)},
        )

    def judge(self) -> Judge:
        """Every verdict over this session's records so far (one judge per state of the records: verdicts are computed
        once)."""
        o = self.options
        state = (len(self.records), self.left)
        if self._judged is None or self._judged[0] != state:
            self._judged = (
                state,
                Judge(
                    self.workloads,
                    tuple(self.cases),
                    tuple(self.records),
                    self.baselines,
                    gpu=o.gpu,
                    alpha=o.alpha,
                    threshold=o.threshold,
                    looks=o.looks,
                    incomplete=self.incomplete,
                ),
            )
        return self._judged[1]

    def side(self, census: bool = False) -> FreshSide:
        o = self.options
        return FreshSide(
            "census" if census else "",
            Path(o.results_dir),
            self.session_id,
            phases=o.phases,
            inject_slowdown=o.inject_slowdown,
            inject_work=o.inject_work,
            profile_steps=o.profile_steps,
            census=census,
        )

    # ---- execution --------------------------------------------------------------------------------
    def _execute(self, pairs, repeats, first_repeat, total, census: bool = False) -> None:
        o = self.options
        cases = [(self.workloads[w], self.workloads[w].decomposition(d)) for w, d in pairs]
        done = {(r.workload, r.decomposition_id, r.repeat) for r in self.records if r.is_census == census}
        slots = [
            s
            for s in schedule([self.side(census)], cases, repeats, order=o.order, first_repeat=first_repeat)
            if (*s.case, s.repeat) not in done
        ]
        ran = run_slots(
            slots,
            timeout_s=o.timeout_s,
            gpu=o.gpu,
            progress=self.progress,
            faults=parse_faults(o.faults),
            stop=self._over_budget if o.budget_s is not None else None,
            done=len(self.records),
            total=total,
            on_record=lambda _slot, rec: self.records.append(Run.from_json(rec)),
        )
        self.left = ran.left

    def _over_budget(self, slot: Slot) -> str | None:
        est = self._run_estimate(*slot.case)
        spent = self.clock() - self._t0
        if spent + est > self.options.budget_s:
            return (
                f"budget: {spent:.0f} s spent, {slot.label} would take ~{est:.0f} s more than the "
                f"{self.options.budget_s:.0f} s of --total-budget-minutes"
            )
        return None

    def _run_estimate(self, workload: str, decomp: str) -> float:
        """Seconds the next run of a case is expected to take, for --total-budget-minutes; erring long.

        The case's slowest run in this session; before its first, the session's slowest run so far;
        before any, the baseline's slowest train_runtime of the case (a run takes at least that); else 0.
        """
        mine = [r for r in self.records if r.workload == workload and r.decomposition_id == decomp]
        walls = [r.wall_s or 0.0 for r in mine or self.records]
        if walls:
            return max(walls)
        b = self.baselines.get(workload)
        return max(b.values(decomp, "train_runtime_s"), default=0.0) if isinstance(b, bl.Baseline) else 0.0

    def run(self) -> PerfSession:
        """Execute the planned runs once; then, while runtime verdicts are inconclusive, more rounds up to
        --max-repeats.

        Raises ValueError (one line) for a results dir that cannot be written or a --resume of other settings.
        """
        if self.executed:
            return self
        o = self.options
        ensure_dir(o.results_dir)
        self._t0 = self.clock()
        if o.resume:
            self._take_over()
        self.executed = True  # from here on the session has a report, even if interrupted
        self._execute(self.cases, o.repeats, 1, len(self.cases) * o.repeats)
        self.looks_used = 1
        done = o.repeats
        case_index = {f"{w}-{d}": (w, d) for w, d in self.cases}
        while not self.left and not o.update_baselines and done < (o.max_repeats or o.repeats):
            verdicts = self.judge().runtime
            todo = [c for c, v in verdicts.items() if v.outcome == "inconclusive" and c in case_index]
            # with the machine as the unit, more runs on this one machine do not narrow the interval: no extra runs
            stuck = [c for c in todo if verdicts[c].details.get("unit") == "machine"]
            if stuck:
                self.progress(
                    f"inconclusive against a baseline from several machines: {', '.join(stuck)}; "
                    "more runs here would not "
                    "narrow it (record runs from more machines into the baseline), so none are added"
                )
            todo = [c for c in todo if c not in stuck]
            if not todo:
                break
            more = min(o.repeats, o.max_repeats - done)
            pairs = [case_index[c] for c in todo]
            self.progress(
                f"inconclusive: {', '.join(todo)}; {more} more run(s) each (up to --max-repeats {o.max_repeats})"
            )
            self._execute(pairs, more, done + 1, len(self.records) + len(pairs) * more)
            if self.left:
                break
            done += more
            self.looks_used += 1
        if o.census and not self.left:  # the census: one short profiled run per case, never mixed into the timings
            self._execute(self.cases, 1, 1, len(self.records) + len(self.cases), census=True)
        return self

    def _take_over(self) -> None:
        """--resume: adopt the last session recorded in results_dir (its id and its runs of the selected cases).

        Raises ValueError, with one line, when that session ran with other settings than this one.
        """
        o = self.options
        path = Path(o.results_dir) / "runs.jsonl"
        recs, skipped = read_records(path, formats.RUN.read)
        kept = []
        for r in recs:
            if not (
                all(isinstance(r.get(k), str) for k in ("session_id", "workload", "decomposition_id", "status"))
                and isinstance(r.get("repeat"), int)
            ):  # what resuming reads of a record
                skipped.append(f"{path}: run {r.get('run_id')!r} lacks its session, case, repeat or status; skipped")
            elif (why := run_problem(r)) is not None:  # what the session's report reads of it
                skipped.append(f"{path}: run {r.get('run_id')!r}: {why}; skipped")
            else:
                kept.append(Run.from_json(r))
        recs = kept
        for (
            line
        ) in skipped:  # a run whose record was torn counts as not made: it is made again, and the report says why
            self.notes.append(
                f"--resume: {line}; the run it held counts as not made: made again if this session needs it"
            )
            self.progress(self.notes[-1])
        if not recs:
            self.progress(f"resume: nothing recorded in {o.results_dir} yet; starting session {self.session_id}")
            return
        last = recs[-1].session_id
        theirs = [r for r in recs if r.session_id == last]
        selected = set(self.cases)
        for r in theirs:
            w = self.workloads.get(r.workload)
            diffs = [
                f"{what} {a!r} != {b!r}"
                for what, a, b in (
                    ("gpu", r.gpu or None, o.gpu),
                    ("workload hash", r.workload_hash, w.hash if w else None),
                    ("--inject-slowdown", r.inject_slowdown or 0.0, o.inject_slowdown),
                    ("--inject-work", r.inject_work or 0, o.inject_work),
                    (
                        "phases",
                        True if r.phases_enabled is None and "phases_enabled" not in r.details else r.phases_enabled,
                        o.phases,
                    ),
                    ("--profile-steps", r.profile_steps or 0, o.profile_steps),
                )
                if a != b
            ]
            if (r.workload, r.decomposition_id) in selected and diffs:
                raise BadInput(
                    f"--resume: session {last} in {o.results_dir} ran {r.workload}-{r.decomposition_id} "
                    "with other settings "
                    f"({'; '.join(diffs)}); rerun with its settings, or without --resume in a fresh --results-dir"
                )
        self.session_id = last
        self.records = [r for r in theirs if (r.workload, r.decomposition_id) in selected]
        self.resumed = len(self.records)
        self.progress(
            f"resume: session {last}, {self.resumed} run(s) already in {o.results_dir} count toward --repeats"
        )

    @property
    def incomplete(self) -> str | None:
        """None when every planned run was made; else one line saying how many are left and how to finish."""
        if not self.left:
            return None
        return (
            f"INCOMPLETE: {self.left} planned run(s) left by --total-budget-minutes; "
            "rerun the same command with --resume to finish"
        )

    # ---- recording -------------------------------------------------------------------------------
    def update_baselines_for(
        self, name: str, min_repeats: int = bl.MIN_REPEATS
    ) -> list[tuple[Path, dict | None, dict]]:
        """Write ``name``'s baseline from this session's runs; return [(path, old data, new data)] (also kept in
        ``recorded``).

        Raises BaselineError, writing nothing, on a refusal (failed runs, too few repeats, missing decompositions).
        """
        w = self.workloads[name]
        if self.left:
            raise bl.BaselineError(f"refusing to record a baseline for {name}: {self.incomplete}")
        missing = [d.id for d in w.decompositions if (name, d.id) not in self.cases]
        if missing:
            raise bl.BaselineError(
                f"refusing to record a baseline for {name}: decomposition(s) {', '.join(missing)} were not run "
                "(drop -k to run all)"
            )
        staged = bl.record(
            self.options.baselines_dir,
            w,
            self.options.gpu,
            [r for r in self.records if r.workload == name],
            self.options.command,
            min_repeats=min_repeats,
        )
        self.recorded.append(staged)
        return [staged]
