"""The loop of an interleaved comparison: launches of two resident workers, pairs of turns, one block record per turn.

:class:`Comparison` runs a :class:`~harness.sidebyside.plan.ComparisonPlan` with a launcher
(:mod:`harness.sidebyside.launchers`) and asks a :class:`~harness.judging.stopping.StopRule` before each launch and pair
and after each pair. Every block is appended at once to ``blocks.jsonl``; ``progress.json`` (settings and launches) is
rewritten at each launch's start and end, so that ``recover`` can judge a comparison that never wrote its report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean

from harness.files import append_jsonl, write_json_atomic
from harness.judging import block_metrics as bm
from harness.judging import paired as pd
from harness.judging.blocks import merge_units
from harness.judging.comparison_settings import ComparisonSettings
from harness.judging.stats import sd
from harness.judging.stopping import Progress, StopRule
from harness.measuring.resident import ResidentWorker
from harness.measuring.resident.messages import BlockReport
from harness.reporting.interleave import calibration_text, pct
from harness.results import formats
from harness.results.block import Block
from harness.results.progress import Kept, Launch
from harness.sidebyside import inject
from harness.sidebyside.launchers import SIDES, Plain, Switches, each
from harness.sidebyside.plan import ComparisonPlan

PROGRESS = "progress.json"  # settings and launches so far, rewritten at each launch's start and end (recover)


def kept_ready(worker: ResidentWorker) -> dict:
    """What a launch's record keeps of a ready worker (``progress.json``, the report's launches): its ``ready`` report
    less the environment (kept apart) and the injected work's kind, with how its start went."""
    r = worker.wait_ready()
    return {
        "timing_s": r.timing_s,
        "host_probe": r.host_probe,
        "cuda": r.cuda,
        "cpus": r.cpus,
        "torch_threads": r.torch_threads,
        "malloc": r.malloc,
        "startup_wall_s": worker.startup_wall_s,
        "inject_work_layers": r.inject_work_layers,
        "prestarted": worker.prestarted,
    }


