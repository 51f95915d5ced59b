"""The GitHub workflows validate against the GitHub workflow schema, and the regression-issue script
parses and files one issue per regressed verdict (checked against a fake gh CLI); the nightly's perf job keeps each
session in the results store and files its environment alerts, and the history job builds the page from the store and
deploys it to GitHub Pages."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
ISSUE_SCRIPT = ROOT / ".github" / "scripts" / "regression-issues.sh"


def check_jsonschema() -> str:
    """The check-jsonschema executable: beside this Python first (a venv), then on PATH."""
    for name in ("check-jsonschema", "check-jsonschema.exe"):
        beside = Path(sys.executable).parent / name
        if beside.is_file():
            return str(beside)
    found = shutil.which("check-jsonschema")
    if found is None:
        pytest.fail(
            "check-jsonschema is not installed (it comes with the project's dev extra: pip install -e '.[dev]')"
        )
    return found


def validate(path: Path) -> subprocess.CompletedProcess:
    # the github-workflows schema ships inside check-jsonschema: no network needed
    return subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_workflow_is_valid(name):
    path = WORKFLOWS / name
    assert path.is_file(), f"{path} is missing"
    proc = validate(path)
    assert proc.returncode == 0, f"{name} does not validate:\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


# The first major of each action the workflows use that runs on Node 24: GitHub removed Node 20 from its runners.
NODE24_MAJOR = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache/restore": 5,
    "actions/cache/save": 5,
    "actions/upload-artifact": 6,
    "actions/upload-pages-artifact": 5,
    "actions/deploy-pages": 5,
    "actions/download-artifact": 7,
    "peter-evans/create-pull-request": 8,
}


def test_every_action_runs_on_node_24():
    old = []
    for wf in sorted(WORKFLOWS.glob("*.yml")):
        for line in wf.read_text().splitlines():
            if "uses:" in line and "@" in line and not line.strip().startswith("#"):
                action, _, ref = line.split("uses:", 1)[1].strip().partition("@")
                major = NODE24_MAJOR.get(action)
                if (
                    major is None
                    or not ref.lstrip("v").split(".")[0].isdigit()
                    or int(ref.lstrip("v").split(".")[0]) < major
                ):
                    old.append(
                        f"{wf.name}: {action}@{ref} "
                        + (f"(Node 24 from v{major})" if major else "(a new action: add its first Node 24 major here)")
                    )
    assert not old, "\n".join(old)


def test_broken_workflow_is_rejected(tmp_path):
    """The validation can fail: a job whose steps are not a list is refused."""
    bad = tmp_path / "broken.yml"
    bad.write_text("on: push\njobs:\n  build:\n    steps: 3\n")
    proc = validate(bad)
    assert proc.returncode != 0, f"check-jsonschema accepted a broken workflow:\n{proc.stdout}\n{proc.stderr}"


def test_issue_script_parses():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    proc = subprocess.run([bash, "-n", str(ISSUE_SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


REPORT = {
    "gpu": "l4",
    "session_id": "20260101T000000-abc",
    "verdicts": [
        {"kind": "runtime", "case": "qwen3-1.7b-lora-1x4", "outcome": "regression", "message": "x1.12 slower"},
        {"kind": "runtime", "case": "qwen3-1.7b-lora-2x2", "outcome": "pass", "message": "ok"},
        {"kind": "memory", "case": "qwen3-1.7b-lora-2x2", "outcome": "fail", "message": "run failed"},
        {"kind": "ordering", "case": "qwen3-1.7b-lora", "outcome": "regression", "message": "1x4 now slower than 2x2"},
        {"kind": "ordering", "case": "qwen3-1.7b-lora", "outcome": "regression", "message": "1x4 now slower than 4x1"},
        {"kind": "equivalence", "case": "qwen3-1.7b-lora", "outcome": "inconclusive", "message": "?"},
    ],
    "versions": {"torch": "2.11.0", "transformers": "5.17.0"},
    "rows": [
        {
            "workload": "qwen3-1.7b-lora",
            "decomposition": "1x4",
            "where": "median step +180.0 ms; backward +170.0 ms (+19%)",
        },
        {"workload": "qwen3-1.7b-lora", "decomposition": "2x2", "where": None},
    ],
}


def test_issue_script_opens_one_issue_per_regression(fake_gh):
    calls = fake_gh(REPORT)
    created = [c for c in calls if c[:2] == ["issue", "create"]]
    titles = sorted(c[c.index("--title") + 1] for c in created)
    assert titles == [
        "perf regression: l4 latest memory qwen3-1.7b-lora-2x2",
        "perf regression: l4 latest ordering qwen3-1.7b-lora",
        "perf regression: l4 latest runtime qwen3-1.7b-lora-1x4",
    ]
    ordering = next(c for c in created if "ordering" in c[c.index("--title") + 1])
    body = ordering[ordering.index("--body") + 1]
    assert "than 2x2" in body and "than 4x1" in body and "https://example.invalid/run/1" in body and "2.11.0" in body
    assert all(c[c.index("--label") + 1] == "perf-regression" for c in created)
    runtime = next(c for c in created if "runtime" in c[c.index("--title") + 1])
    assert (
        "- where the step time moved against the baseline (medians): median step +180.0 ms; backward +170.0 ms (+19%)"
        in runtime[runtime.index("--body") + 1]
    )
    memory = next(c for c in created if "memory" in c[c.index("--title") + 1])
    assert "where the step time moved" not in memory[memory.index("--body") + 1]
    searches = [c for c in calls if c[:2] == ["issue", "list"]]
    assert len(searches) == 3 and all("--state" in c and "perf-regression" in c for c in searches)


def test_an_issue_gives_the_command_that_reproduces_its_case_from_the_report(fake_gh):
    cmd = "pytest perftests --gpu=l4 --workload qwen3-1.7b-lora -k 1x4 --repeats 5"
    report = dict(REPORT, verdicts=[dict(REPORT["verdicts"][0], repro=cmd), REPORT["verdicts"][2]])
    created = [c for c in fake_gh(report) if c[:2] == ["issue", "create"]]
    bodies = {c[c.index("--title") + 1]: c[c.index("--body") + 1] for c in created}
    assert f"\n  - reproduce on a runner: `{cmd}`\n" in bodies["perf regression: l4 latest runtime qwen3-1.7b-lora-1x4"]
    assert "reproduce" not in bodies["perf regression: l4 latest memory qwen3-1.7b-lora-2x2"]  # a report without one


def test_issue_script_comments_on_the_open_issue_with_the_exact_title(fake_gh):
    report = dict(REPORT, verdicts=REPORT["verdicts"][:1])
    title = "perf regression: l4 latest runtime qwen3-1.7b-lora-1x4"
    calls = fake_gh(report, [{"number": 7, "title": title + " (old)"}, {"number": 9, "title": title}])
    assert not [c for c in calls if c[:2] == ["issue", "create"]]
    comments = [c for c in calls if c[:2] == ["issue", "comment"]]
    assert (
        len(comments) == 1 and comments[0][2] == "9" and "x1.12 slower" in comments[0][comments[0].index("--body") + 1]
    )


def test_issue_script_without_regressions_or_report_files_nothing(fake_gh):
    assert (
        fake_gh(dict(REPORT, verdicts=[v for v in REPORT["verdicts"] if v["outcome"] not in ("regression", "fail")]))
        == []
    )
    assert fake_gh(None) == []


def test_a_release_s_census_change_opens_one_issue_per_workload_with_the_bisect(fake_gh, tmp_path):
    work = [
        {
            "kind": "work",
            "case": f"qwen3-1.7b-lora-{d}",
            "outcome": "changed",
            "message": f"WORK CHANGED {d}: +148 aten ops",
        }
        for d in ("1x4", "2x2", "4x1")
    ]
    report = dict(
        REPORT, verdicts=work + [{"kind": "memory", "case": "qwen3-1.7b-lora-4x1", "outcome": "pass", "message": "ok"}]
    )
    assert fake_gh(report) == []  # the pinned job, or a night without new versions: the store's alerts speak for it
    bisect = tmp_path / "bisect.md"
    bisect.write_text(
        "# Bisect qwen3-1.7b-lora-4x1 on l4\n\n"
        "- boundary: last good `transformers 5.22.2`, first bad `transformers 5.23.0`\n"
    )
    created = [c for c in fake_gh(report, CHANGES="true", BISECT=str(bisect)) if c[:2] == ["issue", "create"]]
    assert [c[c.index("--title") + 1] for c in created] == ["perf change: l4 latest work qwen3-1.7b-lora"]
    body = created[0][created[0].index("--body") + 1]
    assert all(f"WORK CHANGED {d}" in body for d in ("1x4", "2x2", "4x1")) and "first bad `transformers 5.23.0`" in body
    assert fake_gh(report, CHANGES="false") == []


def test_nightly_files_the_release_s_census_change_only_on_the_latest_job_of_a_release_night():
    import yaml

    steps = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["publish"]["steps"]
    step = next(s for s in steps if s.get("name") == "Open or update regression issues")
    assert step["env"]["CHANGES"] == "${{ matrix.env != 'pinned' && steps.perf.outputs.versions == 'differ' }}"
    assert step["env"]["BISECT"] == "perf-results/bisect/report.md"


def test_nightly_keeps_the_bisect_s_censuses_across_nights_with_the_same_versions():
    import yaml

    steps = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["perf"]["steps"]
    names = [s.get("name") for s in steps]
    at = names.index("Bisect what changed")
    restore, save = steps[at - 1], steps[at + 1]
    assert restore["uses"].startswith("actions/cache/restore@") and save["uses"].startswith("actions/cache/save@")
    assert restore["with"]["path"] == save["with"]["path"] == "perf-results/bisect/census"
    assert "steps.plan.outputs.versions_key" in save["with"]["key"] and restore["with"]["key"] == save["with"]["key"]
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"].split("${{ github.run_id }}")[0])
    assert "!cancelled()" in save["if"] and "success()" not in save["if"]  # kept when a work change fails the job


def test_an_issue_puts_the_cost_models_prediction_beside_the_measured_change(fake_gh):
    p = {
        "delta_pct": 5.18,
        "lo": 1.804,
        "hi": 8.556,
        "host_part": 5.18,
        "gpu_part": 0.0,
        "measured_pct": 3.031,
        "measured_lo": -0.5,
        "measured_hi": 6.2,
    }
    interleaved = {
        "kind": "interleaved",
        "case": "tiny-qwen3-4x1",
        "outcome": "regression",
        "message": "B/A x1.030",
        "prediction": dict(p, model="critical path"),
        "where": "where, B less A per step (median over 9 pairs; descriptive): backward +3.29 ms (of 247.2)",
    }
    confirmed = dict(
        REPORT["verdicts"][0],
        interleaved={"outcome": "regression", "message": "x1.1", "prediction": dict(p, delta_pct=-0.04)},
    )
    unmeasured = {
        "kind": "memory",
        "case": "m",
        "outcome": "fail",
        "message": "?",
        "prediction": {k: p[k] for k in ("delta_pct", "lo", "hi")},
    }
    calls = fake_gh(dict(REPORT, verdicts=[interleaved, confirmed, unmeasured]))
    bodies = {
        c[c.index("--title") + 1].split()[-2]: c[c.index("--body") + 1] for c in calls if c[:2] == ["issue", "create"]
    }
    assert (
        "  - cost model (critical path): predicted +5.2%, measured +3.0% (intervals [+1.8%, +8.6%] and [-0.5%, +6.2%])"
        in bodies["interleaved"]
    )
    assert (
        "  - where, B less A per step (median over 9 pairs; descriptive): backward +3.29 ms (of 247.2)"
        in bodies["interleaved"]
    )
    assert "cost model: predicted 0.0%, measured +3.0%" in bodies["runtime"]
    assert "  - cost model: predicted +5.2% [+1.8%, +8.6%]" in bodies["memory"] and "measured" not in bodies["memory"]
    assert not [c for c in fake_gh(REPORT) if c[:2] == ["issue", "create"] and "cost model" in c[c.index("--body") + 1]]


TUNING_FLAGS = (
    "--block-steps",
    "--grain",
    "--warmup-steps",
    "--pairs",
    "--launches",
    "--cpus",
    "--prestart",
    "--warm-apart",
    "--set",
)


def test_nightly_ab_runs_pinned_against_latest_interleaved_only_when_they_differ():
    """The latest job compares pinned against the environment it just measured, on the same runner, block-interleaved
    per decomposition within its budget, only on a night when the plan found other versions than the pins; its
    regressions file issues too."""
    import yaml

    job = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["perf"]
    steps = {s.get("name"): s for s in job["steps"]}
    ab = steps["A/B pinned vs latest, interleaved"]
    run = " ".join(ab["run"].split())
    assert (
        "matrix.env != 'pinned'" in ab["if"]
        and "steps.plan.outputs.versions == 'differ'" in ab["if"]
        and "!cancelled()" in ab["if"]
    )
    assert (
        "-m harness interleave" in run
        and '--python-a .tox/pinned/bin/python --python-b ".tox/$PERF_ENV/bin/python"' in run
    )
    assert (
        '--budget-minutes "$AB_BUDGET"' in run
        and 'read -ra decs <<< "$AB_DECOMPOSITIONS"' in run
        and 'for dec in "${decs[@]}"' in run
        and '--results-dir "perf-results/ab/$dec"' in run
    )
    assert not [f for f in TUNING_FLAGS if f in run.split()], run  # the defaults are the nightly's settings
    publish = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["publish"]
    issues = next(s for s in publish["steps"] if s.get("name") == "Open or update regression issues (A/B)")
    assert "perf-results/ab/*/report.json" in issues["run"] and "steps.perf.outputs.ab == 'failure'" in issues["if"]


def test_nightly_opens_no_issue_on_a_stored_baseline_timing_alone(fake_gh):
    """A failed session is first confirmed interleaved on the same runner (pinned against this job's environment), and
    the issue step reads the confirmed report when there is one; an unconfirmed timing files nothing."""
    import yaml

    jobs = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]
    steps = {s.get("name"): s for s in jobs["perf"]["steps"]}
    issues = {s.get("name"): s for s in jobs["publish"]["steps"]}
    confirm = steps["Confirm runtime regressions interleaved"]  # in the perf job, before the publish job files issues
    run = " ".join(confirm["run"].split())
    assert "failure()" in confirm["if"] and "-m harness confirm perf-results/report.json" in run
    assert (
        '--python-a .tox/pinned/bin/python --python-b ".tox/$PERF_ENV/bin/python"' in run
        and "--results-dir perf-results/confirm" in run
    )
    assert not [f for f in TUNING_FLAGS if f in run.split()], run  # as the A/B step: the defaults
    assert issues["Open or update regression issues"]["env"]["CONFIRM"] == "perf-results/confirm/report.json"
    unconfirmed = [dict(v, outcome="unconfirmed") if v["kind"] == "runtime" else v for v in REPORT["verdicts"]]
    filed = fake_gh(dict(REPORT, verdicts=unconfirmed))
    titles = [c[c.index("--title") + 1] for c in filed if c[:2] == ["issue", "create"]]
    assert titles and not any(" runtime " in t for t in titles)


def test_a_confirmation_cut_short_leaves_runtime_timings_unconfirmed(fake_gh, tmp_path):
    """CONFIRM names the confirmation's report. Present, it is the report the issues come from; set but missing (the
    confirmation cut short, or failed before its report), the stored baseline's runtime regressions open no issue,
    while its other verdicts (a failed run, an ordering) still do."""

    def titles(calls):
        return sorted(c[c.index("--title") + 1] for c in calls if c[:2] == ["issue", "create"])

    missing = titles(fake_gh(REPORT, CONFIRM=str(tmp_path / "confirm" / "report.json")))
    assert missing == [
        "perf regression: l4 latest memory qwen3-1.7b-lora-2x2",
        "perf regression: l4 latest ordering qwen3-1.7b-lora",
    ]
    confirmed = tmp_path / "confirmed.json"
    confirmed.write_text(json.dumps(dict(REPORT, verdicts=REPORT["verdicts"][:1])))
    assert titles(fake_gh(REPORT, CONFIRM=str(confirmed))) == ["perf regression: l4 latest runtime qwen3-1.7b-lora-1x4"]


def test_nightly_recovers_interleaved_comparisons_cut_short_before_the_upload():
    import yaml

    steps = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["perf"]["steps"]
    names = [s.get("name") for s in steps]
    rec = steps[names.index("Recover interleaved comparisons cut short")]
    assert rec["if"] == "always()" and names.index("Recover interleaved comparisons cut short") < names.index(
        "Upload results"
    )
    assert (
        "perf-results/ab/*/" in rec["run"]
        and "perf-results/confirm/*/" in rec["run"]
        and "-m harness recover" in rec["run"]
    )
    assert '! -e "$d/report.json"' in rec["run"]  # never over a run's own report


def _history_job() -> tuple[dict, dict, dict]:
    import yaml

    wf = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())
    job = wf["jobs"]["history"]
    return wf, job, {s.get("name") or s.get("uses"): s for s in job["steps"]}


def test_nightly_history_job_builds_the_page_from_the_store_and_deploys_it():
    """After the publish jobs (whatever their verdicts), the history job builds the page from a read-only copy of the
    results store (the perf-results branch; no artifacts, which expire) with `python -m harness history --store`; the
    deploy-history job, which installs and runs nothing, deploys it to GitHub Pages and links it in the summary; only
    that job may write to Pages."""
    wf, job, steps = _history_job()
    assert job["needs"] == "publish" and "!cancelled()" in job["if"]
    assert job["permissions"] == {"contents": "read"}
    store = next(s for s in job["steps"] if (s.get("with") or {}).get("ref") == "perf-results")
    assert store["with"]["path"] == ".perf-store" and store["with"]["persist-credentials"] is False
    deploy = wf["jobs"]["deploy-history"]
    others = [
        wf.get("permissions", {}),
        *(j.get("permissions", {}) for n, j in wf["jobs"].items() if n != "deploy-history"),
    ]
    assert not any("pages" in p or "id-token" in p for p in others)
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"} and deploy["needs"] == "history"
    assert deploy["environment"]["name"] == "github-pages"
    assert (
        "history_nights" not in wf[True]["workflow_call"]["inputs"] and "env" not in job
    )  # YAML 1.1 reads `on` as True
    assert not [s for s in job["steps"] if "download-artifact" in s.get("uses", "") or "gh run" in s.get("run", "")]
    build = steps["Build the history page from the results store"]
    assert "python -m harness history --store .perf-records --out site" in build["run"] and "env" not in build
    pages = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert pages["with"]["path"] == "site"
    [deploy_step, summary] = deploy["steps"]
    assert deploy_step["uses"].startswith("actions/deploy-pages@") and deploy_step["id"] == "deployment"
    assert deploy["environment"]["url"] == "${{ steps.deployment.outputs.page_url }}"
    assert "steps.deployment.outputs.page_url" in summary["env"]["PAGE_URL"] and "GITHUB_STEP_SUMMARY" in summary["run"]
    assert summary["env"]["NIGHT_SUMMARY"] == "${{ needs.history.outputs.summary }}"


def _perf_steps() -> tuple[dict, list[str], dict]:
    import yaml

    job = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["perf"]
    return job, [s.get("name") for s in job["steps"]], {s.get("name"): s for s in job["steps"]}


def _publish_steps() -> tuple[dict, list[str], dict]:
    import yaml

    job = yaml.safe_load((WORKFLOWS / "reusable-nightly.yml").read_text())["jobs"]["publish"]
    return job, [s.get("name") for s in job["steps"]], {s.get("name"): s for s in job["steps"]}


def test_nightly_perf_job_keeps_each_session_in_the_store_and_files_environment_alerts():
    """The perf job (read-only) finds tonight's environment alerts in a copy of the store with its session added; the
    publish job adds the record to the perf-results branch (contents write), then the alerts open or comment on issues
    (issues write) through the same issue script."""
    job, names, steps = _perf_steps()
    assert job["permissions"] == {"contents": "read"}
    alerts = steps["Find environment regressions"]
    run = " ".join(alerts["run"].replace("\\\n", " ").split())
    assert names.index("Read the results store") < names.index(alerts["name"]) < names.index("Upload results")
    assert '-m harness store add perf-results --store .perf-records --track "$PERF_ENV"' in run
    assert (
        '-m harness store alerts --store .perf-records --gpu "$PERF_GPU" --track "$PERF_ENV" '
        "--new --issues perf-results/env-alerts.json" in run
    )
    pub, pnames, psteps = _publish_steps()
    assert pub["permissions"]["contents"] == "write" and pub["permissions"]["issues"] == "write"
    store, issues = (
        psteps["Keep the session in the results store"],
        psteps["Open or update environment-regression issues"],
    )
    assert pnames.index(store["name"]) < pnames.index(issues["name"]) < pnames.index("Open or update regression issues")
    assert store["id"] == "store" and "hashFiles('perf-results/**/runs.jsonl')" in store["if"]
    assert 'python -m harness store add perf-results --store "$PERF_STORE" --track "$PERF_ENV"' in store["run"]
    issue_script = 'bash "$PERF_HARNESS"/.github/scripts/regression-issues.sh'
    assert f"REPORT=perf-results/env-alerts.json {issue_script}" in issues["run"]
    assert issues["env"]["GH_TOKEN"] == "${{ github.token }}" and pub["env"]["GH_REPO"] == "${{ github.repository }}"


def test_the_store_steps_give_git_the_token_as_a_header_in_the_environment_only(tmp_path):
    """git authenticates with the job's token as actions/checkout does (an AUTHORIZATION extraheader for the server),
    set through GIT_CONFIG_COUNT: nothing is printed, nothing written to a git config file, no `set -x`, no token on a
    command line."""
    import base64

    _, _, steps = _publish_steps()
    for step in (steps["Keep the session in the results store"], steps["Propose missing baselines (first night)"]):
        auth = [ln for ln in step["run"].splitlines() if "GIT_CONFIG" in ln]
        assert len(auth) == 2 and "set -x" not in step["run"] and "echo" not in step["run"], step["name"]
        assert (
            step["run"].count("$GH_TOKEN") == 1 and "printf 'x-access-token:%s' \"$GH_TOKEN\" | base64" in step["run"]
        )
        env = dict(os.environ, GH_TOKEN="secret-token", GITHUB_SERVER_URL="https://github.com", HOME=str(tmp_path))
        proc = _bash_step(
            "\n".join(auth) + "\ngit config --get-all http.https://github.com/.extraheader", tmp_path, env
        )
        want = "AUTHORIZATION: basic " + base64.b64encode(b"x-access-token:secret-token").decode()
        assert proc.returncode == 0 and proc.stdout == want + "\n" and not proc.stderr, (
            step["name"],
            proc.stdout,
            proc.stderr,
        )
        assert not list(tmp_path.rglob("*config*")), step["name"]


def _bash_step(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_nightly_history_step_builds_the_page_from_the_store(tmp_path):
    """The build step reads every session of the store (a bare git repository here, as the perf jobs left it: a pinned
    and a latest session) into one page, pinned and latest apart."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    _, _, steps = _history_job()
    bare = tmp_path / "store.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'
    )  # this interpreter (a symlink would lose its venv)
    (bindir / "python").chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(ROOT),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        PERF_STORE=str(bare),
        GH_TOKEN="x",
        GITHUB_SERVER_URL="https://github.com",
    )
    results = ROOT / "tests" / "data" / "history" / "ab-cpu"
    subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / ".perf-store")], check=True, capture_output=True)
    for track, src in (("pinned", "a"), ("latest", "b")):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "store",
                "add",
                str(results / src),
                "--store",
                str(bare),
                "--track",
                track,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # the checkout of the branch, as the step before the build leaves it
    subprocess.run(["git", "-C", str(tmp_path / ".perf-store"), "pull", "-q", "origin", "perf-results"], check=True)
    output = tmp_path / "github-output"
    proc = _bash_step(
        steps["Build the history page from the results store"]["run"],
        tmp_path,
        dict(env, XDG_CACHE_HOME=str(tmp_path / "fresh"), GITHUB_OUTPUT=str(output)),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "night-summary.md").read_text().startswith(
        "## What changed tonight"
    )
    assert output.read_text().startswith("summary<<EOF_SUMMARY\n## What changed tonight")
    data = json.loads((tmp_path / "site" / "history.json").read_text())
    keys = sorted(s["key"] for s in data["series"])
    assert keys == [f"cpu/tiny-qwen3/{d}/{t}" for d in ("1x4", "2x2", "4x1") for t in ("latest", "pinned")]
    latest = next(s for s in data["series"] if s["key"] == "cpu/tiny-qwen3/4x1/latest")
    assert latest["sessions"] == ["ab-20261129T215219-092982-b"]


