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

from harness.store import environment as envs

TREND_AFTER = 12  # nights after the change that an issue's table shows; the rest are counted in one line
_STAMPED = re.compile(r"(?:\d{8}T\d{6}-)([0-9a-f]{4,})$")  # session ids as the runner makes them: <UTC time>-<hex>


def short_session(session_id: str) -> str:
    """``20261129T225758-06c514`` -> ``06c514`` (the date is in its own column); other ids as they are, up to 24
    characters."""
    m = _STAMPED.search(session_id)
    if m:
        return m.group(1)
    return session_id if len(session_id) <= 24 else session_id[:23] + "…"


def changed(chs: list[dict]) -> str:
    """The changes of a night as one cell: the quiet ones (the harness commit) left out; empty when nothing else
    moved."""
    shown = [c for c in chs if c["name"] not in envs.QUIET]
    return envs.text(shown) if shown else ""


def _row(p: dict) -> list[str]:
    cells = [
        f"{p['night']:+d}",
        (p.get("started_at") or "")[:10] or "undated",
        short_session(p["session_id"]),
        f"{p['median_ms']:,.1f}",
        f"{p['vs_reference'] - 1:+.1%}",
        changed(p.get("changes") or []),
    ]
    return [f"**{c}**" if p["night"] == 1 and c else c for c in cells]


def trend_table(alert: dict, indent: str = "  ") -> list[str]:
    """The trend of a timing alert as markdown table lines (at most :data:`TREND_AFTER` nights after the change)."""
    before = [p for p in alert["trend"] if p["night"] < 0]
    after = [p for p in alert["trend"] if p["night"] > 0]
    rows = [
        ["night", "date", "session", "median step ms", "vs reference", "changed since the night before"],
        ["---:", "---", "---", "---:", "---:", "---"],
    ]
    rows += [_row(p) for p in before + after[:TREND_AFTER]]
    out = [indent + "| " + " | ".join(r) + " |" for r in rows]
    if len(after) > TREND_AFTER:
        out.append(
            f"{indent}(and {len(after) - TREND_AFTER} more night(s) at the new level, up to {after[-1]['session_id']})"
        )
    return out


def message(alert: dict) -> str:
    """The text of an alert in its issue: the summary, then a census alert's counts or a timing alert's trend."""
    text = alert["summary"] + "".join(
        f"\n  - {c['workload']}-{c['decomposition']}: " + "; ".join(c["lines"]) for c in alert.get("cases", [])
    )
    if alert.get("trend"):
        text += (
            f"\n\n  Trend of the session median step time (reference: the {alert['reference_nights']} night(s) before "
            f"the change; the change's first night in bold):\n\n" + "\n".join(trend_table(alert))
        )
    return text


def lines(result: dict) -> list[str]:
    """Human lines: every alert (a timing alert with its trend table), then every note."""
    out = []
    for a in result["alerts"]:
        out.append(f"ALERT {a['key']}: {a['summary']}")
        out += [f"  {c['workload']}-{c['decomposition']}: {ln}" for c in a.get("cases", []) for ln in c["lines"]]
        out += trend_table(a) if a.get("trend") else []
    out += [f"note: {n['text']}" for n in result["notes"]]
    return out or ["no alert and no environment change"]
