"""The words of an alert (:mod:`harness.store.alerts`): the lines ``store alerts`` prints and the message of the GitHub
issue ``.github/scripts/regression-issues.sh`` opens for it.

A timing alert's message is its summary (the size with its 90% interval, and the environment diff at the change) and
then its trend, a markdown table indented into the issue's list item: the reference nights just before the change
(numbered -n .. -1) and the nights from the change on (+1 ..), each with its date, short session id, median step time,
its ratio to the reference level, and what changed in the environment (or the library pins) since the night before it in
the series; the change's first night is in bold. A census alert's message is its summary and every moved count of every
case."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.store import environment as envs
from harness.store.environment import Change
from harness.store.findings import Alert, CensusAlert, Findings, Night, TimingAlert

TREND_AFTER = 12  # nights after the change that an issue's table shows; the rest are counted in one line
_STAMPED = re.compile(r"(?:\d{8}T\d{6}-)([0-9a-f]{4,})$")  # session ids as the runner makes them: <UTC time>-<hex>


def short_session(session_id: str) -> str:
    """``20261129T225758-06c514`` -> ``06c514`` (the date is in its own column); other ids as they are, up to 24
    characters."""
    m = _STAMPED.search(session_id)
    if m:
        return m.group(1)
    return session_id if len(session_id) <= 24 else session_id[:23] + "…"


def changed(chs: Sequence[Change]) -> str:
    """The changes of a night as one cell: the quiet ones (the harness commit) left out; empty when nothing else
    moved."""
    shown = [c for c in chs if not c.quiet]
    return envs.text(shown) if shown else ""


def _row(p: Night) -> list[str]:
    cells = [
        f"{p.night:+d}",
        (p.started_at or "")[:10] or "undated",
        short_session(p.session_id),
        f"{p.median_ms:,.1f}",
        f"{p.vs_reference - 1:+.1%}",
        changed(p.changes),
    ]
    return [f"**{c}**" if p.night == 1 and c else c for c in cells]


def trend_table(trend: Sequence[Night], indent: str = "  ") -> list[str]:
    """The trend of a timing alert as markdown table lines (at most :data:`TREND_AFTER` nights after the change)."""
    before = [p for p in trend if p.night < 0]
    after = [p for p in trend if p.night > 0]
    rows = [
        ["night", "date", "session", "median step ms", "vs reference", "changed since the night before"],
        ["---:", "---", "---", "---:", "---:", "---"],
    ]
    rows += [_row(p) for p in before + after[:TREND_AFTER]]
    out = [indent + "| " + " | ".join(r) + " |" for r in rows]
    if len(after) > TREND_AFTER:
        out.append(
            f"{indent}(and {len(after) - TREND_AFTER} more night(s) at the new level, up to {after[-1].session_id})"
        )
    return out


def _case_lines(alert: Alert) -> list[tuple[str, str]]:
    """``(case, line)`` for every moved count of a census alert."""
    return [(c.subject, ln) for c in alert.cases for ln in c.lines] if isinstance(alert, CensusAlert) else []


def message(alert: Alert) -> str:
    """The text of an alert in its issue: the summary, then a census alert's counts or a timing alert's trend."""
    text = alert.summary
    if isinstance(alert, CensusAlert):
        text += "".join(f"\n  - {c.subject}: " + "; ".join(c.lines) for c in alert.cases)
    elif alert.trend:
        text += (
            f"\n\n  Trend of the session median step time (reference: the {alert.reference_nights} night(s) before "
            f"the change; the change's first night in bold):\n\n" + "\n".join(trend_table(alert.trend))
        )
    return text


def lines(result: Findings) -> list[str]:
    """Human lines: every alert (a timing alert with its trend table), then every note."""
    out = []
    for a in result.alerts:
        out.append(f"ALERT {a.key}: {a.summary}")
        out += [f"  {case}: {ln}" for case, ln in _case_lines(a)]
        out += trend_table(a.trend) if isinstance(a, TimingAlert) and a.trend else []
    out += [f"note: {n.text}" for n in result.notes]
    return out or ["no alert and no environment change"]
