#!/usr/bin/env python3
"""The pull-request check on one GPU runner (.github/workflows/pr-check.yml, docs/pr-check.md): base against head.

Run from the pull request's checkout (the head) with its pinned tox environment's interpreter, after both environments
are built: A = ``base/.tox/pinned/bin/python`` (the base branch's pins, in its checkout ``base/``), B =
``.tox/pinned/bin/python`` (the pull request's pins). For each workload of ``PR_WORKLOADS`` (JSON, per GPU: the plan's)
on ``PERF_GPU``, every command one of the suite's own, into ``perf-results/<workload>/``:

1. ``census-a``, ``census-b``: one census run per split of each side (``python -m harness census``). A's runs from the
   base's checkout, so that a change of the suite's measuring code shows as a change of the work too; both read the
   pull request's workload files.
2. ``census``: B's censuses judged against A's (``python -m harness report``): the work (the census diff), memory and
   the equivalence of the splits, in its ``report.json``.
3. Where the pins changed (``PR_PINS``): A against B interleaved (``python -m harness interleave``, the suite's
   defaults) for each split of ``[pr] decompositions`` the workload has, within ``[pr] budget_minutes``, in
   ``ab/<split>``; the censuses of step 1 are handed to it (``census-a``, ``census-b`` there), for the cost model's
   prediction beside the measured change.
4. Where the pins changed and the work of a split changed: the bisect of the packages between the two environments
   (``python -m harness bisect --census-only``) within ``[budgets] bisect_minutes``, in ``bisect``. It takes step 1's
   censuses of the split as its ends' (the base's only where the base's measuring code is the head's), so that it
   measures only the releases between.

Budgets come from the base branch's nightly.toml (``base/nightly.toml``): a pull request does not set its own. Each
command's exit code goes to ``perf-results/pr-check.json`` (what ``pr-comment.py`` reads beside the reports). Exit 0
when every command ran (a regression is the comment's and the status's to say), 3 when a measurement failed, 2 on bad
input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # harness from the checkout
from harness.nightly import NAME, NightlyError, load  # noqa: E402

PYTHON_A = "base/.tox/pinned/bin/python"
PYTHON_B = ".tox/pinned/bin/python"
RESULTS = Path("perf-results")


class Check:
    """One GPU's measurements, each command's exit code kept for the comment."""

    def __init__(self, gpu: str, pins: bool, budget: float, bisect_budget: float, decompositions: tuple[str, ...]):
        self.gpu, self.pins, self.budget, self.bisect_budget, self.decompositions = (
            gpu,
            pins,
            budget,
            bisect_budget,
            decompositions,
        )
        self.index: dict = {"gpu": gpu, "pins": pins, "workloads": {}}

    def run(self, workload: str, step: str, cmd: list[str], cwd: str = ".") -> int:
        print(f"::group::{workload}: {step}", flush=True)
        code = subprocess.run(cmd, cwd=cwd).returncode
        print("::endgroup::", flush=True)
        self.index["workloads"].setdefault(workload, {"steps": {}})["steps"][step] = code
        return code

    def workload(self, name: str, workloads_dir: Path) -> None:
        out = RESULTS / name
        head = ["--gpu", self.gpu, "--workload", name]
        # run from base/ (its measuring code); absolute, not resolved: a venv's python is a symlink out of the venv
        a = self.run(
            name,
            "census-a",
            [
                str(Path(PYTHON_A).absolute()),
                "-m",
                "harness",
                "census",
                *head,
                "--workloads-dir",
                str(workloads_dir),
                "--results-dir",
                str((out / "census-a").absolute()),
            ],
            cwd="base",
        )
        b = self.run(
            name,
            "census-b",
            [
                PYTHON_B,
                "-m",
                "harness",
                "census",
                *head,
                "--workloads-dir",
                str(workloads_dir),
                "--results-dir",
                str(out / "census-b"),
            ],
        )
        if a in (0, 3) and b in (0, 3):
            self.run(
                name,
                "census",
                [
                    PYTHON_B,
                    "-m",
                    "harness",
                    "report",
                    str(out / "census-b"),
                    "--baseline",
                    str(out / "census-a"),
                    "--out",
                    str(out / "census"),
                ],
            )
        if not self.pins:
            return
        splits = [d for d in self.decompositions if d in splits_of(out / "census-b", name)]
        for dec in splits:
            seed(out, name, dec)
            self.run(
                name,
                f"ab/{dec}",
                [
                    PYTHON_B,
                    "-m",
                    "harness",
                    "interleave",
                    *head,
                    "--decomposition",
                    dec,
                    "--python-a",
                    PYTHON_A,
                    "--python-b",
                    PYTHON_B,
                    "--budget-minutes",
                    minutes(self.budget),
                    "--workloads-dir",
                    str(workloads_dir),
                    "--results-dir",
                    str(out / "ab" / dec),
                ],
            )
        changed = work_changed(out / "census" / "report.json", name)
        if changed:
            if handed := seed_bisect(out, name, changed):
                print(f"the bisect takes this check's censuses of {' and '.join(handed)}", flush=True)
            cmd = [
                PYTHON_B,
                "-m",
                "harness",
                "bisect",
                *head,
                "--decomposition",
                changed,
                "--good",
                PYTHON_A,
                "--bad",
                PYTHON_B,
                "--move-deps",
                "--census-only",
                "--total-budget-minutes",
                minutes(self.bisect_budget),
                "--workloads-dir",
                str(workloads_dir),
                "--results-dir",
                str(out / "bisect"),
            ]
            self.run(
                name, "bisect", cmd + (["--wheels", os.environ["PERF_WHEELS"]] if os.environ.get("PERF_WHEELS") else [])
            )


def minutes(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def records(folder: Path) -> list[dict]:
    path = folder / "runs.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def splits_of(folder: Path, workload: str) -> list[str]:
    """The splits with a census run of ``workload`` in ``folder``, in the order they ran."""
    return list(
        dict.fromkeys(
            r.get("decomposition_id") for r in records(folder) if r.get("workload") == workload and r.get("census")
        )
    )


def seed(out: Path, workload: str, dec: str) -> None:
    """Hand each side's census of ``dec`` to its interleaved comparison (``ab/<dec>/census-a|b``), marked as copies that
    the results store leaves out, as the nightly's A/B does (.github/scripts/ab-censuses.py)."""
    from harness.files import mark_not_stored

    for side in ("a", "b"):
        found = [
            r
            for r in records(out / f"census-{side}")
            if r.get("workload") == workload and r.get("decomposition_id") == dec and r.get("census")
        ]
        if found:
            folder = mark_not_stored(out / "ab" / dec / f"census-{side}")
            (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in found[:1]))


