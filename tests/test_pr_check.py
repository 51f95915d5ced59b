"""The pull-request check (.github/workflows/pr-check.yml): its jobs run here through .ci/run-workflow.py with a
pull_request event, the fake gh (.ci/fake-bin/gh, which keeps the comments and statuses it is sent) and the tox shim.

A pull request that bumps a pin gets one comment (created, then edited on the next run, never a second) with a table
per GPU and a status per GPU; a fork's pull request is refused before any GPU step; a regression fails the status and
the accept label passes it, saying so; hostile titles, branch names and labels reach no command line. The GPU job's
measurements are stand-ins here (reports as pr-measure.py leaves them) except in the last test, which measures the tiny
CPU workload for real (slow)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "pr-check.yml"  # the trigger; its one job calls the reusable workflow
REUSABLE = ROOT / ".github" / "workflows" / "reusable-pr-check.yml"  # the jobs
FAKE_BIN = ROOT / ".ci" / "fake-bin"
HEAD_SHA, BASE_SHA = "a" * 40, "b" * 40

SETTINGS = """\
gpus = ["cpu", "l4"]
workloads = ["qwen3-1.7b-lora"]

[pr]
decompositions = ["4x1"]
budget_minutes = 0.5

[budgets]
bisect_minutes = 1

[gpu.cpu]
workloads = ["tiny-qwen3"]
"""
BUMP = [{"filename": "constraints/pinned.txt", "status": "modified"}]


def pull_request(
    title="Bump transformers to 5.18.0",
    ref="bump-transformers",
    labels=("perf-check",),
    head_repo="owner/repo",
    action="labeled",
    added="perf-check",
) -> dict:
    """A pull_request event's payload, as GitHub sends it (the fields the workflow reads)."""
    pr = {
        "number": 7,
        "title": title,
        "body": f"body of {title}",
        "labels": [{"name": n} for n in labels],
        "head": {"ref": ref, "sha": HEAD_SHA, "repo": {"full_name": head_repo}},
        "base": {"ref": "main", "sha": BASE_SHA, "repo": {"full_name": "owner/repo"}},
    }
    return {"action": action, "number": 7, "label": {"name": added}, "pull_request": pr}


