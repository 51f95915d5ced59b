"""The published GPU figures are the output of their script over the committed raw runs: a change to
the raw data, the statistics or the script that is not carried into the page turns this red."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_h200_page_holds_the_figures_script_output_verbatim():
    out = subprocess.run([sys.executable, "docs/results/h200_figures.py", "docs/results/h200-raw"], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout
    page = (ROOT / "docs/results/h200.md").read_text()
    assert out.strip() and out.strip() in page, (
        "docs/results/h200.md is out of date: paste the output of "
        "`python docs/results/h200_figures.py docs/results/h200-raw` into its Figures section")


def test_census_page_holds_the_figures_script_output_verbatim():
    out = subprocess.run([sys.executable, "docs/results/census_figures.py", "docs/results/census-h200"], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout
    page = (ROOT / "docs/results/census-h200/README.md").read_text()
    assert out.strip() and out.strip() in page, (
        "docs/results/census-h200/README.md is out of date: paste the output of "
        "`python docs/results/census_figures.py docs/results/census-h200` into its Figures section")
