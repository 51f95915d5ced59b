"""``python -m harness interleave``: A against B on one machine, in many short blocks instead of a few whole runs.

Two resident workers (:mod:`harness.measuring.resident`), one per side, build their trainers once and then take turns: a
**pair** is one block of each side, in an order drawn per pair, and only one side trains at a time. The pairs are spread
over launches (both workers closed and started again), so that the launch is the unit of the verdict
(:mod:`harness.judging.paired`). Every setting is a field of :class:`~harness.sidebyside.config.ComparisonConfig`, whose
defaults are the nightly's; the engine is :mod:`harness.sidebyside` (plan, launchers, loop, stop rule).

Every block is appended at once to ``<results-dir>/blocks.jsonl`` and the settings and launches to ``progress.json``,
so ``python -m harness recover DIR`` can judge a run that never wrote its report. At the end: the verdict, the interval,
the minimum detectable slowdown, the launch check and the time spent; ``report.json`` and ``report.md``. Exit code 1 on
a regression, 3 when a worker died (one ``error:`` line), 2 on bad input, 130 on Ctrl-C and 143 on SIGTERM (the workers
killed first), else 0. When the two sides do not fit on the device at once, the comparison falls back to fresh-process
runs (:mod:`harness.sidebyside.fallback`).
"""

from __future__ import annotations

import json
import random
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.files import ensure_dir, new_id, refuse_link, report_session, results_lock
from harness.judging import launches as la
from harness.judging import paired as pd
from harness.judging.baseline import default_thresholds
from harness.judging.blocks import comparison_verdict
from harness.judging.comparison_settings import ComparisonSettings
from harness.judging.stopping import StopRule
from harness.measuring.interpreters import interpreter, same_versions
from harness.measuring.resident import WorkerDied
from harness.measuring.runner import parse_faults, sigterm_as_interrupt
from harness.results.comparison import ComparisonResult
from harness.sidebyside import inject
from harness.sidebyside.config import ComparisonConfig
from harness.sidebyside.fallback import fresh_fallback
from harness.sidebyside.finish import EXIT_WORKER_DIED, finish, reanalyse, recover  # noqa: F401  (the command's API)
from harness.sidebyside.launchers import NO_HOOKS, Hooks, Sides, Switches, WorkerFactory, launcher_for
from harness.sidebyside.loop import PROGRESS, Comparison
from harness.sidebyside.plan import ComparisonPlan
from harness.spec import Decomposition, Workload
from harness.spec_folder import load_workload


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def settings_of(
    cfg: ComparisonConfig,
    w: Workload,
    decs: Sides[Decomposition],
    py: Sides[str],
    seed: int,
    looks: tuple[int, ...],
    session_id: str | None = None,
) -> ComparisonSettings:
    """The settings that ``progress.json`` and the report record of a resolved config (the ones ``recover`` and
    ``reanalyse`` judge with); ``session_id``: the run's id, which its blocks and report carry (default: a new one)."""
    sized = cfg.inject_work_b_percent
    return ComparisonSettings(
        gpu=cfg.gpu,
        workload=w.name,
        workload_hash=w.hash,
        decomposition=decs.a.id,
        decomposition_b=decs.b.id,
        python_a=py.a,
        python_b=py.b,
        inject_slowdown_b=cfg.inject_slowdown_b,
        inject_work_b=inject.CALIBRATION_PROBE_CASTS if sized else cfg.inject_work_b,
        inject_work_b_percent=sized,
        inject_kind="host" if sized else "casts",
        block_steps=cfg.block_steps,
        grain=cfg.grain,
        max_pairs=cfg.pairs,
        launches_planned=cfg.launches,
        look_every=cfg.look_every,
        looks=tuple(looks),
        budget_minutes=cfg.budget_minutes,
        alpha=cfg.alpha if cfg.alpha is not None else default_thresholds(cfg.gpu)["alpha"],
        threshold=cfg.threshold,
        seed=seed,
        drop_first_step=cfg.drop_first_step,
        phases=cfg.phases,
        block_metric=cfg.block_metric,
        test=cfg.test,
        unit=cfg.unit,
        prestart=cfg.prestart,
        prestart_at="ready" if cfg.prestart else None,
        hold_cpus=cfg.hold_cpus,
        warm_apart=cfg.warm_apart,
        cpus=cfg.cpus,
        malloc_default=cfg.malloc_default,
        warmup_steps=cfg.warmup_steps,
        session_id=session_id or new_id("interleave"),
        config=asdict(cfg),
    )


