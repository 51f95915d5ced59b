#!/usr/bin/env python3
"""The nightly's bisect (docs/nightly.md): after the latest job's suite and A/B, which package and release made the
change.

Run in the repository root with the pinned tox environment's interpreter. It looks at what tonight found for the A/B
workload (``AB_WORKLOAD``) and picks one case to bisect, the first of:

1. a decomposition whose A/B (``perf-results/ab/<dec>/report.json``) is a regression and whose census changed: a census
   bisect (exact; it names the release of every count that moved);
2. a decomposition whose A/B is a regression with an unchanged census: a bisect by interleaved steps;
3. a decomposition whose census changed (a ``work`` verdict of ``perf-results/report.json`` that is not a pass: latest's
   census against the baseline's, which the pinned versions recorded): a census bisect.

and runs ``python -m harness bisect`` between ``.tox/pinned/bin/python`` (good) and ``.tox/<env>/bin/python`` (bad)
within ``BISECT_BUDGET`` device minutes (default 8), over the libraries tox's latest environment upgrades, letting a
release bring its own dependencies (``--move-deps``),
from the index or, where the runner sets ``PERF_WHEELS``, a wheel directory. Its report goes to
``perf-results/bisect/`` (``report.md`` is added to tonight's regression issues) and its summary to the job summary.
Tonight's census of the case under latest is handed to the bisect as bad's, so that it is not measured again.
Nothing to bisect: a line says so. Exit 0 (the bisect's own failures are reported, not fatal), 2 on bad input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BUDGET_MINUTES = "8"
# what tox's latest environment upgrades (tox.ini); their dependencies follow them
LIBRARIES = "transformers,trl,peft,accelerate,datasets"


def _verdicts(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text()).get("verdicts") or []
    except (OSError, json.JSONDecodeError):
        return []


def choose(workload: str, decompositions: list[str], results: Path) -> tuple[str, bool, str] | None:
    """(decomposition, census-only, why) of the case to bisect, or None. Pure but for reading tonight's reports."""
    work = {v["case"]: v for v in _verdicts(results / "report.json") if v.get("kind") == "work"}
    ab = {
        d: next((v for v in _verdicts(results / "ab" / d / "report.json") if v.get("outcome")), None)
        for d in decompositions
    }
    changed = {
        d for d in decompositions if work.get(f"{workload}-{d}", {}).get("outcome") in ("changed", "regression", "fail")
    }
    slower = [d for d in decompositions if (ab[d] or {}).get("outcome") == "regression"]
    for d in slower:
        if d in changed:
            return d, True, f"the A/B of {d} is a regression and its census changed"
    if slower:
        return slower[0], False, f"the A/B of {slower[0]} is a regression with an unchanged census"
    for d in decompositions:
        if d in changed:
            return d, True, f"the census of {workload}-{d} changed against the baseline's (the pinned versions')"
    return None


def command(workload: str, dec: str, census_only: bool, env: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "bisect",
        "--gpu",
        os.environ.get("PERF_GPU", "auto"),
        "--workload",
        workload,
        "--decomposition",
        dec,
        "--good",
        ".tox/pinned/bin/python",
        "--bad",
        f".tox/{env}/bin/python",
        "--move-deps",
        "--packages",
        LIBRARIES,
        "--total-budget-minutes",
        os.environ.get("BISECT_BUDGET") or BUDGET_MINUTES,
        "--results-dir",
        "perf-results/bisect",
    ]
    if os.environ.get("PERF_WHEELS"):
        cmd += ["--wheels", os.environ["PERF_WHEELS"]]
    return cmd + (["--census-only"] if census_only else [])


def seed_census(workload: str, dec: str, env: str, results: Path) -> bool:
    """Put tonight's census of the case under bad's interpreter where the bisect keeps bad's census, so that it is
    reused, not measured again (a census already in its folder costs nothing: docs/bisect.md). True when there was
    one."""
    from harness.bisect.steps import hand_census
    from harness.files import read_jsonl
    from harness.record import case_census

    runs = results / "runs.jsonl"
    found = case_census(read_jsonl(runs) if runs.is_file() else [], workload, dec)
    if found is None:
        return False
    hand_census(results / "bisect", f".tox/{env}/bin/python", found)
    return True


def summary(text: str) -> None:
    print(text)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
            f.write(text + "\n\n")


def main() -> int:
    workload = os.environ.get("AB_WORKLOAD", "")
    decompositions = (os.environ.get("AB_DECOMPOSITIONS") or "").split()
    env = os.environ.get("PERF_ENV", "latest")
    if not workload or not decompositions:
        print("::error::night-bisect: AB_WORKLOAD and AB_DECOMPOSITIONS must be set (the nightly sets them)")
        return 2
    picked = choose(workload, decompositions, Path("perf-results"))
    if picked is None:
        summary(f"### Bisect\n\nNothing to bisect: no A/B regression and no census change of {workload} tonight.")
        return 0
    dec, census_only, why = picked
    summary(f"### Bisect\n\n{workload}-{dec}, pinned (good) against {env} (bad): {why}.")
    seed_census(workload, dec, env, Path("perf-results"))
    code = subprocess.run(command(workload, dec, census_only, env)).returncode
    md = Path("perf-results/bisect/report.md")
    summary(
        md.read_text() if md.is_file() else f"The bisect made no report (exit {code}); its output is in the log above."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
