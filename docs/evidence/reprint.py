"""Prints what the evidence pages' figures are made of, with this checkout's harness: the output of every page's script
that reads only its committed raw data, and the verdict, ratio and interval of every stored interleaved comparison
judged again (``reanalyse``). A change that must not move a figure (a refactor, a rename) is checked by running it
before and after the change and comparing the two outputs:

    python docs/evidence/reprint.py > /tmp/before.txt     # at the commit before the change
    python docs/evidence/reprint.py > /tmp/after.txt      # after it
    diff /tmp/before.txt /tmp/after.txt                   # empty: no figure moved

``--only NAME`` keeps the sections whose title contains NAME. The raw data is expanded into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]

import raw  # noqa: E402

# Scripts that print a page's figures from the data beside it, with no argument and no device.
SCRIPTS = (
    "does-the-bisect-name-a-memory-change/peaks.py",
    "does-the-cost-model-hold-on-changes-it-was-not-tuned-on/cases.py",
    "does-the-cost-model-hold-on-changes-it-was-not-tuned-on/unseen.py",
    "h200-baseline-and-its-noise/leases.py",
    "how-many-launches/launch_bound.py",
    "what-a-release-night-costs-on-an-h200/costs.py",
    "what-does-the-census-predict/critical_path.py",
    "what-does-the-census-predict/gpu_check.py",
    "what-does-the-census-predict/predict.py",
    "what-does-the-census-predict/yardstick.py",
    "which-block-length/pair_noise.py",
)


def script_output(script: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        timeout=900,
    )
    failed = f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}\n" if done.returncode else ""
    return done.stdout + failed


def reanalysed(data: Path) -> str:
    """One line per stored comparison that has a report: its verdict judged again from its blocks."""
    from harness.sidebyside.finish import reanalyse

    lines = []
    for blocks in sorted(data.glob("**/blocks.jsonl")):
        if not (blocks.parent / "report.json").exists():
            continue
        name = blocks.parent.relative_to(data)
        try:
            analysis = reanalyse(blocks.parent)
            v = (analysis.to_json() if hasattr(analysis, "to_json") else analysis).get("verdict") or {}
            lines.append(f"{name} {json.dumps({k: v.get(k) for k in ('outcome', 'ratio', 'lo', 'hi')})}")
        except Exception as e:  # a comparison the harness refuses: the refusal is the figure
            lines.append(f"{name} {type(e).__name__}: {str(e)[:200]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="the sections whose title contains this")
    args = ap.parse_args(argv)
    for script in SCRIPTS:
        if args.only in script:
            print(f"== {script}\n{script_output(script)}", flush=True)
    if args.only in "reanalyse":
        with tempfile.TemporaryDirectory() as tmp:
            for packed in sorted(HERE.glob("*/*.jsonl.gz")):
                raw.expand(packed, Path(tmp) / packed.parent.name / packed.name.removesuffix(".jsonl.gz"))
            print(f"== reanalyse every stored comparison\n{reanalysed(Path(tmp))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
