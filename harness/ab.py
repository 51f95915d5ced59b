"""Same-machine A/B: one workload under two Python environments, interleaved on one machine.

A stored baseline can only be trusted on the machine it was recorded on; across leased VMs the
machine offset swamps small regressions (docs/results/h200.md). For a library upgrade the way to see
5-10% there is to run both environments on the same machine, in the same job, interleaved:
round r runs every decomposition as A then B (odd r) or B then A (even r), so slow drift cancels.
A's runs go to RESULTS_DIR/a, B's to RESULTS_DIR/b, and the verdicts are those of
``python -m harness compare RESULTS_DIR/a RESULTS_DIR/b``: one machine, so the run is the unit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from .runner import RunRequest, run_one
from .session import headline
from .spec import load_workload


def interpreter(path: str | None, side: str) -> str:
    """The Python of one side: a path or a command on PATH. Raises ValueError with one line if unusable."""
    if not path:
        return sys.executable
    found = shutil.which(path) if os.sep not in path else (path if os.access(path, os.X_OK) else None)
    if not found:
        raise ValueError(f"--python-{side} {path}: not an executable Python; pass e.g. .tox/latest/bin/python")
    return found


def side_versions(python: str, side: str) -> dict[str, str | None]:
    """Python and library versions (``harness.env.versions``) as the interpreter of one side sees them.
    Raises ValueError with one line if it cannot say (its workers would fail the same way)."""
    code = "import json; from harness.env import versions; print(json.dumps(versions()))"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"--python-{side} {python}: cannot report its versions ({last}); install this project into that environment (tox does)")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # the last line: anything a library prints on import comes before


def same_versions(a: str, b: str) -> str | None:
    """The versions both sides share, as one line, when A and B have identical versions; None when they differ."""
    va, vb = side_versions(a, "a"), side_versions(b, "b")
    return ", ".join(f"{k} {v}" for k, v in va.items() if v) if va == vb else None


def run_rounds(args, out=print) -> tuple[Path, Path] | None:
    """Make the interleaved runs; return the results dirs of A and B, or None when ``--skip-same-versions``
    finds nothing to compare (both sides have the same versions: no release since the pins)."""
    w = load_workload(args.workloads_dir, args.workload, args.steps)
    decs = [w.decomposition(d) for d in args.decomposition] if args.decomposition else list(w.decompositions)
    if args.repeats < 2:
        raise ValueError(f"--repeats must be at least 2 (the test needs two runs per side), got {args.repeats}")
    sides = {"a": (interpreter(args.python_a, "a"), 0.0), "b": (interpreter(args.python_b, "b"), args.inject_slowdown_b)}
    if args.skip_same_versions and not args.inject_slowdown_b and (same := same_versions(sides["a"][0], sides["b"][0])):
        msg = f"A and B have the same versions ({same}): nothing to compare, no runs made (--skip-same-versions)"
        out(msg)
        if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
            with open(summary, "a") as fh:
                fh.write(f"## A/B {w.name} on {args.gpu}\n\n{msg}\n")
        return None
    root = Path(args.results_dir)
    dirs = {s: root / s for s in sides}
    stamp = f"ab-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    out(f"A: {sides['a'][0]}\nB: {sides['b'][0]}" + (f" (+{args.inject_slowdown_b:.0%} injected)" if args.inject_slowdown_b else ""))
    total, n = 2 * args.repeats * len(decs), 0
    for rep in range(1, args.repeats + 1):
        for d in decs:
            for s in ("a", "b") if rep % 2 else ("b", "a"):
                python, slow = sides[s]
                n += 1
                rec = run_one(RunRequest(w, d, rep, inject_slowdown=slow, python=python), dirs[s], f"{stamp}-{s}", args.timeout, args.gpu)
                out(f"[{n}/{total}] {s.upper()} {w.name}-{d.id} run {rep}: {headline(rec)}")
    return dirs["a"], dirs["b"]
