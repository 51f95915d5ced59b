"""The nightly history: every session's step time per GPU x workload x decomposition, in time order, with
the library versions, the machine, the census counts and the change points.

``build`` gathers the data once (``history.json`` beside the page); the change points of each series are found by
:func:`harness.judging.changepoints.detect`; :func:`harness.reporting.history_page.write` renders the dashboard.

Series. One per GPU x workload x decomposition (x track, when the results dirs are labelled
``TRACK=DIR``, e.g. the nightly's ``pinned`` and ``latest`` environments, whose sessions alternate on one
runner). A point is a session (``session_id``, placed at its first run's ``started_at``): the median
of its runs' ``step_time_median_ms``, with the runs' min-max as its interval. Timed runs only: census
runs (:func:`harness.record.is_census`) make the census series instead, and runs that were not plain
measurements (an injected slowdown or work, profiled, phases off) or did not finish are left out and
counted. The workload spec (its hash) is tracked like a library version: a series keeps its name across
spec changes, and the change is marked. Each kept change point comes with the versions on either side.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from datetime import datetime
from statistics import median

from harness.judging.census_diff import normalize
from harness.judging.changepoints import ALPHA, MIN_SIZE, PENALTY_K, ChangePoint, detect
from harness.record import exclusion, is_census, parse_time
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
    """Why a run record cannot be read into the history (a key it needs missing or of the wrong type, a step time that
    is not finite and positive), or None. The reader leaves such a record out and names it, instead of failing the
    page."""
    for key in ("gpu", "workload", "decomposition_id"):
        if not isinstance(rec.get(key), str):
            return f"{key} is {rec.get(key)!r}, not a string"
    for key in ("session_id", "started_at", "workload_hash", "machine"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return f"{key} is {rec[key]!r}, not a string"
    for key in ("env", "census"):
        if rec.get(key) is not None and not isinstance(rec[key], dict):
            return f"{key} is {rec[key]!r}, not an object"
    if not isinstance((rec.get("env") or {}).get("versions") or {}, dict):
        return "env.versions is not an object"
    v = rec.get("step_time_median_ms")
    if rec.get("status") == "ok" and not is_census(rec) and v is not None and not _positive(v):
        return f"step_time_median_ms is {v!r}, not a finite positive number"
    counts = [(rec.get("census") or {}).get(k) for k in ("ops", "kernels", "python_calls")]
    if any(c is not None and not (isinstance(c, (int, float)) and math.isfinite(c)) for c in counts):
        return "a census count (ops, kernels, python_calls) is not a finite number"
    return None


def machine(rec: dict) -> str:
    """The machine a run was made on: its boot id (first 8 characters), else the results dir (older runs)."""
    boot = (rec.get("env") or {}).get("boot_id")
    return boot[:8] if boot else rec.get("machine") or "unknown"


def _versions(recs: list[dict]) -> dict[str, str]:
    """Tracked versions of a session's runs (several values of one library joined by ' | '), and the workload hash."""
    out = {}
    for lib in TRACKED:
        vals = sorted({str(((r.get("env") or {}).get("versions") or {}).get(lib)) for r in recs} - {"None"})
        if vals:
            out[lib] = " | ".join(vals)
    for key in ENV_TRACKED:
        if vals := sorted({str((r.get("env") or {}).get(key)) for r in recs} - {"None"}):
            out[key] = " | ".join(vals)
    out[SPEC] = " | ".join(sorted({r.get("workload_hash") or "?" for r in recs}))
    return out


def _session(sid: str, recs: list[dict], start: str, kind: str, **figures) -> Point:
    return Point(
        session_id=sid,
        kind=kind,
        started_at=start,
        dirs=tuple(sorted({r["_dir"] for r in recs})),
        machines=tuple(sorted({machine(r) for r in recs})),
        versions=_versions(recs),
        commit=" | ".join(sorted({str(c) for r in recs if (c := (r.get("env") or {}).get("harness"))})),
        spec=next((r.get("workload_spec") for r in recs if r.get("workload_spec")), None),
        runs=len(recs),
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


def _session_starts(recs: list[dict]) -> tuple[dict[str, datetime | None], dict[str, str]]:
    """Each session's start (its earliest run's ``started_at``, parsed and as written); sets every record's ``_sid``
    (its session id, or its results dir for runs without one)."""
    starts: dict[str, datetime | None] = {}
    start_text: dict[str, str] = {}
    for r in recs:
        sid, t = r.get("session_id") or f"dir:{r['_dir']}", parse_time(r.get("started_at"))
        r["_sid"] = sid
        if sid not in start_text or (t and (starts[sid] is None or t < starts[sid])):
            starts[sid], start_text[sid] = t, r.get("started_at") or ""
    return starts, start_text


def _timeline(mine: list[dict], order: Callable[[str], tuple], start_text: dict[str, str]) -> list[Point]:
    """The sessions of one series in time order, a timing point and a census point for each session that has such runs,
    numbered by ``x``."""
    by_sid: dict[str, list[dict]] = {}
    for r in mine:
        by_sid.setdefault(r["_sid"], []).append(r)
    timeline = []
    for sid in sorted(by_sid, key=order):
        rs = by_sid[sid]
        timed = [r for r in rs if exclusion(r) is None]
        cens = [r for r in rs if is_census(r) and (r["census"] or {}).get("fits", True)]
        if timed:
            v = [r["step_time_median_ms"] for r in timed]
            peaks = (r["peak_reserved_bytes"] for r in timed if _positive(r.get("peak_reserved_bytes")))
            timeline.append(
                _session(
                    sid,
                    timed,
                    start_text[sid],
                    "timing",
                    median_ms=median(v),
                    min_ms=min(v),
                    max_ms=max(v),
                    failed=sum(1 for r in rs if not is_census(r) and r.get("status") != "ok"),
                    peak_bytes=max(peaks, default=None),
                    verdict=next((r["verdict"] for r in timed if isinstance(r.get("verdict"), str)), None),
                )
            )
        if cens:
            cs = [normalize(r["census"]) for r in cens]
            counts = {k: _med([c.get(k) for c in cs]) for k in ("ops", "kernels", "python_calls", "kernel_ms")}
            timeline.append(_session(sid, cens, start_text[sid], "census", **counts))
    return [replace(s, x=x) for x, s in enumerate(timeline)]


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


def build(
    dirs: Sequence[tuple[str, str, list[dict]]],
    *,
    k: float = PENALTY_K,
    alpha: float = ALPHA,
    command: str = "",
    skipped: Sequence[str] = (),
) -> History:
    """The history data (``history.json``, and the page's data) from ``(track, results dir, records)`` triples;
    ``skipped``: one line per record or file the reader left out (:func:`record_problem`, a torn line), said on the
    page."""
    recs = [dict(r, _dir=d, _track=t) for t, d, rs in dirs for r in rs]
    starts, start_text = _session_starts(recs)
    excluded = Counter(x for r in recs if (x := exclusion(r)) and x != "census")
    keys = sorted(
        {
            (r["gpu"], r["workload"], r["decomposition_id"], r["_track"])
            for r in recs
            if exclusion(r) is None or (is_census(r) and (r["census"] or {}).get("fits", True))
        },
        key=lambda k: (k[0] == "cpu", *k),
    )  # GPUs first

    def order(sid: str):
        t = starts[sid]
        return (t.timestamp() if t else float("-inf"), sid)

    by_key: dict[tuple, list[dict]] = {}
    for r in recs:
        by_key.setdefault((r["gpu"], r["workload"], r["decomposition_id"], r["_track"]), []).append(r)
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