@pytest.fixture
def checkout(tmp_path):
    """The pull request's checkout (its pins bumped) with the base branch's in base/, as the GPU job has them."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    ws = tmp_path / "ws"
    for where, pins in ((ws, "transformers==5.18.0\n"), (ws / "base", "transformers==5.17.0\n")):
        where.mkdir(parents=True)
        for d in ("harness", "workloads", ".github", ".ci", "perftests"):
            (where / d).symlink_to(ROOT / d)
        (where / "nightly.toml").write_text(SETTINGS)
        (where / "constraints").mkdir()
        (where / "constraints" / "pinned.txt").write_text(pins)
    return ws


def run_job(ws: Path, job: str, event: dict, *, needs: dict | None = None, files=BUMP, skip=(), name="run") -> dict:
    """One job of pr-check.yml in ``ws``: its exit, step outcomes, outputs, output, the gh calls and the commands bash
    ran."""
    tmp = ws.parent
    (tmp / f"{name}-event.json").write_text(json.dumps(event))
    (tmp / "files.json").write_text(json.dumps(files))
    (tmp / f"{name}-needs.json").write_text(json.dumps(needs or {}))
    trace = tmp / f"{name}-trace.log"
    (tmp / "xtrace.sh").write_text(
        f'exec {{BASH_XTRACEFD}}>>"{trace}"\nset -x\n'
    )  # every command line bash runs, expanded
    log = tmp / "gh.log"
    log.touch()
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(FAKE_BIN), str(Path(sys.executable).parent), os.environ["PATH"]]),
        FAKE_GH_LOG=str(log),
        FAKE_GH_PR_FILES=str(tmp / "files.json"),
        BASH_ENV=str(tmp / "xtrace.sh"),
        HF_HUB_OFFLINE="1",
    )
    for var in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "PR_WORKLOADS", "PERF_GPU"):
        env.pop(var, None)
    cmd = [
        sys.executable,
        str(ROOT / ".ci" / "run-workflow.py"),
        str(WORKFLOW),
        job,
        "--event",
        str(tmp / f"{name}-event.json"),
        "--needs",
        str(tmp / f"{name}-needs.json"),
        "--outcomes",
        str(tmp / f"{name}-outcomes.json"),
        "--job-outputs",
        str(tmp / f"{name}-outputs.json"),
        "--summary",
        str(tmp / f"{name}-summary.md"),
        *[a for s in skip for a in ("--skip-step", s)],
    ]
    if job == "check":
        cmd += ["--matrix", "gpu=cpu"]
    proc = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=900)

    def read(p: Path):
        return json.loads(p.read_text()) if p.exists() else None

    return {
        "code": proc.returncode,
        "out": proc.stdout + proc.stderr,
        "outcomes": read(tmp / f"{name}-outcomes.json") or [],
        "outputs": read(tmp / f"{name}-outputs.json") or {},
        "gh": [json.loads(ln) for ln in log.read_text().splitlines()],
        "trace": trace.read_text() if trace.exists() else "",
        "summary": (tmp / f"{name}-summary.md").read_text(),
    }


def plan_needs(result: dict, outcome: str = "success") -> dict:
    return {"plan": {"result": outcome, "outputs": result["outputs"]}}


def stand_in_results(
    ws: Path,
    gpu: str,
    *,
    ratio: float = 1.004,
    lo: float = 0.99,
    hi: float = 1.018,
    outcome: str = "pass",
    work: str = "pass",
    bisect: dict | None = None,
) -> None:
    """The artifact of one GPU job, as pr-measure.py leaves it, where the report job's download puts it:
    pr-results/pr-check-<gpu>/."""
    root = ws / "pr-results" / f"pr-check-{gpu}"
    w = "tiny-qwen3" if gpu == "cpu" else "qwen3-1.7b-lora"
    steps = {
        "census-a": 0,
        "census-b": 0,
        "census": 1 if work != "pass" else 0,
        "ab/4x1": 1 if outcome == "regression" else 0,
    }
    (root / w / "census").mkdir(parents=True)
    (root / "pr-check.json").write_text(json.dumps({"gpu": gpu, "pins": True, "workloads": {w: {"steps": steps}}}))
    work_msg = (
        "pass: the same work"
        if work == "pass"
        else "WORK CHANGED: aten ops per optimizer step 5,120 -> 5,232 (+112): aten::_to_copy +112"
    )
    census = {
        "rows": [
            {"workload": w, "decomposition": d, "peak_reserved_gib": {"median": 12.5, "n": 1} if gpu != "cpu" else None}
            for d in ("1x4", "4x1")
        ],
        "verdicts": [{"kind": "work", "case": f"{w}-{d}", "outcome": work, "message": work_msg} for d in ("1x4", "4x1")]
        + [{"kind": "memory", "case": f"{w}-{d}", "outcome": "pass", "message": "ok"} for d in ("1x4", "4x1")]
        + [{"kind": "equivalence", "case": w, "outcome": "pass", "message": "losses of 1x4 and 4x1 agree"}],
        "versions": {"transformers": "5.18.0"},
        "baseline_versions": {w: {"transformers": "5.17.0"}},  # per workload, as the report keeps them
    }
    (root / w / "census" / "report.json").write_text(json.dumps(census))
    (root / w / "ab" / "4x1").mkdir(parents=True)
    ab = {
        "verdict": {"outcome": outcome, "message": f"{outcome}: B/A x{ratio}", "ratio": ratio, "lo": lo, "hi": hi},
        "prediction": {"delta_pct": 5.2, "lo": 1.8, "hi": 8.6},
    }
    (root / w / "ab" / "4x1" / "report.json").write_text(json.dumps(ab))
    if bisect:
        (root / w / "bisect").mkdir()
        (root / w / "bisect" / "report.json").write_text(json.dumps(bisect))


def check_run(ws: Path, event: dict, name: str = "run", **results) -> dict:
    """The plan job, then the report job over stand-in results of both GPUs: what the report job did."""
    plan = run_job(ws, "plan", event, name=f"{name}-plan")
    assert plan["code"] == 0 and plan["outputs"]["run"] == "true", plan["out"]
    shutil.rmtree(ws / "pr-results", ignore_errors=True)
    for gpu in ("cpu", "l4"):
        stand_in_results(ws, gpu, **results.get(gpu, {}))
    return run_job(ws, "report", event, needs={**plan_needs(plan), "check": {"result": "success"}}, name=name)


def dispatches(run: dict) -> list[list[str]]:
    """The arguments of each ``gh workflow run update-baselines.yml`` made so far (the fake gh's log of the test)."""
    return [c[3:] for c in run["gh"] if c[:3] == ["workflow", "run", "update-baselines.yml"]]


def comments(ws: Path) -> list[dict]:
    return json.loads((ws.parent / "gh.log.state.json").read_text())["comments"]


def statuses(ws: Path) -> list[dict]:
    return json.loads((ws.parent / "gh.log.state.json").read_text())["statuses"]


def test_the_workflow_is_valid_and_runs_only_the_base_branch_s_code_on_hosted_runners():
    from test_workflows import validate

    proc = validate(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wf = yaml.safe_load(WORKFLOW.read_text())
    trigger = wf[True]["pull_request"]  # YAML 1.1 reads `on` as True
    # no paths filter: the plan decides from the pull request's files, the workload files and the files they name
    assert "pull_request_target" not in wf[True] and not {"paths", "paths-ignore"} & set(trigger)
    assert wf["jobs"] == {"check": {"uses": "./.github/workflows/reusable-pr-check.yml"}}
    jobs = yaml.safe_load(REUSABLE.read_text())["jobs"]
    assert jobs["plan"]["runs-on"] == jobs["report"]["runs-on"] == "ubuntu-latest"
    for job in ("plan", "report"):
        assert jobs[job]["steps"][0]["with"]["ref"] == "${{ github.event.pull_request.base.sha }}", job
    assert "github.event.pull_request.head.repo.full_name == github.repository" in jobs["check"]["if"]
    assert jobs["check"]["needs"] == "plan" and jobs["check"]["permissions"] == {"contents": "read"}
    assert all(
        s.get("with", {}).get("persist-credentials") is False
        for j in jobs.values()
        for s in j["steps"]
        if "checkout" in s.get("uses", "")
    )


def test_a_pin_bump_gets_one_comment_created_then_edited_and_a_status_per_gpu(checkout):
    first = check_run(checkout, pull_request(), name="first")
    assert first["code"] == 0, first["out"]
    assert "comment created" in first["out"]
    [comment] = comments(checkout)
    body = comment["body"]
    assert (
        body.startswith("<!-- perf-check -->\n")
        and "### cpu: :white_check_mark: no regression" in body
        and "### l4:" in body
    )
    assert "| tiny-qwen3 | 4x1 | pass | +0.4% [-1.0%, +1.8%] | +5.2% [+1.8%, +8.6%] | pass | same |" in body
    assert (
        "| qwen3-1.7b-lora | 4x1 | pass |" in body
        and "pass (12.50 GiB)" in body
        and "| tiny-qwen3 | 1x4 | not interleaved |" in body
    )
    assert "versions (tiny-qwen3), base -> head: transformers 5.17.0 -> 5.18.0" in body
    assert "https://github.com/owner/repo/actions/runs/1/attempts/1" in body
    assert "this run of the check started the recording of cpu's baselines with them on this branch" in body
    assert dispatches(first) == [
        ["--ref=bump-transformers", "-f", "gpu=cpu", "-f", "env=pinned", "-f", "repeats=5"],
        ["--ref=bump-transformers", "-f", "gpu=l4", "-f", "env=pinned", "-f", "repeats=5"],
    ]
    assert sorted((s["context"], s["state"], s["sha"]) for s in statuses(checkout)) == [
        ("perf-check/cpu", "success", HEAD_SHA),
        ("perf-check/l4", "success", HEAD_SHA),
    ]
    second = check_run(checkout, pull_request(action="synchronize"), name="second", l4={"ratio": 1.001})
    assert second["code"] == 0 and "comment updated" in second["out"], second["out"]
    [comment] = comments(checkout)  # the same comment, edited: never a second one
    assert comment["body"] != body and "+0.1%" in comment["body"]
    methods = [
        c[c.index("--method") + 1]
        for c in second["gh"]
        if c[:1] == ["api"] and "--method" in c and "/comments" in " ".join(c)
    ]
    assert methods.count("POST") == 1 and methods.count("PATCH") == 1  # the first run's POST, the second's PATCH
    # the same head commit: its baselines were started once, and the comment still says so
    assert (
        dispatches(second) == dispatches(first)
        and "an earlier run of the check for this commit started" in comment["body"]
    )


def test_a_regression_fails_the_status_and_the_accept_label_passes_it_saying_so(checkout):
    bisect = {
        "case": "qwen3-1.7b-lora-4x1",
        "outcome": "changed",
        "changes": [{"kind": "census", "last_good": "transformers 5.17.0", "first_bad": "transformers 5.18.0"}],
    }
    slower = {
        "l4": {"ratio": 1.08, "lo": 1.05, "hi": 1.11, "outcome": "regression", "work": "changed", "bisect": bisect}
    }
    run = check_run(checkout, pull_request(), name="red", **slower)
    assert run["code"] == 0, run["out"]
    state = {s["context"]: s for s in statuses(checkout)}
    assert state["perf-check/l4"]["state"] == "failure" and state["perf-check/cpu"]["state"] == "success"
    assert (
        "qwen3-1.7b-lora-4x1 +8.0%" in state["perf-check/l4"]["description"]
        and "perf-accepted" in state["perf-check/l4"]["description"]
    )
    body = comments(checkout)[0]["body"]
    assert "### l4: :x: regression" in body and "| qwen3-1.7b-lora | 4x1 | regression | +8.0% [+5.0%, +11.0%] |" in body
    assert "| aten ops 5,120 -> 5,232 (+112): _to_copy +112 |" in body  # the census diff, without its boilerplate
    assert "- bisect (qwen3-1.7b-lora-4x1): last good `transformers 5.17.0`, first bad `transformers 5.18.0`" in body
    assert [d[2] for d in dispatches(run)] == ["gpu=cpu"]  # baselines follow a passing GPU only
    assert "recording of l4's baselines" not in body and "recording of cpu's baselines" in body
    accepted = check_run(
        checkout, pull_request(labels=("perf-check", "perf-accepted"), added="perf-accepted"), name="accepted", **slower
    )
    assert accepted["code"] == 0, accepted["out"]
    l4 = [s for s in statuses(checkout) if s["context"] == "perf-check/l4"][-1]
    assert l4["state"] == "success" and l4["description"].startswith(
        "accepted regression (perf-accepted): qwen3-1.7b-lora-4x1 +8.0%"
    )
    assert (
        len(comments(checkout)) == 1
        and "### l4: :x: regression, accepted (perf-accepted)" in comments(checkout)[0]["body"]
    )
    assert [d[2] for d in dispatches(accepted)] == [
        "gpu=cpu",
        "gpu=l4",
    ]  # the accepted GPU's baselines; cpu's were started before
    assert "the recording of l4's baselines" in comments(checkout)[0]["body"]


def test_a_gpu_job_that_left_no_results_is_an_error_status_not_a_pass(checkout):
    plan = run_job(checkout, "plan", pull_request(), name="plan")
    stand_in_results(checkout, "cpu")
    run = run_job(checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "failure"}})
    assert run["code"] == 0, run["out"]
    state = {s["context"]: s["state"] for s in statuses(checkout)}
    assert state == {"perf-check/cpu": "success", "perf-check/l4": "error"}
    assert "no results from the l4 runner" in comments(checkout)[0]["body"]


