"""The nightly's first night on a GPU (.github/scripts/first-night.py): a workload without a baseline there is recorded
from the pinned job's runs and proposed in one pull request per GPU (reused while open), the job stays green and its
summary says why; other jobs, and later nights, warn, and a regression issue repeats the warning. Checked with a fake gh
against a scratch git repository and made-up runs of the tiny CPU workload (no training). The newcomer's walk-through,
which runs the nightly's own steps after the README's, is the last test (slow: it trains)."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".github" / "scripts" / "first-night.py"
FAKE_BIN = ROOT / ".ci" / "fake-bin"
PR_URL = "https://github.com/newcomer/perf/pull/1"


def git(cwd: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def night(tmp_path, tiny, fake_runs):
    """``night(env, runs=5, open_prs=(), workloads=("tiny-qwen3",))``: run first-night.py in a checkout whose origin is
    a bare repository, after a suite session of ``runs`` runs per split; returns (exit code, output, gh calls,
    summary)."""
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("needs git and bash")
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(repo))
    (repo / "baselines" / "cpu").mkdir(parents=True)
    (repo / "baselines" / "cpu" / "other.json").write_text("{}\n")
    git(repo, "add", "baselines")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "push", "-q", "origin", "main")

    def run(env: str, runs: int = 5, open_prs: list[dict] = (), workloads=("tiny-qwen3",), phase: str = ""):
        results = repo / "perf-results"
        if phase != "propose":  # the propose phase reads what the record phase left (the perf job's artifact)
            shutil.rmtree(results, ignore_errors=True)
            results.mkdir()
            recs = fake_runs(tiny, [100.0 + i for i in range(runs)], workload_spec=tiny.to_dict())
            (results / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
            rows = [{"workload": w, "decomposition": d} for w in workloads for d in ("1x4", "2x2", "4x1")]
            (results / "report.json").write_text(json.dumps({"gpu": "cpu", "rows": rows, "verdicts": []}))
        log, prs, summary = tmp_path / "gh.log", tmp_path / "prs.json", tmp_path / "summary.md"
        for f in (log, summary):
            f.write_text("")
        prs.write_text(json.dumps(list(open_prs)))
        environ = dict(
            os.environ,
            PATH=f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}",
            FAKE_GH_LOG=str(log),
            FAKE_GH_PRS=str(prs),
            GH_REPO="newcomer/perf",
            PERF_GPU="cpu",
            PERF_ENV=env,
            PERF_REPEATS=str(runs),
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_REF_NAME="main",
            RUN_URL="https://github.com/newcomer/perf/actions/runs/7",
            PYTHONPATH=str(ROOT),
        )
        # the propose phase runs where nothing is installed: the standard library alone (-S), no harness on the path
        args = [sys.executable, str(SCRIPT)] if not phase else [sys.executable, str(SCRIPT), "--phase", phase]
        if phase == "propose":
            args.insert(1, "-S")
            environ.pop("PYTHONPATH")
        proc = subprocess.run(args, cwd=repo, env=environ, capture_output=True, text=True, timeout=120)
        calls = [json.loads(ln) for ln in log.read_text().splitlines()]
        return proc.returncode, proc.stdout + proc.stderr, calls, summary.read_text()

    run.repo, run.origin = repo, origin
    return run


def test_the_first_night_records_the_baseline_opens_one_pull_request_and_stays_green(night):
    code, out, calls, summary = night("pinned")
    assert code == 0, out
    assert [c[:2] for c in calls] == [["pr", "list"], ["pr", "create"]]
    create = calls[1]
    assert create[create.index("--head") + 1] == "baselines/first-cpu" and create[create.index("--base") + 1] == "main"
    line = next(ln for ln in summary.splitlines() if "tiny-qwen3" in ln)
    assert (
        "No baseline yet for `tiny-qwen3` on `cpu`: recorded one" in line
        and PR_URL in line
        and "once it is merged" in line
    )
    proposed = json.loads(git(night.origin, "show", "baselines/first-cpu:baselines/cpu/tiny-qwen3.json"))
    assert proposed["gpu"] == "cpu" and sorted(proposed["decompositions"]) == ["1x4", "2x2", "4x1"]
    assert all(len(d["runs"]) == 5 for d in proposed["decompositions"].values())
    assert (
        git(night.origin, "show", "baselines/first-cpu:baselines/cpu/other.json") == "{}"
    )  # on top of the checked-out commit
    # the checkout is as it was: the proposal lives on the branch and in the results (the artifact), not in baselines/
    assert (
        not (night.repo / "baselines" / "cpu" / "tiny-qwen3.json").exists()
        and git(night.repo, "status", "--porcelain", "baselines") == ""
    )
    assert (night.repo / "perf-results" / "first-baselines" / "cpu" / "tiny-qwen3.json").is_file()
    assert "tiny-qwen3" in (night.repo / "perf-results" / "missing-baselines.md").read_text()


def test_a_pull_request_already_open_is_not_doubled_and_the_night_warns(night):
    held = [
        {
            "number": 3,
            "url": "https://github.com/newcomer/perf/pull/3",
            "files": [{"path": "baselines/cpu/tiny-qwen3.json"}],
        }
    ]
    code, out, calls, summary = night("pinned", open_prs=held)
    assert code == 0, out
    assert [c[:2] for c in calls] == [["pr", "list"]]
    assert (
        ":warning: No baseline yet for `tiny-qwen3` on `cpu`" in summary
        and "/pull/3" in summary
        and "once it is merged" in summary
    )
    assert "baselines/first-cpu" not in git(night.origin, "branch", "--list")  # nothing pushed


def test_the_perf_job_records_with_no_token_and_the_publish_job_proposes_with_the_standard_library(night):
    code, out, calls, summary = night("pinned", phase="record")
    assert code == 0 and calls == [], out  # no gh, no push: the perf job holds no token
    assert "baselines/first-cpu" not in git(night.origin, "branch", "--list")
    assert "the publish job proposes it" in summary
    plan = json.loads((night.repo / "perf-results" / "first-baselines" / "plan.json").read_text())
    assert plan["workloads"] == ["tiny-qwen3"] and plan["table"]
    code, out, calls, summary = night("pinned", phase="propose")
    assert code == 0, out
    assert [c[:2] for c in calls] == [["pr", "list"], ["pr", "create"]] and PR_URL in summary
    proposed = json.loads(git(night.origin, "show", "baselines/first-cpu:baselines/cpu/tiny-qwen3.json"))
    assert proposed["gpu"] == "cpu" and PR_URL in (night.repo / "perf-results" / "missing-baselines.md").read_text()


def test_an_open_pull_request_without_a_new_workload_gets_it_and_a_comment(night):
    held = [
        {
            "number": 3,
            "url": "https://github.com/newcomer/perf/pull/3",
            "files": [{"path": "baselines/cpu/other-workload.json"}],
        }
    ]
    code, out, calls, summary = night("pinned", open_prs=held)
    assert code == 0, out
    assert [c[:3] for c in calls] == [["pr", "list", "--head"], ["pr", "comment", "3"]]
    assert "recorded one" in summary and "/pull/3" in summary
    assert "tiny-qwen3" in git(night.origin, "ls-tree", "-r", "--name-only", "baselines/first-cpu")


def test_the_latest_job_only_warns(night):
    code, out, calls, summary = night("latest")
    assert code == 0 and calls == [], out
    assert (
        ":warning: No baseline yet for `tiny-qwen3` on `cpu`" in summary
        and "pinned job records the first one" in summary
    )
    assert "::warning::" in out


def test_runs_that_cannot_be_a_baseline_make_the_job_red_and_say_why(night):
    code, out, calls, summary = night("pinned", runs=3)
    assert code == 1
    assert not [c for c in calls if c[:2] == ["pr", "create"]]
    assert ":x: No baseline yet for `tiny-qwen3` on `cpu`, and none was proposed" in summary and "at least 5" in summary
    assert "::error::" in out and len([ln for ln in out.splitlines() if ln.startswith("::error::")]) == 1


def test_a_gpu_with_every_baseline_is_left_alone(night):
    code, out, calls, summary = night("pinned", workloads=("other",))
    assert (code, calls, summary) == (0, [], "")


def test_a_regression_issue_repeats_the_missing_baseline_warning(tmp_path):
    if shutil.which("jq") is None:
        pytest.skip("the issue script needs jq")
    report = {
        "gpu": "l4",
        "rows": [],
        "versions": {},
        "verdicts": [{"kind": "equivalence", "case": "w", "outcome": "fail", "message": "losses differ"}],
    }
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "missing-baselines.md").write_text(
        "### Baselines on `l4` (pinned)\n\n- No baseline yet for `w` on `l4`: recorded one\n"
    )
    log = tmp_path / "gh.log"
    env = dict(
        os.environ,
        PATH=f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}",
        FAKE_GH_LOG=str(log),
        GH_TOKEN="x",
        PERF_ENV="pinned",
        REPORT=str(tmp_path / "report.json"),
    )
    proc = subprocess.run(
        ["bash", str(ROOT / ".github" / "scripts" / "regression-issues.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    create = next(json.loads(ln) for ln in log.read_text().splitlines() if json.loads(ln)[:2] == ["issue", "create"])
    assert "- No baseline yet for `w` on `l4`: recorded one" in create[create.index("--body") + 1]


def test_the_nightly_bootstraps_instead_of_requiring_a_baseline():
    """No --require-baseline in the nightly: the step after the suite records (pinned) or warns, whatever the suite's
    verdicts, as long as it wrote a report; the job may push a branch and open a pull request; confirmation runs only
    when the suite failed (not when the first night did)."""
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "reusable-nightly.yml").read_text())["jobs"]["perf"]
    steps = {s.get("name"): s for s in job["steps"]}
    names = list(steps)
    suite = steps["Run the performance suite"]
    assert "--require-baseline" not in suite["run"] and suite["id"] == "suite" and '"${workloads[@]}"' in suite["run"]
    first = steps["Record missing baselines (first night)"]
    assert (
        names.index("Run the performance suite")
        < names.index("Record missing baselines (first night)")
        < names.index("Confirm runtime regressions interleaved")
    )
    assert "!cancelled()" in first["if"] and "hashFiles('perf-results/report.json')" in first["if"]
    assert "first-night.py --phase record" in first["run"] and "GH_TOKEN" not in first.get("env", {})
    assert job["permissions"] == {"contents": "read"}
    publish = yaml.safe_load((ROOT / ".github" / "workflows" / "reusable-nightly.yml").read_text())["jobs"]["publish"]
    propose = next(s for s in publish["steps"] if s.get("name") == "Propose missing baselines (first night)")
    assert "first-night.py --phase propose" in propose["run"] and propose["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert publish["permissions"]["contents"] == "write" and publish["permissions"]["pull-requests"] == "write"
    assert "steps.suite.outcome == 'failure'" in steps["Confirm runtime regressions interleaved"]["if"]
    assert (
        job["env"]["NIGHT_INPUTS"] == "${{ toJSON(inputs) }}" and "PERF_WORKLOADS" not in job["env"]
    )  # the plan sets it


def test_run_workflow_runs_a_jobs_steps_as_a_runner_would(tmp_path):
    """.ci/run-workflow.py: env and ${{ }} from matrix, inputs (with their defaults) and earlier steps; if: with
    success() implied, failure() and always(); a failed step fails the job; the summary file and GITHUB_OUTPUT work;
    uses: steps are not run."""
    wf = tmp_path / "wf.yml"
    wf.write_text("""
