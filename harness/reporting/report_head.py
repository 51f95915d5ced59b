"""The first lines of a session's report, in plain words: the verdict, the cases that moved with their change and
interval, and what to do next. The tables, the phases and every check's own line follow them
(:mod:`harness.reporting.report`)."""

from __future__ import annotations

from harness.results.report_row import ReportRow
from harness.results.suite_report import ReportData
from harness.results.verdict import Verdict

SHOWN = 3  # cases named in the head; the rest are counted
BAD_WORKLOAD = "bad-workload"  # the verdict kind of a workload the session could not run (harness.broken)


def change_text(row: ReportRow) -> str:
    """``+30.0% (interval +25.1% to +35.2%)``: a case's step time against the baseline."""
    lo, hi = row.ratio_lo, row.ratio_hi
    ci = (
        f" (interval {(lo - 1) * 100:+.1f}% to {(hi - 1) * 100:+.1f}%)"
        if lo is not None and hi is not None and lo == lo and hi == hi
        else ""
    )
    return f"{(row.ratio - 1) * 100:+.1f}%{ci}"


def cases_text(verdicts: list[Verdict], rows: dict[str, ReportRow]) -> str:
    """The cases of ``verdicts``, each with its kind and, for a runtime verdict, its change; at most :data:`SHOWN`."""

    def one(v: Verdict) -> str:
        row = rows.get(v.case or "")
        return (
            f"{v.case} {change_text(row)}"
            if v.kind == "runtime" and row is not None and row.ratio is not None
            else f"{v.kind} {v.case}"
        )

    named = ", ".join(one(v) for v in verdicts[:SHOWN])
    return named + (f" and {len(verdicts) - SHOWN} more" if len(verdicts) > SHOWN else "")


def verdict_line(data: ReportData) -> str:
    """The session's verdict in one line: what failed first, then what changed, then what could not be decided."""
    vs, rows = list(data.verdicts), {r.case: r for r in data.rows}
    if data.recorded is not None:
        # --update-baselines: the old baseline's verdicts are no news; a failed run or split is
        bad = [v for v in vs if v.outcome == "fail" or (v.kind == "equivalence" and v.outcome == "regression")]
        done = (
            f"baseline recorded: {', '.join(data.recorded)}"
            if data.recorded
            else "no baseline recorded (test_record_baseline says why)"
        )
        return done + (f"; FAILED: {cases_text(bad, rows)}" if bad else "")
    slower = [v for v in vs if v.kind == "runtime" and v.outcome == "regression"]
    failed = [v for v in vs if v.outcome in ("regression", "fail") and v not in slower]
    changed = [v for v in vs if v.outcome == "changed"]
    unsure = [v for v in vs if v.kind == "runtime" and v.outcome == "inconclusive"]
    timed = [v for v in vs if v.kind == "runtime" and v.outcome != "skip"]
    parts = []
    if slower:
        parts.append(
            f"REGRESSION: {len(slower)} of {len(timed)} case(s) slower than the baseline: {cases_text(slower, rows)}"
        )
    if failed:
        parts.append(f"FAILED: {cases_text(failed, rows)}")
    if changed:
        parts.append(f"WORK CHANGED: {cases_text(changed, rows)}")
    if unsure:
        parts.append(f"inconclusive: {cases_text(unsure, rows)} (cannot be told from the baseline yet)")
    if parts:
        return "; ".join(parts)
    moved = max((r for r in data.rows if r.ratio is not None), key=lambda r: abs(r.ratio - 1), default=None)
    if timed and moved is not None:
        return (
            f"pass: {len(timed)} case(s) not slower than the baseline (the largest change: "
            f"{moved.case} {change_text(moved)})"
        )
    judged = [v for v in vs if v.outcome != "skip"]
    why = next((v.message for v in vs if v.kind == "runtime" and v.outcome == "skip"), None) or (
        vs[0].message if vs else "nothing ran"
    )
    others = f"; {len(judged)} other check(s) passed" if judged else ""
    return f"no runtime verdict: {why.split('; record one with', 1)[0]}{others}"


def next_step(data: ReportData) -> str:
    """What to do next, for the most pressing of the verdicts."""
    vs = data.verdicts
    if data.recorded is not None:
        return (
            "next: commit the baseline file(s) (the table under 'baseline update' shows before and after); "
            "the next session is judged against them"
            if data.recorded
            else "next: fix what test_record_baseline refused, and rerun the same command"
        )
    if any(v.kind == "runtime" and v.outcome == "regression" for v in vs):
        return (
            "next: a stored baseline also moves with the machine: measure it side by side on this machine with "
            "`python -m harness confirm report.json --python-a PY` (PY: the reference environment's python); "
            "the 'where' lines below say which phase moved"
        )
    if any(v.outcome == "fail" and v.kind != BAD_WORKLOAD for v in vs):
        return "next: a run failed: its status and log are in the results dir (runs.jsonl, one log per run)"
    if any(v.kind == BAD_WORKLOAD for v in vs):
        return "next: fix each workload that was not run (its line below says what is wrong and what to do)"
    if any(v.outcome in ("regression", "changed") for v in vs):
        return "next: see each check's line below; a changed census names the counts that moved"
    if data.incomplete:
        return "next: finish the session with the same command and --resume"
    if any(v.kind == "runtime" and v.outcome == "inconclusive" for v in vs):
        return "next: rerun with more --repeats (the interval narrows with more runs)"
    skipped = next((v.message for v in vs if v.outcome == "skip" and "record one with" in v.message), None)
    if skipped is not None:
        return f"next: {skipped.split('record one with ', 1)[1]} records a baseline"
    return "next: nothing to do"


def head_lines(data: ReportData) -> list[str]:
    """The report's first lines: the verdict with the cases that moved and their intervals, and the next step."""
    return [verdict_line(data), next_step(data)]
