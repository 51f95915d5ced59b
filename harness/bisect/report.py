"""The report of a bisection: ``report.json`` (the result as :func:`harness.bisect.search.bisect` returns it),
``report.md`` (per change: the boundary, the census diff there, the predicted cost, and what the bisection spent), and
a few printed lines."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.bisect.plan import TOTALS
from harness.files import refuse_links, write_atomic, write_json_atomic
from harness.results.bisection import Bisection, Change, Spent

OUTCOMES = {
    "changed": "found",
    "no_change": "no change",
    "inconclusive": "inconclusive",
    "ends_failed": "could not measure an end",
}


def boundary_text(c: Change) -> str:
    """``lorafx 1.1 -> lorafx 1.2`` (last good -> first bad), with the candidates it could not tell apart."""
    text = c.boundary
    if c.skipped:
        text += " (between them, not installable: " + ", ".join(s.label for s in c.skipped) + ")"
    return text


def counts_text(counts: list[str]) -> str:
    """The counts a change moved, named once: the totals, then how many aten ops and kernels moved by name (the diff
    above names them), not each long kernel name again."""
    by_name = {"aten op ": "aten op", "kernel ": "kernel"}

    def named_by(c: str) -> str | None:
        return (
            None
            if c in TOTALS.values()
            else next((label for prefix, label in by_name.items() if c.startswith(prefix)), None)
        )

    named = {label: sum(named_by(c) == label for c in counts) for label in by_name.values()}
    totals = [c for c in counts if named_by(c) is None]
    return ", ".join(totals + [f"{n} {label}{'s' if n > 1 else ''} by name" for label, n in named.items() if n])


def recheck_command(res: Bisection, c: Change) -> str | None:
    """The command that measures one boundary of releases alone (a maintainer's check, about two census runs); None
    where an end is not one release of one package (a commit, an interpreter, several packages)."""
    lo, hi = (re.fullmatch(r"([A-Za-z0-9_.\-]+) (\S+)", end) for end in (c.last_good, c.first_bad))
    if lo is None or hi is None:
        return None
    workload, decomposition = res.case.rsplit("-", 1)
    base = (f" --base-python {res.good}" if res.mode == "interpreters" else "") + (
        " --move-deps" if res.move_deps else ""
    )
    return (
        f"python -m harness bisect --workload {workload} --decomposition {decomposition}{base} "
        f"--good {lo[1]}=={lo[2]} --bad {hi[1]}=={hi[2]}" + (" --census-only" if c.kind == "census" else "")
    )


def predicted_text(p: Mapping[str, Any] | None, note: bool = False) -> str:
    """A prediction in a few words, with the model that gave it; ``note``: and what the model could not place."""
    if not p or p.get("delta_pct") is None:
        return (p or {}).get("reason") or "no prediction (no cost model for this case)"
    span = f" [{p['lo']:+.1f}%, {p['hi']:+.1f}%]" if p.get("lo") is not None and p.get("hi") is not None else ""
    parts = (
        f" (host {p['host_part']:+.1f}%, GPU {p['gpu_part']:+.1f}%)"
        if p.get("host_part") is not None and p.get("gpu_part") is not None
        else ""
    )
    model = f", {p['model']}" if p.get("model") else ""
    why = f"; {p['note']}" if note and p.get("note") else ""
    return f"{p['delta_pct']:+.1f}%{span}{parts} of the step{model}{why}"


def ranked(changes: Iterable[Change]) -> list[Change]:
    """The changes by predicted cost, the costliest (largest |change| of the step) first; those without a prediction
    (a timing change, or one the cost model could not price) after them, in the order found."""

    def cost(c: Change) -> float:
        d = c.predicted_pct
        return -abs(d) if d is not None else float("inf")

    return sorted(changes, key=cost)


def spent_text(s: Spent, gpu: str) -> str:
    device = "CPU" if gpu == "cpu" else "GPU"
    return (
        f"{device} time {s.device_s:.0f} s: {s.census_runs} census run(s)"
        + (f" ({s.census_reused} reused)" if s.census_reused else "")
        + f", {s.interleaved} interleaved comparison(s); installs {s.install_s:.0f} s "
        f"({s.environments_built} environment(s) built)"
    )


def _first_bad_message(c: Change) -> str:
    return next((s.said for s in c.steps if s.label == c.first_bad), "regression")


def _searched(res: Bisection) -> bool:
    return res.search not in (None, "none")


def summary(res: Bisection) -> list[str]:
    """The printed lines: the outcome, one line per change, what could not be installed or decided, the time spent."""
    out = [
        f"bisect {res.case} ({res.mode}), {res.good} -> {res.bad}: {OUTCOMES.get(res.outcome, res.outcome)}"
        + (f", by {res.search}" if _searched(res) else "")
    ]
    for c in ranked(res.changes):
        if c.kind == "census":  # its first two lines, and a peak that moved is always named
            what = "; ".join(list(c.diff[:2]) + [ln for ln in c.memory if ln not in c.diff[:2]])
        else:
            what = f"slower, the census unchanged: {_first_bad_message(c)}"
        out.append(f"  {c.kind} change at {boundary_text(c)}" + ("" if c.exact else " (not exact)") + f": {what}")
        if c.kind == "census":
            out.append(f"    predicted: {predicted_text(c.predicted)}")
    for c in res.inconclusive:
        out.append(f"  inconclusive between {boundary_text(c)}: the comparison of {c.at} against good decided nothing")
    for u in res.uninstallable:
        out.append(f"  not installable: {u.label}: {u.reason}")
    out += [f"  {n}" for n in res.notes]
    out.append(f"  spent: {spent_text(res.spent, res.gpu)}")
    return out


def markdown(res: Bisection) -> str:
    lines = [
        f"# Bisect {res.case} on {res.gpu}",
        "",
        f"Good: `{res.good}`; bad: `{res.bad}` ({res.mode}). "
        f"Outcome: **{OUTCOMES.get(res.outcome, res.outcome)}**"
        + (f", searched by {res.search}." if _searched(res) else "."),
        "",
    ]
    if res.census is not None:
        lines += ["## The census from good to bad", ""] + [
            f"- {ln}" for ln in res.census.lines or ["no count or peak memory changed"]
        ]
        lines += [f"- {res.census.time_line}"] if res.census.time_line else []
        lines.append("")
    if len(res.packages) > 1:
        lines += ["## Packages", "", "| package | good | bad | swapped alone |", "|---|---|---|---|"]
        lines += [f"| {p.package} | {p.good} | {p.bad} | {p.alone or '-'} |" for p in res.packages] + [""]
    if sum(c.predicted_pct is not None for c in res.changes) > 1:
        lines += ["Changes ranked by their predicted cost, the costliest first.", ""]
    for i, c in enumerate(ranked(res.changes), 1):
        lines += _change_lines(res, i, c)
    for c in res.inconclusive:
        lines += [
            f"## Inconclusive: {c.package}",
            "",
            f"- left between `{c.last_good}` and `{c.first_bad}`: `{c.at}` against good was "
            "inconclusive; a larger --step-budget-minutes narrows it",
            "- steps: " + ", ".join(f"{s.label}: {s.outcome}" for s in c.steps),
            "",
        ]
    if res.uninstallable:
        lines += ["## Not installable", ""] + [f"- `{u.label}`: {u.reason}" for u in res.uninstallable] + [""]
    if res.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in res.notes] + [""]
    lines += [
        "## Spent",
        "",
        f"{spent_text(res.spent, res.gpu)}.",
        "",
        "| step | candidate | outcome | seconds |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {s.kind} | {s.label} | {s.outcome} | {'reused' if s.reused else round(s.wall_s, 1)} |" for s in res.steps
    ]
    return "\n".join(lines) + "\n"


def _change_lines(res: Bisection, i: int, c: Change) -> list[str]:
    """The section of the ``i``-th change ``c`` in ``report.md``."""
    lines = [
        f"## Change {i}: {c.package}, {c.kind}",
        "",
        f"- boundary: last good `{c.last_good}`, first bad `{c.first_bad}`"
        + ("" if c.exact else " (the candidates between could not be installed)"),
    ]
    lines += [f"- not installable between them: `{s.label}`: {s.reason}" for s in c.skipped]
    lines += [f"- to measure it alone: `{cmd}`"] if (cmd := recheck_command(res, c)) else []
    if c.kind == "census":
        lines += (
            ["- census diff at the boundary:"]
            + [f"  - {ln}" for ln in c.diff]
            + ([f"  - {c.time_line}"] if c.time_line else [])
        )
        lines += [
            f"- counts attributed here: {counts_text(list(c.counts))}",
            f"- predicted cost: {predicted_text(c.predicted, note=True)}",
            f"- the search measured {c.measured_inside} of the {c.ladder - 2} {c.package} candidates "
            "between good and bad",
        ]
    else:
        lines += ["- interleaved steps against good:"] + [f"  - `{s.label}`: {s.said}" for s in c.steps]
    lines.append("")
    return lines


def write(made: Bisection, results_dir: str | Path, out: Callable[[str], None] = print) -> None:
    """report.json and report.md in ``results_dir`` (its changes ranked by predicted cost), and the summary printed."""
    root = Path(results_dir)
    res = replace(made, changes=tuple(ranked(made.changes)))
    refuse_links(root / "report.json", root / "report.md")  # both checked before either is written
    write_json_atomic(root / "report.json", res.to_json())
    write_atomic(root / "report.md", markdown(res))
    for line in summary(res):
        out(line)
    out(f"wrote {root / 'report.md'} and report.json")
