"""Three evidence pages hold their figures as the output of their script over the compressed raw data beside them: a
change to the data, the statistics or the script that is not carried into the page turns this red. The scripts read the
data through ``docs/evidence/raw.py`` and use only the standard library, numpy, scipy and the stable statistics of
``harness.judging.stats`` and ``harness.judging.paired``, so that refactors of the commands leave them alone."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "docs" / "evidence"
PAGES = [  # (script, page whose text holds its output verbatim)
    ("h200-baseline-and-its-noise/leases.py", "h200-baseline-and-its-noise/README.md"),
    ("how-many-launches/launch_bound.py", "how-many-launches/README.md"),
    ("which-block-length/pair_noise.py", "which-block-length/README.md"),
]
STABLE = {"harness.judging.stats", "harness.judging.paired", "raw", "numpy", "scipy", "scipy.stats"}


@pytest.mark.parametrize("script, page", PAGES)
def test_page_holds_its_script_output_verbatim(script, page):
    out = subprocess.run(
        [sys.executable, str(EVIDENCE / script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        timeout=60,
    ).stdout
    assert out.strip() and out.strip() in (EVIDENCE / page).read_text(), (
        f"docs/evidence/{page} is out of date: paste the output of `python docs/evidence/{script}` into it"
    )


@pytest.mark.parametrize("script", [s for s, _ in PAGES])
def test_script_uses_only_stable_apis(script):
    tree = ast.parse((EVIDENCE / script).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    outside = sorted(m for m in names if m not in STABLE and m.split(".")[0] not in sys.stdlib_module_names)
    assert not outside, (
        f"{script} imports {outside}: read the data with raw.py and judge it with harness.judging.stats/paired"
    )
