"""A night that survives a bad workload: three workloads named for the night (nightly.toml's [gpu.cpu]), one whose local
JSONL was edited under its pinned data.digest and one with a typo in its TOML. The pinned job's steps in turn, as the
nightly runs them: the plan, the suite (--workload for each, on the fake runner: no training), the results store and
the regression-issue script with the fake gh of .ci/fake-bin. The good workload is measured and stored; the two others
are named with their reasons in the job summary, the report, the store record and one issue each; the suite fails."""

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scripts import load_script

from harness.inputs import data_digest
from harness.judging import baseline as bl
from harness.results.run import Run
from harness.spec import Workload

ROOT = Path(__file__).resolve().parent.parent
night_plan = load_script(ROOT / ".github" / "scripts" / "night-plan.py")
FAKE_BIN = ROOT / ".ci" / "fake-bin"
NIGHTLY = """\
gpus = ["l4"]
workloads = ["tiny-qwen3"]

[gpu.cpu]
workloads = ["tiny-qwen3", "chat", "typo"]
"""
CHATS = [
    {"messages": [{"role": "user", "content": f"w{i} w2"}, {"role": "assistant", "content": "w3 w4"}]} for i in range(6)
]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def night(cut_splits, fake_runs, monkeypatch):
    """The project as the runner checks it out: a baseline of tiny-qwen3 merged, chat's data edited since its digest
    was pinned, typo.toml not TOML; the job's files ($GITHUB_ENV, $GITHUB_OUTPUT, the summary) in the environment."""
    project = cut_splits(("4x1",))
    root = project.path
    tiny = Workload.load(root / "workloads" / "tiny-qwen3.toml")
    bl.write(
        root / "baselines", bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100.0] * 5)], "cmd")
    )
    (root / "data").mkdir()
    (root / "data" / "chat.jsonl").write_text(jsonl(CHATS))
    text = (root / "workloads" / "tiny-qwen3.toml").read_text().replace('name = "tiny-qwen3"', 'name = "chat"')
    chat = text.replace(
        'source = "synthetic"\nnum_samples = 64', 'source = "local"\nid = "data/chat.jsonl"\nnum_samples = 4'
    )
    (root / "workloads" / "chat.toml").write_text(chat)
    digest = Workload.load(root / "workloads" / "chat.toml").data.digest
    (root / "workloads" / "chat.toml").write_text(
        chat.replace("num_samples = 4", f'num_samples = 4\ndigest = "{digest}"')
    )
    (root / "data" / "chat.jsonl").write_text(jsonl([*CHATS[:5], {"messages": CHATS[5]["messages"][:1]}]))
    (root / "workloads" / "typo.toml").write_text(text.replace('name = "chat"', 'name = "typo'))  # no closing quote
    (root / "nightly.toml").write_text(NIGHTLY)
    for name in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        (root / name.lower()).write_text("")
        monkeypatch.setenv(name, str(root / name.lower()))
    monkeypatch.setenv("PERF_GPU", "cpu")
    monkeypatch.setenv("PERF_ENV", "pinned")
    monkeypatch.delenv("NIGHT_INPUTS", raising=False)
    monkeypatch.chdir(root)
    return project