on:
  workflow_dispatch:
    inputs:
      n: {type: string, default: "3"}
env: {TOP: top}
jobs:
  j:
    env: {GPU: "${{ matrix.gpu }}", N: "${{ inputs.n || '9' }}"}
    steps:
      - uses: actions/checkout@v4
      - id: a
        run: echo "v=$GPU-$N-$TOP" >> "$GITHUB_OUTPUT"; echo "hello" >> "$GITHUB_STEP_SUMMARY"
      - name: uses an output
        env: {V: "${{ steps.a.outputs.v }}"}
        run: test "$V" = cpu-3-top && test "${{ matrix.gpu }}" = cpu
      - name: only on latest
        if: matrix.env == 'latest'
        run: exit 1
      - name: breaks
        run: "false"
      - name: after a failure
        run: echo skipped
      - name: on failure
        if: failure()
        run: echo "failure seen" >> "$GITHUB_STEP_SUMMARY"
""")
    out = tmp_path / "outcomes.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / ".ci" / "run-workflow.py"),
            str(wf),
            "j",
            "--matrix",
            "gpu=cpu",
            "--matrix",
            "env=pinned",
            "--summary",
            str(tmp_path / "s.md"),
            "--outcomes",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    outcomes = [o["outcome"] for o in json.loads(out.read_text())]
    assert outcomes == ["skipped", "success", "success", "skipped", "failure", "skipped", "success"], proc.stdout
    assert (tmp_path / "s.md").read_text() == "hello\nfailure seen\n"
    typo = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "run-workflow.py"), str(wf), "j", "--skip-step", "brakes"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert typo.returncode == 2 and "--skip-step 'brakes': no such step" in typo.stderr
    ex = load_script(ROOT / ".ci" / "run-workflow.py").Expressions(
        {"inputs": {"r": None}, "matrix": {"env": "latest"}}, tmp_path
    )
    assert ex.value("${{ inputs.r || '5' }}") == "5" and ex.value("!cancelled() && matrix.env == 'latest'") is True
    assert ex.value("hashFiles('nothing/*.json') != ''") is False and ex.value("fromJSON('[\"l4\"]')") == ["l4"]


# CI runs the walk-through as a step of its own, after the self-tests (.ci/run); here it is one of the long tests
@pytest.mark.long
def test_a_newcomers_walkthrough_from_the_readme_to_a_green_first_night(tmp_path):
    """.ci/walkthrough.sh: clone, the CPU quick start, a workload of one's own (baseline and A/A), doctor, then the
    nightly's pinned job steps on a runner without a baseline: green, a baseline pull request opened, the summary says
    why."""
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("needs git and bash")
    env = dict(
        os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", WALKTHROUGH_FROM="tree"
    )
    env.pop("PYTHONPATH", None)
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(ROOT / ".ci" / "walkthrough.sh"), str(tmp_path / "walk")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(proc.stdout[-6000:], proc.stderr[-3000:], f"\nwall {time.monotonic() - t0:.0f} s")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "walkthrough: all steps passed" in proc.stdout
