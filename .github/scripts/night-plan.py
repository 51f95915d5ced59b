#!/usr/bin/env python3
"""Tonight's plan for one perf job of the nightly (docs/nightly.md): what it measures, decided before any GPU time.

The settings come from ``nightly.toml`` (:mod:`harness.nightly`), with a manual run's inputs (``NIGHT_INPUTS``, the
workflow_dispatch form as JSON) over them. ``--gpus`` prints the GPU matrix only (the workflow's first job, on a hosted
runner: the standard library and the checkout, nothing installed).

Otherwise run in the repository root with the pinned tox environment's interpreter, after the job's environments are
built. It writes to ``$GITHUB_ENV`` the settings the later steps read (``PERF_WORKLOADS``, ``AB_WORKLOAD``,
``AB_DECOMPOSITIONS``, ``AB_BUDGET``, ``BISECT_BUDGET``, ``CONFIRM_BUDGET``:
:meth:`harness.nightly.Nightly.environment`), and to ``$GITHUB_OUTPUT``:

* ``suite``: ``true`` when the job runs the suite. The latest job skips it on a night when latest resolved to the pinned
  versions: that night has nothing new to measure, and the pinned job measures the runner.
* ``repeats``: timed runs per decomposition. On the pinned job one: the between-machine spread, not the runs, bounds
  what a stored baseline can see (docs/nightly.md), and the night's trend, memory and equivalence need one run each;
  five when a selected workload has no baseline on this GPU (a first baseline needs five). On the latest job none (a
  census-only session): the A/B times latest against pinned on this runner far more finely than a stored baseline, and
  the census runs give its work, memory and equivalence. The repeats input overrides both.
* ``versions``: ``differ`` when this job's library versions are not the pinned ones (the A/B and the bisect run only
  then), ``same`` otherwise.
* ``versions_key``: on the latest job, a short hash of both environments' versions (Python, torch and the libraries);
  the bisect's censuses are kept across nights under it, so that a night with the same versions resumes the search
  instead of repeating it. Empty on the pinned job.

* ``dropped``: the workloads tonight's settings name that no workload file declares (space-separated; empty on a sound
  night); each has an ``::error::`` line.

and one line per decision to the job summary, with the baselines whose library versions are not the pins (a baseline
recorded by hand in another environment is named, never taken for the pins').

One bad workload costs the night that workload only (:func:`harness.commands.doctor_nightly.tonight`): a workload whose
file does not load, whose local data no longer matches its pinned ``data.digest`` or whose baseline is of another hash
stays in ``PERF_WORKLOADS``, where the suite makes it one failed item and one failed verdict (the report, the results
store and the regression issue name it) and measures the others; the plan names it with its line. A name that no
workload file declares (a typo in nightly.toml or the workloads input) is left out of ``PERF_WORKLOADS``, with an
``::error::`` line and a summary line, since the suite refuses a session that names one. An A/B that cannot run (its
workload broken or unknown, a split of ``[ab] decompositions`` the workload lacks) is refused the same way: no A/B and
no bisect tonight (``AB_WORKLOAD`` empty), the suite runs. Exit 0, or 2 with one ``::error::`` line on bad input
(``nightly.toml`` or an input that does not parse).

Environment (the nightly sets them): PERF_GPU, PERF_ENV, NIGHT_INPUTS, GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STEP_SUMMARY.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # harness.nightly from the checkout, on a bare runner too
from harness.nightly import Nightly, NightlyError, load  # noqa: E402

FIRST_BASELINE_REPEATS = 5  # the fewest runs `baseline update` records a baseline from (--min-repeats)


@dataclass(frozen=True)
class Job:
    gpu: str
    env: str
    workloads: tuple[str, ...] = ()  # tonight's, by name (nightly.toml's for this GPU, or the workloads input)
    repeats: str = ""
    pinned_python: str = ".tox/pinned/bin/python"
    python: str = ""  # this job's interpreter (default .tox/<env>/bin/python)
    settings: Nightly | None = field(default=None, compare=False)

    def __post_init__(self):
        if not self.gpu or not self.env:
            raise ValueError("PERF_GPU and PERF_ENV must be set (the nightly's matrix sets them)")
        if self.repeats and not (self.repeats.isdigit() and int(self.repeats) >= 1):
            raise ValueError(f"the repeats input must be a whole number >= 1, got {self.repeats!r}")

    @property
    def interpreter(self) -> str:
        return self.python or f".tox/{self.env}/bin/python"


def plan(job: Job, workloads: list[dict], same: str | None, broken: dict[str, str] | None = None) -> dict:
    """The decisions for ``job``: ``workloads`` as ``doctor.workloads_here`` lists them, ``same`` the versions both
    environments share when they are identical (None when they differ), ``broken`` tonight's workloads that cannot run,
    by name, with their lines (the suite fails one item for each). Pure: no GPU, no processes."""
    broken = {n: line for n, line in (broken or {}).items() if n in job.workloads}
    selected = [w for w in workloads if w["name"] in job.workloads and w["name"] not in broken]
    missing = [w["name"] for w in selected if w["baseline"] != "ok"]
    differ = job.env != "pinned" and same is None
    if not selected and not broken:
        return {
            "suite": False,
            "repeats": 0,
            "versions": "differ" if differ else "same",
            "lines": [
                f"- no runs: nightly.toml names no workload for {job.gpu} (its workloads, or a [gpu.{job.gpu}] table)"
            ],
        }
    suite = job.env == "pinned" or differ
    if job.repeats:
        repeats, why = int(job.repeats), "as asked (the repeats input)"
    elif job.env == "pinned" and missing:
        repeats, why = (
            FIRST_BASELINE_REPEATS,
            f"a first baseline of {', '.join(missing)} needs {FIRST_BASELINE_REPEATS}",
        )
    elif job.env == "pinned":
        repeats, why = 1, "the machine, not the run, bounds a stored-baseline verdict (docs/nightly.md)"
    else:
        repeats, why = 0, "the A/B times latest against pinned; the census runs give its work, memory and equivalence"
    lines = (
        [f"- timed runs per decomposition: {repeats} ({why}), then one census run per case"]
        if suite
        else [
            f"- no runs: {job.env} resolved to the pinned versions ({same}); the pinned job measures this runner "
            "tonight"
        ]
    )
    if job.env != "pinned" and differ:
        lines.append(
            "- the versions differ from the pins: the A/B (pinned against latest, interleaved) and, where it or the "
            "census finds a change, the bisect run after the suite"
        )
    lines += [
        f"- {name}: BROKEN, not measured"
        + (" (the suite fails one item and one verdict for it, and measures the others)" if suite else "")
        + f": {line}"
        for name, line in broken.items()
    ]
    return {"suite": suite, "repeats": repeats, "versions": "differ" if differ else "same", "lines": lines}


def decide(job: Job, root: Path) -> dict:
    """Gather what :func:`plan` needs (the workloads and baselines here, and both environments' versions) and plan:
    tonight's workloads each on its own (a broken one is named and still given to the suite, an unknown one dropped),
    the A/B only where it can run; the baselines of tonight's workloads that were not recorded with the pins are named
    in the plan's lines. ``errors``: one ``::error::`` line per thing the plan refused."""
    from harness.commands.doctor import workloads_here
    from harness.commands.doctor_nightly import pin_gaps, tonight
    from harness.measuring.interpreters import shared, side_versions
    from harness.spec_folder import declared_name

    found: dict = {}  # workload file -> its one line, for each file that does not load or whose inputs do not pass
    workloads = workloads_here(root / "workloads", root / "baselines", job.gpu, found)
    settings = job.settings or Nightly(gpus=(job.gpu,), workloads=job.workloads, where="the workloads input")
    t = tonight(settings, job.gpu, workloads, found)
    job = replace(job, workloads=t.workloads, settings=settings.only(job.gpu, t.workloads, ab=t.ab is None))
    errors = [*t.unknown.values(), *([t.ab] if t.ab else [])]
    gaps = [f"- {name}: NOT RUN, dropped: {line}" for name, line in t.unknown.items()]
    gaps += [  # a broken file that tonight does not name: said, never a refusal
        f"- {path.name}: BROKEN, not run tonight: {line}"
        for path, line in found.items()
        if declared_name(path) not in t.broken and path.stem not in t.broken
    ]
    if t.ab:
        gaps.append(f"- the A/B: REFUSED, no A/B and no bisect tonight: {t.ab}")
    if job.env == "pinned":  # the pins are the pinned job's
        gaps += [
            f"- {g}" for g in pin_gaps(root / "constraints" / "pinned.txt", root / "baselines", job.gpu, t.workloads)
        ]
        p, key = plan(job, workloads, "pinned", t.broken), ""
    else:
        va, vb = side_versions(job.pinned_python, "a"), side_versions(job.interpreter, "b")
        p, key = plan(job, workloads, shared(va, vb), t.broken), versions_key(va, vb)
    # ``job``: tonight's, its workloads and settings less what the plan refused (what write() gives the later steps)
    return {
        **p,
        "lines": p["lines"] + gaps,
        "versions_key": key,
        "dropped": list(t.unknown),
        "errors": errors,
        "job": job,
    }


def versions_key(pinned: dict, this: dict) -> str:
    """A short hash of both environments' versions: the key under which the bisect's censuses are kept across nights."""
    return hashlib.sha256(json.dumps([pinned, this], sort_keys=True).encode()).hexdigest()[:16]


def _append(var: str, lines: list[str]) -> None:
    if os.environ.get(var):
        with open(os.environ[var], "a") as f:
            f.writelines(f"{line}\n" for line in lines)


def write(result: dict, job: Job) -> None:
    outputs = {
        "suite": str(result["suite"]).lower(),
        "repeats": str(result["repeats"]),
        "versions": result["versions"],
        "versions_key": result.get("versions_key", ""),
        "dropped": " ".join(result.get("dropped", [])),
    }
    for line in result.get("errors", []):
        print(f"::error::night-plan: {line}")
    _append("GITHUB_OUTPUT", [f"{k}={v}" for k, v in outputs.items()])
    settings = job.settings.environment(job.gpu) if job.settings else {}
    _append("GITHUB_ENV", [f"{k}={v}" for k, v in settings.items()])
    text = f"### Tonight's plan: {job.gpu} {job.env}\n\n" + "\n".join(result["lines"]) + "\n"
    _append("GITHUB_STEP_SUMMARY", [text])
    print(text + " ".join(f"{k}={v}" for k, v in {**outputs, **settings}.items()))


def inputs() -> dict:
    """A manual run's inputs (``NIGHT_INPUTS``: ``toJSON(inputs)``; empty, ``null`` or ``{}`` on a scheduled night)."""
    raw = (os.environ.get("NIGHT_INPUTS") or "").strip()
    try:
        got = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"NIGHT_INPUTS is not JSON ({exc}); the nightly sets it to toJSON(inputs)") from exc
    return got if isinstance(got, dict) else {}


def job_from_environment(python: str, root: Path) -> Job:
    e = os.environ.get
    asked = inputs()
    settings = load(root).with_inputs(asked)
    gpu = e("PERF_GPU", "")
    return Job(
        gpu=gpu,
        env=e("PERF_ENV", ""),
        workloads=settings.workloads_on(gpu),
        repeats=str(asked.get("repeats") or "").strip(),
        python=python,
        settings=settings,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default="", help="this job's interpreter (default: .tox/$PERF_ENV/bin/python)")
    p.add_argument(
        "--gpus",
        action="store_true",
        help="write the GPU matrix (gpus=<JSON list>) to $GITHUB_OUTPUT, and nothing else",
    )
    a = p.parse_args(argv)
    root = Path()  # the repository root, as the workflow runs it: files named relative to it in every line
    try:
        if a.gpus:
            gpus = json.dumps(list(load(root).with_inputs(inputs()).gpus))
            _append("GITHUB_OUTPUT", [f"gpus={gpus}"])
            print(f"gpus={gpus}")
            return 0
        result = decide(job_from_environment(a.python, root), root)
    except (ValueError, NightlyError) as exc:
        print(f"::error::night-plan: {exc}")
        return 2
    write(result, result["job"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