def test_a_fork_s_pull_request_is_refused_before_any_gpu_step(checkout):
    fork = pull_request(head_repo="someone/repo")
    plan = run_job(checkout, "plan", fork, name="plan")
    assert (
        plan["code"] == 1
        and "::error::pr-check: refused: the pull request comes from the fork someone/repo" in plan["out"]
    )
    assert plan["outputs"]["run"] == "false" and not [
        c for c in plan["gh"] if "files" in " ".join(c)
    ]  # not even its file list
    check = run_job(checkout, "check", fork, needs=plan_needs(plan, "failure"), name="check")
    assert check["code"] == 0 and check["outcomes"] == [] and "job check: skipped" in check["out"]
    assert not (checkout / ".tox").exists() and not (checkout / "perf-results").exists()
    # the job's own condition refuses a fork even where a plan said to run
    forged = run_job(
        checkout,
        "check",
        fork,
        needs={"plan": {"result": "success", "outputs": {"run": "true", "gpus": '["cpu"]'}}},
        name="forged",
    )
    assert forged["outcomes"] == [] and "job check: skipped" in forged["out"]
    report = run_job(
        checkout, "report", fork, needs={**plan_needs(plan, "failure"), "check": {"result": "skipped"}}, name="report"
    )
    assert report["outcomes"] == [] and not [
        c for c in report["gh"] if "statuses" in " ".join(c) or "comments" in " ".join(c)
    ]