def test_one_bad_workload_costs_the_night_that_workload_only(night, fake_runner, tmp_path, capsys):
    if shutil.which("bash") is None or shutil.which("jq") is None:
        pytest.skip("the issue script needs bash and jq")
    root = night.path

    # the plan: every workload planned on its own, the two broken ones named with their lines, none refused
    assert night_plan.main([]) == 0
    assert not [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("::error::")]
    env = dict(ln.split("=", 1) for ln in (root / "github_env").read_text().splitlines())
    out = dict(ln.split("=", 1) for ln in (root / "github_output").read_text().splitlines())
    assert env["PERF_WORKLOADS"] == "tiny-qwen3 chat typo" and (out["suite"], out["repeats"]) == ("true", "1")
    plan = (root / "github_step_summary").read_text()
    assert "- chat: BROKEN, not measured (the suite fails one item and one verdict for it" in plan
    assert "- typo: BROKEN, not measured" in plan and "workloads/typo.toml: not valid TOML" in plan

    # the suite, as the step runs it: one --workload each; the good one measured, the two others failed items
    calls = []
    fake_runner({"4x1": [100.0]}, calls)
    named = [a for w in env["PERF_WORKLOADS"].split() for a in ("--workload", w)]
    suite = night.runpytest(
        "perftests", "--gpu", "cpu", "--results-dir", "perf-results", *named, "--repeats", out["repeats"],
        "--census", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert suite.ret == 1, suite.stdout.str()  # failed, not a usage error: the night went on
    suite.stdout.fnmatch_lines_random(
        [
            "FAILED workloads/chat.toml::bad-workload - Failed: data.digest pins sha256:*",
            "FAILED workloads/typo.toml::bad-workload - Failed: not valid TOML*",
        ]
    )
    assert calls == [("4x1", 1), ("4x1", 1)]  # tiny-qwen3's timed run, then its census run
    report = json.loads((root / "perf-results" / "report.json").read_text())
    assert [r["workload"] for r in report["rows"]] == ["tiny-qwen3"]
    bad = {v["case"]: v["message"] for v in report["verdicts"] if v["kind"] == "bad-workload"}
    assert set(bad) == {"chat", "typo"} and all(v["outcome"] == "fail" for v in report["verdicts"] if v["case"] in bad)
    assert f'take the new content with data.digest = "{data_digest(str(root / "data" / "chat.jsonl"))}"' in bad["chat"]
    assert bad["typo"].startswith("not run: workloads/typo.toml: not valid TOML")
    summary = (root / "github_step_summary").read_text()
    assert (
        summary.startswith("### Tonight's plan: cpu pinned")
        and "**FAILED: bad-workload chat, bad-workload typo" in summary
    )
    assert f"- **fail** bad-workload `chat`: {bad['chat']}" in summary

    # the results store: tonight's session with the good workload's runs and the two failed verdicts
    from harness.commands import cli

    (tmp_path / "store").mkdir()
    assert cli.main(["store", "add", "perf-results", "--store", str(tmp_path / "store"), "--track", "pinned"]) == 0
    (stored,) = (tmp_path / "store").rglob("*.json.gz")
    record = json.loads(gzip.decompress(stored.read_bytes()))
    assert {c["workload"] for c in record["cases"]} == {"tiny-qwen3"}
    assert {(v["kind"], v["case"], v["outcome"]) for v in record["verdicts"] if v["kind"] == "bad-workload"} == {
        ("bad-workload", "chat", "fail"),
        ("bad-workload", "typo", "fail"),
    }

    # the regression issues: one per broken workload, its reason in the body
    log = tmp_path / "gh.log"
    log.write_text("")
    issues = subprocess.run(
        ["bash", str(ROOT / ".github" / "scripts" / "regression-issues.sh")],
        env=dict(
            os.environ,
            PATH=f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}",
            FAKE_GH_LOG=str(log),
            GH_TOKEN="x",
            REPORT=str(root / "perf-results" / "report.json"),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert issues.returncode == 0, issues.stdout + issues.stderr
    created = {
        c[c.index("--title") + 1]: c[c.index("--body") + 1]
        for c in map(json.loads, log.read_text().splitlines())
        if c[:2] == ["issue", "create"]
    }
    assert set(created) == {
        "perf regression: cpu pinned bad-workload chat",
        "perf regression: cpu pinned bad-workload typo",
    }
    assert bad["chat"] in created["perf regression: cpu pinned bad-workload chat"]
    assert "workloads/typo.toml: not valid TOML" in created["perf regression: cpu pinned bad-workload typo"]
