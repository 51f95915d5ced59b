"""The end of an interleaved comparison: its verdict, analysis and report, from what it measured; and the same for a
comparison that stopped before its report (:func:`recover`) or a stored one judged again (:func:`reanalyse`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness.errors import BadInput
from harness.exits import MEASUREMENT_FAILED as EXIT_WORKER_DIED  # noqa: F401  (interleave returns it)
from harness.exits import REGRESSION as EXIT_REGRESSION
from harness.files import read_records, refuse_links, report_session, results_lock, write_atomic, write_json_atomic
from harness.judging.blocks import (
    DEFAULT_METRIC,
    SIDES,
    Analysis,
    analyse,
    comparison_verdict,
    grouped,
    pairs_of,
)
from harness.judging.budget_plan import plan_for
from harness.judging.comparison_settings import ComparisonSettings, settings_problem, upgraded
from harness.judging.cost_model import beside_line
from harness.reporting.interleave import markdown, report_text, where_line
from harness.results import formats
from harness.results.block import Block, block_problem
from harness.results.comparison import ComparisonResult
from harness.results.progress import Kept, Launch
from harness.results.repro import repro
from harness.results.verdict import Verdict
from harness.sidebyside.inject import injected_share
from harness.sidebyside.loop import PROGRESS
from harness.suite.runs import interleave_prediction
from harness.values import load_json

# what recover reads of progress.json's settings itself (the rest is the report's), as today's keys
RECOVER_SETTINGS = (
    "session_id",
    "alpha",
    "threshold",
    "looks",
    "metric",
    "drop_first_step",
    "test",
    "unit",
    "launches_planned",
    "gpu",
)


def finish(
    root: Path,
    *,
    settings: ComparisonSettings,
    orders: list,
    stopped: str | None,
    launch_records: list[Launch],
    blocks: list[Block],
    groups: list[list[float]],
    verdict: Verdict | None,
    case: str,
    wall: float,
    cpu: float | None,
    calibrated: bool,
    out: Callable[[str], None],
    recovered: Recovered | None = None,
) -> ComparisonResult:
    """The report of a comparison, from what it measured: its ``verdict``, stated as given (the one
    :func:`~harness.judging.blocks.comparison_verdict` decided, the cost model's prediction added to it), the analysis
    beside it, the timing and the plan; printed, written to report.json and report.md, and returned."""
    analysis = analyse(blocks, settings, verdict)
    launches = [li.to_json() for li in launch_records]
    plan = plan_for(analysis, launches, settings.budget_minutes, groups=groups)
    # the cost model's prediction from a census of each side, beside the measured change (docs/cost-model.md)
    prediction = interleave_prediction(
        root, settings, (analysis.step_ms_median or {}).get("a"), None if verdict is None else verdict.to_json()
    )
    if verdict is not None and prediction.get("delta_pct") is not None:
        verdict = replace(verdict, details={**verdict.details, "prediction": prediction})
    report = {
        "settings": settings.to_json(),
        "orders": orders,
        "stopped": stopped,
        "timing": Timing.of(blocks, launch_records, wall, cpu).to_json(),
        "launches": launches,
        **analysis.to_json(),
        "injected": injected_share(blocks) if calibrated else None,
        "verdict": None if verdict is None else verdict.to_json(),
        **({"recovered": recovered.to_json()} if recovered else {}),
        "plan": None if plan is None else plan.to_json(),
        "prediction": prediction,
        **issue_fields(prediction, settings, launch_records, verdict, case, analysis),
    }
    text = report_text(report, analysis, plan, (beside_line(prediction),))
    for ln in text.lines():
        out(ln)
    result = ComparisonResult.from_json(
        report, root, EXIT_REGRESSION if verdict is not None and verdict.outcome == "regression" else 0
    )
    refuse_links(root / "report.json", root / "report.md")  # both checked before either is written
    write_json_atomic(root / "report.json", result.to_json())
    write_atomic(root / "report.md", markdown(settings, text))
    return result


@dataclass(frozen=True)
class Timing:
    """The report's ``timing``: the wall and CPU seconds of the run, of its launches' start-up and close and of its
    blocks (the warm-up's among them), and its device."""

    wall_s: float
    startup_s: float
    close_s: float
    blocks_wall_s: float
    warmup_blocks_wall_s: float
    workers_cpu_s: float | None
    blocks_cpu_s: float
    device: str

    @classmethod
    def of(cls, blocks: list[Block], launches: list[Launch], wall: float, cpu: float | None) -> Timing:
        """The timing of a run of ``wall`` seconds (its workers' ``cpu``). A launch that warmed both sides at once
        counts its warm-up wall once."""
        cuda = any(li.side(s).get("cuda") for li in launches for s in SIDES)
        apart = {li.launch: li.warmup_s for li in launches if li.warm_apart and li.warmup_s is not None}
        warm_blocks = sum(b.wall_s for b in blocks if b.warmup and b.launch not in apart)
        warm_wall = warm_blocks + sum(apart.values())  # at once: its wall, once
        return cls(
            wall_s=wall,
            startup_s=sum(li.startup_s for li in launches),
            close_s=sum(li.close_s or 0 for li in launches),
            blocks_wall_s=sum(b.wall_s for b in blocks if not b.warmup) + warm_wall,
            warmup_blocks_wall_s=warm_wall,
            workers_cpu_s=cpu,
            blocks_cpu_s=sum(b.cpu_s for b in blocks),
            device="gpu" if cuda else "cpu",
        )

    def to_json(self) -> dict:
        return asdict(self)


def issue_fields(
    prediction: Mapping | None,
    settings: ComparisonSettings,
    launches: list[Launch],
    verdict: Verdict | None,
    case: str,
    analysis: Analysis,
) -> dict:
    """What the regression-issue script reads from any report (.github/scripts/regression-issues.sh): the GPU, the
    run id, the versions of side b and the verdicts, each with the command that reproduces it (and the cost model's
    ``prediction`` where the verdict carries it)."""
    env_b = next((env for li in launches if (env := li.env_of("b"))), None) or {}
    return dict(
        gpu=settings.gpu,
        session_id=settings.session_id,
        rows=[],
        versions=env_b.get("versions", {}),
        verdicts=[]
        if verdict is None
        else [
            {
                "kind": "interleaved",
                "case": case,
                "outcome": verdict.outcome,
                "message": verdict.message,
                "repro": repro("interleaved", case, settings.gpu, settings.python_a, settings.python_b),
                **({"prediction": prediction} if "prediction" in verdict.details else {}),
                **({"where": w} if (w := where_line(analysis.phases)) else {}),
            }
        ],
    )


def recover(results_dir: str | Path, *, out: Callable[[str], None] = print) -> ComparisonResult:
    """Judge a comparison that stopped before writing its report (the machine lost, a kill -9, a job's timeout) from
    what its results dir kept: every block (``blocks.jsonl``, appended as measured) and the settings and launches
    (``progress.json``, rewritten at each launch's start and end). The verdict is a last look at the complete pairs
    kept, as after a budget stop, so alpha per look holds; the report says what was recovered. Writes report.json and
    report.md, never over a report the run wrote itself; an earlier run's report there is moved aside. Its exit code as
    the run's: 1 on a regression, else 0."""
    root = Path(results_dir)
    if not (root / "blocks.jsonl").exists():
        raise BadInput(f"no blocks.jsonl in {root}: not the results dir of an interleave run (its --results-dir)")
    if not (root / PROGRESS).exists():
        raise BadInput(
            f"no {PROGRESS} in {root}: it was written by a harness older than recover; judge its blocks.jsonl with "
            "harness.judging.blocks.analyse and the run's settings"
        )
    # a live run holds its results dir: recover is refused then, never writing a report beside the run's own
    with results_lock(root, "stop it first: recover judges a run that has stopped"):
        return _recover(root, out)


@dataclass(frozen=True)
class Recovered:
    """The report's ``recovered``: what :func:`recover` judged of a comparison that stopped before its report, its
    complete pairs, the launches made of those planned, the blocks kept, when the last one ended (seconds from the
    start) and the lines of blocks.jsonl left out."""

    pairs: int
    launches_made: int
    launches_planned: int
    blocks: int
    last_block_end_s: float
    skipped: list[str]

    def to_json(self) -> dict:
        return asdict(self)


def _recover(root: Path, out: Callable[[str], None]) -> ComparisonResult:
    """:func:`recover` of ``root``, its lock held."""
    kept = read_progress(root / PROGRESS)
    s = ComparisonSettings.from_json(upgraded(kept.settings))
    set_aside_old_report(root, s.session_id, out)
    blocks, skipped = read_blocks(root / "blocks.jsonl", s.session_id)
    for line in skipped:
        out(f"warning: {line}")
    groups = grouped(pairs_of(blocks), s.block_metric, s.drop_first_step)
    n_pairs, ended = (
        sum(map(len, groups)),
        max((b.started_at + b.wall_s for b in blocks), default=kept.t_start),
    )
    made = max((b.launch for b in blocks), default=0)
    recovered = Recovered(n_pairs, made, s.launches_planned, len(blocks), ended - kept.t_start, skipped)
    stopped = (
        f"stopped before its report, after {n_pairs} complete pairs in {made} of {s.launches_planned} launches; "
        f"recovered from {root}"
        + (f"; {len(skipped)} line(s) of blocks.jsonl left out (torn or malformed)" if skipped else "")
    )
    out(f"{kept.case}: {stopped}")
    return finish(
        root,
        settings=s,
        orders=kept.orders,
        stopped=stopped,
        launch_records=kept.launches,
        blocks=blocks,
        groups=groups,
        verdict=comparison_verdict(groups, s.check(), None, kept.case),
        case=kept.case,
        wall=ended - kept.t_start,
        cpu=None,
        calibrated=s.inject_calibration is not None,
        out=out,
        recovered=recovered,
    )


def set_aside_old_report(root: Path, session: str, out: Callable[[str], None]) -> None:
    """Before :func:`recover` writes: this run's own report there is a ValueError (nothing to recover); an old report
    (of an earlier run, or unreadable) is moved aside to ``report-<its run id>.json``/``.md``, so that no reader takes
    it for this run's."""
    path = root / "report.json"
    if not path.exists():
        return
    try:
        theirs = report_session(load_json(path.read_text()))
    except (OSError, ValueError):
        theirs = None
    if theirs == session:
        raise BadInput(
            f"{root} already has report.json of this run ({session}): the run wrote its own report, nothing to recover"
        )
    aside = root / f"report-{theirs or 'unreadable'}.json"
    os.replace(path, aside)
    if (root / "report.md").exists():
        os.replace(root / "report.md", aside.with_suffix(".md"))
    out(
        f"{path}: an old report (of run {theirs or 'unknown: unreadable'}, not this run's {session}); "
        f"moved aside to {aside.name}"
    )


def read_progress(path: Path) -> Kept:
    """``progress.json`` of a comparison, checked for what :func:`recover` reads (:meth:`Kept.problem`; the settings of
    older files under today's keys); ValueError, one line naming the file, when it is unreadable or of another shape
    (its settings lost: the kept blocks cannot be judged without them)."""
    fix = "its settings are lost, so the kept blocks cannot be judged; rerun the comparison in a fresh --results-dir"
    try:
        prog = formats.PROGRESS.read(load_json(path.read_text()), str(path))
    except formats.FormatError as exc:
        raise BadInput(f"{exc}; {fix}") from None
    except (OSError, ValueError) as exc:  # not JSON, nested too deep, a number of too many digits, not UTF-8
        raise BadInput(f"{path} is unreadable ({type(exc).__name__}: {exc}); {fix}") from None
    if bad := Kept.problem(prog, _settings_problem):
        raise BadInput(f"{path}: {bad}; {fix}")
    return Kept.from_json(prog)


def _settings_problem(settings: Mapping) -> str | None:
    """What :func:`recover` cannot judge with in a ``progress.json``'s settings (older ones under today's keys)."""
    settings = upgraded(settings)
    if any(k not in settings for k in RECOVER_SETTINGS):
        return f"settings lack {', '.join(k for k in RECOVER_SETTINGS if k not in settings)}"
    return settings_problem(settings)


def read_blocks(path: Path, session: str) -> tuple[list[Block], list[str]]:
    """The blocks of ``session`` in a ``blocks.jsonl``, and one line per line left out, naming the file and line: a torn
    or malformed line, or a record of the wrong shape (:func:`harness.results.block.block_problem`)."""
    blocks, skipped = read_records(path, formats.BLOCK.read)
    keep = []
    for b in blocks:
        if b.get("session_id") != session:
            continue
        if (why := block_problem(b)) is None:
            keep.append(Block.from_json(b))
        else:
            skipped.append(f"{path}: the block of pair {b.get('pair')!r}, side {b.get('side')!r}: {why}; left out")
    return keep, skipped


def reanalyse(
    results_dir: str | Path,
    block_metric: str = DEFAULT_METRIC,
    drop_first_step: bool = False,
    test: str = "rank",
    unit: str | None = None,
) -> Analysis:
    """The analysis of a stored ``blocks.jsonl`` (its own report.json's settings), with another block metric,
    first-step policy, test or unit (the unit by default the one it ran with; reports from before ``unit`` existed ran
    with the pair); the lines of blocks.jsonl left out are its ``skipped``."""
    root = Path(results_dir)
    s = ComparisonResult.read(root).sections.get("settings")
    s = upgraded(s) if isinstance(s, dict) else s
    if (why := "'settings' is not an object" if not isinstance(s, dict) else settings_problem(s)) is not None:
        raise BadInput(f"{root / 'report.json'}: {why}; its blocks cannot be judged again with these settings")
    settings = ComparisonSettings.from_json(s)
    settings = settings.judged_as(
        block_metric=block_metric, drop_first_step=drop_first_step, test=test, unit=unit or settings.unit or "pair"
    )
    # a torn or malformed line left out, and named
    blocks, skipped = read_blocks(root / "blocks.jsonl", settings.session_id)
    return replace(analyse(blocks, settings), skipped=tuple(skipped))
