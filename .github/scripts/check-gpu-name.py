#!/usr/bin/env python3
"""Check a GPU name given to a workflow before a job waits for a runner labelled ``gpu-<name>``.

A job whose label no runner carries waits in the queue instead of failing, so a typo must be refused here. A name
passes when it is one the harness detects (``harness/measuring/env.py``: h200, l4, t4, rtx4090, a6000, v100, l40,
h800, gh200, ...), or when ``baselines/<name>/`` exists: an unlisted GPU is named by a slug of its full name
(``python -m harness doctor`` prints it), and its folder appears with its first baseline (the nightly's first night).
Usage: ``check-gpu-name.py NAME [--repeats N]``; exit 0 when fine, 2 with one ``::error::`` line when not.
Stdlib only, no torch: it runs on a hosted runner.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIN_REPEATS = 5  # harness.judging.baseline.MIN_REPEATS: the fewest runs per decomposition a baseline is recorded from
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*")  # what short_gpu_name gives: no path (., .., /), no space, no capital
NOT_GPUS = ("published",)  # folders of baselines/ that hold no GPU's baselines (published figures and their script)


def known_names() -> list[str]:
    """The short names the detector gives, in its order (without importing torch: env.py imports none at load)."""
    sys.path.insert(0, str(ROOT))
    from harness.measuring import env

    return [short for short, _ in env._SHORT]


def problem(name: str, repeats: str | None, baselines: Path = ROOT / "baselines") -> str | None:
    """None when ``name`` (and ``repeats``) may start the job; else the one line that says what is wrong and what to
    do."""
    known = known_names()
    if not SLUG.fullmatch(name) or name in NOT_GPUS:
        return (
            f"gpu {name!r} is not a GPU name (lower-case letters, digits, - and _, as `python -m harness doctor` "
            f"prints it; not {', '.join(NOT_GPUS)}); give the suffix of the runner's gpu-<name> label"
        )
    if name not in known and not (baselines / name).is_dir():
        return (
            f"gpu {name!r} is not a name the harness detects ({', '.join(known)}) and baselines/{name}/ does not "
            "exist; give the suffix of the runner's gpu-<name> label as `python -m harness doctor` prints it on that "
            "runner"
        )
    if repeats is not None and (not repeats.isdigit() or int(repeats) < MIN_REPEATS):
        return (
            f"repeats must be a whole number of at least {MIN_REPEATS} (a baseline's fewest runs per "
            f"decomposition), got {repeats!r}"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name")
    p.add_argument("--repeats", help="the runs per decomposition the job will record from")
    a = p.parse_args(argv)
    msg = problem(a.name, a.repeats)  # as given: "l4 " is no runner's label
    if msg:
        print(f"::error::{msg}")
        return 2
    print(f"gpu {a.name!r}: the job runs on the runner labelled gpu-{a.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