def test_the_comparison_defaults_are_the_nightly_settings():
    """What the nightly's A/B and confirm steps get without a tuning flag, on a runner of 16 CPUs: blocks of one step
    (single micro-batch turns where the decomposition accumulates gradients), 2 warm-up steps per side and launch, 20
    launches in 10 minutes, at most 800 pairs, both workers on the last CPU, the next launch pre-started and warmed up
    apart on the others."""
    from harness.sidebyside.config import ComparisonConfig
    from harness.spec_folder import load_workload

    w = load_workload(ROOT / "workloads", "qwen3-1.7b-lora")
    base = ComparisonConfig(workload=w.name, decomposition="4x1")
    assert (base.budget_minutes, base.warmup_steps, base.pairs, base.threshold) == (10.0, 2, 800, 0.02)
    for dec, grain in (("4x1", "step"), ("1x4", "micro"), ("2x2", "micro")):
        r = ComparisonConfig(workload=w.name, decomposition=dec).resolved(
            w.decomposition(dec).grad_accum, available=list(range(16))
        )
        assert (r.grain, r.block_steps, r.warmup_steps, r.launches, r.pairs) == (grain, 1, 2, 20, 800), dec
        assert (r.cpus, r.hold_cpus, r.prestart, r.warm_apart, r.unit) == (
            (15,),
            tuple(range(15)),
            True,
            True,
            "launch",
        ), dec
    two = base.resolved(4, same_split=False, available=list(range(16)))  # the advisor's two splits: no micro turns
    assert (two.grain, two.block_steps) == ("step", 1)
    alone = base.resolved(1, available=[0])  # one CPU: nothing to pin apart or pre-start on
    assert (alone.cpus, alone.prestart, alone.warm_apart) == ((), False, False)