@pytest.mark.parametrize(
    "event, says",
    [
        (pull_request(labels=()), "no perf-check label"),
        (
            pull_request(labels=("perf-check", "documentation"), added="documentation"),
            "the label added ('documentation') is not one of",
        ),
    ],
)
def test_without_the_label_or_on_another_label_nothing_runs(checkout, event, says):
    plan = run_job(checkout, "plan", event)
    assert plan["code"] == 0 and plan["outputs"]["run"] == "false" and says in plan["summary"]
    check = run_job(checkout, "check", event, needs=plan_needs(plan), name="check")
    assert check["outcomes"] == []


def test_the_plan_takes_the_nightly_s_workloads_per_gpu_and_each_changed_workload_file(checkout):
    files = [
        *BUMP,
        {"filename": "workloads/my-chat.toml", "status": "added"},
        {"filename": "workloads/old.toml", "status": "removed"},
        {"filename": "workloads/$(touch pwned).toml", "status": "added"},
        {"filename": "harness/measuring/worker.py", "status": "modified"},
    ]
    plan = run_job(checkout, "plan", pull_request(), files=files)
    assert plan["code"] == 0, plan["out"]
    out = plan["outputs"]
    assert json.loads(out["gpus"]) == ["cpu", "l4"] and out["pins"] == "true" and out["accepted"] == "false"
    assert json.loads(out["workloads"]) == {"cpu": ["tiny-qwen3", "my-chat"], "l4": ["qwen3-1.7b-lora", "my-chat"]}
    assert (
        "workloads/old.toml: removed by the pull request, not measured" in plan["summary"]
        and "not a workload name" in plan["summary"]
    )
    assert not (checkout / "pwned").exists()
    unchanged = run_job(checkout, "plan", pull_request(), files=files[1:], name="unchanged")
    assert unchanged["outputs"]["pins"] == "false" and "pins: unchanged: censuses only" in unchanged["summary"]


def own_workloads(ws: Path, tables: dict[str, dict[str, str]]) -> None:
    """The checkout's workloads/ as a folder of its own: the suite's files, and per name a workload like tiny-qwen3
    whose ``[data]`` or ``[model]`` keys are the ones given (TOML lines)."""
    (ws / "workloads").unlink()
    shutil.copytree(ROOT / "workloads", ws / "workloads")
    tiny = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
    for name, keys in tables.items():
        text = tiny.replace('name = "tiny-qwen3"', f'name = "{name}"')
        if "data" in keys:
            text = text.replace('[data]\nsource = "synthetic"\n', f"[data]\n{keys['data']}\n")
        if "model" in keys:
            text = text.replace('init = "random"\n', f"{keys['model']}\n")
        (ws / "workloads" / f"{name}.toml").write_text(text)


CHAT = {"my-chat": {"data": 'source = "local"\nid = "data/chat.jsonl"\nmessages_column = "messages"'}}
PLANNED = {"cpu": ["tiny-qwen3", "my-chat"], "l4": ["qwen3-1.7b-lora", "my-chat"]}
MEASURE_STEPS = ("Install tox", "Build the environments", "Measure base against head")


def test_a_pull_request_that_changes_only_a_workload_s_data_file_measures_that_workload(checkout):
    own_workloads(checkout, CHAT)
    files = [{"filename": "data/chat.jsonl", "status": "modified"}]
    plan = run_job(checkout, "plan", pull_request(), files=files)
    assert plan["code"] == 0 and plan["outputs"]["run"] == "true", plan["out"]
    assert json.loads(plan["outputs"]["workloads"]) == PLANNED and plan["outputs"]["pins"] == "false"
    assert "- my-chat: the pull request changes its data.id (data/chat.jsonl)" in plan["summary"]
    check = run_job(checkout, "check", pull_request(), needs=plan_needs(plan), name="check", skip=MEASURE_STEPS)
    assert check["code"] == 0 and "job check: skipped" not in check["out"] and check["outcomes"], check["out"]
    # a data file moved away from the path the workload names changes its work too (it no longer loads)
    moved = [{"filename": "data/chats.jsonl", "status": "renamed", "previous_filename": "data/chat.jsonl"}]
    renamed = run_job(checkout, "plan", pull_request(), files=moved, name="renamed")
    assert json.loads(renamed["outputs"]["workloads"]) == PLANNED, renamed["out"]


@pytest.mark.parametrize(
    "keys, changed, says",
    [
        (  # a local model folder: its tokenizer's chat template
            {"model": 'init = "pretrained"\nhub_id = "models/tiny-chat"'},
            "models/tiny-chat/chat_template.jinja",
            "model.hub_id (models/tiny-chat)",
        ),
        (  # the same folder's tokenizer, the path written with ./
            {"model": 'init = "pretrained"\nhub_id = "./models/tiny-chat/"'},
            "models/tiny-chat/tokenizer.json",
            "model.hub_id (models/tiny-chat)",
        ),
        (  # a dataset folder saved by datasets
            {"data": 'source = "local"\nid = "data/chats"'},
            "data/chats/train/data-00000-of-00001.arrow",
            "data.id (data/chats)",
        ),
    ],
)
def test_a_template_or_a_folder_a_workload_names_measures_that_workload(checkout, keys, changed, says):
    own_workloads(checkout, {"my-chat": keys})
    plan = run_job(checkout, "plan", pull_request(), files=[{"filename": changed, "status": "modified"}])
    assert plan["code"] == 0 and plan["outputs"]["run"] == "true", plan["out"]
    assert json.loads(plan["outputs"]["workloads"]) == PLANNED
    assert f"- my-chat: the pull request changes its {says}" in plan["summary"]


