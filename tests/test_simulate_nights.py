""".ci/simulate-nights.py: simulated nights through the nightly's own store steps (.ci/run-workflow.py, a local bare git
repository as the store, the fake gh, artifacts that expire): nothing lost, the page from the store shows every night, a
census change opens one issue, a +10% shift that holds opens one on its 2nd night, a one-night spike none, no false
alarm. The default run is short (its first 20 nights straight into the store, 6 through the workflow); the 120 nights
are long."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "simulate-nights.py"


def simulate(tmp_path: Path, *args: str, timeout: int = 600) -> tuple[subprocess.CompletedProcess, list[dict], dict]:
    if shutil.which("git") is None or shutil.which("bash") is None or shutil.which("jq") is None:
        pytest.skip("the simulation needs git, bash and jq")
    out = tmp_path / "nights.jsonl"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--quiet", "--json", str(out), "--workdir", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [json.loads(ln) for ln in out.read_text().splitlines()] if out.is_file() else []
    return proc, [ln for ln in lines if "night" in ln], next((ln["summary"] for ln in lines if "summary" in ln), {})


def assert_verdicts(proc: subprocess.CompletedProcess, nights: list[dict], s: dict, n: int, aa: int) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert all(c["ok"] for c in s["checks"]), [c for c in s["checks"] if not c["ok"]]
    assert len(nights) == n and s["stored_sessions"] == n and s["page_nights"] == {"1x4": n, "2x2": n, "4x1": n}
    assert s["artifacts_left"] < n  # the page cannot come from the artifacts
    assert [k for k, _ in s["census_issues"]] == [aa + 1] and [k for k, _ in s["timing_issues"]] == [aa + 3]
    assert not s["spike_issues"] and not s["false_alarms"]
    assert max(nights[aa + 4]["factors"].values()) > 1.2  # the spike was there
    opened = [t for night in nights for t in night["issue_create"]]
    assert (
        len(opened) == 2
        and "env-census qwen3-1.7b-lora-1x4" in opened[0]
        and "env-timing qwen3-1.7b-lora-2x2" in opened[1]
    )


def test_simulated_nights_lose_nothing_and_alert_once_per_planted_change(tmp_path):
    proc, nights, s = simulate(tmp_path, "--nights", "26", "--aa", "20", "--prefill", "20", "--retention", "10")
    assert_verdicts(proc, nights, s, 26, 20)
    assert sum(night["job"] == "success" for night in nights) == 6
    assert "census change: issues opened    " in proc.stdout and "night 21" in proc.stdout  # the table


def test_simulate_nights_refuses_a_plan_with_no_room_for_its_effects(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--nights", "10", "--aa", "8"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "--nights >= aa + 6" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.long
def test_120_simulated_nights_through_the_nightly(tmp_path):
    """The issue's "Done when": 120 nights, every one through the workflow, artifacts kept 90 nights, 100 A/A nights."""
    proc, nights, s = simulate(tmp_path, timeout=1800)
    assert_verdicts(proc, nights, s, 120, 100)
    assert (
        s["artifacts_left"] == 90
        and s["aa_series_nights"] == 300
        and s["aa_false_alarms_per_series_365_nights"] <= s["alpha"]
    )
