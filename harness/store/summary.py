"""A results dir as compact session records (``docs/store.md``): per case the step-time summary and the steady step
times, memory, census counts and kernel time, every verdict of the dir's reports, and the environment of the session.

A results dir can hold several sessions (several ``session_id`` in its ``runs.jsonl`` files, at any depth): each makes
one record. The verdicts of a ``report.json`` go to the session it names; those of reports of other sessions (the
nightly's interleaved ``ab/<split>/`` and ``confirm/`` comparisons, which keep no ``runs.jsonl``) go to the dir's main
session, the one with the most timed runs. No torch here: the history job reads a store without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from pathlib import Path
from statistics import median

from harness.errors import BadInput
from harness.files import NOT_STORED, read_jsonl
from harness.judging.census_diff import normalize
from harness.record import run_problem
from harness.results import formats
from harness.results.census import Census as RunCensus
from harness.results.run import Run, plain
from harness.store.check import CENSUS, RUN, non_finite
from harness.store.record import SCHEMA, dumps
from harness.store.session import (
    Baseline,
    Case,
    Census,
    CensusCounts,
    Environment,
    RunFlags,
    Session,
    StepTime,
    StoredRun,
    StoredVerdict,
    Workload,
)
from harness.values import NUMBER, TEXT, load_json, mismatch

LIMIT_BYTES = 50_000  # at most this much per session file, so that 3 GPUs x 2 tracks x a year stay near 100 MB
RUN_FLAGS = {
    "inject_slowdown": 0.0,
    "inject_work": 0,
    "profile_steps": 0,
    "phases_enabled": True,
}  # the plain run's values
CENSUS_KEYS = tuple(f.name for f in fields(Census))  # what a case keeps of its census
MESSAGE_CHARS = 600  # a verdict's message is kept up to this length
BY_NAME_TABLES = ("kernel_ms_by_name", "cpu_op_ms_by_name", "kernels_by_name", "ops_by_name")  # trimmed to fit
ENV_KEYS = {
    "gpu_name": "gpu",
    "gpu_count": "gpu_count",
    "driver": "driver",
    "cuda": "cuda",
    "hostname": "hostname",
    "platform": "platform",
    "cpu": "cpu",
    "cpu_count": "cpu_count",
    "gpu_clocks": "gpu_clocks",
    "interconnect": "interconnect",
    "attn_implementation": "attn_implementation",
}  # the environment's fields taken from the runs' env, by the env's key


def _steady_us(run: Run) -> tuple[int, ...] | None:
    """The steady step times of a run (warm-up steps left out), in whole microseconds."""
    if not run.step_times_ms:
        return None
    return tuple(round(x * 1000) for x in run.steady_step_times_ms if x is not None)


def _machine(run: Run, where: str) -> str:
    boot = run.boot_id
    return boot[:8] if boot else run.machine or f"dir:{where}"


def _census(run: Run) -> RunCensus | None:
    """A census run's census in the shape recorded today (:func:`harness.judging.census_diff.normalize`)."""
    return RunCensus.from_json(normalize(run.census.to_json())) if run.census is not None else None


def _counts(c: RunCensus) -> CensusCounts:
    """A census run's own counts per optimizer step."""
    return CensusCounts(
        fits=c.fits,
        ops=c.ops,
        kernels=c.kernels,
        python_calls=c.python_calls,
        kernel_ms=c.kernel_ms,
        cpu_op_ms=c.cpu_op_ms,
    )


def run_entry(run: Run, where: str) -> StoredRun:
    """One run, compact: its outcome and headline figures, what made it other than a plain timed run, its steady
    steps."""
    flags = {k: v for k, plain in RUN_FLAGS.items() if (v := getattr(run, k)) is not None and v != plain}
    census = _census(run)
    return StoredRun(
        run_id=run.run_id or None,
        repeat=run.repeat,
        status=run.status or None,
        machine=_machine(run, where),
        median_ms=run.step_time_median_ms,
        train_runtime_s=run.train_runtime_s,
        tokens_per_s=run.tokens_per_s,
        peak_reserved_bytes=run.peak_reserved_bytes,
        peak_allocated_bytes=run.peak_allocated_bytes,
        warmup_steps=run.warmup_steps,
        phases_ms=run.phase_medians(),
        steady_us=_steady_us(run),
        flags=RunFlags(**flags) if flags else None,
        error=str(run.error or "")[:MESSAGE_CHARS] if not run.ok and run.status else None,
        census=_counts(census) if census is not None else None,
        kernel_ms=(run.profile or {}).get("kernel_ms_per_step"),
    )


