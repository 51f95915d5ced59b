"""Run records by case from a results dir or a baseline file, and the census of each side of an interleaved comparison
that the cost model's prediction is made from."""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UsageError
from harness.judging import cost_path
from harness.judging.comparison_settings import ComparisonSettings
from harness.results.baseline import BaselineFile


def runs_of(path: str | Path) -> dict[tuple[str, str], list[dict]]:
    """Run records by (workload, split) from a results dir or a baseline file; census entries of a baseline become
    census runs, its runs timed runs."""
    p = Path(path)
    if p.is_file():
        try:
            data = BaselineFile.from_json(json.loads(p.read_text()))
            return {  # the cost model reads a run as its JSON
                (data.workload.name, k): [dict(r.to_json(), census=None, decomposition=v.decomposition) for r in v.runs]
                + [dict(c.to_json(), step_time_median_ms=None, decomposition=v.decomposition) for c in v.census or ()]
                for k, v in data.decompositions.items()
            }
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise UsageError(
                f"{p}: not a baseline file (no workload.name and decompositions); pass a baseline JSON or a results dir"
            ) from None
    from harness.suite.compare import records

    out: dict[tuple[str, str], list[dict]] = {}
    for r in records([str(p)]):
        if r.status in ("ok", "") and r.decomposition_id:  # the cost model reads a run as its JSON
            out.setdefault((r.workload, r.decomposition_id), []).append(r.to_json())
    if not out:
        raise UsageError(f"{p}: no finished runs in its runs.jsonl")
    return out


def merged(paths: list[str]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for path in paths:
        for key, runs in runs_of(path).items():
            out.setdefault(key, []).extend(runs)
    return out


def census_of(runs: dict, key) -> dict | None:
    """The first usable census of ``key`` (workload, split) among ``runs``, or None."""
    return next((r["census"] for r in runs.get(key, []) if r.get("census") and r["census"].get("fits")), None)


CENSUS_DIRS = {"a": "census-a", "b": "census-b"}  # where an interleaved comparison looks for each side's census runs


def side_census(path: Path, workload: str, decomposition: str) -> dict | None:
    """The first usable census of ``workload``'s ``decomposition`` in the results dir ``path``, or None."""
    if not (path / "runs.jsonl").is_file():
        return None
    try:
        return census_of(runs_of(path), (workload, decomposition))
    except UsageError:
        return None


def interleave_prediction(root: Path, settings: ComparisonSettings, step_ms_a, verdict: dict | None) -> dict:
    """The cost model's prediction beside the measured change of an interleaved comparison in ``root``
    (:func:`harness.judging.cost_path.beside_measured`: the critical path where the censuses carry timelines, else the
    two-path model; ``model`` says which), from the census runs of each side in ``root/census-a`` and
    ``root/census-b`` (``python -m harness census --python PY --results-dir ...``); or ``{"reason"}``."""
    decs = {"a": settings.decomposition, "b": settings.decomposition_b or settings.decomposition}
    found = {s: side_census(root / d, settings.workload, decs[s]) for s, d in CENSUS_DIRS.items()}
    if not any(found.values()):
        return {
            "reason": f"no prediction: no census of either side in {root / CENSUS_DIRS['a']} "
            f"or {root / CENSUS_DIRS['b']} (make them with "
            "`python -m harness census --python PY --results-dir DIR` before the comparison)"
        }
    return cost_path.beside_measured(found["a"], found["b"], step_ms_a, verdict)
