"""A stored session record is untrusted input: anyone who can push to the store's branch writes it. :func:`problem` says
what in a record the readers (the history page, the alerts) could not use: a key they read missing or of the wrong
shape, a number that is not finite; the reader leaves that record out and names it, and the page and the alerts are
still made. :func:`non_finite` finds a NaN or infinite number in what ``store add`` is about to write (JSON holds
none)."""

from __future__ import annotations

import math

from harness.values import first_bad

_TEXT = (str, type(None))
_NUMBER = (int, float, type(None))
# per case and per run: the keys the readers take, and the types they must have (None: the key may be absent)
CASE_KEYS = {
    "workload_hash": _TEXT,
    "split": (dict, str, type(None)),
    "step_time_ms": (dict, type(None)),
    "census": (dict, type(None)),
    "kernel_ms": _NUMBER,
    "failed": _NUMBER,
    "baseline": (dict, type(None)),
}
RUN_KEYS = {
    "run_id": _TEXT,
    "status": _TEXT,
    "machine": _TEXT,
    "median_ms": _NUMBER,
    "train_runtime_s": _NUMBER,
    "peak_reserved_bytes": _NUMBER,
    "peak_allocated_bytes": _NUMBER,
    "census": (dict, type(None)),
    "flags": (dict, type(None)),
    "steady_us": (list, type(None)),
    "phases_ms": (dict, type(None)),
}
TOP_KEYS = {
    "started_at": _TEXT,
    "track": _TEXT,
    "runner": _TEXT,
    "environment": (dict, type(None)),
    "versions": (dict, type(None)),
    "workloads": (dict, type(None)),
    "verdicts": (list, type(None)),
    "trimmed": (list, type(None)),
}


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _keys(obj: dict, where: str, wanted: dict) -> str | None:
    for key, types in wanted.items():
        if not isinstance(obj.get(key), types):
            return f"{where}{key} is a {_kind(obj.get(key))}"
    return None


CENSUS_COUNTS = ("ops", "kernels", "python_calls", "launch_calls", "kernel_ms", "cpu_op_ms")
CENSUS_TABLES = ("syncs", "alloc", "ops_by_name", "kernels_by_name", "kernel_ms_by_name", "cpu_op_ms_by_name")


def _number(v) -> bool:
    return isinstance(v, _NUMBER) and not isinstance(v, bool)


def _census(c: dict | None, where: str) -> str | None:
    """A census's counts are numbers and its tables objects of numbers (the census alerts subtract them)."""
    for key, v in (c or {}).items():
        if key in CENSUS_COUNTS and not _number(v):
            return f"{where}.{key} is a {_kind(v)}, not a number"
        if key in CENSUS_TABLES and not (v is None or isinstance(v, dict) and all(map(_number, v.values()))):
            return f"{where}.{key} is not an object of numbers"
    return None


def _case(case, where: str) -> str | None:
    if not isinstance(case, dict):
        return f"{where} is a {_kind(case)}, not an object"
    for key in ("workload", "decomposition"):
        if not isinstance(case.get(key), str):
            return f"{where}.{key} is a {_kind(case.get(key))}, not a string"
    if not isinstance(case.get("runs"), list):
        return f"{where}.runs is " + ("missing" if "runs" not in case else f"a {_kind(case['runs'])}, not a list")
    if why := _keys(case, f"{where}.", CASE_KEYS):
        return why
    if not all(isinstance(v, _NUMBER) for v in (case.get("step_time_ms") or {}).values()):
        return f"{where}.step_time_ms holds a value that is not a number"
    if why := _census(case.get("census"), f"{where}.census"):
        return why
    for i, run in enumerate(case["runs"]):
        if not isinstance(run, dict):
            return f"{where}.runs[{i}] is a {_kind(run)}, not an object"
        if why := _keys(run, f"{where}.runs[{i}].", RUN_KEYS) or _census(
            run.get("census"), f"{where}.runs[{i}].census"
        ):
            return why
    return None


def problem(rec: dict) -> str | None:
    """What in an upgraded session record its readers could not use, as ``cases[1].runs is missing``; None when nothing.
    Non-finite numbers never get here: :func:`harness.store.record.loads` refuses them as it parses."""
    for key in ("session_id", "gpu"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            return f"{key} is a {_kind(rec.get(key))}, not a string"
    if why := _keys(rec, "", TOP_KEYS):
        return why
    if not all(isinstance(t, str) for t in rec.get("trimmed") or []):
        return "trimmed holds a value that is not a string"
    if not isinstance(rec.get("cases"), list):
        return "cases is " + ("missing" if "cases" not in rec else f"a {_kind(rec['cases'])}, not a list")
    for i, case in enumerate(rec["cases"]):
        if why := _case(case, f"cases[{i}]"):
            return why
    return None


def _nan(value, key: str) -> str | None:
    return f"{key or 'value'} is {value}" if isinstance(value, float) and not math.isfinite(value) else None


def non_finite(obj, where: str = "") -> str | None:
    """The first NaN or infinite number in ``obj`` (dicts and lists walked), as ``median_ms is nan``; None when none."""
    return first_bad(obj, _nan, where)