@dataclass(frozen=True)
class Resolved:
    """One comparison, resolved before it runs: its config (every ``auto`` made concrete), workload, each side's
    decomposition and interpreter, case name, plan and the settings it records and judges with."""

    cfg: ComparisonConfig
    workload: Workload
    decs: Sides[Decomposition]
    python: Sides[str]
    case: str
    plan: ComparisonPlan
    settings: ComparisonSettings

    @property
    def same_split(self) -> bool:
        return self.decs.b == self.decs.a


def announce(r: Resolved, check: pd.PairedCheck, blocks_path, out: Callable[[str], None]) -> None:
    s, plan = r.settings, r.plan
    injected = ", ".join(
        x
        for x in (
            f"+{s.inject_slowdown_b:.0%} injected sleep" if s.inject_slowdown_b else "",
            f"inject-work sized on this machine for +{s.inject_work_b_percent:g}%"
            if s.inject_work_b_percent
            else f"inject-work {s.inject_work_b}"
            if s.inject_work_b
            else "",
        )
        if x
    )
    out(
        f"interleave {r.case} on {s.gpu}: A {s.python_a}, B {s.python_b}{f' ({injected})' if injected else ''}"
        + (f"; A runs {s.decomposition}, B runs {s.decomposition_b}" if s.decomposition_b != s.decomposition else "")
    )
    if s.grain == "micro":
        out(
            f"  micro grain: A and B take turns at single micro-batches ({plan.n_units} per side and pair, "
            "each order drawn), summed into steps"
        )
    looks, n = plan.schedule.looks, s.launches_planned
    out(
        f"  {s.block_steps} steps per block after a warm-up of {s.warmup_steps} per side and launch, "
        f"up to {s.max_pairs} pairs over {n} launches"
        + (f" within {s.budget_minutes:g} min" if s.budget_minutes else "")
        + f", looks at {', '.join(map(str, looks))} pairs "
        f"(alpha {s.alpha:g} / {len(looks)} per look), threshold +{s.threshold:.1%}, seed {s.seed}; "
        f"blocks in {blocks_path}"
    )
    if s.cpus:
        out(
            f"  both workers on CPU(s) {list(s.cpus)}"
            + (f"; the next launch pre-started on {list(s.hold_cpus or ())}" if s.prestart else "")
            + (", its two sides warming up apart there" if s.warm_apart else "")
        )
    out(
        "  unit of replication: the launch (each launch's "
        + ("Hodges-Lehmann estimate" if check.summary == "hl" else "mean")
        + " of its pair log "
        f"ratios, t over the {n} launches)"
        if s.unit == "launch"
        else f"  unit of replication: the pair (pooled over {n} launch(es): valid only if launches add nothing; "
        f"F screen at {la.LAUNCH_ALPHA:g}, "
        f"the launch as the unit needs {la.MIN_LAUNCH_UNIT} or more launches)"
    )


def interleave(
    cfg: ComparisonConfig,
    *,
    workload: Workload | None = None,
    hooks: Hooks = NO_HOOKS,
    out: Callable[[str], None] = print,
    session_id: str | None = None,
) -> ComparisonResult:
    """Run the comparison ``cfg`` asks for (module docstring) and return its result; ``workload``: the spec itself
    instead of ``cfg.workload``'s file.
    ``hooks``: the test seam (:class:`~harness.sidebyside.launchers.Hooks`: faults, stand-in workers).
    ``session_id``: the id this run's report will carry (default: a new one)."""
    w = workload or load_workload(cfg.workloads_dir, cfg.workload)
    decs = Sides(w.decomposition(cfg.decomposition), w.decomposition(cfg.decomposition_b or cfg.decomposition))
    cfg = cfg.resolved(decs.a.grad_accum, decs.b == decs.a)
    case = f"{w.name}-{decs.a.id}" if decs.b == decs.a else f"{w.name}-{decs.b.id}-vs-{decs.a.id}"
    py = Sides(interpreter(cfg.python_a, "a"), interpreter(cfg.python_b, "b"))
    injected = cfg.inject_slowdown_b or cfg.inject_work_b or cfg.inject_work_b_percent
    if cfg.skip_same_versions and not injected and (same := same_versions(py.a, py.b)):
        why = f"A and B have the same versions ({same}): nothing to compare, no runs made (--skip-same-versions)"
        out(why)
        return ComparisonResult(0, Path(cfg.results_dir), reason=why)
    seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(2**31)
    plan = ComparisonPlan.make(
        cfg.pairs, cfg.launches, cfg.look_every, cfg.block_steps, cfg.grain, decs.a.grad_accum, seed
    )
    settings = settings_of(cfg, w, decs, py, seed, plan.schedule.looks, session_id)
    root = ensure_dir(cfg.results_dir)
    with results_lock(root):
        return _run(Resolved(cfg, w, decs, py, case, plan, settings), root, hooks, workload is not None, out)


