"""``docs/api.md``'s example runs as written, on the CPU, against the project's workloads."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) == 1, "docs/api.md has one example"
    return blocks[0]


@pytest.mark.slow
def test_the_api_pages_example_runs_as_written(tmp_path):
    """Run from a folder of its own with the project's workloads beside it, as a user's script would."""
    (tmp_path / "workloads").symlink_to(ROOT / "workloads")
    script = tmp_path / "example.py"
    script.write_text(example())
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "aten ops per optimizer step:" in res.stdout and "\nregression " in res.stdout
    assert (tmp_path / "out" / "side-by-side" / "report.json").is_file() and (
        tmp_path / "out" / "judged" / "report.json"
    ).is_file()


def test_the_api_names_every_function_the_page_shows():
    from harness import api

    for name in re.findall(r"`api\.(\w+)\(", (ROOT / "docs" / "api.md").read_text()):
        assert callable(getattr(api, name, None)), f"docs/api.md shows api.{name}, which harness.api lacks"
