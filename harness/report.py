"""Reports: the terminal summary (more in later issues)."""

from __future__ import annotations


def terminal_summary(tr, session, recorded=None) -> None:
    tr.section("perf summary")
    for v in session.all_verdicts():
        tr.write_line(f"{v.kind:<12} {v.case:<28} {v.outcome:<13} {v.message}")
    for path, old, new in recorded or []:
        tr.write_line(f"baseline written: {path}")
