import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.spec import Workload

ROOT = Path(__file__).resolve().parent.parent


def write_runs(d: Path, records):
    d.mkdir(parents=True, exist_ok=True)
    (d / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def harness(*args, cwd, env_extra=None):
    """The CLI run in ``cwd`` as its project (HARNESS_ROOT): its default baselines/ and perf-results/ are there, not the
    repo's."""
    env = {**os.environ, "HARNESS_ROOT": str(cwd), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, env=env)


def test_baseline_update_from_two_sessions(tmp_path, fake_runs):
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    spec = {"workload_spec": w.to_dict()}
    a = fake_runs(w, [100, 101, 99], **spec)
    b = [dict(r, session_id="s2", run_id=r["run_id"] + "b") for r in fake_runs(w, [100, 102], **spec)]
    write_runs(tmp_path / "s1", a)
    write_runs(tmp_path / "s2", b)
    one = harness("baseline", "update", "s1", "--gpu", "cpu", cwd=tmp_path)
    assert one.returncode == 2 and one.stderr.startswith(
        "error: refusing to record a baseline for tiny-qwen3: 1x4 has 3 run(s)"
    )
    assert not (tmp_path / "baselines").exists()
    both = harness("baseline", "update", "s1", "s2", "--gpu", "cpu", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    assert "tiny-qwen3 1x4" in both.stdout and "written:" in both.stdout
    data = json.loads((tmp_path / "baselines" / "cpu" / "tiny-qwen3.json").read_text())
    assert data["provenance"]["sessions"] == ["s", "s2"] and "gathered over 2 sessions" in data["provenance"]["note"]
    wrong = harness("baseline", "update", "s1", "--gpu", "l4", cwd=tmp_path)
    assert wrong.returncode == 2 and "no runs on l4" in wrong.stderr and "found cpu" in wrong.stderr


def test_compare_refuses_different_specs(tmp_path, fake_runs):
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    w30 = w.with_overrides(max_steps=30)
    write_runs(tmp_path / "a", fake_runs(w, [100] * 5, workload_spec=w.to_dict()))
    write_runs(tmp_path / "b", fake_runs(w30, [100] * 5, workload_spec=w30.to_dict()))
    res = harness("compare", "a", "b", cwd=tmp_path)
    assert res.returncode == 2 and "tiny-qwen3 differs between A and B: train.max_steps: 20 -> 30" in res.stderr
    missing = harness("compare", "a", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere: no runs.jsonl here" in missing.stderr


def test_compare_against_a_committed_baseline_file(tmp_path, fake_runs):
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    spec = {"workload_spec": w.to_dict()}
    write_runs(tmp_path / "rec", fake_runs(w, [100, 101, 99, 100, 102], **spec))
    assert harness("baseline", "update", "rec", "--gpu", "cpu", cwd=tmp_path).returncode == 0
    base = "baselines/cpu/tiny-qwen3.json"
    write_runs(
        tmp_path / "same",
        [dict(r, run_id="same-" + r["run_id"]) for r in fake_runs(w, [100, 99, 101, 100, 100], **spec)],
    )
    write_runs(
        tmp_path / "slow",
        [dict(r, run_id="slow-" + r["run_id"]) for r in fake_runs(w, [130, 131, 129, 130, 132], **spec)],
    )
    same = harness("compare", base, "same", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "A (baseline): baselines/cpu/tiny-qwen3.json" in same.stdout and "regression" not in same.stdout
    slow = harness("compare", base, "slow", cwd=tmp_path)
    assert slow.returncode == 1 and slow.stdout.count("REGRESSION: steady-state median step time x1.299") == 3
    other = tmp_path / "baselines" / "l4"
    other.mkdir()
    (other / "tiny-qwen3.json").write_text((tmp_path / base).read_text())
    gpu = harness("compare", "baselines/l4/tiny-qwen3.json", "same", cwd=tmp_path)
    assert gpu.returncode == 2 and "was recorded on l4 but B ran on cpu" in gpu.stderr
    w30 = w.with_overrides(max_steps=30)
    write_runs(tmp_path / "longer", fake_runs(w30, [100] * 5, workload_spec=w30.to_dict()))
    changed = harness("compare", base, "longer", cwd=tmp_path)
    assert changed.returncode == 2 and "train.max_steps: 20 -> 30" in changed.stderr
    itself = harness("report", "rec", "--out", "rep", cwd=tmp_path)
    assert itself.returncode == 0 and "these runs of tiny-qwen3 are its baseline" in itself.stdout
    assert "REGRESSION" in harness("report", "slow", "--out", "rep3", cwd=tmp_path).stdout


@pytest.mark.slow
@pytest.mark.long
def test_ab_interleaves_two_environments_on_one_machine(tmp_path):
    """Both sides on this interpreter, B slowed by 150% (so that even a busy 2-core machine, where 3 runs per side vary
    by up to 30%, leaves no doubt): runs alternate A B / B A, and B is judged a regression against A."""
    common = (
        "ab",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--steps",
        "10",
        "--decomposition",
        "4x1",
        "--results-dir",
        "ab",
    )
    bad = harness(*common, "--python-b", str(tmp_path / "no-such-python"), cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip().endswith(
        "not an executable Python; pass e.g. .tox/latest/bin/python"
    )
    res = harness(*common, "--repeats", "3", "--python-b", sys.executable, "--inject-slowdown-b", "1.5", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "REGRESSION: steady-state median step time" in res.stdout and "same as the baseline" in res.stdout
    recs = sorted(
        (json.loads(x) for s in "ab" for x in (tmp_path / "ab" / s / "runs.jsonl").read_text().splitlines()),
        key=lambda r: r["started_at"] + r["run_id"],
    )
    sides = ["b" if r["inject_slowdown"] else "a" for r in recs]
    assert sides == ["a", "b", "b", "a", "a", "b"]
    assert len({r["env"]["boot_id"] for r in recs}) == 1  # one machine: the run stays the unit
    assert (tmp_path / "ab" / "report.md").exists()
    js = json.loads((tmp_path / "ab" / "report.json").read_text())  # what the regression-issue script reads
    assert {v["outcome"] for v in js["verdicts"] if v["kind"] == "runtime"} == {"regression"}


def test_ab_makes_no_runs_when_both_sides_have_the_same_versions(tmp_path, monkeypatch):
    """The nightly A/B costs GPU time only when `latest` resolved to something new."""
    summary = tmp_path / "summary.md"
    same = harness(
        "ab",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        "ab",
        "--python-b",
        sys.executable,
        "--skip-same-versions",
        cwd=tmp_path,
        env_extra={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert same.returncode == 0, same.stdout + same.stderr
    assert (
        "A and B have the same versions (python " in same.stdout and "nothing to compare, no runs made" in same.stdout
    )
    assert not (tmp_path / "ab").exists() and "nothing to compare" in summary.read_text()

    from harness.measuring import interpreters as ab

    real = ab.side_versions
    seen = iter([{"python": "3.11.9", "trl": "1.16.0"}, {"python": "3.11.9", "trl": "1.17.0"}])
    monkeypatch.setattr(ab, "side_versions", lambda python, side: next(seen))
    assert ab.same_versions("a", "b") is None  # a new trl: the A/B runs
    monkeypatch.setattr(
        ab, "side_versions", lambda python, side: {"python": "3.11.9", "trl": "1.16.0", "datasets": None}
    )
    assert ab.same_versions("a", "b") == "python 3.11.9, trl 1.16.0"
    broken = tmp_path / "python-without-harness"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named harness' >&2; exit 1\n")
    broken.chmod(0o755)
    with pytest.raises(
        ValueError,
        match="cannot report its versions .ModuleNotFoundError: No module named harness.; install this project",
    ):
        real(str(broken), "b")


@pytest.mark.parametrize(
    "cmd", [["census"], ["ab", "--python-b", "py"], ["calibrate"], ["advise"], ["interleave", "--decomposition", "4x1"]]
)
def test_commands_that_run_here_detect_the_gpu_by_default(cmd):
    from harness.commands.cli import parser

    args = parser().parse_args([cmd[0], "--workload", "tiny-qwen3", *cmd[1:]])
    assert args.gpu == "auto"
