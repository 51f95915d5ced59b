"""The end of an interleaved comparison: its verdict, analysis and report, from what it measured; and the same for a
comparison that stopped before its report (:func:`recover`) or a stored one judged again (:func:`reanalyse`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    launch_records: list[dict],
    blocks: list[Block],
    groups: list[list[float]],
    verdict: Verdict | None,
    case: str,
    wall: float,
    cpu: float | None,
    calibrated: bool,
    out: Callable[[str], None],
    recovered: dict | None = None,
) -> ComparisonResult:
    """The report of a comparison, from what it measured: its ``verdict``, stated as given (the one
    :func:`~harness.judging.blocks.comparison_verdict` decided, the cost model's prediction added to it), the analysis
    beside it, the timing and the plan; printed, written to report.json and report.md, and returned."""
    analysis = analyse(blocks, settings, verdict)
    report = {
        "settings": settings.to_json(),
        "orders": orders,
        "stopped": stopped,
        "timing": timing_of(blocks, launch_records, wall, cpu),
        "launches": launch_records,
        **analysis.to_json(),
        "injected": injected_share(blocks) if calibrated else None,
        "verdict": None if verdict is None else verdict.to_json(),
    }
    if recovered:
        report["recovered"] = recovered
    plan = plan_for(analysis, launch_records, settings.budget_minutes, groups=groups)
    report["plan"] = None if plan is None else plan.to_json()
    # the cost model's prediction from a census of each side, beside the measured change (docs/cost-model.md)
    report["prediction"] = interleave_prediction(
        root, settings, (analysis.step_ms_median or {}).get("a"), report["verdict"]
    )
    if verdict is not None and report["prediction"].get("delta_pct") is not None:
        verdict = replace(verdict, details={**verdict.details, "prediction": report["prediction"]})
        report["verdict"] = verdict.to_json()
    report.update(issue_fields(report, settings, launch_records, verdict, case, analysis))
    text = report_text(report, analysis, plan, (beside_line(report["prediction"]),))
    for ln in text.lines():
        out(ln)
    result = ComparisonResult.from_json(
        report, root, EXIT_REGRESSION if verdict is not None and verdict.outcome == "regression" else 0
    )
    refuse_links(root / "report.json", root / "report.md")  # both checked before either is written
    write_json_atomic(root / "report.json", result.to_json())
    write_atomic(root / "report.md", markdown(settings, text))
    return result


def timing_of(blocks: list[Block], launch_records: list[dict], wall: float, cpu: float | None) -> dict:
    """The report's ``timing``: the wall and CPU seconds of the run, its launches and its blocks, and its device. A
    launch that warmed both sides at once counts its warm-up wall once."""
    cuda = any(li["ready"][s].get("cuda") for li in launch_records for s in SIDES)
    apart = {
        li["launch"]: li["warmup_s"] for li in launch_records if li.get("warm_apart") and li.get("warmup_s") is not None
    }
    warm_blocks = sum(b.wall_s for b in blocks if b.warmup and b.launch not in apart)
    warm_wall = warm_blocks + sum(apart.values())  # at once: its wall, once
    return {
        "wall_s": wall,
        "startup_s": sum(li["startup_s"] for li in launch_records),
        "close_s": sum(li.get("close_s", 0) for li in launch_records),
        "blocks_wall_s": sum(b.wall_s for b in blocks if not b.warmup) + warm_wall,
        "warmup_blocks_wall_s": warm_wall,
        "workers_cpu_s": cpu,
        "blocks_cpu_s": sum(b.cpu_s for b in blocks),
        "device": "gpu" if cuda else "cpu",
    }


def issue_fields(
    report: dict,
    settings: ComparisonSettings,
    launch_records: list[dict],
    verdict: Verdict | None,
    case: str,
    analysis: Analysis,
) -> dict:
    """What the regression-issue script reads from any report (.github/scripts/regression-issues.sh): the GPU, the
    run id, the versions of side b and the verdicts, each with the command that reproduces it."""
    env_b = next((li["env"]["b"] for li in launch_records if (li.get("env") or {}).get("b")), None) or {}
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
                **({"prediction": report["prediction"]} if "prediction" in report["verdict"] else {}),
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
class Kept:
    """What ``progress.json`` kept of a comparison that stopped before its report: its case, start time, settings, the
    order of each pair and the records of its launches so far."""

    case: str
    t_start: float
    settings: ComparisonSettings
    orders: list
    launch_records: list[dict]


def _recover(root: Path, out: Callable[[str], None]) -> ComparisonResult:
    """:func:`recover` of ``root``, its lock held."""
    kept = read_progress(root / PROGRESS)
    s = kept.settings
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
    recovered = {
        "pairs": n_pairs,
        "launches_made": made,
        "launches_planned": s.launches_planned,
        "blocks": len(blocks),
        "last_block_end_s": ended - kept.t_start,
        "skipped": skipped,
    }
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
        launch_records=kept.launch_records,
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
    """``progress.json`` of a comparison, checked for what :func:`recover` reads (the settings of older files under
    today's keys); ValueError, one line naming the file, when it is unreadable or of another shape (its settings lost:
    the kept blocks cannot be judged without them)."""
    fix = "its settings are lost, so the kept blocks cannot be judged; rerun the comparison in a fresh --results-dir"
    try:
        prog = formats.PROGRESS.read(load_json(path.read_text()), str(path))
    except formats.FormatError as exc:
        raise BadInput(f"{exc}; {fix}") from None
    except (OSError, ValueError) as exc:  # not JSON, nested too deep, a number of too many digits, not UTF-8
        raise BadInput(f"{path} is unreadable ({type(exc).__name__}: {exc}); {fix}") from None
    settings = prog.get("settings") if isinstance(prog, dict) else None
    settings = upgraded(settings) if isinstance(settings, dict) else settings
    launches = prog.get("launches") if isinstance(prog, dict) else None
    bad = (
        "it is not an object"
        if not isinstance(prog, dict)
        else "'settings' is not an object"
        if not isinstance(settings, dict)
        else f"settings lack {', '.join(k for k in RECOVER_SETTINGS if k not in settings)}"
        if any(k not in settings for k in RECOVER_SETTINGS)
        else settings_problem(settings)
        if settings_problem(settings)
        else "'launches' is not a list of launches"
        if not (isinstance(launches, list) and all(isinstance(li, dict) for li in launches))
        else "'t_start' is not a number"
        if not isinstance(prog.get("t_start"), (int, float))
        else "'case' or 'orders' is missing"
        if not isinstance(prog.get("case"), str) or not isinstance(prog.get("orders"), list)
        else None
    )
    if bad:
        raise BadInput(f"{path}: {bad}; {fix}")
    return Kept(prog["case"], prog["t_start"], ComparisonSettings.from_json(settings), prog["orders"], launches)


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
