"""The run record: one JSON object per run in ``<results-dir>/runs.jsonl``, typed here and described
key by key in ``docs/measurement.md`` (a test keeps the two in step).

Records are plain JSON objects on disk (old results dirs load unchanged); :class:`RunRecord` names every key and its
type, so that the runner and the readers agree on the layout. Readers hold a record as its
:class:`harness.results.run.Run`, once :func:`run_problem` has checked its shape.
"""

from __future__ import annotations

from datetime import datetime
from statistics import median
from typing import Any, Literal, TypedDict

from harness.values import FLAG, NUMBER, SCALAR, TEXT, WHOLE, Items, Obj, Table, Value, mismatch

PHASES = ("data", "forward", "backward", "optimizer", "other")
STATUS = Literal["ok", "oom", "crash", "timeout", "error"]


class RunRecord(TypedDict, total=False):
    format: int  # the record's format version (harness.results.formats.RUN); absent in records written before it
    # identity, written by the runner
    run_id: str
    session_id: str
    workload: str
    workload_hash: str
    workload_spec: dict[str, Any]
    decomposition: dict[str, int]  # {micro_batch, grad_accum, world_size}
    decomposition_id: str  # "2x2"
    repeat: int
    gpu: str
    started_at: str
    wall_s: float
    exit_code: int
    log: str
    # measurement switches of the run
    phases_enabled: bool
    inject_slowdown: float
    inject_work: int
    profile_steps: int
    # outcome
    status: STATUS
    error: str
    signal: str
    stderr_tail: str
    traceback: str
    # a world size > 1 (one torchrun job): every rank's share, and which rank failed
    world_size: int
    ranks: list[dict]
    failed_rank: int
    # measurements, written by the worker
    train_runtime_s: float
    train_loss: float
    step_times_ms: list[float]
    warmup_steps: int
    step_time_median_ms: float
    phases_ms: dict[str, list[float]] | None
    losses: list[float | None]
    tokens_per_s: float | None
    peak_reserved_bytes: int | None
    peak_allocated_bytes: int | None
    gpu_samples: list[dict] | None
    profile: dict | None
    inject_work_fired: dict | None  # with inject_work: how often the extra work ran
    data_digest: str | None  # local data: the sha256 of the file (or folder) trained on, also the spec's data.digest
    unk_share: float | None  # hub or local data: the share of <unk> ids among the tokens the trainer got
    census: dict | None  # a census run's counts of the work per optimizer step (docs/measurement.md, Census)
    host_probe: dict
    env: dict[str, Any]
    timing_s: dict[str, float]
    # added when a baseline is read from results dirs: the machine the run was made on
    machine: str


def case_census(records: list[dict], workload: str, decomposition: str) -> dict | None:
    """The newest finished census run of a case whose window fitted, or None (the workflows' scripts read their
    runs.jsonl lines with it)."""
    return next(
        (
            r
            for r in reversed(records)
            if r.get("workload") == workload
            and r.get("decomposition_id") == decomposition
            and r.get("status") == "ok"
            and (r.get("census") or {}).get("fits")
        ),
        None,
    )


# What the readers of runs.jsonl take of a record, with the shape they need (harness.values); a record that does not
# fit is left out and named by the reader (run_problem), as a torn line is.
RUN_SHAPE = Obj(
    {
        **dict.fromkeys(
            ("run_id", "session_id", "workload", "workload_hash", "decomposition_id", "gpu", "status", "started_at"),
            TEXT,
        ),
        "machine": TEXT,
        "decomposition": Value((dict, str, type(None)), "an object or a string"),
        "workload_spec": WHOLE,
        **dict.fromkeys(("repeat", "warmup_steps", "inject_slowdown", "inject_work", "profile_steps"), NUMBER),
        "phases_enabled": FLAG,
        **dict.fromkeys(
            ("step_time_median_ms", "train_runtime_s", "tokens_per_s", "peak_reserved_bytes", "peak_allocated_bytes"),
            NUMBER,
        ),
        "step_times_ms": Items(NUMBER),
        "env": Obj({"versions": Table(SCALAR), "boot_id": TEXT}),
        "census": WHOLE,
        "profile": WHOLE,
    }
)


def run_problem(rec: dict) -> str | None:
    """Where a run record does not fit :data:`RUN_SHAPE`, as ``step_time_median_ms is nan, not a finite number``; None
    where it fits."""
    return mismatch(rec, RUN_SHAPE)


def median_phases(rows: list[dict[str, float] | None]) -> dict[str, float] | None:
    """Median over runs of each phase, from rows of one run's medians (:meth:`harness.results.run.Run.phase_medians`);
    None for no rows."""
    rows = [r for r in rows if r]
    return {p: median(r[p] for r in rows if p in r) for p in rows[0]} if rows else None


def headline(rec: dict) -> str:
    """One line for progress output: status and the run's headline figures."""
    if rec["status"] != "ok":
        kind = "OOM (does not fit)" if rec["status"] == "oom" else rec["status"].upper()
        return f"{kind}: {rec.get('error', '')}"
    parts = [
        f"ok in {rec['wall_s']:.1f} s",
        f"median step {rec['step_time_median_ms']:.1f} ms",
        f"train_runtime {rec['train_runtime_s']:.2f} s",
    ]
    if rec.get("peak_reserved_bytes"):
        parts.append(f"peak reserved {rec['peak_reserved_bytes'] / 2**30:.2f} GiB")
    return ", ".join(parts)


def parse_time(s: str | None) -> datetime | None:
    if not s:
        return None
    for parse in (datetime.fromisoformat, lambda t: datetime.strptime(t, "%Y-%m-%dT%H:%M:%S%z")):
        try:
            return parse(s)
        except ValueError:
            continue
    return None
