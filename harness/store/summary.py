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
from collections.abc import Iterable
from pathlib import Path
from statistics import median

from harness.errors import BadInput
from harness.files import NOT_STORED, read_jsonl
from harness.judging.census_diff import normalize
from harness.record import exclusion, is_census, run_phases, run_problem
from harness.store.check import CENSUS, RUN, non_finite
from harness.store.record import SCHEMA, dumps
from harness.values import NUMBER, TEXT, load_json, mismatch

LIMIT_BYTES = 50_000  # at most this much per session file, so that 3 GPUs x 2 tracks x a year stay near 100 MB
RUN_FLAGS = {
    "inject_slowdown": 0.0,
    "inject_work": 0,
    "profile_steps": 0,
    "phases_enabled": True,
}  # the plain run's values
CENSUS_KEYS = (
    "fits",
    "reason",
    "device",
    "logging_steps",
    "steps",
    "n",
    "ops",
    "ops_by_name",
    "kernels",
    "kernels_by_name",
    "launch_calls",
    "syncs",
    "alloc",
    "kernel_ms",
    "kernel_ms_by_name",
    "cpu_op_ms",
    "cpu_op_ms_by_name",
    "attention_backend",
    "python_calls",
    "python_method",
    "config",
    "tokens",
    "memory",
)
MESSAGE_CHARS = 600  # a verdict's message is kept up to this length


def _steady_us(rec: dict) -> list[int] | None:
    """The steady step times of a run (warm-up steps left out), in whole microseconds."""
    steps = rec.get("step_times_ms")
    if not steps:
        return None
    return [round(x * 1000) for x in steps[rec.get("warmup_steps") or 0 :] if x is not None]


def _machine(rec: dict, where: str) -> str:
    boot = (rec.get("env") or {}).get("boot_id")
    return boot[:8] if boot else rec.get("machine") or f"dir:{where}"


def run_entry(rec: dict, where: str) -> dict:
    """One run, compact: its outcome and headline figures, what made it other than a plain timed run, its steady
    steps."""
    e = {
        "run_id": rec.get("run_id"),
        "repeat": rec.get("repeat"),
        "status": rec.get("status"),
        "machine": _machine(rec, where),
        "median_ms": rec.get("step_time_median_ms"),
        "train_runtime_s": rec.get("train_runtime_s"),
        "tokens_per_s": rec.get("tokens_per_s"),
        "peak_reserved_bytes": rec.get("peak_reserved_bytes"),
        "peak_allocated_bytes": rec.get("peak_allocated_bytes"),
        "warmup_steps": rec.get("warmup_steps"),
        "phases_ms": run_phases(rec),
        "steady_us": _steady_us(rec),
    }
    flags = {k: rec[k] for k, plain in RUN_FLAGS.items() if rec.get(k) is not None and rec[k] != plain}
    if flags:
        e["flags"] = flags
    if rec.get("status") not in (None, "ok"):
        e["error"] = str(rec.get("error") or "")[:MESSAGE_CHARS]
    if is_census(rec):
        c = normalize(rec["census"]) or {}
        e["census"] = {k: c.get(k) for k in ("fits", "ops", "kernels", "python_calls", "kernel_ms", "cpu_op_ms")}
    prof = rec.get("profile") or {}
    if prof.get("kernel_ms_per_step") is not None:
        e["kernel_ms"] = prof["kernel_ms_per_step"]
    return {k: v for k, v in e.items() if v is not None}


def unstorable(rec: dict, where: str) -> str | None:
    """Why a run cannot be stored, or None: a NaN or infinite figure (a store record is JSON, which holds none), a key
    of the wrong type in the run record (:func:`harness.record.run_problem`), or in what :func:`run_entry` keeps of it
    and of its census (the store's schema, :mod:`harness.store.check`: the readers would leave the session out)."""
    if (why := run_problem(rec)) is not None:
        return why
    try:
        entry = run_entry(rec, where)
        census = normalize(rec["census"]) if is_census(rec) else None
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
        return f"unreadable ({type(exc).__name__}: {str(exc)[:100]})"
    kept = {k: v for k, v in (census or {}).items() if k in CENSUS_KEYS}  # what case_entry keeps of it
    return non_finite(entry) or non_finite(census, "census") or mismatch(entry, RUN) or mismatch(kept, CENSUS, "census")


def _summary(values: list[float]) -> dict | None:
    return {"median": median(values), "min": min(values), "max": max(values), "n": len(values)} if values else None