def same_code(a: Path, b: Path) -> bool:
    """Whether two checkouts' measuring code (their ``harness`` packages) is the same, file for file."""

    def tree(root: Path) -> dict:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.py")}

    return a.is_dir() and b.is_dir() and tree(a) == tree(b)


def seed_bisect(out: Path, workload: str, dec: str) -> list[str]:
    """Hand the bisect of ``dec`` the check's censuses of its two ends, where it keeps its own
    (:func:`harness.bisect.steps.hand_census`), so that it does not make them again: the head's always (the bisect
    runs the head's code with the head's interpreter, as ``census-b`` did), the base's where the base's measuring code
    is the head's (``census-a`` ran the base's). Returns the interpreters handed."""
    from harness.bisect.steps import hand_census
    from harness.record import case_census

    handed = []
    for side, python in (("a", PYTHON_A), ("b", PYTHON_B)):
        found = case_census(records(out / f"census-{side}"), workload, dec)
        if found and (side == "b" or same_code(Path("base") / "harness", Path("harness"))):
            hand_census(out / "bisect", python, found)
            handed.append(python)
    return handed


def work_changed(report: Path, workload: str) -> str | None:
    """The first split whose work verdict (B's census against A's) is not a pass, or None."""
    try:
        verdicts = json.loads(report.read_text()).get("verdicts") or []
    except (OSError, json.JSONDecodeError):
        return None
    for v in verdicts:
        if (
            v.get("kind") == "work"
            and v.get("outcome") in ("changed", "regression", "fail")
            and str(v.get("case", "")).startswith(f"{workload}-")
        ):
            return str(v["case"])[len(workload) + 1 :]
    return None


def main() -> int:
    gpu = os.environ.get("PERF_GPU", "")
    try:
        by_gpu = json.loads(os.environ.get("PR_WORKLOADS") or "{}")
        settings = load(Path("base"))
    except (json.JSONDecodeError, NightlyError) as exc:
        print(f"::error::pr-measure: {exc}")
        return 2
    names = by_gpu.get(gpu) if isinstance(by_gpu, dict) else None
    if not gpu or not isinstance(names, list) or not all(isinstance(n, str) and NAME.fullmatch(n) for n in names):
        print(
            f"::error::pr-measure: PR_WORKLOADS has no list of workload names for PERF_GPU {gpu!r}; the plan job sets "
            "both"
        )
        return 2
    check = Check(
        gpu,
        os.environ.get("PR_PINS") == "true",
        settings.pr.budget_minutes,
        settings.bisect_minutes,
        settings.pr.decompositions,
    )
    RESULTS.mkdir(exist_ok=True)
    for name in names:
        check.workload(name, Path("workloads").absolute())
    (RESULTS / "pr-check.json").write_text(json.dumps(check.index, indent=1) + "\n")
    failed = any(code not in (0, 1) for w in check.index["workloads"].values() for code in w["steps"].values())
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
