"""A stored session record is untrusted input: anyone who can push to the store's branch writes it. :data:`SHAPES` is
its schema, one per version of :data:`harness.store.record.SCHEMA`: every key the readers (the history page, the
alerts) take, with the shape they need (the shapes of :mod:`harness.values`). :func:`problem` says the first place
where a record does not fit it, as ``cases[0].census.memory is a str, not an object``; the reader leaves that record
out and names it, and the page and the alerts are made from the rest. ``store add`` checks each run it stores against
the same schema (:data:`RUN`, :data:`CENSUS`), so that it never writes a record the readers would leave out.
:func:`non_finite` finds a NaN or infinite number in what ``store add`` is about to write (JSON holds none).
"""

from __future__ import annotations

import math

from harness.store.environment import ENVIRONMENT
from harness.values import FLAG, NUMBER, SCALAR, TEXT, WHOLE, Items, Obj, Table, Value, first_bad, mismatch

CENSUS_COUNTS = ("ops", "kernels", "python_calls", "launch_calls", "kernel_ms", "cpu_op_ms")
CENSUS_TABLES = ("syncs", "alloc", "ops_by_name", "kernels_by_name", "kernel_ms_by_name", "cpu_op_ms_by_name")
CENSUS = Obj(
    {
        "fits": FLAG,
        "reason": TEXT,
        "device": TEXT,
        "logging_steps": NUMBER,
        "steps": Items(NUMBER),
        "n": NUMBER,
        **dict.fromkeys(CENSUS_COUNTS, NUMBER),
        **dict.fromkeys(CENSUS_TABLES, Table(NUMBER)),
        "attention_backend": TEXT,
        "python_method": TEXT,
        "config": WHOLE,
        "tokens": Obj({"real": NUMBER, "padded": NUMBER}),
        "memory": Obj(
            {
                "peak_reserved_bytes": NUMBER,
                "peak_allocated_bytes": NUMBER,
                "allocated_per_step": NUMBER,
                "allocated_by_op": Table(NUMBER),
            }
        ),
    }
)  # a case's census (harness.store.summary.CENSUS_KEYS) and a census run's own counts
RUN = Obj(
    {
        "run_id": TEXT,
        "repeat": NUMBER,
        "status": TEXT,
        "machine": TEXT,
        "median_ms": NUMBER,
        "train_runtime_s": NUMBER,
        "tokens_per_s": NUMBER,
        "peak_reserved_bytes": NUMBER,
        "peak_allocated_bytes": NUMBER,
        "warmup_steps": NUMBER,
        "phases_ms": Table(NUMBER),
        "steady_us": Items(NUMBER),
        "flags": Obj(
            {"inject_slowdown": NUMBER, "inject_work": NUMBER, "profile_steps": NUMBER, "phases_enabled": FLAG}
        ),
        "error": TEXT,
        "census": CENSUS,
        "kernel_ms": NUMBER,
    }
)
CASE = Obj(
    {
        "workload": TEXT,
        "decomposition": TEXT,
        "runs": Items(RUN),
        "workload_hash": TEXT,
        "split": Value((dict, str, type(None)), "an object or a string"),
        "step_time_ms": Table(NUMBER),
        "peak_reserved_bytes": NUMBER,
        "peak_allocated_bytes": NUMBER,
        "failed": NUMBER,
        "census": CENSUS,
        "census_runs": NUMBER,
        "kernel_ms": NUMBER,
        "baseline": Obj({"verdict": TEXT, "ratio": NUMBER, "ratio_lo": NUMBER, "ratio_hi": NUMBER}),
    },
    required=("workload", "decomposition", "runs"),
)
VERDICT = Obj(
    {
        "source": TEXT,
        "kind": TEXT,
        "case": TEXT,
        "outcome": TEXT,
        "message": TEXT,
        "ratio": NUMBER,
        "lo": NUMBER,
        "hi": NUMBER,
        "pairs": NUMBER,
    }
)
RECORD_1 = Obj(
    {
        "schema": Value((int,), "an integer"),
        "session_id": TEXT,
        "started_at": TEXT,
        "gpu": TEXT,
        "track": TEXT,
        "runner": TEXT,
        "environment": Obj({**dict.fromkeys(ENVIRONMENT, SCALAR), "machines": Items(TEXT)}),
        "versions": Table(SCALAR),
        "workloads": Table(Obj({"name": TEXT, "spec": WHOLE})),
        "cases": Items(CASE),
        "verdicts": Items(VERDICT),
        "source": WHOLE,
        "trimmed": Items(TEXT),
    },
    required=("session_id", "gpu", "cases"),
)
SHAPES: dict[int, Obj] = {1: RECORD_1}  # the record of each schema version (a reader sees the current one only)


def problem(rec: dict, version: int) -> str | None:
    """Where a session record of schema ``version`` (the current one, as :func:`harness.store.record.upgrade` gives it)
    does not fit :data:`SHAPES`, as ``cases[1].runs is missing``; None when it fits. Non-finite numbers never get here:
    :func:`harness.store.record.loads` refuses them as it parses."""
    return mismatch(rec, SHAPES[version])


def _nan(value, key: str) -> str | None:
    return f"{key or 'value'} is {value}" if isinstance(value, float) and not math.isfinite(value) else None


def non_finite(obj, where: str = "") -> str | None:
    """The first NaN or infinite number in ``obj`` (dicts and lists walked), as ``median_ms is nan``; None when none."""
    return first_bad(obj, _nan, where)
