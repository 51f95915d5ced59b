"""The end of a session in the terminal: the pytest session's report files and plots, its summary table (the lines of
:func:`harness.reporting.report.terminal_lines`), and for --update-baselines the before/after table of the baselines
it wrote (also what ``python -m harness baseline update`` prints).
"""

from __future__ import annotations

from pathlib import Path
from statistics import median

from harness.files import refuse_link, write_atomic
from harness.reporting.report import build, terminal_lines, write

BASELINE_TABLE = "baseline-update.md"  # the table of --update-baselines, beside the report


def baseline_table(staged) -> list[str]:
    """Before/after rows for --update-baselines: per decomposition, median step time and train_runtime."""
    lines = [f"{'baseline':<34} {'before: step ms / runtime s (n)':>32}  ->  {'after':<28}"]
    for path, old, new in staged:
        for d, dec in new["decompositions"].items():

            def summ(runs):
                st = [r["step_time_median_ms"] for r in runs if r.get("step_time_median_ms")]
                rt = [r["train_runtime_s"] for r in runs if r.get("train_runtime_s")]
                return (
                    f"{median(st):.1f} / {median(rt):.2f} ({len(runs)})"
                    if st and rt
                    else (f"- / {median(rt):.2f} ({len(runs)})" if rt else "none")
                )

            before = summ(((old or {}).get("decompositions") or {}).get(d, {}).get("runs", [])) if old else "none"
            lines.append(f"{new['workload']['name'] + ' ' + d:<34} {before:>32}  ->  {summ(dec['runs']):<28}")
        lines.append(f"written: {path}" + ("" if old is None else " (the old values stay in git history)"))
    return lines


def terminal_summary(tr, session) -> None:
    """The end of a pytest session: report files, the summary table, and the baseline before/after table."""
    o = session.options
    recorded = session.recorded
    data = build(
        session.judge(),
        session.session_id,
        o.command,
        o.inject_slowdown,
        notes=tuple(session.notes),
        broken=session.broken,
        recorded=tuple(str(path) for path, _old, _new in recorded) if o.update_baselines else None,
    )
    if recorded:  # the last file written, checked with the report's before the first (write)
        refuse_link(Path(o.results_dir) / BASELINE_TABLE)
    paths = write(data, o.results_dir)
    try:
        from harness.reporting import plots

        paths += plots.write_all(data, o.results_dir) if data.rows else []  # none: every workload was broken
    except ImportError as exc:  # matplotlib is an optional extra
        tr.write_line(f"plots skipped: {exc}")
    tr.section("perf summary")
    for line in terminal_lines(data):
        tr.write_line(line)
    tr.write_line("report: " + ", ".join(str(p) for p in paths))
    if recorded:
        tr.section("baseline update")
        lines = baseline_table(recorded)
        for line in lines:
            tr.write_line(line)
        write_atomic(Path(o.results_dir) / BASELINE_TABLE, "```\n" + "\n".join(lines) + "\n```\n")
