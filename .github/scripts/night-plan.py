#!/usr/bin/env python3
"""Tonight's plan for one perf job of the nightly (docs/nightly.md): what it measures, decided before any GPU time.

Run in the repository root with the pinned tox environment's interpreter, after the job's environments are built. It
writes to ``$GITHUB_OUTPUT``:

* ``suite``: ``true`` when the job runs the suite. The latest job skips it on a night when latest resolved to the pinned
  versions: that night has nothing new to measure, and the pinned job measures the runner.
* ``repeats``: timed runs per decomposition. On the pinned job one: the between-machine spread, not the runs, bounds what
  a stored baseline can see (docs/nightly.md), and the night's trend, memory and equivalence need one run each; five when a
  selected workload has no baseline on this GPU (a first baseline needs five). On the latest job none (a census-only
  session): the A/B times latest against pinned on this runner far more finely than a stored baseline, and the census
  runs give its work, memory and equivalence. ``PERF_REPEATS`` overrides both.
* ``versions``: ``differ`` when this job's library versions are not the pinned ones (the A/B and the bisect run only
  then), ``same`` otherwise.
* ``versions_key``: on the latest job, a short hash of both environments' versions (Python, torch and the libraries);
  the bisect's censuses are kept across nights under it, so that a night with the same versions resumes the search
  instead of repeating it. Empty on the pinned job.

and one line per decision to the job summary. Exit 0, or 2 with one ``::error::`` line on bad input.

Environment (the nightly sets them): PERF_GPU, PERF_ENV, PERF_WORKLOADS, PERF_REPEATS, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

FIRST_BASELINE_REPEATS = 5  # the fewest runs `baseline update` records a baseline from (--min-repeats)


@dataclass(frozen=True)
class Job:
    gpu: str
    env: str
    workloads: tuple[str, ...] = ()
    repeats: str = ""
    pinned_python: str = ".tox/pinned/bin/python"
    python: str = ""  # this job's interpreter (default .tox/<env>/bin/python)

    def __post_init__(self):
        if not self.gpu or not self.env:
            raise ValueError("PERF_GPU and PERF_ENV must be set (the nightly's matrix sets them)")
        if self.repeats and not (self.repeats.isdigit() and int(self.repeats) >= 1):
            raise ValueError(f"PERF_REPEATS / the repeats input must be a whole number >= 1, got {self.repeats!r}")

    @property
    def interpreter(self) -> str:
        return self.python or f".tox/{self.env}/bin/python"


def plan(job: Job, workloads: list[dict], same: str | None) -> dict:
    """The decisions for ``job``: ``workloads`` as ``doctor.workloads_here`` lists them, ``same`` the versions both
    environments share when they are identical (None when they differ). Pure: no GPU, no processes."""
    selected = [w for w in workloads if (w["name"] in job.workloads if job.workloads else w["runs_here"])]
    missing = [w["name"] for w in selected if w["baseline"] != "ok"]
    differ = job.env != "pinned" and same is None
    suite = job.env == "pinned" or differ
    if job.repeats:
        repeats, why = int(job.repeats), "as asked (the repeats input)"
    elif job.env == "pinned" and missing:
        repeats, why = FIRST_BASELINE_REPEATS, f"a first baseline of {', '.join(missing)} needs {FIRST_BASELINE_REPEATS}"
    elif job.env == "pinned":
        repeats, why = 1, "the machine, not the run, bounds a stored-baseline verdict (docs/nightly.md)"
    else:
        repeats, why = 0, "the A/B times latest against pinned; the census runs give its work, memory and equivalence"
    lines = [f"- timed runs per decomposition: {repeats} ({why}), then one census run per case"] if suite else [
        f"- no runs: {job.env} resolved to the pinned versions ({same}); the pinned job measures this runner tonight"]
    if job.env != "pinned" and differ:
        lines.append("- the versions differ from the pins: the A/B (pinned against latest, interleaved) and, where it or the census "
                     "finds a change, the bisect run after the suite")
    return {"suite": suite, "repeats": repeats, "versions": "differ" if differ else "same", "lines": lines}


def decide(job: Job, root: Path) -> dict:
    """Gather what :func:`plan` needs (the workloads and baselines here, and both environments' versions) and plan."""
    from harness.commands.doctor import workloads_here
    from harness.measuring.interpreters import shared, side_versions

    workloads = workloads_here(root / "workloads", root / "baselines", job.gpu)
    known = {w["name"] for w in workloads}
    unknown = [w for w in job.workloads if w not in known]
    if unknown:
        raise ValueError(f"PERF_WORKLOADS names {', '.join(unknown)}, which workloads/ does not hold; known: {', '.join(sorted(known))}")
    if job.env == "pinned":
        return {**plan(job, workloads, "pinned"), "versions_key": ""}
    va, vb = side_versions(job.pinned_python, "a"), side_versions(job.interpreter, "b")
    return {**plan(job, workloads, shared(va, vb)), "versions_key": versions_key(va, vb)}


def versions_key(pinned: dict, this: dict) -> str:
    """A short hash of both environments' versions: the key under which the bisect's censuses are kept across nights."""
    return hashlib.sha256(json.dumps([pinned, this], sort_keys=True).encode()).hexdigest()[:16]


def write(result: dict, job: Job) -> None:
    outputs = {"suite": str(result["suite"]).lower(), "repeats": str(result["repeats"]), "versions": result["versions"],
               "versions_key": result.get("versions_key", "")}
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as f:
            f.writelines(f"{k}={v}\n" for k, v in outputs.items())
    text = f"### Tonight's plan: {job.gpu} {job.env}\n\n" + "\n".join(result["lines"]) + "\n"
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as f:
            f.write(text + "\n")
    print(text + " ".join(f"{k}={v}" for k, v in outputs.items()))


def main(argv: list[str] | None = None) -> int:
    e = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default="", help="this job's interpreter (default: .tox/$PERF_ENV/bin/python)")
    a = p.parse_args(argv)
    try:
        job = Job(gpu=e("PERF_GPU", ""), env=e("PERF_ENV", ""), workloads=tuple((e("PERF_WORKLOADS") or "").split()),
                  repeats=(e("PERF_REPEATS") or "").strip(), python=a.python)
        result = decide(job, Path.cwd())
    except ValueError as exc:
        print(f"::error::night-plan: {exc}")
        return 2
    write(result, job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