def case_entry(workload: str, decomposition: str, runs: list[dict], row: dict | None, where: dict[int, str]) -> dict:
    """One workload x decomposition of a session: its runs and their summaries, its census, the suite's verdict row."""
    timed = [r for r in runs if exclusion(r) is None]
    ok = [r for r in runs if r.get("status") == "ok" and not is_census(r)]
    cens = [normalize(r["census"]) for r in runs if is_census(r) and (r["census"] or {}).get("fits", True)]
    case = {
        "workload": workload,
        "decomposition": decomposition,
        "workload_hash": runs[0].get("workload_hash"),
        "split": runs[0].get("decomposition"),
        "runs": [run_entry(r, where[id(r)]) for r in runs],
        "step_time_ms": _summary([r["step_time_median_ms"] for r in timed]),
        "peak_reserved_bytes": max(
            (r["peak_reserved_bytes"] for r in ok if r.get("peak_reserved_bytes")), default=None
        ),
        "peak_allocated_bytes": max(
            (r["peak_allocated_bytes"] for r in ok if r.get("peak_allocated_bytes")), default=None
        ),
        "failed": sum(1 for r in runs if r.get("status") != "ok"),
    }
    if cens:
        case["census"] = {k: cens[0].get(k) for k in CENSUS_KEYS if cens[0].get(k) is not None}
        case["census_runs"] = len(cens)
        kms = [c["kernel_ms"] for c in cens if c.get("kernel_ms") is not None]
        case["kernel_ms"] = median(kms) if kms else None
    else:
        kms = [
            r["profile"]["kernel_ms_per_step"]
            for r in ok
            if (r.get("profile") or {}).get("kernel_ms_per_step") is not None
        ]
        case["kernel_ms"] = median(kms) if kms else None
    if row:
        # one timed run against a baseline has no interval (NaN in report.json): it is left out, as JSON holds no NaN
        case["baseline"] = {
            k: row.get(k)
            for k, shape in (("verdict", TEXT), ("ratio", NUMBER), ("ratio_lo", NUMBER), ("ratio_hi", NUMBER))
            if row.get(k) is not None and not mismatch(row.get(k), shape)
        } or None
    return {k: v for k, v in case.items() if v is not None}


def _joined(values: Iterable) -> str | None:
    vals = sorted({v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values if v is not None})
    return " | ".join(vals) or None


def environment(runs: list[dict], *, runner: str, image: str, harness: str, where: dict[int, str]) -> dict:
    """What the session ran on (several values of one field, on a resumed session's machines, joined by `` | ``)."""
    envs = [r.get("env") or {} for r in runs]

    def field(key: str):
        return _joined(e.get(key) for e in envs)

    versions = [e.get("versions") or {} for e in envs]
    out = {
        "gpu_name": field("gpu"),
        "gpu_count": field("gpu_count"),
        "driver": field("driver"),
        "cuda": field("cuda"),
        "python": _joined(v.get("python") for v in versions),
        "torch": _joined(v.get("torch") for v in versions),
        "image": image or None,
        "runner": runner or None,
        "hostname": field("hostname"),
        "platform": field("platform"),
        "cpu": field("cpu"),
        "cpu_count": field("cpu_count"),
        "gpu_clocks": field("gpu_clocks"),
        "interconnect": field("interconnect"),
        "attn_implementation": field("attn_implementation"),
        "harness": harness or None,
        "machines": sorted({_machine(r, where[id(r)]) for r in runs}),
    }
    return {k: v for k, v in out.items() if v is not None}


def versions_of(runs: list[dict]) -> dict[str, str]:
    """Every library version the runs recorded (several values joined by `` | ``)."""
    libs = sorted({k for r in runs for k in ((r.get("env") or {}).get("versions") or {})})
    out = {lib: _joined(((r.get("env") or {}).get("versions") or {}).get(lib) for r in runs) for lib in libs}
    return {k: v for k, v in out.items() if v is not None}


def verdicts_of(reports: list[tuple[str, dict]]) -> list[dict]:
    """Every verdict of the reports, each with the report it came from; an interleaved one with its ratio and
    interval."""
    out = []
    for source, rep in reports:
        single = rep.get("verdict") if isinstance(rep.get("verdict"), dict) else {}
        for v in rep.get("verdicts") or []:
            if not isinstance(v, dict):
                continue
            e = {
                "source": source,
                **{k: None if v.get(k) is None else str(v[k])[:MESSAGE_CHARS] for k in ("kind", "case", "outcome")},
                "message": str(v.get("message") or "")[:MESSAGE_CHARS],
            }
            if v.get("kind") == "interleaved":
                e.update(
                    {
                        k: single.get(k)
                        for k in ("ratio", "lo", "hi", "pairs")
                        if single.get(k) is not None and not mismatch(single.get(k), NUMBER)
                    }
                )
            out.append(e)
    return out


