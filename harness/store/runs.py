"""Session records back as run records, so that the history page (:func:`harness.reporting.history.build`) is built from
a store exactly as from results dirs: each stored run becomes a record with the keys the page reads (its session, case,
status, median step time, census counts, machine, versions and workload spec)."""

from __future__ import annotations

from harness.store.record import relpath
from harness.store.session import Case, Session, StoredRun


def _census(case: Case, run: StoredRun) -> dict | None:
    """A census run's census: the case's stored census with this run's own counts over it."""
    if run.census is None:
        return None
    own = {k: v for k, v in run.census.to_json().items() if v is not None}
    return {**(case.census.to_json() if case.census else {}), **own}


def _env(rec: Session, machine: str) -> dict:
    env = rec.env
    return {
        "versions": dict(rec.versions or {}),
        "driver": env.driver,
        "cuda": env.cuda,
        "hostname": env.hostname,
        "image": env.image,
        "runner": env.runner,
        "harness": env.harness,
        **({} if machine.startswith("dir:") else {"boot_id": machine}),
    }


def run_record(rec: Session, case: Case, run: StoredRun) -> dict:
    """One stored run as a run record (``docs/measurement.md``) with the keys the history page reads."""
    workload = (rec.workloads or {}).get(case.workload_hash or "")
    machine = run.machine or "unknown"
    return {
        "run_id": run.run_id,
        "session_id": rec.session_id,
        "started_at": rec.started_at,
        "gpu": rec.gpu,
        "workload": case.workload,
        "decomposition_id": case.decomposition,
        "decomposition": case.split,
        "workload_hash": case.workload_hash,
        "workload_spec": workload.spec if workload else None,
        "repeat": run.repeat,
        "status": run.status,
        "step_time_median_ms": run.median_ms,
        "train_runtime_s": run.train_runtime_s,
        "peak_reserved_bytes": run.peak_reserved_bytes,
        "peak_allocated_bytes": run.peak_allocated_bytes,
        "census": _census(case, run),
        "machine": machine,
        "verdict": case.baseline.verdict if case.baseline else None,
        "env": _env(rec, machine),
        **(run.flags.to_json() if run.flags else {}),  # its four fields only: no other key overwritten
    }


def run_records(rec: Session) -> list[dict]:
    """The runs of one session record, as run records (``docs/measurement.md``) with the keys the history page reads."""
    return [run_record(rec, case, run) for case in rec.cases for run in case.runs]


def history_input(records: list[Session]) -> list[tuple[str, str, list[dict]]]:
    """``(track, where, runs)`` triples for :func:`harness.reporting.history.build`, one per stored session."""
    return [(rec.track or "", relpath(rec), run_records(rec)) for rec in records]