def test_a_pull_request_that_changes_nothing_measured_plans_nothing_and_starts_no_gpu_job(checkout):
    own_workloads(checkout, {**CHAT, "my-model": {"model": 'init = "pretrained"\nhub_id = "models/tiny-chat"'}})
    files = [
        {"filename": "docs/pr-check.md", "status": "modified"},
        {"filename": "README.md", "status": "modified"},
        {"filename": "workloads/README.md", "status": "added"},  # beside the workload files, not one of them
        {"filename": "data/chat.jsonl.orig", "status": "added"},  # beside the data file, not it
        {"filename": "models/tiny-chat-v2/config.json", "status": "added"},  # beside the model folder, not in it
    ]
    plan = run_job(checkout, "plan", pull_request(), files=files)
    assert plan["code"] == 0 and plan["outputs"]["run"] == "false", plan["out"]
    assert [c for c in plan["gh"] if "files" in " ".join(c)]  # it read the pull request's files to decide
    [line] = [ln for ln in plan["summary"].splitlines() if ln.startswith("- ")]
    assert line.startswith("- not run: nothing the pull request changes is measured: no pin (constraints/)"), line
    check = run_job(checkout, "check", pull_request(), needs=plan_needs(plan), name="check")
    assert check["outcomes"] == [] and "job check: skipped" in check["out"]
    report = run_job(
        checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "skipped"}}, name="report"
    )
    assert report["outcomes"] == [] and "job report: skipped" in report["out"]


