"""Session records back as run records, so that the history page (:func:`harness.reporting.history.build`) is built from
a store exactly as from results dirs: each stored run becomes a record with the keys the page reads (its session, case,
status, median step time, census counts, machine, versions and workload spec)."""

from __future__ import annotations

from harness.store.record import relpath
from harness.store.summary import RUN_FLAGS


def _census(case: dict, run: dict) -> dict | None:
    """A census run's census: the case's stored census with this run's own counts over it."""
    if "census" not in run:
        return None
    return {**(case.get("census") or {}), **{k: v for k, v in run["census"].items() if v is not None}}


def run_records(rec: dict) -> list[dict]:
    """The runs of one session record, as run records (``docs/measurement.md``) with the keys the history page reads."""
    env = rec.get("environment") or {}
    out = []
    for case in rec["cases"]:
        spec = (rec.get("workloads") or {}).get(case.get("workload_hash") or "", {}).get("spec")
        for run in case["runs"]:
            machine = run.get("machine") or "unknown"
            r = {
                "run_id": run.get("run_id"),
                "session_id": rec["session_id"],
                "started_at": rec.get("started_at"),
                "gpu": rec["gpu"],
                "workload": case["workload"],
                "decomposition_id": case["decomposition"],
                "decomposition": case.get("split"),
                "workload_hash": case.get("workload_hash"),
                "workload_spec": spec,
                "repeat": run.get("repeat"),
                "status": run.get("status"),
                "step_time_median_ms": run.get("median_ms"),
                "train_runtime_s": run.get("train_runtime_s"),
                "peak_reserved_bytes": run.get("peak_reserved_bytes"),
                "peak_allocated_bytes": run.get("peak_allocated_bytes"),
                "census": _census(case, run),
                "machine": machine,
                "verdict": (case.get("baseline") or {}).get("verdict"),
                "env": {
                    "versions": rec.get("versions") or {},
                    "driver": env.get("driver"),
                    "cuda": env.get("cuda"),
                    "hostname": env.get("hostname"),
                    "image": env.get("image"),
                    "runner": env.get("runner"),
                    "harness": env.get("harness"),
                    **({} if machine.startswith("dir:") else {"boot_id": machine}),
                },
                **{k: v for k, v in (run.get("flags") or {}).items() if k in RUN_FLAGS},  # no other key overwritten
            }
            out.append(r)
    return out


def history_input(records: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """``(track, where, runs)`` triples for :func:`harness.reporting.history.build`, one per stored session."""
    return [(rec.get("track") or "", relpath(rec), run_records(rec)) for rec in records]
