"""Generated results stores for the dashboard's tests: nightly session records (``docs/store.md``) of any number of
GPUs, workloads, splits, tracks and nights, with seeded noise and what a test plants in them (a step-time shift, census
counts that move, a library release with its A/B verdict)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from harness.store.session import Session

START = datetime(2027, 1, 1, 2, 17)
VERSIONS = {
    "python": "3.11.9",
    "torch": "2.13.0",
    "transformers": "5.17.0",
    "trl": "1.10.0",
    "peft": "0.17.1",
    "accelerate": "1.10.1",
    "datasets": "4.0.0",
}


@dataclass(frozen=True)
class Plan:
    """What a store holds: ``shift``: (gpu, workload, split, first night, factor) of the step time; ``census_move``:
    (gpu, workload, split, night, kernels added) with the pins unchanged; ``release``: (night, library, version) on
    every GPU of the ``release_track``, with an interleaved A/B verdict that night; census sessions every
    ``census_every`` nights."""

    gpus: tuple[str, ...] = ("h200",)
    workloads: tuple[str, ...] = ("qwen3-1.7b-lora",)
    splits: tuple[str, ...] = ("1x4", "2x2", "4x1")
    tracks: tuple[str, ...] = ("pinned",)
    nights: int = 40
    sigma: float = 0.015
    census_every: int = 1
    shift: tuple = ()
    census_move: tuple = ()
    release: tuple = ()
    release_track: str = "latest"
    seed: int = 1
    machines: tuple[str, ...] = (
        "m0",
        "m1",
    )  # alternate by night: "m0" on even nights (a machine's name: at most 8 characters in all)
    level_ms: dict = field(default_factory=dict)


def machine(plan: Plan, gpu: str, i: int) -> str:
    return f"{gpu[:5]}-{plan.machines[i % len(plan.machines)]}"


def _case(plan: Plan, rng: random.Random, gpu: str, wl: str, split: str, i: int, census: bool) -> dict:
    base = plan.level_ms.get(
        (gpu, wl, split), 100.0 * (1 + plan.workloads.index(wl)) * (1 + 0.3 * plan.splits.index(split))
    )
    g, w, s, first, factor = plan.shift or ("", "", "", 0, 1.0)
    ms = base * math.exp(rng.gauss(0, plan.sigma)) * (factor if (g, w, s) == (gpu, wl, split) and i >= first else 1.0)
    m = machine(plan, gpu, i)
    runs = [
        {
            "run_id": f"r{i}-{wl}-{split}",
            "status": "ok",
            "machine": m,
            "median_ms": round(ms, 3),
            "peak_reserved_bytes": 40 * 2**30,
        }
    ]
    case = {
        "workload": wl,
        "decomposition": split,
        "workload_hash": f"hash-{wl}",
        "split": split,
        "runs": runs,
        "failed": 0,
        "step_time_ms": {"median": round(ms, 3), "min": round(ms * 0.99, 3), "max": round(ms * 1.01, 3), "n": 1},
        "peak_reserved_bytes": 40 * 2**30,
        "baseline": {"verdict": "pass"},
    }
    if census:
        g, w, s, night, kernels = plan.census_move or ("", "", "", 0, 0)
        moved = (g, w, s) == (gpu, wl, split) and i >= night
        counts = {
            "fits": True,
            "ops": 5000.0,
            "kernels": 1000.0 + (kernels if moved else 0),
            "python_calls": 20000.0,
            "kernel_ms": round(ms * 0.8, 1),
        }
        case["census"], case["census_runs"] = dict(counts), 1
        runs.append({"run_id": f"c{i}-{wl}-{split}", "status": "ok", "machine": m, "census": counts})
    return case


def night(plan: Plan, rng: random.Random, gpu: str, track: str, i: int) -> dict:
    """The session record of night ``i`` of one GPU and track."""
    versions = dict(VERSIONS)
    released = bool(plan.release) and track == plan.release_track and i >= plan.release[0]
    if released:
        versions[plan.release[1]] = plan.release[2]
    census = i % plan.census_every == 0
    cases = [_case(plan, rng, gpu, wl, split, i, census) for wl in plan.workloads for split in plan.splits]
    verdicts = (
        [
            {
                "source": f"ab/{split}/report.json",
                "kind": "interleaved",
                "case": f"{plan.workloads[0]}-{split}",
                "outcome": "pass",
                "message": "",
                "ratio": 1.004,
                "lo": 0.991,
                "hi": 1.017,
            }
            for split in plan.splits
        ]
        if released and i == plan.release[0]
        else []
    )
    return {
        "schema": 1,
        "session_id": f"{gpu}-{track}-night-{i:04d}",
        "started_at": (START + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%S+0000"),
        "gpu": gpu,
        "track": track,
        "runner": f"gpu-{gpu}-1",
        "environment": {
            "driver": "580.159.04",
            "cuda": "13.0",
            "harness": f"c0ffee{i % 7}",
            "machines": [machine(plan, gpu, i)],
        },
        "versions": versions,
        "workloads": {f"hash-{wl}": {"name": wl, "spec": None} for wl in plan.workloads},
        "cases": cases,
        "verdicts": verdicts,
        "source": {"runs": len(cases), "reports": []},
        "trimmed": [],
    }


def records(plan: Plan) -> list[dict]:
    """Every night of every GPU and track of ``plan``, in time order."""
    rng = random.Random(plan.seed)
    return [night(plan, rng, gpu, track, i) for i in range(plan.nights) for gpu in plan.gpus for track in plan.tracks]


def typed(recs: list[dict]) -> list[Session]:
    """Records as the store reads them (:meth:`harness.store.session.Session.from_json`)."""
    return [Session.from_json(r) for r in recs]
