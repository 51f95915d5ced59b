#!/usr/bin/env python3
"""Before the nightly's A/B: the two censuses the cost model predicts its change from, with no run of their own.

For each decomposition of ``AB_DECOMPOSITIONS`` of ``AB_WORKLOAD``:
- B (this job's environment): tonight's census run of the case, from ``perf-results/runs.jsonl``.
- A (pinned): the stored baseline's census of the case, recorded with the pinned versions. Counts are exact across
  machines of a GPU kind, and the kernel time is the baseline machine's.

They go to ``perf-results/ab/<dec>/census-b/runs.jsonl`` and ``census-a/runs.jsonl``, where
``python -m harness interleave`` looks for them; they are marked as copies, which the results store leaves out. Its
report then puts "predicted +x%, measured +y%" beside its verdict, and the regression issue repeats it. A census missing
on either side leaves that side out, and the report says why. Exit 0 always; run with the pinned interpreter from the
repository root.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def tonight(results: Path, workload: str, dec: str) -> dict | None:
    from harness.files import read_jsonl
    from harness.record import case_census

    runs = results / "runs.jsonl"
    return case_census(read_jsonl(runs) if runs.is_file() else [], workload, dec)


def stored(baselines: Path, gpu: str, workload: str, dec: str) -> dict | None:
    path = baselines / gpu / f"{workload}.json"
    try:
        entry = json.loads(path.read_text())["decompositions"][dec]["census"][0]
    except (OSError, json.JSONDecodeError, KeyError, IndexError, TypeError):
        return None
    return {
        "workload": workload,
        "decomposition_id": dec,
        "gpu": gpu,
        "status": "ok",
        "run_id": entry.get("run_id"),
        "session_id": f"baseline:{path}",
        "versions": entry.get("versions"),
        "census": entry["census"],
    }


def seed(results: Path, baselines: Path, gpu: str, workload: str, decs: list[str]) -> list[str]:
    from harness.files import mark_not_stored

    lines = []
    for dec in decs:
        for side, rec in (("a", stored(baselines, gpu, workload, dec)), ("b", tonight(results, workload, dec))):
            if rec is None:
                lines.append(f"{workload}-{dec}: no census of side {side.upper()}")
                continue
            folder = mark_not_stored(results / "ab" / dec / f"census-{side}")  # copies, not tonight's session
            (folder / "runs.jsonl").write_text(json.dumps(rec) + "\n")
            lines.append(
                f"{workload}-{dec}: side {side.upper()}'s census from "
                + ("the stored baseline" if side == "a" else "tonight's run")
            )
    return lines


def main() -> int:
    e = os.environ.get
    for line in seed(
        Path("perf-results"),
        Path("baselines"),
        e("PERF_GPU", ""),
        e("AB_WORKLOAD", ""),
        (e("AB_DECOMPOSITIONS") or "").split(),
    ):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
