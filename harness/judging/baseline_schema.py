"""What a baseline file must hold, checked key by key when it is loaded: the types of its keys, finite and positive step
times, thresholds and alpha in range, and at least one run with a runtime value per decomposition (a decomposition
without one would skip its case without a word). :func:`problem` names the first key that is wrong and says what it
should be; :mod:`harness.judging.baseline` turns that into one line that names the file.

Pure; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

# alpha: a level of a test; runtime, memory_rel and kernel_time: fractions (0.05 is +5%); memory_abs_mib: MiB, below
# 1 TiB (more than any accelerator holds), so that no value can make every memory verdict pass
THRESHOLD_RANGES = {
    "alpha": (0.0, 0.5, "a level in (0, 0.5) such as 0.05"),
    "runtime": (0.0, 1.0, "a fraction in [0, 1) such as 0.05 (+5%)"),
    "memory_rel": (0.0, 1.0, "a fraction in [0, 1) such as 0.02"),
    "kernel_time": (0.0, 1.0, "a fraction in [0, 1) such as 0.005"),
    "memory_abs_mib": (0.0, 2.0**20, "a number of MiB in [0, 1048576) such as 64"),
}
POSITIVE = ("step_time_median_ms", "train_runtime_s")  # a run's runtime values: finite and positive, or null
NON_NEGATIVE = ("tokens_per_s", "peak_reserved_bytes", "peak_allocated_bytes")


INTEGER_BITS = 64  # an integer the judging computes with as a float; a longer one would overflow it


def _number(x: Any) -> bool:
    return (
        isinstance(x, (int, float))
        and not isinstance(x, bool)
        and not (isinstance(x, int) and x.bit_length() > INTEGER_BITS)
    )


def _kind(x: Any) -> str:
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > INTEGER_BITS:
        return f"an integer of {x.bit_length()} bits"
    return "null" if x is None else f"{x!r}" if _number(x) else f"a {type(x).__name__}"


def _threshold(key: str, v: Any) -> str | None:
    if key not in THRESHOLD_RANGES:
        return f"thresholds.{key} is not a threshold (known: {', '.join(THRESHOLD_RANGES)})"
    lo, hi, what = THRESHOLD_RANGES[key]
    ok = _number(v) and math.isfinite(v) and (lo < v < hi if key == "alpha" else lo <= v < hi)
    return None if ok else f"thresholds.{key} is {_kind(v)}, not {what}"


def _run(where: str, r: Any) -> Iterator[str]:
    """What is wrong with one run of a decomposition (``where`` names it, and each line its run id)."""
    if not isinstance(r, dict):
        yield f"{where} is {_kind(r)}, not a run (an object)"
        return
    yield from (f"{line} (run {r.get('run_id')})" for line in _run_values(where, r))


def _run_values(where: str, r: dict) -> Iterator[str]:
    if not isinstance(r.get("run_id"), str):
        yield f"{where}.run_id is {_kind(r.get('run_id'))}, not a string"
    for key in POSITIVE:
        v = r.get(key)
        if v is not None and not (_number(v) and math.isfinite(v) and v > 0):
            yield f"{where}.{key} is {_kind(v)}, not a finite positive number (or null)"
    for key in NON_NEGATIVE:
        v = r.get(key)
        if v is not None and not (_number(v) and math.isfinite(v) and v >= 0):
            yield f"{where}.{key} is {_kind(v)}, not a finite number >= 0 (or null)"
    steps = r.get("steady_step_times_ms")
    if steps is not None and not (
        isinstance(steps, list) and all(_number(x) and math.isfinite(x) and x > 0 for x in steps)
    ):
        yield f"{where}.steady_step_times_ms is not a list of finite positive numbers (or null)"
    for key in ("machine", "session_id", "host"):
        if r.get(key) is not None and not isinstance(r[key], str):
            yield f"{where}.{key} is {_kind(r[key])}, not a string (or null)"
    for key in ("phases_ms", "host_probe"):
        if r.get(key) is not None and not isinstance(r[key], dict):
            yield f"{where}.{key} is {_kind(r[key])}, not an object (or null)"
    phases = r.get("phases_ms") or {}
    if isinstance(phases, dict) and not all(_number(x) and math.isfinite(x) for x in phases.values()):
        yield f"{where}.phases_ms holds a value that is not a finite number"


def _decomposition(name: str, dec: Any, need_runs: bool) -> Iterator[str]:
    where = f"decompositions.{name}"
    if not isinstance(dec, dict):
        yield f"{where} is {_kind(dec)}, not an object"
        return
    runs = dec.get("runs")
    if not isinstance(runs, list):
        yield f"{where}.runs is {_kind(runs)}, not a list of runs"
        return
    for i, r in enumerate(runs):
        yield from _run(f"{where}.runs[{i}]", r)
    if need_runs and not any(isinstance(r, dict) and any(r.get(k) is not None for k in POSITIVE) for r in runs):
        yield (
            f"{where}.runs has no run with a step time or train_runtime: "
            "its runtime verdicts would have nothing to compare against"
        )
    losses = dec.get("losses")
    if losses is not None and not (isinstance(losses, list) and all(x is None or _number(x) for x in losses)):
        yield f"{where}.losses is not a list of numbers (or null)"
    census = dec.get("census", [])
    if not (
        isinstance(census, list) and all(isinstance(c, dict) and isinstance(c.get("census"), dict) for c in census)
    ):
        yield f"{where}.census is not a list of census runs (objects with a 'census' object)"


def problems(data: dict, need_runs: bool = True) -> Iterator[str]:
    """Every key of a baseline's data that is wrong, as ``key is X, not Y`` (the schema number and the top keys'
    presence are checked by the loader first). ``need_runs``: every decomposition needs a run with a runtime value (a
    stored baseline; a comparison's side A made of results dirs may hold census runs only, and says so per case)."""
    if not isinstance(data["gpu"], str):
        yield f"gpu is {_kind(data['gpu'])}, not a string"
    w = data["workload"]
    if not isinstance(w, dict) or not isinstance(w.get("hash"), str) or not isinstance(w.get("spec", {}), dict):
        yield "workload is not an object with a string 'hash' and a 'spec' object"
    if not isinstance(data["provenance"], dict):
        yield f"provenance is {_kind(data['provenance'])}, not an object"
    for key in ("env", "thresholds"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            yield f"{key} is {_kind(data[key])}, not an object"
    for key, v in (data.get("thresholds") or {}).items() if isinstance(data.get("thresholds"), dict) else ():
        if (why := _threshold(key, v)) is not None:
            yield why
    decs = data["decompositions"]
    if not isinstance(decs, dict) or not decs:
        yield (
            f"decompositions is {_kind(decs) if not isinstance(decs, dict) else 'empty'}: "
            "it must name at least one decomposition with its runs"
        )
        return
    for name, dec in decs.items():
        yield from _decomposition(name, dec, need_runs)


def problem(data: dict, need_runs: bool = True) -> str | None:
    """The first thing wrong with a baseline's data, or None."""
    return next(problems(data, need_runs), None)