def unstorable(rec: dict, where: str) -> str | None:
    """Why a run cannot be stored, or None: a NaN or infinite figure (a store record is JSON, which holds none), a key
    of the wrong type in the run record (:func:`harness.record.run_problem`), or in what :func:`run_entry` keeps of it
    and of its census (the store's schema, :mod:`harness.store.check`: the readers would leave the session out)."""
    if (why := run_problem(rec)) is not None:
        return why
    try:
        run = Run.from_json(rec, where)
        if run.detail("census") is not None:
            raise TypeError("census is not an object")
        entry = run_entry(run, where).to_json()
        census = c.to_json() if (c := _census(run)) is not None else None
    except (formats.FormatError, ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
        return f"unreadable ({type(exc).__name__}: {str(exc)[:100]})"
    kept = {k: v for k, v in (census or {}).items() if k in CENSUS_KEYS}  # what case_entry keeps of it
    return non_finite(entry) or non_finite(census, "census") or mismatch(entry, RUN) or mismatch(kept, CENSUS, "census")


def _summary(values: list[float]) -> StepTime | None:
    return StepTime(median=median(values), min=min(values), max=max(values), n=len(values)) if values else None


def _baseline(row: dict | None) -> Baseline | None:
    """The suite's verdict row of a case; one timed run against a baseline has no interval (NaN in report.json): it is
    left out, as JSON holds no NaN."""
    shapes = {"verdict": TEXT, "ratio": NUMBER, "ratio_lo": NUMBER, "ratio_hi": NUMBER}
    kept = {k: v for k, shape in shapes.items() if (v := (row or {}).get(k)) is not None and not mismatch(v, shape)}
    return Baseline(**kept) if kept else None


def case_entry(workload: str, decomposition: str, runs: list[Run], row: dict | None, where: dict[int, str]) -> Case:
    """One workload x decomposition of a session: its runs and their summaries, its census, the suite's verdict row."""
    entries = [run_entry(r, where[id(r)]) for r in runs]
    timed = [e for r, e in zip(runs, entries) if r.exclusion() is None]
    ok = [e for r, e in zip(runs, entries) if e.status == "ok" and not r.is_census]
    cens = [c for r in runs if r.census_fits and (c := _census(r)) is not None]
    census = Census.from_json(cens[0].to_json()) if cens else None  # the store's census: the record's keys it keeps
    kms = [c.kernel_ms for c in cens] if cens else [e.kernel_ms for e in ok]
    kms = [k for k in kms if k is not None]
    first = runs[0]
    return Case(
        workload=workload,
        decomposition=decomposition,
        workload_hash=first.workload_hash,
        split=plain(first.decomposition),
        runs=tuple(entries),
        step_time_ms=_summary([e.median_ms for e in timed]),
        peak_reserved_bytes=max((e.peak_reserved_bytes for e in ok if e.peak_reserved_bytes), default=None),
        peak_allocated_bytes=max((e.peak_allocated_bytes for e in ok if e.peak_allocated_bytes), default=None),
        failed=sum(1 for e in entries if e.status != "ok"),
        census=census,
        census_runs=len(cens) if cens else None,
        kernel_ms=median(kms) if kms else None,
        baseline=_baseline(row) if row else None,
    )


def _joined(values: Iterable) -> str | None:
    vals = sorted({v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values if v is not None})
    return " | ".join(vals) or None


def environment(runs: list[Run], *, runner: str, image: str, harness: str, where: dict[int, str]) -> Environment:
    """What the session ran on (several values of one field, on a resumed session's machines, joined by `` | ``)."""
    envs = [plain(r.env) or {} for r in runs]
    versions = [r.versions or {} for r in runs]
    from_env = {name: _joined(e.get(key) for e in envs) for name, key in ENV_KEYS.items()}
    return Environment(
        **from_env,
        python=_joined(v.get("python") for v in versions),
        torch=_joined(v.get("torch") for v in versions),
        image=image or None,
        runner=runner or None,
        harness=harness or None,
        machines=tuple(sorted({_machine(r, where[id(r)]) for r in runs})),
    )


def versions_of(runs: list[Run]) -> dict[str, str]:
    """Every library version the runs recorded (several values joined by `` | ``)."""
    libs = sorted({k for r in runs for k in (r.versions or {})})
    out = {lib: _joined((r.versions or {}).get(lib) for r in runs) for lib in libs}
    return {k: v for k, v in out.items() if v is not None}


def _verdict(source: str, v: dict, single: dict) -> StoredVerdict:
    """One verdict of a report; an interleaved one with the report's ratio, interval and pairs."""
    texts = {k: None if v.get(k) is None else str(v[k])[:MESSAGE_CHARS] for k in ("kind", "case", "outcome")}
    sizes = {}
    if v.get("kind") == "interleaved":
        sizes = {
            k: x for k in ("ratio", "lo", "hi", "pairs") if (x := single.get(k)) is not None and not mismatch(x, NUMBER)
        }
    return StoredVerdict(source=source, **texts, message=str(v.get("message") or "")[:MESSAGE_CHARS], **sizes)


def verdicts_of(reports: list[tuple[str, dict]]) -> list[StoredVerdict]:
    """Every verdict of the reports, each with the report it came from; an interleaved one with its ratio and
    interval."""
    out = []
    for source, rep in reports:
        single = rep.get("verdict") if isinstance(rep.get("verdict"), dict) else {}
        out += [_verdict(source, v, single) for v in rep.get("verdicts") or [] if isinstance(v, dict)]
    return out


def session_record(
    sid: str,
    runs: list[Run],
    reports: list[tuple[str, dict]],
    *,
    track: str,
    runner: str,
    image: str,
    harness: str,
    where: dict[int, str],
) -> Session:
    """The compact record of one session (before :func:`fit`)."""
    rows = {
        f"{row.get('workload')}-{row.get('decomposition')}": row
        for _, rep in reports
        for row in rep.get("rows") or []
        if isinstance(row, dict)
    }
    cases: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        cases.setdefault((r.workload or "?", r.decomposition_id or "?"), []).append(r)
    starts = sorted(r.started_at for r in runs if r.started_at)
    specs = {
        r.workload_hash: Workload(name=r.workload or None, spec=plain(r.workload_spec)) for r in runs if r.workload_hash
    }
    return Session(
        schema=SCHEMA,
        session_id=sid,
        started_at=starts[0] if starts else None,
        gpu=runs[0].gpu or "unknown",
        track=track,
        runner=runner,
        environment=environment(runs, runner=runner, image=image, harness=harness, where=where),
        versions=versions_of(runs),
        workloads=specs,
        cases=tuple(case_entry(w, d, rs, rows.get(f"{w}-{d}"), where) for (w, d), rs in sorted(cases.items())),
        verdicts=tuple(verdicts_of(reports)),
        source={"runs": len(runs), "reports": [s for s, _ in reports]},
        trimmed=(),
    )


def _each_run(rec: Session, change: Callable[[StoredRun], StoredRun]) -> Session:
    cases = (replace(c, runs=tuple(change(r) for r in c.runs)) for c in rec.cases)
    return replace(rec, cases=tuple(cases))


def _each_census(rec: Session, change: Callable[[Census], Census]) -> Session:
    return replace(rec, cases=tuple(replace(c, census=change(c.census)) if c.census else c for c in rec.cases))


def _trim_steps(run: StoredRun, keep_every: int) -> StoredRun:
    return replace(run, steady_us=run.steady_us[::keep_every]) if run.steady_us else run


def _trim_census(c: Census, top: int) -> Census:
    def cut(table):
        if not isinstance(table, Mapping) or len(table) <= top:
            return table
        return dict(sorted(table.items(), key=lambda kv: (-abs(kv[1] or 0), kv[0]))[:top])

    return replace(c, **{name: cut(getattr(c, name)) for name in BY_NAME_TABLES})


def fit(rec: Session, limit: int = LIMIT_BYTES) -> Session:
    """``rec`` made to fit in ``limit`` gzipped bytes, dropping detail in this order until it does: the census's
    resolved configuration, its per-name tables beyond the largest 200 and then 50 names, every other steady step
    (repeatedly), the steady steps. What was dropped is listed in ``trimmed``."""
    steps: list[tuple[str, Callable[[Session], Session]]] = [
        ("census config", lambda r: _each_census(r, lambda c: replace(c, config=None))),
        ("census names beyond the largest 200", lambda r: _each_census(r, lambda c: _trim_census(c, 200))),
        ("census names beyond the largest 50", lambda r: _each_census(r, lambda c: _trim_census(c, 50))),
    ]
    steps += [
        (f"steady steps: every {2**i}th kept", lambda r: _each_run(r, lambda run: _trim_steps(run, 2)))
        for i in range(1, 5)
    ]
    steps += [("steady steps", lambda r: _each_run(r, lambda run: replace(run, steady_us=None)))]
    for what, cut in steps:
        if len(dumps(rec)) <= limit:
            break
        rec = cut(rec)
        rec = replace(rec, trimmed=(*(rec.trimmed or ()), what))
    return rec


def _not_stored(path: Path, root: Path) -> bool:
    """Whether a folder between ``root`` (excluded) and ``path`` is marked ``NOT_STORED`` (a bisect's or an A/B's
    censuses)."""
    return any((root / d / NOT_STORED).exists() for d in path.relative_to(root).parents if d != Path("."))


MAX_FOLDERS = (
    10_000  # a results dir holds a few hundred at most; `store add /` would read every runs.jsonl of the machine
)


def _found(root: Path, name: str) -> list[Path]:
    """Every file ``name`` at or below ``root`` (links to folders not followed); ValueError with one line past
    :data:`MAX_FOLDERS` folders, where ``root`` is no results dir."""
    out, folders = [], 0
    for here, dirs, files in os.walk(root):
        folders += 1
        if folders > MAX_FOLDERS:
            raise BadInput(
                f"{root}: more than {MAX_FOLDERS} folders at or below it, not a results dir; "
                "pass the --results-dir of a session"
            )
        dirs.sort()
        out += [Path(here) / name] if name in files else []
    return sorted(out)


def _reports(root: Path) -> list[tuple[str, dict]]:
    """Every readable ``report.json`` at or below ``root``, by path relative to it (a broken one is skipped with a
    warning)."""
    out = []
    for p in _found(root, "report.json"):
        try:
            data = load_json(p.read_text())
        except (OSError, ValueError) as exc:
            print(f"warning: {p}: not read ({exc}); its verdicts are not stored")
            continue
        if isinstance(data, dict):
            out.append((p.relative_to(root).as_posix(), data))
    return out


def records_of(
    results_dir: str | Path,
    *,
    track: str = "",
    runner: str = "",
    image: str = "",
    harness: str = "",
    limit: int = LIMIT_BYTES,
) -> list[Session]:
    """One record per session of a results dir (its ``runs.jsonl`` files at any depth), each fitted to ``limit`` bytes.
    Raises ValueError with one line when there is no run to store."""
    root = Path(results_dir)
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory; pass a results dir (the --results-dir of a session)")
    runs: list[Run] = []
    where: dict[int, str] = {}  # each run's results dir, by the run's id()
    for f in (f for f in _found(root, "runs.jsonl") if not _not_stored(f, root)):
        rel = f.parent.relative_to(root).as_posix()
        for rec in read_jsonl(f):
            if (why := unstorable(rec, rel)) is not None:  # the session is stored without it
                print(f"warning: {f}: run {rec.get('run_id')}: {why}; left out of the stored session")
                continue
            runs.append(r := Run.from_json(rec))
            where[id(r)] = root.name if rel == "." else f"{root.name}/{rel}"
    if not runs:
        raise BadInput(
            f"{root}: no runs.jsonl with a run here or below; pass the --results-dir of a session that made runs"
        )
    sessions: dict[str, list[Run]] = {}
    for r in runs:
        sessions.setdefault(r.session_id or f"dir-{where[id(r)]}", []).append(r)
    main = max(sessions, key=lambda s: (sum(1 for r in sessions[s] if r.exclusion() is None), len(sessions[s]), s))
    reports: dict[str, list] = {s: [] for s in sessions}
    for source, rep in _reports(root):
        reports[rep.get("session_id") if rep.get("session_id") in sessions else main].append((source, rep))
    return [
        fit(
            session_record(s, rs, reports[s], track=track, runner=runner, image=image, harness=harness, where=where),
            limit,
        )
        for s, rs in sorted(sessions.items())
    ]