def other_commands_report(root: Path) -> str | None:
    """The run id of a report in ``root`` that another command wrote (a pytest session's, a confirmation's: it has
    cases, or an id that is not an interleaved comparison's); None when there is none, or it is an earlier comparison's
    or unreadable (both removed before this run starts, so that no reader takes them for its report)."""
    try:
        data = json.loads((root / "report.json").read_text())
        sid = report_session(data)
    except (OSError, ValueError, AttributeError):
        return None
    if (
        not isinstance(data, dict)
        or (isinstance(sid, str) and sid.startswith("interleave"))
        or (sid is None and not data.get("rows"))
    ):
        return None
    return str(sid or "unknown")


def _run(r: Resolved, root: Path, hooks: Hooks, given_workload: bool, out: Callable[[str], None]) -> ComparisonResult:
    """The comparison ``r`` in its locked results dir: an earlier run's report is removed first, so that no reader takes
    it for this run's."""
    t_start, cpu_start = time.time(), children_cpu()
    cfg, check = r.cfg, r.settings.check()
    clear_results_dir(root)
    announce(r, check, root / "blocks.jsonl", out)
    comparison = comparison_of(r, check, root, hooks, out)
    comparison.progress.t_start = t_start
    try:
        with sigterm_as_interrupt():
            p = comparison.run()
    except WorkerDied as exc:
        if exc.oom and not any(not b.warmup for b in comparison.blocks) and r.same_split:
            return fresh_fallback(
                exc,
                settings=comparison.settings,
                root=root,
                gpu=cfg.gpu,
                workload=r.workload if given_workload else cfg.workload,
                dec=r.decs.a.id,
                python_a=cfg.python_a,
                python_b=cfg.python_b,
                repeats=cfg.fallback_repeats,
                workloads_dir=cfg.workloads_dir,
                run_timeout=cfg.run_timeout,
                inject_slowdown_b=cfg.inject_slowdown_b,
                inject_work_b=cfg.inject_work_b,
                out=out,
            )
        out(f"error: {exc}")
        return ComparisonResult(EXIT_WORKER_DIED, root, reason=str(exc))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM under sigterm_as_interrupt: the workers are already killed
        out(
            f"interrupted ({exc or 'Ctrl-C'}): workers killed; "
            f"{len(comparison.blocks)} block(s) kept in {root / 'blocks.jsonl'}"
        )
        exc.said = True  # the command line adds no second line
        raise  # the caller stops too (confirm, advise, a pytest session); the command line exits 130 (143 on SIGTERM)
    return finish(
        root,
        settings=comparison.settings,
        orders=list(r.plan.orders),
        stopped=p.stopped,
        launch_records=p.launches,
        blocks=comparison.blocks,
        groups=p.groups,
        verdict=comparison_verdict(p.groups, check, p.verdict, r.case),
        case=r.case,
        wall=time.time() - t_start,
        cpu=children_cpu() - cpu_start,
        calibrated=comparison.calibration is not None,
        out=out,
    )


def clear_results_dir(root: Path) -> None:
    """Make the results dir ready for this run: another command's report there is a ValueError, an earlier
    comparison's report is removed, and what the run writes must not be a link."""
    if (theirs := other_commands_report(root)) is not None:
        raise BadInput(
            f"{root / 'report.json'} is the report of another command (run {theirs}): "
            "an interleaved comparison never replaces it; give the comparison its own --results-dir"
        )
    for name in ("report.json", "report.md"):
        (root / name).unlink(missing_ok=True)
    # before any worker starts: results are written inside the results dir only
    for name in ("blocks.jsonl", PROGRESS, "work"):
        refuse_link(root / name)


def comparison_of(
    r: Resolved, check: pd.PairedCheck, root: Path, hooks: Hooks, out: Callable[[str], None]
) -> Comparison:
    """The comparison loop of ``r``, not yet run: the switches of each side, the factory of its workers, the stop rule
    (of ``check``) and the launcher."""
    cfg, s = r.cfg, r.settings
    switches = {
        "a": Switches(0.0, inject.CALIBRATION_PROBE_CASTS if cfg.inject_work_b_percent else 0),
        "b": Switches(cfg.inject_slowdown_b, s.inject_work_b),
    }
    factory = WorkerFactory(
        cfg, r.workload, r.decs, root / "work", r.python, switches, s.inject_kind, parse_faults(hooks.faults)
    )
    return Comparison(
        s,
        r.plan,
        StopRule(r.plan.schedule, check, cfg.budget_minutes and cfg.budget_minutes * 60),
        (hooks.launcher or launcher_for)(factory),
        root,
        r.case,
        switches,
        out,
    )