def test_interleave_help_is_short_and_shows_every_default():
    """At most 14 options (research knobs behind --set, test-only injections hidden), each default shown."""
    from harness.commands.cli import parser

    sub = next(a for a in parser()._actions if a.dest == "cmd").choices["interleave"]
    shown = [a for a in sub._actions if a.help != "==SUPPRESS=="]
    assert len(shown) <= 14, [a.option_strings for a in shown]
    text = sub.format_help()
    for flag in ("--gpu", "--budget-minutes", "--results-dir", "--timeout"):
        assert flag in text
    assert "(default: 10.0)" in text and "block_steps=auto" in text and "launches=auto" in text and "pairs=800" in text
    assert "--inject" not in text and "--block-steps" not in text


def test_update_baselines_takes_any_gpu_the_detector_names_and_refuses_a_typo_before_a_runner_waits(tmp_path):
    """The GPU is free text, checked on a hosted runner first (a job whose label no runner carries would wait in the
    queue): every short name of the detector passes, and so does the slug of an unlisted GPU once baselines/<slug>/
    exists."""
    import yaml

    from harness.measuring.env import short_gpu_name

    check = load_script(ROOT / ".github" / "scripts" / "check-gpu-name.py")
    wf = yaml.safe_load((WORKFLOWS / "reusable-update-baselines.yml").read_text())
    assert wf[True]["workflow_call"]["inputs"]["gpu"]["type"] == "string"  # YAML 1.1 reads `on` as True
    assert wf["jobs"]["update"]["needs"] == "check" and wf["jobs"]["check"]["runs-on"] == "ubuntu-latest"
    assert "check-gpu-name.py" in wf["jobs"]["check"]["steps"][-1]["run"]
    for name in ("rtx4090", "a6000", "v100", "l40", "h800", "gh200", "l4", "t4", "h200"):
        assert check.problem(name, "5") is None, name
    for name in check.known_names():
        assert check.problem(name, None) is None and short_gpu_name(name) == name, name
    assert "not a name the harness detects" in check.problem("l44", "5")
    (tmp_path / "rtx-a4000").mkdir()
    assert check.problem("rtx-a4000", "5", baselines=tmp_path) is None and check.problem("rtx-a4000", "5") is not None
    assert "at least 5" in check.problem("l4", "3") and "at least 5" in check.problem("l4", "five")


def test_ci_installs_the_cpu_build_of_torch_from_pytorchs_index_only_where_asked():
    """GitHub's runners get torch from PyTorch's CPU wheel index (TORCH_INDEX_URL, set by the workflows); a machine that
    reaches only PyPI runs .ci/run without it."""
    import yaml

    for wf, script in (("ci.yml", ".ci/run"), ("long-tests.yml", ".ci/run-long")):
        step = yaml.safe_load((WORKFLOWS / wf).read_text())["jobs"][{"ci.yml": "test", "long-tests.yml": "long"}[wf]][
            "steps"
        ][-1]
        assert (
            step["env"]["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu" and f"bash {script}" in step["run"]
        ), wf
        text = (ROOT / script).read_text()
        assert 'if [ -n "${TORCH_INDEX_URL:-}" ]' in text and '--index-url "$TORCH_INDEX_URL"' in text, script
        assert "pip install -q torch==2.13.0\n" in text, script  # without it: the plain install
