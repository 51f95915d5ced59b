"""``python -m harness census``: census runs only (no timed runs), to record a census, check that it is
deterministic, or count the work of another environment.

Each run is a fresh worker that trains through the warm-up, counts the work of a window of whole
logging periods under the profiler (``harness.measuring.census``), and ends. The command prints one
line per census and, over the runs of each case, whether every count was identical; ``compare`` and
``baseline update`` read the census runs like any others (they never enter a timing).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from statistics import fmean, stdev

from harness.errors import BadInput
from harness.exits import MEASUREMENT_FAILED
from harness.files import ensure_dir, new_id, results_lock
from harness.judging import census_diff
from harness.judging.judge import CENSUS_TOLERANCES
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.run import Run
from harness.results.runs import Runs
from harness.spec_folder import load_workload


def summary_line(c: dict) -> str:
    """One census in one line: the counts per optimizer step."""
    if not c.get("fits"):
        return f"no census: {c.get('reason')}"
    parts = [f"aten ops {census_diff.num(c['ops'])}"]
    if c.get("kernels") is not None:
        syncs = c.get("syncs") or {}
        parts += [
            f"kernels {census_diff.num(c['kernels'])}",
            f"kernel time {c['kernel_ms']:.2f} ms",
            f"syncs {census_diff.num(sum(v for k, v in syncs.items() if 'ynchronize' in k))}",
            f"D2H copies {census_diff.num(syncs.get('memcpy_dtoh', 0))}",
            f"cudaMalloc {census_diff.num((c.get('alloc') or {}).get('cudaMalloc', 0))}",
        ]
    else:
        parts.append(f"aten self CPU time {c['cpu_op_ms']:.2f} ms")
    if c.get("python_calls") is not None:
        parts.append(f"Python calls {census_diff.num(c['python_calls'])}")
    parts.append(f"attention {c.get('attention_backend')}")
    return f"per optimizer step (steps {c['steps'][0]}-{c['steps'][1]}): " + ", ".join(parts)


def determinism(censuses: list[dict]) -> list[str]:
    """Whether every count is identical across these censuses of one case, and the spread of the times."""
    ok = [c for c in censuses if c.get("fits")]
    if len(ok) < 2:
        return []
    changed = [census_diff.diff(ok[0], c, CENSUS_TOLERANCES) for c in ok[1:]]
    out = []
    if not any(d.counts_changed for d in changed):
        out.append(
            f"counts identical across {len(ok)} censuses "
            "(ops, kernels, syncs, allocations, attention backend; Python calls within 0.1%)"
        )
    else:
        for i, d in enumerate(changed, 2):
            if d.counts_changed:
                out.append(f"census {i} differs from census 1: " + "; ".join(census_diff.lines(d, ok[0], ok[i - 1])))
    py = [c["python_calls"] for c in ok if c.get("python_calls") is not None]
    if len(py) >= 2:
        out.append(
            f"Python calls per step: {', '.join(census_diff.num(x) for x in py)}"
            + (" (identical)" if len(set(py)) == 1 else "")
        )
    for key in ("kernel_ms", "cpu_op_ms"):
        v = [c[key] for c in ok if c.get(key)]
        if len(v) >= 2:
            out.append(f"{key} per step: mean {fmean(v):.3f}, CV {stdev(v) / fmean(v):.2%} over {len(v)} censuses")
    return out


def census(
    *,
    gpu: str,
    workload: str,
    decompositions: list[str] | None = None,
    repeats: int = 1,
    python: str | None = None,
    inject_work: int = 0,
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/census",
    run_timeout: float = RUN_TIMEOUT_S,
    out: Callable[[str], None] = print,
) -> Runs:
    """Make ``repeats`` census runs of each decomposition and return them; its exit code is 3 when a run failed."""
    from harness.measuring.interpreters import interpreter

    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:  # else it would end with no run
        raise BadInput(f"--repeats must be at least 1 (census runs per decomposition), got {repeats!r}")
    w = load_workload(workloads_dir, workload, steps)
    decs = [w.decomposition(d) for d in decompositions] if decompositions else list(w.decompositions)
    session = new_id("census")
    side = FreshSide(
        "census",
        ensure_dir(results_dir),
        session,
        python=interpreter(python, "a", "--python") if python else None,
        inject_work=inject_work,
        census=True,
    )
    with results_lock(side.results_dir):  # refused at once beside a session or another command writing there
        ran = run_slots(schedule([side], [(w, d) for d in decs], repeats), timeout_s=run_timeout, gpu=gpu, progress=out)
    by: dict[str, list[dict]] = {}
    runs = tuple(Run.from_json(r) for r in ran.records)
    for r in runs:
        if r.ok and r.census is not None:
            c = census_diff.normalize(r.census.to_json())
            by.setdefault(r.decomposition_id, []).append(c)
            out(f"{w.name}-{r.decomposition_id} run {r.repeat}: {summary_line(c)}")
    for d, cs in by.items():
        for line in determinism(cs):
            out(f"{w.name}-{d}: {line}")
    failed = any(not r.ok for r in runs)
    return Runs(session, w.name, runs, MEASUREMENT_FAILED if failed else 0)