def test_the_plan_reads_the_paths_a_workload_names_with_the_standard_library_as_the_loader_resolves_them(checkout):
    """Relative to the checkout's root, where the suite runs; an absolute or home path, or one that leaves the
    repository, names no file of it. The plan runs on a bare interpreter (``-S``: no site-packages)."""
    plan = load_script(ROOT / ".github" / "scripts" / "pr-plan.py")
    for value, path in (
        ("data/chat.jsonl", "data/chat.jsonl"),
        ("./data//chats/", "data/chats"),
        ("data/../workloads/data/x.csv", "workloads/data/x.csv"),
        ("Qwen/Qwen3-1.7B", "Qwen/Qwen3-1.7B"),  # a hub id: matches only where the repository holds that folder
        ("/srv/data/chat.jsonl", None),
        ("~/chat.jsonl", None),
        ("../elsewhere/chat.jsonl", None),
        (".", None),
        (True, None),
    ):
        assert plan.in_repo(value) == path, value
    own_workloads(checkout, CHAT)
    (checkout.parent / "files.json").write_text(json.dumps([{"filename": "data/chat.jsonl", "status": "modified"}]))
    out = checkout.parent / "bare-output"
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(FAKE_BIN), os.environ["PATH"]]),
        FAKE_GH_LOG=str(checkout.parent / "gh.log"),
        FAKE_GH_PR_FILES=str(checkout.parent / "files.json"),
        GITHUB_OUTPUT=str(out),
        GITHUB_REPOSITORY="owner/repo",
        PR_NUMBER="7",
        PR_HEAD_REPO="owner/repo",
        PR_LABELS=json.dumps([{"name": "perf-check"}]),
        PR_ACTION="synchronize",
    )
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run(
        [sys.executable, "-S", ".github/scripts/pr-plan.py"], cwd=checkout, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0 and "run=true" in out.read_text(), proc.stdout + proc.stderr
    assert json.loads(dict(ln.split("=", 1) for ln in out.read_text().splitlines())["workloads"]) == PLANNED


def test_the_plan_follows_every_key_the_workload_page_says_names_a_file_or_folder():
    """A key the page types as a path, a folder or a file (a tokenizer folder, a template file) is one the plan must
    read, or a pull request that changes that file would not start the check."""
    plan = load_script(ROOT / ".github" / "scripts" / "pr-plan.py")
    rows = [ln.split("|") for ln in (ROOT / "docs" / "workloads.md").read_text().splitlines() if ln.startswith("| `")]
    keys = {r[1].strip().strip("`") for r in rows if re.search(r"\b(path|folder|file)\b", r[2])}
    assert keys == set(plan.PATH_KEYS)


HOSTILE = [
    'Bump "x" $(touch pwned-title) `touch pwned-tick`',
    "x'; touch pwned-quote; echo '",
    "a\nline $(touch pwned-newline)",
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_titles_branches_and_labels_reach_no_command_line(checkout, hostile):
    """Through env: only: the value is in no script bash runs (every command line traced), no file is made by it, and gh
    gets it in no argument."""
    event = pull_request(title=hostile, ref=hostile.replace("\n", ""), labels=("perf-check", hostile, "perf-accepted"))
    event["pull_request"]["body"] = hostile
    plan = run_job(checkout, "plan", event, name="plan")
    assert plan["code"] == 0 and plan["outputs"]["run"] == "true", plan["out"]
    stand_in_results(checkout, "cpu")
    stand_in_results(checkout, "l4")
    report = run_job(
        checkout, "report", event, needs={**plan_needs(plan), "check": {"result": "success"}}, name="report"
    )
    assert report["code"] == 0, report["out"]
    check = run_job(
        checkout,
        "check",
        event,
        needs=plan_needs(plan),
        name="check",
        skip=("Install tox", "Measure base against head"),
    )
    assert check["code"] == 0 and [
        o["outcome"] for o in check["outcomes"] if o["name"] == "Build the environments"
    ] == ["success"], check["out"]
    fragments = [hostile, *[p for p in hostile.split() if "pwned" in p or "$(" in p or "`" in p]]
    for run in (plan, report, check):
        assert run["trace"], "bash traced no command"
        for part in fragments:
            assert part not in run["trace"] and not any(part in arg for c in run["gh"] for arg in c), (
                part,
                run["trace"][-2000:],
            )
    assert not list(checkout.glob("pwned*")) and not list(checkout.parent.glob("pwned*"))
    assert (
        "<this pull request's branch>" in comments(checkout)[0]["body"]
    )  # an odd branch name is never put in a command to copy


def test_every_pull_request_value_reaches_a_script_through_env_only():
    """No ${{ }} of the event inside a run: script; each one is a step's env value."""
    wf = yaml.safe_load(REUSABLE.read_text())
    for job in wf["jobs"].values():
        for step in job["steps"]:
            assert "github.event" not in step.get("run", ""), step.get("name")
    text = REUSABLE.read_text()
    for field in ("head.ref", "title", "labels", "body", "label.name"):
        for line in (
            ln
            for ln in text.splitlines()
            if f"github.event.pull_request.{field}" in ln or f"github.event.{field}" in ln
        ):
            assert line.strip().split(":")[0].isupper() or line.strip().startswith("#"), line  # an env: NAME


def test_the_pr_table_of_nightly_toml_is_checked_like_the_rest(tmp_path):
    from harness import nightly

    n = nightly.load(ROOT)
    assert (
        (n.pr.label, n.pr.accept_label) == ("perf-check", "perf-accepted")
        and n.pr.decompositions
        and n.pr.budget_minutes > 0
    )
    (tmp_path / "nightly.toml").write_text(
        'gpus = ["l4"]\nworkloads = []\n[ab]\nworkload = "x"\ndecompositions = ["2x2"]\nbudget_minutes = 3\n'
    )
    assert (nightly.load(tmp_path).pr.decompositions, nightly.load(tmp_path).pr.budget_minutes) == (
        ("2x2",),
        3.0,
    )  # the A/B's, without [pr]
    for table, says in (
        ('[pr]\nlabel = "perf check"\n', "pr.label must be a label"),
        ("[pr]\nbudget = 3\n", "did you mean 'pr.budget_minutes'"),
        ('[pr]\naccept_label = "perf-check"\n', "pr.label and pr.accept_label are both"),
        ('[pr]\ndecompositions = ["4*1"]\n', "pr.decompositions must be a list of splits"),
    ):
        (tmp_path / "nightly.toml").write_text('gpus = ["l4"]\nworkloads = []\n' + table)
        with pytest.raises(nightly.NightlyError) as err:
            nightly.load(tmp_path)
        assert says in str(err.value) and "\n" not in str(err.value)


def test_run_workflow_gives_the_event_and_needs_and_skips_a_job_whose_if_is_false(tmp_path):
    wf = tmp_path / "wf.yml"
    wf.write_text("""
on: pull_request
jobs:
  j:
    if: ${{ needs.p.outputs.go == 'true' && github.event.pull_request.head.repo.full_name == github.repository }}
    steps:
      - env: {T: "${{ github.event.pull_request.title }}", N: "${{ github.event_name }}"}
        run: test "$T" = 'a "b"' && test "$N" = pull_request && test -s "$GITHUB_EVENT_PATH"
""")
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"pull_request": {"title": 'a "b"', "head": {"repo": {"full_name": "owner/repo"}}}}))

    def run(needs: dict) -> subprocess.CompletedProcess:
        (tmp_path / "n.json").write_text(json.dumps(needs))
        return subprocess.run(
            [
                sys.executable,
                str(ROOT / ".ci" / "run-workflow.py"),
                str(wf),
                "j",
                "--event",
                str(event),
                "--needs",
                str(tmp_path / "n.json"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    ran = run({"p": {"result": "success", "outputs": {"go": "true"}}})
    assert ran.returncode == 0 and "::: job j: success" in ran.stdout, ran.stdout + ran.stderr
    for needs in (
        {"p": {"result": "success", "outputs": {"go": "false"}}},
        {"p": {"result": "failure", "outputs": {"go": "true"}}},
    ):
        skipped = run(needs)
        assert skipped.returncode == 0 and "job j: skipped" in skipped.stdout and "running" not in skipped.stdout
    (tmp_path / "bad.json").write_text("[1]")
    bad = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "run-workflow.py"), str(wf), "j", "--event", str(tmp_path / "bad.json")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "expected a JSON dict" in bad.stderr


def test_the_comment_script_reads_the_measure_script_s_layout():
    """pr-measure.py writes what pr-comment.py reads: the same folders per workload."""
    measure = load_script(ROOT / ".github" / "scripts" / "pr-measure.py")
    comment = (ROOT / ".github" / "scripts" / "pr-comment.py").read_text()
    assert measure.RESULTS.name == "perf-results"
    for part in (
        '"census" / "report.json"',
        '"ab" / dec / "report.json"',
        '"bisect" / "report.json"',
        '"pr-check.json"',
    ):
        assert part in comment, part


@pytest.mark.long  # the stand-in tests above hold the check on every push; this one runs it for real, weekly
def test_the_gpu_job_measures_base_against_head_for_real_and_the_report_reads_it(checkout):
    """The check job's own steps on this CPU (the tox shim: both sides are this interpreter, so the verdict is no
    regression): censuses of each side, their report, the interleaved comparison of 4x1 with the cost model's
    prediction; then the report job reads its artifact and comments. tiny-qwen3 cut to two splits, one GPU (cpu), half a
    minute of budget."""
    for where in (checkout, checkout / "base"):
        (where / "nightly.toml").write_text(SETTINGS.replace('gpus = ["cpu", "l4"]', 'gpus = ["cpu"]'))
    (checkout / "workloads").unlink()
    shutil.copytree(ROOT / "workloads", checkout / "workloads")
    tiny = checkout / "workloads" / "tiny-qwen3.toml"
    tiny.write_text(
        tiny.read_text().replace('decompositions = ["1x4", "2x2", "4x1"]', 'decompositions = ["1x4", "4x1"]')
    )
    plan = run_job(checkout, "plan", pull_request(), name="plan")
    assert plan["code"] == 0 and json.loads(plan["outputs"]["workloads"]) == {"cpu": ["tiny-qwen3"]}, plan["out"]
    check = run_job(checkout, "check", pull_request(), needs=plan_needs(plan), name="check", skip=("Install tox",))
    assert check["code"] == 0, check["out"][-6000:]
    index = json.loads((checkout / "perf-results" / "pr-check.json").read_text())
    assert index["workloads"]["tiny-qwen3"]["steps"] == {"census-a": 0, "census-b": 0, "census": 0, "ab/4x1": 0}, index
    ab = json.loads((checkout / "perf-results" / "tiny-qwen3" / "ab" / "4x1" / "report.json").read_text())
    assert (
        ab["verdict"]["outcome"] in ("pass", "inconclusive", "improvement")
        and ab["prediction"].get("delta_pct") is not None
    )
    (checkout / "pr-results").mkdir()
    shutil.copytree(checkout / "perf-results", checkout / "pr-results" / "pr-check-cpu")  # as download-artifact puts it
    report = run_job(
        checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "success"}}, name="report"
    )
    assert report["code"] == 0, report["out"]
    body = comments(checkout)[0]["body"]
    assert "| tiny-qwen3 | 4x1 | " in body and "| tiny-qwen3 | 1x4 | not interleaved |" in body and "| same |" in body
    assert "None" not in body, body  # every value the comment shows was found in the real reports
    assert [(s["context"], s["state"]) for s in statuses(checkout)] == [("perf-check/cpu", "success")]


