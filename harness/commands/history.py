"""``history``: the trend of the sessions in many results dirs, with version changes and change points, as a dashboard
page.

A RESULTS_DIR argument is a results dir (its ``runs.jsonl``), or a folder holding results dirs at any depth
(every ``runs.jsonl`` below it: the nightly downloads its artifacts into one), optionally labelled
``TRACK=DIR`` so that sessions of different environments on one runner (the nightly's ``pinned`` and
``latest``) make separate series.

A record the page cannot use (a NaN step time, a key of the wrong type, a torn line), an unreadable ``runs.jsonl``, or a
store's record file of the wrong shape (``docs/store.md``) is left out and named, on the terminal and on the page,
instead of failing the whole page.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UsageError
from harness.files import read_records
from harness.judging import changepoints
from harness.reporting import history as hist
from harness.reporting import history_page
from harness.reporting.events import history_events, markdown, tonight
from harness.results.event import Event, newest_first
from harness.suite.compare import command_line

_LABEL = re.compile(r"^([A-Za-z0-9_.-]+)=(.+)$")


def expand(arg: str) -> list[tuple[str, str]]:
    """``(track, results dir)`` pairs of one argument: ``[TRACK=]DIR``; a DIR without runs.jsonl stands for every
    results dir below it."""
    track, path = "", arg
    m = _LABEL.match(arg)
    if m and not Path(arg).exists():
        track, path = m.groups()
    p = Path(path)
    if (p / "runs.jsonl").is_file():
        return [(track, path)]
    if not p.is_dir():
        raise UsageError(f"{path}: not a directory; pass results dirs (each with a runs.jsonl) or a folder of them")
    found = sorted(str(f.parent) for f in p.rglob("runs.jsonl"))
    if not found:
        raise UsageError(f"{path}: no runs.jsonl here or below; pass the --results-dir of earlier sessions")
    return [(track, d) for d in found]


def read_dir(d: str) -> tuple[list[dict], list[str]]:
    """The records of one results dir that the page can use (each with its machine, as :func:`compare.records` gives
    it), and one line per record or file left out, naming it and why."""
    path = Path(d) / "runs.jsonl"
    try:
        recs, skipped = read_records(path)
    except OSError as exc:
        return [], [f"{path}: unreadable ({exc.strerror or exc}); left out"]
    keep = []
    for r in recs:
        if (why := hist.record_problem(r)) is None:
            keep.append(dict(r, machine=r.get("machine") or f"dir:{d}"))
        else:
            skipped.append(f"{path}: run {r.get('run_id')}: {why}; left out")
    return keep, skipped


def _store_inputs(store: str, cache: str | None, out: Callable[[str], None]) -> tuple[list, list[Event], list[str]]:
    """The store's sessions as history inputs (each run the page can use, :func:`hist.record_problem`), its events
    (alerts, release nights), and one line per record file or stored run left out, naming it and why (each said on the
    terminal as it is found)."""
    from harness.commands.store import store_records
    from harness.store import runs as store_runs
    from harness.store.events import store_events

    skipped: list[str] = []

    def warn(line: str) -> None:
        out(line)
        skipped.append(line.removeprefix("warning: "))

    recs = store_records(store, cache, warn)
    inputs = []
    for track, where, runs in store_runs.history_input(recs):
        keep = []
        for r in runs:
            run, why = hist.read_record(r)
            if run is not None:
                keep.append(run)  # read once: the page takes the run as checked
            else:
                warn(f"warning: {where}: run {r.get('run_id')}: {why}; left out")
        inputs.append((track, where, keep))
    return inputs, store_events(recs), skipped


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the call it decorates runs, back as it was after it. A page of years of
    nights is made of millions of small objects that live to its end and hold no cycle: the collector would walk every
    one of them again each time enough new ones were made, for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@_collector_paused()
def history(
    results_dirs: list[str],
    *,
    out_dir: str = "perf-history",
    alpha: float = changepoints.ALPHA,
    penalty: float = changepoints.PENALTY_K,
    store: str | None = None,
    cache: str | None = None,
    summary: str | None = None,
    page_url: str = "",
    out: Callable[[str], None] = print,
) -> int:
    """Write the history page (``index.html`` with its data, ``method.html``, ``history.json`` and the page's assets) to
    ``out_dir``, from the results dirs and every session of ``store`` (a results store, ``docs/store.md``: a directory
    or a git URL); ``summary``: append the newest night's "what changed" list, as markdown, to that file (the job
    summary)."""
    try:
        import ruptures  # noqa: F401
    except ImportError:
        raise UsageError(f"history needs ruptures for its change points: {changepoints.INSTALL}") from None
    unique: dict[tuple[str, Path], tuple[str, str]] = {}
    for t, d in (p for a in results_dirs for p in expand(a)):
        unique.setdefault((t, Path(d).resolve()), (t, d))  # each results dir once: D and D/ are one
    read = [(t, d, *read_dir(d)) for t, d in unique.values()]
    skipped = [line for *_, lines in read for line in lines]
    for line in skipped:
        out(f"warning: {line}")
    if not results_dirs and not store:
        raise UsageError("history needs results dirs, or --store with a results store (a directory or a git URL)")
    inputs, events = [(t, d, recs) for t, d, recs, _ in read], []
    if store:
        more, events, left_out = _store_inputs(store, cache, out)
        inputs += more
        skipped += left_out
    data = hist.build(inputs, k=penalty, alpha=alpha, command=command_line(), skipped=skipped)
    if not data.series:
        raise UsageError(f"no timed or census runs in {', '.join([*results_dirs, *([store] if store else [])])}")
    events = newest_first(events + history_events(data))
    paths = history_page.write(data, out_dir, events)
    for s in data.series:
        cps = "; ".join(f"{c.started_at} x{c.ratio:.3f} [{c.lo:.3f}, {c.hi:.3f}] p={c.p:.2g}" for c in s.change_points)
        out(
            f"{s.name}: {len(s.sessions)} sessions, {len(s.census_sessions)} census; "
            f"{len(s.version_changes)} version change(s); change points: {cps or 'none'}"
        )
    if data.excluded_runs:
        out("left out of the timing series: " + ", ".join(f"{k} {v}" for k, v in data.excluded_runs.items()))
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(markdown(tonight(events, data), page_url))
    out(f"wrote {paths[0]} ({len(data.series)} series, {len(events)} event(s))")
    return 0
