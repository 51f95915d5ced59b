"""The published GPU figures are the output of their script over the committed raw runs: a change to
the raw data, the statistics or the script that is not carried into the page turns this red."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script, raw, page", [
    ("docs/results/h200_figures.py", "docs/results/h200-raw", "docs/results/h200.md"),
    ("docs/results/census_figures.py", "docs/results/census-h200", "docs/results/census-h200/README.md"),
    ("docs/results/interleave-h200/launch_bound.py", "-", "docs/results/interleave-h200/launch_bound.txt"),
    ("docs/results/interleave-h200/calibrated/pair_level.py", "-", "docs/results/interleave-h200/calibrated/pair_level.txt"),
    ("docs/results/interleave-cpu/micro-s12/table.py", "-", "docs/results/interleave-cpu/micro-s12/table.txt"),
    ("docs/results/interleave-h200/session13/analyse.py", "-", "docs/results/interleave-h200/session13/analysis.txt"),
    ("docs/results/interleave-cpu/plan-s13/table.py", "-", "docs/results/interleave-cpu/plan-s13/table.txt"),
    ("docs/results/interleave-h200/session14/analyse.py", "-", "docs/results/interleave-h200/session14/analysis.txt"),
    ("docs/results/interleave-h200/session15/analyse.py", "-", "docs/results/interleave-h200/session15/analysis.txt"),
    ("docs/results/interleave-h200/session16/analyse.py", "-", "docs/results/interleave-h200/session16/analysis.txt"),
    ("docs/results/interleave-h200/session16/block_metric.py", "-", "docs/results/interleave-h200/session16/block_metric.txt"),
    ("docs/results/interleave-h200/session17/analyse.py", "-", "docs/results/interleave-h200/session17/analysis.txt"),
    ("docs/results/interleave-h200/session19/analyse.py", "-", "docs/results/interleave-h200/session19/analysis.txt"),
    ("docs/results/interleave-h200/session20/analyse.py", "-", "docs/results/interleave-h200/session20/analysis.txt"),
])
def test_page_holds_the_figures_script_output_verbatim(script, raw, page):
    out = subprocess.run([sys.executable, script, raw], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout
    assert out.strip() and out.strip() in (ROOT / page).read_text(), (
        f"{page} is out of date: paste the output of `python {script} {raw}` into its Figures section")