def test_the_measure_step_runs_the_suite_s_commands_a_from_the_base_checkout_with_the_base_s_budgets(
    checkout, monkeypatch
):
    """pr-measure.py's command lines (stand-in processes): A's census from base/, B's from the head, B judged against A,
    the interleaved split with the base's [pr] budget, and the bisect only where the work changed and the pins
    did."""
    measure = load_script(ROOT / ".github" / "scripts" / "pr-measure.py")
    (checkout / "base" / "nightly.toml").write_text(SETTINGS.replace("budget_minutes = 0.5", "budget_minutes = 3"))
    calls = []

    def stand_in(cmd, cwd="."):
        calls.append((cmd, cwd))
        if "census" in cmd:  # one census run of each split, as the command leaves them
            out = Path(cmd[cmd.index("--results-dir") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "runs.jsonl").write_text(
                "".join(
                    json.dumps({"workload": "tiny-qwen3", "decomposition_id": d, "census": {"fits": True}}) + "\n"
                    for d in ("1x4", "4x1")
                )
            )
        if "report" in cmd:
            out = Path(cmd[cmd.index("--out") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "report.json").write_text(
                json.dumps({"verdicts": [{"kind": "work", "case": "tiny-qwen3-1x4", "outcome": "changed"}]})
            )
        return subprocess.CompletedProcess(cmd, 0)

    venv = checkout / "base" / ".tox" / "pinned" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(
        sys.executable
    )  # as a virtualenv has it: a link out of the environment, never to be followed
    monkeypatch.chdir(checkout)
    monkeypatch.setattr(measure.subprocess, "run", stand_in)
    monkeypatch.setenv("PERF_WHEELS", "/wheels")
    for pins, steps in (
        ("false", ["census-a", "census-b", "census"]),
        ("true", ["census-a", "census-b", "census", "ab/4x1", "bisect"]),
    ):
        calls.clear()
        monkeypatch.setenv("PR_PINS", pins)
        monkeypatch.setenv("PERF_GPU", "cpu")
        monkeypatch.setenv("PR_WORKLOADS", json.dumps({"cpu": ["tiny-qwen3"], "l4": ["qwen3-1.7b-lora"]}))
        assert measure.main() == 0
        index = json.loads((checkout / "perf-results" / "pr-check.json").read_text())
        assert list(index["workloads"]["tiny-qwen3"]["steps"]) == steps and index["pins"] == (pins == "true")
    (census_a, cwd_a), (census_b, cwd_b), (report, _), (ab, _), (bisect, _) = calls
    assert (
        cwd_a == "base"
        and census_a[0] == str(checkout / "base" / ".tox" / "pinned" / "bin" / "python")
        and cwd_b == "."
    )
    assert (
        census_b[:4] == [".tox/pinned/bin/python", "-m", "harness", "census"]
        and ["--gpu", "cpu", "--workload", "tiny-qwen3"] == census_b[4:8]
    )
    assert report[report.index("--baseline") + 1].endswith("census-a") and report[4].endswith("census-b")
    assert (
        ab[ab.index("--python-a") + 1] == "base/.tox/pinned/bin/python" and ab[ab.index("--budget-minutes") + 1] == "3"
    )
    assert (
        checkout / "perf-results" / "tiny-qwen3" / "ab" / "4x1" / "census-a" / "runs.jsonl"
    ).is_file()  # the cost model's censuses
    assert (
        bisect[bisect.index("--decomposition") + 1] == "1x4"
        and "--census-only" in bisect
        and bisect[-2:] == ["--wheels", "/wheels"]
    )
    assert bisect[bisect.index("--total-budget-minutes") + 1] == "1"
    monkeypatch.setenv("PR_WORKLOADS", json.dumps({"cpu": ["$(touch pwned)"]}))
    assert measure.main() == 2 and not (checkout / "pwned").exists()


def test_the_bisect_takes_the_check_s_censuses_of_its_ends_and_measures_only_the_releases_between(
    checkout, monkeypatch, tiny, fake_runs
):
    """The check's censuses of the split whose work changed are where the bisect keeps its ends' own, and the bisect
    takes them without a run; the base's only while the base's measuring code is the head's (its census is that
    code's)."""
    from harness.bisect.config import BisectConfig
    from harness.bisect.envs import EnvCache
    from harness.bisect.plan import OK, Candidate
    from harness.bisect.steps import Steps

    measure = load_script(ROOT / ".github" / "scripts" / "pr-measure.py")
    ends = (measure.PYTHON_A, measure.PYTHON_B)
    for python in ends:
        (checkout / python).parent.mkdir(parents=True, exist_ok=True)
        (checkout / python).symlink_to(sys.executable)
    monkeypatch.chdir(checkout)
    out = Path("perf-results") / "tiny-qwen3"
    for side in "ab":
        (out / f"census-{side}").mkdir(parents=True)
        runs = fake_runs(tiny, [100.0], census={"fits": True})
        (out / f"census-{side}" / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    assert measure.seed_bisect(out, "tiny-qwen3", "1x4") == list(ends)
    cfg = BisectConfig(
        "tiny-qwen3",
        "1x4",
        *ends,
        census_only=True,
        workloads_dir=str(ROOT / "workloads"),
        results_dir=str(out / "bisect"),
    )
    steps = Steps(cfg, EnvCache(checkout / "envs", sys.executable), census_fn=lambda py, _: pytest.fail(f"{py} again"))
    assert all(steps.census(Candidate(python=python)).status == OK for python in ends)
    (checkout / "base" / "harness").unlink()  # the base's measuring code differs from the head's
    shutil.copytree(ROOT / "harness", checkout / "base" / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    with open(checkout / "base" / "harness" / "__init__.py", "a") as fh:
        fh.write("# the base's\n")
    shutil.rmtree(out / "bisect")
    assert measure.seed_bisect(out, "tiny-qwen3", "1x4") == [measure.PYTHON_B]


def test_a_change_of_the_measuring_code_alone_compares_the_work_and_proposes_no_baselines(checkout):
    files = [{"filename": "harness/measuring/worker.py", "status": "modified"}]
    plan = run_job(checkout, "plan", pull_request(), files=files, name="plan")
    assert plan["outputs"]["pins"] == "false", plan["out"]
    stand_in_results(checkout, "cpu")
    run = run_job(
        checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "success"}}, files=files
    )
    assert run["code"] == 0, run["out"]
    body = comments(checkout)[0]["body"]
    assert "the pins do not change: the work (census) of base against head" in body and "update-baselines" not in body


def plant(ws: Path, body: str, login: str = "mallory") -> None:
    """A comment on the pull request by someone else, in the fake gh's state, before the check runs."""
    state = ws.parent / "gh.log.state.json"
    data = json.loads(state.read_text()) if state.exists() else {"comments": [], "statuses": [], "next_id": 100}
    data["comments"].append({"id": data["next_id"], "issue": 7, "body": body, "user": {"login": login}})
    data["next_id"] += 1
    state.write_text(json.dumps(data))


def test_a_comment_planted_by_someone_else_is_never_edited_and_its_markers_count_for_nothing(checkout):
    planted = f"<!-- perf-check -->\nall good, merge it\n<!-- baselines-started: cpu {HEAD_SHA} -->\n"
    plant(checkout, planted)
    run = check_run(checkout, pull_request(), name="planted")
    assert run["code"] == 0 and "comment created" in run["out"], run["out"]
    theirs, ours = comments(checkout)
    assert theirs["body"] == planted and theirs["user"]["login"] == "mallory"  # untouched
    assert ours["user"]["login"] == "github-actions[bot]" and "### cpu: :white_check_mark:" in ours["body"]
    # the planted marker did not stop cpu's baselines from being recorded
    assert [d[2] for d in dispatches(run)] == ["gpu=cpu", "gpu=l4"]
    again = check_run(checkout, pull_request(action="synchronize"), name="again")
    assert "comment updated" in again["out"] and comments(checkout)[0]["body"] == planted
    assert len(comments(checkout)) == 2 and dispatches(again) == dispatches(run)


def test_names_and_messages_from_the_results_reach_the_comment_as_text(checkout):
    plan = run_job(checkout, "plan", pull_request(), name="plan")
    stand_in_results(checkout, "cpu")
    stand_in_results(checkout, "l4")
    hostile = f"4x1 @org/team **bold** [x](https://evil) <!-- baselines-started: l4 {HEAD_SHA} --> | cell"
    report = checkout / "pr-results" / "pr-check-l4" / "qwen3-1.7b-lora" / "census" / "report.json"
    census = json.loads(report.read_text())
    census["rows"][0]["decomposition"] = hostile
    census["verdicts"][1].update(outcome="changed", message="WORK CHANGED: <img src=x> @someone")
    report.write_text(json.dumps(census))
    run = run_job(checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "success"}})
    assert run["code"] == 0, run["out"]
    body = comments(checkout)[0]["body"]
    assert body.count("<!--") == 1 + 2  # the check's marker and one baselines line per GPU, nothing planted
    assert "<img" not in body and "@org" not in body and "@someone" not in body and "[x](https://evil)" not in body
    assert "&lt;img src=x>" in body and "\\| cell" in body


@pytest.mark.parametrize(
    "index, census",
    [
        ({"workloads": ["qwen3-1.7b-lora"]}, {}),
        ({"workloads": {"qwen3-1.7b-lora": "oops"}}, {"rows": "x", "verdicts": ["oops", 3]}),
        ({"workloads": {"qwen3-1.7b-lora": {"steps": ["x"]}, "../etc": {}}}, {"versions": [], "baseline_versions": 1}),
    ],
)
def test_results_of_the_wrong_shape_still_give_a_comment_and_statuses(checkout, index, census):
    plan = run_job(checkout, "plan", pull_request(), name="plan")
    stand_in_results(checkout, "cpu")
    stand_in_results(checkout, "l4")
    root = checkout / "pr-results" / "pr-check-l4"
    (root / "pr-check.json").write_text(json.dumps(index))
    (root / "qwen3-1.7b-lora" / "census" / "report.json").write_text(json.dumps(census))
    run = run_job(checkout, "report", pull_request(), needs={**plan_needs(plan), "check": {"result": "success"}})
    assert run["code"] == 0, run["out"]
    assert len(comments(checkout)) == 1 and {s["context"] for s in statuses(checkout)} == {
        "perf-check/cpu",
        "perf-check/l4",
    }