def session_record(
    sid: str,
    runs: list[dict],
    reports: list[tuple[str, dict]],
    *,
    track: str,
    runner: str,
    image: str,
    harness: str,
    where: dict[int, str],
) -> dict:
    """The compact record of one session (before :func:`fit`)."""
    rows = {
        f"{row.get('workload')}-{row.get('decomposition')}": row
        for _, rep in reports
        for row in rep.get("rows") or []
        if isinstance(row, dict)
    }
    cases: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        cases.setdefault((r.get("workload") or "?", r.get("decomposition_id") or "?"), []).append(r)
    starts = sorted(r["started_at"] for r in runs if r.get("started_at"))
    specs = {
        r["workload_hash"]: {"name": r.get("workload"), "spec": r.get("workload_spec")}
        for r in runs
        if r.get("workload_hash")
    }
    return {
        "schema": SCHEMA,
        "session_id": sid,
        "started_at": starts[0] if starts else None,
        "gpu": runs[0].get("gpu") or "unknown",
        "track": track,
        "runner": runner,
        "environment": environment(runs, runner=runner, image=image, harness=harness, where=where),
        "versions": versions_of(runs),
        "workloads": specs,
        "cases": [case_entry(w, d, rs, rows.get(f"{w}-{d}"), where) for (w, d), rs in sorted(cases.items())],
        "verdicts": verdicts_of(reports),
        "source": {"runs": len(runs), "reports": [s for s, _ in reports]},
        "trimmed": [],
    }


def _trim_steps(rec: dict, keep_every: int) -> None:
    for case in rec["cases"]:
        for run in case["runs"]:
            if run.get("steady_us"):
                run["steady_us"] = run["steady_us"][::keep_every]


def _trim_census(rec: dict, top: int) -> None:
    for case in rec["cases"]:
        c = case.get("census") or {}
        for key in ("kernel_ms_by_name", "cpu_op_ms_by_name", "kernels_by_name", "ops_by_name"):
            if isinstance(c.get(key), dict) and len(c[key]) > top:
                c[key] = dict(sorted(c[key].items(), key=lambda kv: (-abs(kv[1] or 0), kv[0]))[:top])


def fit(rec: dict, limit: int = LIMIT_BYTES) -> dict:
    """``rec`` made to fit in ``limit`` gzipped bytes, dropping detail in this order until it does: the census's
    resolved configuration, its per-name tables beyond the largest 200 and then 50 names, every other steady step
    (repeatedly), the steady steps. What was dropped is listed in ``trimmed``."""
    steps: list = [
        ("census config", lambda r: [c.get("census", {}).pop("config", None) for c in r["cases"]]),
        ("census names beyond the largest 200", lambda r: _trim_census(r, 200)),
        ("census names beyond the largest 50", lambda r: _trim_census(r, 50)),
    ]
    steps += [(f"steady steps: every {2**i}th kept", lambda r: _trim_steps(r, 2)) for i in range(1, 5)]
    steps += [("steady steps", lambda r: [run.pop("steady_us", None) for c in r["cases"] for run in c["runs"]])]
    for what, cut in steps:
        if len(dumps(rec)) <= limit:
            break
        cut(rec)
        rec["trimmed"].append(what)
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
) -> list[dict]:
    """One record per session of a results dir (its ``runs.jsonl`` files at any depth), each fitted to ``limit`` bytes.
    Raises ValueError with one line when there is no run to store."""
    root = Path(results_dir)
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory; pass a results dir (the --results-dir of a session)")
    runs, where = [], {}
    for f in (f for f in _found(root, "runs.jsonl") if not _not_stored(f, root)):
        rel = f.parent.relative_to(root).as_posix()
        for r in read_jsonl(f):
            if (why := unstorable(r, rel)) is not None:  # the session is stored without it
                print(f"warning: {f}: run {r.get('run_id')}: {why}; left out of the stored session")
                continue
            runs.append(r)
            where[id(r)] = root.name if rel == "." else f"{root.name}/{rel}"
    if not runs:
        raise BadInput(
            f"{root}: no runs.jsonl with a run here or below; pass the --results-dir of a session that made runs"
        )
    sessions: dict[str, list[dict]] = {}
    for r in runs:
        sessions.setdefault(r.get("session_id") or f"dir-{where[id(r)]}", []).append(r)
    main = max(sessions, key=lambda s: (sum(1 for r in sessions[s] if exclusion(r) is None), len(sessions[s]), s))
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
