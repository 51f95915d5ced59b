import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def perf_project(pytester, monkeypatch):
    """A pytester directory laid out like the repo: conftest, perftests/, the tiny workload, empty baselines/."""
    shutil.copy(ROOT / "conftest.py", pytester.path / "conftest.py")
    shutil.copytree(ROOT / "perftests", pytester.path / "perftests", ignore=shutil.ignore_patterns("__pycache__"))
    (pytester.path / "workloads").mkdir()
    shutil.copy(ROOT / "workloads" / "tiny-qwen3.toml", pytester.path / "workloads")
    (pytester.path / "baselines").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("HARNESS_FAULTS", raising=False)
    return pytester