@dataclass
class Comparison:
    settings: ComparisonSettings  # as recorded in progress.json and the report (with the calibration, once made)
    plan: ComparisonPlan
    stop: StopRule
    launcher: Plain
    root: Path
    case: str
    switches: dict[str, Switches]
    out: Callable[[str], None] = print

    def __post_init__(self) -> None:
        self.progress = Progress()
        self.blocks: list[Block] = []
        self.calibration: inject.Calibration | None = None
        self.amount = {"a": 0.0 if self.settings.inject_work_b_percent else None, "b": None}  # sized: A's hook at 0

    # ---- records -----------------------------------------------------------------------------------------
    def save_progress(self) -> None:
        p = self.progress
        kept = Kept(self.case, p.t_start, self.settings.to_json(), list(self.plan.orders), p.launches)
        write_json_atomic(self.root / PROGRESS, kept.to_json())

    def record(self, side: str, launch: int, rep: BlockReport, amount: float | None = None, **where) -> Block:
        """Append one block of ``side`` (``rep``, the worker's report of it) to ``blocks.jsonl`` and keep it."""
        switches = self.switches[side]
        block = Block.from_json(
            {
                **rep.to_json(),
                **where,
                "session_id": self.settings.session_id,
                "side": side,
                "launch": launch,
                "inject_slowdown": switches.inject_slowdown,
                "inject_work": switches.inject_work if amount is None else amount,
            }
        )
        append_jsonl(self.root / "blocks.jsonl", formats.BLOCK.stamp(block.to_json()))
        self.blocks.append(block)
        return block

    # ---- the loop ----------------------------------------------------------------------------------------
    def run(self) -> Progress:
        """Every launch the stop rule allows; raises what the workers raise (the launcher's spare workers killed)."""
        p, last = self.progress, self.plan.schedule.launches
        self.save_progress()
        try:
            for launch in range(1, last + 1):
                startup = (
                    p.launches[-1].startup_s
                    if self.launcher.next and p.launches
                    else max((li.startup_s for li in p.launches), default=0.0)
                )
                if why := self.stop.before_launch(p, launch, startup):
                    if why != "conclusive":
                        p.stopped = why
                        self.out(f"{why}: judging the pairs made")
                    break
                self.run_launch(launch)
                if p.stopped:
                    self.out(f"{p.stopped}: judging the pairs made")
                    break
        finally:
            self.launcher.discard()
        return p

    def run_launch(self, launch: int) -> None:
        p, last = self.progress, self.plan.schedule.launches
        start = p.pairs  # an earlier launch may have been fitted to the budget
        planned = self.plan.planned(launch)
        workers = self.launcher.open(launch)
        if why := self.launcher.restarted.get(launch):
            self.out(f"launch {launch}: {why}; started it afresh")
        try:
            info = self.ready(workers, launch, planned)
            if why:
                info = self.update(restarted=why)
            self.out(
                f"launch {launch}: "
                f"A and B ready in {info.startup_s:.1f} s{' (pre-started)' if info.prestarted else ''} "
                f"(pairs {start + 1}-{start + planned} planned)"
            )
            self.launcher.prepare_next(launch, last)
            t_warm = time.time()
            apart = self.launcher.warm_up(workers, launch, self.settings.warmup_steps, self.amount, self.record)
            self.update(warm_apart=apart or None, warmup_s=time.time() - t_warm)
            if self.settings.inject_work_b_percent and self.calibration is None:
                self.calibrate(workers, launch)
            for i in range(start, start + planned):
                if (
                    launch < last
                    and i - start >= 2
                    and i - start >= self.stop.fit(p, launch, i - start, self.overhead_s())
                ):
                    fitted = (
                        f"{i - start} of its {planned} planned pairs, so that the {last - launch} later launch(es) fit "
                        "in the budget"
                    )
                    self.update(fitted=fitted)
                    self.out(f"launch {launch}: {fitted}")
                    break
                p.stopped = self.stop.before_pair(p)
                if p.stopped or self.pair(workers, launch, i):
                    break
        except BaseException:  # every worker killed, whatever killing one of them raised; then what stopped the launch
            try:
                each(workers.values(), lambda w: w.kill())
            finally:
                self.launcher.discard()
            raise
        t_close = time.time()
        try:  # both asked to stop first, so that they finish at the same time; both closed whatever closing one raised
            each(workers.values(), lambda w: w.stop())
        finally:
            each(workers.values(), lambda w: w.close())
        self.update(close_s=time.time() - t_close)
        self.save_progress()

    def ready(self, workers: dict, launch: int, planned: int) -> Launch:
        """The launch's record once both its workers are ready, kept and saved."""
        t = time.time()
        ready = {s: workers[s].wait_ready() for s in SIDES}
        info = Launch(
            launch=launch,
            startup_s=time.time() - t,
            ready={s: kept_ready(workers[s]) for s in SIDES},
            env={s: ready[s].env for s in SIDES},
            prestarted=bool(workers["a"].hold_cpus),
            pairs_planned=planned,
        )
        self.progress.launches.append(info)
        self.save_progress()
        return info

    def update(self, **changes) -> Launch:
        """The latest launch's record with ``changes`` (saved with the next :meth:`save_progress`)."""
        launches = self.progress.launches
        launches[-1] = replace(launches[-1], **changes)
        return launches[-1]

    def overhead_s(self) -> float:
        """What the latest launch cost besides its pairs, without the imports where later launches do them early."""
        last = self.progress.launches[-1]
        over = last.cost_s
        if self.settings.prestart and not last.prestarted:
            over -= max((last.side(s).get("timing_s") or {}).get("import_s", 0.0) for s in SIDES)
        return over

    def pair(self, workers: dict, launch: int, i: int) -> bool:
        """Pair ``i`` (0-based); True when a look made the verdict conclusive."""
        p, t = self.progress, time.time()
        rows: dict[str, list[Block]] = {s: [] for s in SIDES}
        for turn in self.plan.turns(i):
            s = turn.side
            rep = (
                workers[s].block(turn.k, inject=self.amount[s], micro=True)
                if turn.micro
                else workers[s].block(turn.k, inject=self.amount[s])
            )
            rows[s].append(self.record(s, launch, rep, self.amount[s], **turn.where))
        got = {s: merge_units(rows[s]) if self.plan.unit_orders is not None else rows[s][0] for s in SIDES}
        p.pair_wall.append(time.time() - t)
        how, drop = self.settings.block_metric, self.settings.drop_first_step
        p.add(
            launch,
            math.log(
                bm.block_metric(got["b"].step_times_ms, how, drop) / bm.block_metric(got["a"].step_times_ms, how, drop)
            ),
        )
        n, looks = i + 1, self.plan.schedule.looks
        if (v := self.stop.look(p, n, launch, self.case)) is not None:
            p.verdict = v
            self.out(f"look {looks.index(n) + 1}/{len(looks)} at {n} pairs: {v.message}")
            return v.outcome in pd.CONCLUSIVE
        if n % 10 == 0:
            d = [x for g in p.groups for x in g]
            self.out(
                f"[{n}/{self.plan.schedule.pairs}] launch {launch}: B/A so far x{math.exp(fmean(d)):.4f}, pair sigma "
                f"{pct(sd(d, None))}"
            )
        return False

    def calibrate(self, workers: dict, launch: int) -> None:
        """Size the test-only injected work on this machine, once, after launch 1's warm-up."""
        self.calibration = inject.calibrate_injection(
            workers,
            self.plan.block_steps,
            self.settings.inject_work_b_percent / 100.0,
            kind=self.settings.inject_kind,
            record=lambda side, rep, amt: self.record(
                side, launch, rep, amt, pair=None, position=None, order=None, warmup=True, calibration=True
            ),
        )
        recorded = self.calibration.to_json()
        self.settings = replace(self.settings, inject_calibration=recorded)
        self.amount["b"] = self.calibration.casts
        self.out(calibration_text(recorded))
