"""The nightly history: every session's step time per GPU x workload x decomposition, in time order, with
the library versions, the machine, the census counts and the change points.

``build`` gathers the data once (``history.json`` beside the page); the change points of each series are found by
:func:`harness.judging.changepoints.detect`; :func:`harness.reporting.history_page.write` renders the dashboard.

Series. One per GPU x workload x decomposition (x track, when the results dirs are labelled
``TRACK=DIR``, e.g. the nightly's ``pinned`` and ``latest`` environments, whose sessions alternate on one
runner). A point is a session (``session_id``, placed at its first run's ``started_at``): the median
of its runs' ``step_time_median_ms``, with the runs' min-max as its interval. Timed runs only: census
runs (:attr:`harness.results.run.Run.is_census`) make the census series instead, and runs that were not plain
measurements (an injected slowdown or work, profiled, phases off) or did not finish are left out and
counted. The workload spec (its hash) is tracked like a library version: a series keeps its name across
spec changes, and the change is marked. Each kept change point comes with the versions on either side.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from statistics import median

from harness.judging.census_diff import normalized
from harness.judging.changepoints import ALPHA, MIN_SIZE, PENALTY_K, ChangePoint, detect
from harness.record import parse_time
from harness.reporting.history_data import (
    SPEC,
    History,
    Point,
    Rule,
    Series,
    SeriesChange,
    VersionDiff,
    VersionStep,
    finite,
)
from harness.results import formats
from harness.results.run import Run, plain
from harness.spec import changed_fields

TRACKED = ("python", "torch", "transformers", "trl", "peft", "accelerate", "datasets")
ENV_TRACKED = (
    "driver",
    "cuda",
    "image",
    "runner",
)  # keys of a run's env (a stored session's: harness.store.runs), shown like versions


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def record_problem(rec: dict) -> str | None:
    """Why a run record cannot be read into the history (a format newer than this harness reads, a key it needs
    missing or of the wrong type, a step time that is not finite and positive), or None. The reader leaves such a record
    out and names it, instead of failing the page."""
    return read_record(rec)[1]


def read_record(rec: dict) -> tuple[Run | None, str | None]:
    """(the record's :class:`Run`, None), or (None, why it cannot be read into the history: :func:`record_problem`);
    the run is read once, for the check and for the page."""
    why = _problem(rec)
    return (None, why) if isinstance(why, str) else (why, None)


def _problem(rec: dict) -> Run | str:
    """The record's run, or why it cannot be read (:func:`record_problem`)."""
    try:
        formats.RUN.read(rec)
    except formats.FormatError as exc:
        return str(exc).removeprefix(f"{formats.RUN.name}: ")
    for key in ("gpu", "workload", "decomposition_id"):
        if not isinstance(rec.get(key), str):
            return f"{key} is {rec.get(key)!r}, not a string"
    for key in ("session_id", "started_at", "workload_hash", "machine"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return f"{key} is {rec[key]!r}, not a string"
    for key in ("env", "census"):
        if rec.get(key) is not None and not isinstance(rec[key], dict):
            return f"{key} is {rec[key]!r}, not an object"
    try:
        run = Run.from_json(rec)
    except (TypeError, ValueError) as exc:  # a census whose parts are of the wrong type (steps a number, say)
        return f"unreadable ({type(exc).__name__}: {str(exc)[:100]})"
    if not isinstance(run.versions or {}, dict):
        return "env.versions is not an object"
    v = run.step_time_median_ms
    if run.ok and not run.is_census and v is not None and not _positive(v):
        return f"step_time_median_ms is {v!r}, not a finite positive number"
    counts = (run.census.ops, run.census.kernels, run.census.python_calls) if run.census else ()
    if any(c is not None and not (isinstance(c, (int, float)) and math.isfinite(c)) for c in counts):
        return "a census count (ops, kernels, python_calls) is not a finite number"
    return run


@dataclass(frozen=True)
class _Read:
    """A run as the history reads it: the run, the results dir (or stored session) it was read from, the track of
    that dir, and its session (its session id, or its results dir for runs without one)."""

    run: Run
    dir: str
    track: str

    @property
    def sid(self) -> str:
        return self.run.session_id or f"dir:{self.dir}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The series it belongs to: GPU x workload x decomposition x track."""
        return (self.run.gpu, self.run.workload, self.run.decomposition_id, self.track)


def machine(run: Run) -> str:
    """The machine a run was made on: its boot id (first 8 characters), else the results dir (older runs)."""
    boot = run.boot_id
    return boot[:8] if boot else run.machine or "unknown"


def _versions(runs: list[Run]) -> dict[str, str]:
    """Tracked versions of a session's runs (several values of one library joined by ' | '), and the workload hash."""
    out = {}
    envs = [r.env or {} for r in runs]
    versions = [e.get("versions") or {} for e in envs]  # the record's own: Run.versions copies it whole
    for lib in TRACKED:
        vals = sorted({str(plain(v.get(lib))) for v in versions} - {"None"})
        if vals:
            out[lib] = " | ".join(vals)
    for key in ENV_TRACKED:
        if vals := sorted({str(e.get(key)) for e in envs} - {"None"}):
            out[key] = " | ".join(vals)
    out[SPEC] = " | ".join(sorted({r.workload_hash or "?" for r in runs}))
    return out


def _session(sid: str, reads: list[_Read], start: str, kind: str, **figures) -> Point:
    runs = [r.run for r in reads]
    return Point(
        session_id=sid,
        kind=kind,
        started_at=start,
        dirs=tuple(sorted({r.dir for r in reads})),
        machines=tuple(sorted({machine(r) for r in runs})),
        versions=_versions(runs),
        commit=" | ".join(sorted({str(c) for r in runs if (c := (r.env or {}).get("harness"))})),
        spec=next((plain(r.workload_spec) for r in runs if r.workload_spec), None),
        runs=len(runs),
        **figures,
    )


def version_changes(prev: Point, cur: Point) -> list[VersionDiff]:
    """What differs between two sessions' versions: one :class:`VersionDiff` per tracked library (and the spec)."""
    out = []
    for lib in (*TRACKED, *ENV_TRACKED, SPEC):
        a, b = prev.versions.get(lib), cur.versions.get(lib)
        if a != b and a is not None and b is not None:
            fields = tuple(changed_fields(prev.spec, cur.spec)) if lib == SPEC and prev.spec and cur.spec else None
            out.append(VersionDiff(lib, a, b, fields))
    return out


def change_text(ch: VersionDiff, short: bool = False) -> str:
    return ch.text(short)


def _med(v: list) -> float | None:
    v = [x for x in v if x is not None]
    return median(v) if v else None


def _session_starts(reads: list[_Read]) -> tuple[dict[str, datetime | None], dict[str, str]]:
    """Each session's start (its earliest run's ``started_at``, parsed and as written)."""
    starts: dict[str, datetime | None] = {}
    start_text: dict[str, str] = {}
    for r in reads:
        sid, t = r.sid, parse_time(r.run.started_at)
        if sid not in start_text or (t and (starts[sid] is None or t < starts[sid])):
            starts[sid], start_text[sid] = t, r.run.started_at or ""
    return starts, start_text


def _fitted_census(run: Run) -> bool:
    """A census run whose profiled window fitted: a point of the census series."""
    return run.census is not None and run.census.fits


def _timeline(mine: list[_Read], order: Callable[[str], tuple], start_text: dict[str, str]) -> list[Point]:
    """The sessions of one series in time order, a timing point and a census point for each session that has such runs,
    numbered by ``x``."""
    by_sid: dict[str, list[_Read]] = {}
    for r in mine:
        by_sid.setdefault(r.sid, []).append(r)
    timeline = []
    for sid in sorted(by_sid, key=order):
        rs = by_sid[sid]
        timed = [r for r in rs if r.run.exclusion() is None]
        cens = [r for r in rs if _fitted_census(r.run)]
        if timed:
            v = [r.run.step_time_median_ms for r in timed]
            peaks = (p for r in timed if _positive(p := r.run.peak_reserved_bytes))
            verdicts = (r.run.detail("verdict") for r in timed)  # a stored session's runs carry their case's verdict
            timeline.append(
                _session(
                    sid,
                    timed,
                    start_text[sid],
                    "timing",
                    x=len(timeline),
                    median_ms=median(v),
                    min_ms=min(v),
                    max_ms=max(v),
                    failed=sum(1 for r in rs if not r.run.is_census and not r.run.ok),
                    peak_bytes=max(peaks, default=None),
                    verdict=next((v for v in verdicts if isinstance(v, str)), None),
                )
            )
        if cens:
            cs = [normalized(r.run.census) for r in cens]  # the counts normalize writes back into a record's census
            counts = {k: _med([getattr(c, k) for c in cs]) for k in ("ops", "kernels", "python_calls", "kernel_ms")}
            timeline.append(_session(sid, cens, start_text[sid], "census", x=len(timeline), **counts))
    return timeline


def _version_changes(timeline: list[Point]) -> list[VersionStep]:
    """Where the versions change along a series: along each kind's own sessions (a census may run other versions)."""
    vchanges = []
    for kind in ("timing", "census"):
        seq = [s for s in timeline if s.kind == kind]
        for a, b in zip(seq, seq[1:]):
            if chs := version_changes(a, b):
                vchanges.append(VersionStep(kind, b.x, b.session_id, b.started_at, a.session_id, tuple(chs)))
    return vchanges


def _change_points(kept: Sequence[ChangePoint], timing: list[Point], vchanges: list[VersionStep]) -> list[SeriesChange]:
    """The kept change points of a series' timing sessions, with the sessions, versions and machines on either side."""
    cps = []
    for c in kept:
        a, b = timing[c.index - 1], timing[c.index]
        between = [ch for v in vchanges if v.kind == "timing" and v.x == b.x for ch in v.changes]
        cps.append(
            SeriesChange(
                change=c,
                x=b.x,
                session_id=b.session_id,
                started_at=b.started_at,
                after_session_id=a.session_id,
                versions_before=a.versions,
                versions_after=b.versions,
                version_changes=tuple(between),
                machines_before=a.machines,
                machines_after=b.machines,
            )
        )
    return cps


def _series(key: tuple[str, str, str, str], timeline: list[Point], k: float, alpha: float) -> Series:
    """One series of the page: its timeline, version changes, change points and what the detector saw."""
    gpu, wl, dec, track = key
    vchanges = _version_changes(timeline)
    timing = [s for s in timeline if s.timing]
    det = detect([s.median_ms for s in timing], k=k, alpha=alpha)  # type: ignore[misc]
    detector = {
        "n": det.n,
        "sigma": finite(det.sigma),
        "penalty": finite(det.penalty),
        "candidates": [
            {
                "session_id": timing[c.index].session_id,
                "x": timing[c.index].x,
                **{f: finite(v) for f, v in asdict(c).items()},
            }
            for c in det.candidates
        ],
        "note": det.note,
    }
    return Series(
        gpu=gpu,
        workload=wl,
        decomposition=dec,
        track=track,
        timeline=tuple(timeline),
        version_changes=tuple(vchanges),
        change_points=tuple(_change_points(det.kept, timing, vchanges)),
        detector=detector,
    )


def _run(rec: Run | Mapping) -> Run:
    """A run as the history reads it; a record still in its JSON (a results dir's line, a stored session's run, checked
    by :func:`record_problem`) is read into its :class:`Run` here."""
    return rec if isinstance(rec, Run) else Run.from_json(dict(rec))


def build(
    dirs: Sequence[tuple[str, str, Sequence[Run | Mapping]]],
    *,
    k: float = PENALTY_K,
    alpha: float = ALPHA,
    command: str = "",
    skipped: Sequence[str] = (),
) -> History:
    """The history data (``history.json``, and the page's data) from ``(track, results dir, runs)`` triples;
    ``skipped``: one line per record or file the reader left out (:func:`record_problem`, a torn line), said on the
    page."""
    reads = [_Read(_run(r), d, t) for t, d, rs in dirs for r in rs]
    starts, start_text = _session_starts(reads)
    excluded = Counter(x for r in reads if (x := r.run.exclusion()) and x != "census")
    keys = sorted(
        {r.key for r in reads if r.run.exclusion() is None or _fitted_census(r.run)},
        key=lambda k: (k[0] == "cpu", *k),
    )  # GPUs first

    def order(sid: str):
        t = starts[sid]
        return (t.timestamp() if t else float("-inf"), sid)

    by_key: dict[tuple, list[_Read]] = {}
    for r in reads:
        by_key.setdefault(r.key, []).append(r)
    series = []
    for key in keys:
        if timeline := _timeline(by_key[key], order, start_text):
            series.append(_series(key, timeline, k, alpha))
    return History(
        command=command,
        generated_at=datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S%z"),
        results_dirs=tuple((t, d, len(rs)) for t, d, rs in dirs),
        rule=Rule(k=k, alpha=alpha, min_size=MIN_SIZE),
        excluded_runs=dict(sorted(excluded.items())),
        skipped=tuple(skipped),
        series=tuple(series),
    )
