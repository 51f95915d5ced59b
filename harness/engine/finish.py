"""The end of an interleaved comparison: its verdict, analysis and report, from what it measured; and the same for a
comparison that stopped before its report (:func:`recover`) or a stored one judged again (:func:`reanalyse`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness.engine.inject import injected_share
from harness.engine.loop import PROGRESS
from harness.files import read_jsonl, write_atomic, write_json_atomic
from harness.judging import paired as pd
from harness.judging.blocks import DEFAULT_METRIC, SIDES, analyse, grouped, pairs_of
from harness.judging.budget_plan import plan_for
from harness.reporting.interleave import markdown, report_lines

EXIT_REGRESSION, EXIT_WORKER_DIED = 1, 3


def finish(root: Path, *, settings: dict, orders: list, stopped: str | None, launch_info: list[dict], blocks: list[dict],
            groups: list[list[float]], verdict, check: pd.PairedCheck, case: str, wall: float, cpu: float | None, calibrated: bool,
            out: Callable[[str], None], recovered: dict | None = None) -> int:
    """The report of a comparison, from what it measured: the verdict (a last look at the pairs made where the run stopped
    between looks), the analysis, the timing and the plan; printed, and written to report.json and report.md."""
    n_pairs = sum(map(len, groups))
    if n_pairs and (verdict is None or verdict.details.get("pairs") != n_pairs):
        # a budget stop between looks: this last look replaces the next planned one, so alpha per look still holds
        verdict = check.decide(groups, case, None) if n_pairs >= 2 else None
    summary = analyse(blocks, alpha=settings["alpha"], threshold=settings["threshold"], looks=len(settings["looks"]), metric=settings["metric"],
                      drop_first=settings["drop_first_step"], session=settings["session_id"], test=settings["test"], unit=settings["unit"])
    cuda = any(li["ready"][s].get("cuda") for li in launch_info for s in SIDES)
    apart = {li["launch"]: li["warmup_s"] for li in launch_info if li.get("warm_apart") and li.get("warmup_s") is not None}
    warm_wall = sum(b["wall_s"] for b in blocks if b["warmup"] and b["launch"] not in apart) + sum(apart.values())  # at once: its wall, once
    timing = {"wall_s": wall, "startup_s": sum(li["startup_s"] for li in launch_info), "close_s": sum(li.get("close_s", 0) for li in launch_info),
              "blocks_wall_s": sum(b["wall_s"] for b in blocks if not b["warmup"]) + warm_wall,
              "warmup_blocks_wall_s": warm_wall, "workers_cpu_s": cpu,
              "blocks_cpu_s": sum(b["cpu_s"] for b in blocks), "device": "gpu" if cuda else "cpu"}
    report = {"settings": settings, "orders": orders, "stopped": stopped, "timing": timing, "launches": launch_info, **summary,
              "injected": injected_share(blocks) if calibrated else None,
              "verdict": None if verdict is None else {"outcome": verdict.outcome, "message": verdict.message, **verdict.details}}
    if recovered:
        report["recovered"] = recovered
    report["plan"] = plan_for(report, groups=groups)
    # what the regression-issue script reads from any report (.github/scripts/regression-issues.sh)
    env_b = next((li["env"]["b"] for li in launch_info if (li.get("env") or {}).get("b")), None) or {}
    report.update(gpu=settings["gpu"], session_id=settings["session_id"], rows=[], versions=env_b.get("versions", {}),
                  verdicts=[] if verdict is None else [{"kind": "interleaved", "case": case, "outcome": verdict.outcome,
                                                        "message": verdict.message}])
    lines = report_lines(report)
    for ln in lines:
        out(ln)
    write_json_atomic(root / "report.json", report)
    write_atomic(root / "report.md", markdown(report, lines))
    return EXIT_REGRESSION if verdict is not None and verdict.outcome == "regression" else 0


def recover(results_dir: str | Path, *, out: Callable[[str], None] = print) -> int:
    """Judge a comparison that stopped before writing its report (the machine lost, a kill -9, a job's timeout) from what
    its results dir kept: every block (``blocks.jsonl``, appended as measured) and the settings and launches
    (``progress.json``, rewritten at each launch's start and end). The verdict is a last look at the complete pairs kept,
    as after a budget stop, so alpha per look holds; the report says what was recovered. Writes report.json and report.md,
    never over a report the run wrote itself. Exit code as the run's: 1 on a regression, else 0."""
    root = Path(results_dir)
    if (root / "report.json").exists():
        raise ValueError(f"{root} already has report.json: the run wrote its own report, nothing to recover")
    if not (root / "blocks.jsonl").exists():
        raise ValueError(f"no blocks.jsonl in {root}: not the results dir of an interleave run (its --results-dir)")
    if not (root / PROGRESS).exists():
        raise ValueError(f"no {PROGRESS} in {root}: it was written by a harness older than recover; judge its blocks.jsonl with "
                         "harness.judging.blocks.analyse and the run's settings")
    prog = json.loads((root / PROGRESS).read_text())
    settings, launch_info = prog["settings"], prog["launches"]
    blocks = [b for b in read_jsonl(root / "blocks.jsonl") if b.get("session_id") == settings["session_id"]]
    groups = grouped(pairs_of(blocks), settings["metric"], settings["drop_first_step"])
    n_pairs, ended = sum(map(len, groups)), max((b["started_at"] + b["wall_s"] for b in blocks), default=prog["t_start"])
    made = max((b["launch"] for b in blocks), default=0)
    recovered = {"pairs": n_pairs, "launches": made, "launches_planned": settings["launches"], "blocks": len(blocks),
                 "last_block_end_s": ended - prog["t_start"]}
    stopped = (f"stopped before its report, after {n_pairs} complete pairs in {made} of {settings['launches']} launches; "
               f"recovered from {root}")
    out(f"{prog['case']}: {stopped}")
    check = pd.PairedCheck(settings["alpha"], settings["threshold"], len(settings["looks"]), test=settings["test"], unit=settings["unit"])
    return finish(root, settings=settings, orders=prog["orders"], stopped=stopped, launch_info=launch_info, blocks=blocks, groups=groups,
                   verdict=None, check=check, case=prog["case"], wall=ended - prog["t_start"], cpu=None,
                   calibrated=settings.get("inject_calibration") is not None, out=out, recovered=recovered)



def reanalyse(results_dir: str | Path, metric: str = DEFAULT_METRIC, drop_first: bool = False, test: str = "rank", unit: str | None = None) -> dict:
    """The analysis of a stored ``blocks.jsonl`` (its own report.json's settings), with another metric, first-step policy, test or unit
    (default: the one it ran with; reports from before ``unit`` existed ran with the pair)."""
    root = Path(results_dir)
    rep = json.loads((root / "report.json").read_text())
    s = rep["settings"]
    return analyse(read_jsonl(root / "blocks.jsonl"), alpha=s["alpha"], threshold=s["threshold"], looks=len(s["looks"]), metric=metric,
                   drop_first=drop_first, session=s["session_id"], test=test, unit=unit or s.get("unit", "pair"))
