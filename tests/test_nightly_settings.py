"""The nightly in one file the team owns: nightly.toml (harness.nightly), read by the workflow and by doctor.

A team changes its GPUs, the workloads each one runs and the A/B there, and the nightly's plan follows with no edit of
the workflow's YAML; a wrong key or value is one line naming the file and the key."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripts import load_script

from harness import nightly
from harness.commands import doctor as doc

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
night_plan = load_script(ROOT / ".github" / "scripts" / "night-plan.py")

TEAM = """\
gpus = ["a100", "l4"]
workloads = ["tiny-qwen3"]

[ab]
workload = "tiny-qwen3"
decompositions = ["2x2", "4x1"]
budget_minutes = 6

[budgets]
bisect_minutes = 12

[gpu.l4]
workloads = []
"""


def project(tmp_path: Path, settings: str) -> Path:
    """A team's checkout: the project's workloads and scripts, its own nightly.toml, no baselines yet."""
    for d in ("workloads", "constraints", ".github"):
        (tmp_path / d).symlink_to(ROOT / d)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "nightly.toml").write_text(settings)
    return tmp_path


def plan(root: Path, monkeypatch, gpu: str, inputs: dict | None = None) -> tuple[int, dict, dict, str]:
    """night-plan.py's exit, its step outputs, the variables it sets for later steps, and its summary."""
    files = {k: root / k.lower() for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY")}
    for k, f in files.items():
        f.write_text("")
        monkeypatch.setenv(k, str(f))
    monkeypatch.setenv("PERF_GPU", gpu)
    monkeypatch.setenv("PERF_ENV", "pinned")
    monkeypatch.setenv("NIGHT_INPUTS", json.dumps(inputs or {}))
    monkeypatch.chdir(root)
    code = night_plan.main([])
    read = [dict(ln.split("=", 1) for ln in files[k].read_text().splitlines()) for k in ("GITHUB_OUTPUT", "GITHUB_ENV")]
    return code, *read, files["GITHUB_STEP_SUMMARY"].read_text()


def test_the_projects_own_file_loads_and_the_workflow_names_no_gpu_or_workload_of_its_own():
    n = nightly.load(ROOT)
    assert n.gpus and n.workloads and n.ab is not None
    text = WORKFLOW.read_text() + (WORKFLOW.parent / "reusable-nightly.yml").read_text()
    assert "qwen3-1.7b-lora" not in text and not re.search(
        r"inputs\.\w+ \|\| '[^']", text
    )  # no default of its own: all in nightly.toml
    assert "NIGHT_INPUTS: ${{ toJSON(inputs) }}" in text and "fromJSON(needs.gpus.outputs.gpus)" in text


def test_a_team_changes_gpus_workloads_and_the_ab_in_its_file_and_the_plan_follows(tmp_path, monkeypatch):
    root = project(tmp_path, TEAM)
    before = WORKFLOW.read_bytes()
    code, out, env, summary = plan(root, monkeypatch, "a100")
    assert code == 0 and out["suite"] == "true" and out["repeats"] == "5"  # a first baseline of tiny-qwen3 on an a100
    assert env == {
        "PERF_WORKLOADS": "tiny-qwen3",
        "AB_WORKLOAD": "tiny-qwen3",
        "AB_DECOMPOSITIONS": "2x2 4x1",
        "AB_BUDGET": "6",
        "BISECT_BUDGET": "12",
        "CONFIRM_BUDGET": "4",
    }
    code, out, env, summary = plan(root, monkeypatch, "l4")  # the l4 runners run nothing but the A/B
    assert (
        code == 0 and out["suite"] == "false" and env["PERF_WORKLOADS"] == "" and "names no workload for l4" in summary
    )
    # a manual run's inputs over the file, for that run
    code, out, env, _ = plan(
        root, monkeypatch, "l4", {"workloads": "tiny-qwen3", "ab_budget": "2", "repeats": "3", "gpus": ""}
    )
    assert code == 0 and (out["repeats"], env["PERF_WORKLOADS"], env["AB_BUDGET"]) == ("3", "tiny-qwen3", "2")
    assert WORKFLOW.read_bytes() == before


def test_the_workflows_first_job_reads_the_gpus_from_the_file_or_the_gpus_input(tmp_path):
    """The `gpus` job of nightly.yml through the project's workflow runner, on the team's checkout."""
    root = project(tmp_path, TEAM)
    shutil.copytree(ROOT / ".ci", root / ".ci")

    def gpus(*inputs: str) -> list:
        cmd = [sys.executable, ".ci/run-workflow.py", str(WORKFLOW), "gpus", "--job-outputs", "o.json", *inputs]
        subprocess.run(
            cmd,
            cwd=root,
            check=True,
            capture_output=True,
            env={k: v for k, v in os.environ.items() if k != "NIGHT_INPUTS"},
        )
        return json.loads(json.loads((root / "o.json").read_text())["gpus"])

    assert gpus() == ["a100", "l4"]
    assert gpus("--input", 'gpus=["h200"]') == ["h200"]


@pytest.mark.parametrize(
    "settings, says",
    [
        ('gpus = ["l4"]\nworkload = ["x"]\n', "nightly.toml: unknown key 'workload'; did you mean 'workloads'?"),
        (
            'gpus = ["l4"]\nworkloads = []\n[ab]\nworkload = "x"\nbudget = 3\n',
            "unknown key 'ab.budget'; did you mean 'ab.budget_minutes'?",
        ),
        ("gpus = []\nworkloads = []\n", "nightly.toml: gpus is empty"),
        ('gpus = ["l4"]\nworkloads = ["$(rm -rf ~)"]\n', "nightly.toml: workloads must be a list of names"),
        (
            'gpus = ["l4"]\nworkloads = []\n[budgets]\nbisect_minutes = 0\n',
            "budgets.bisect_minutes must be a number of minutes above 0",
        ),
        (
            'gpus = ["l4"]\nworkloads = []\n[ab]\nworkload = "x"\ndecompositions = ["2*2"]\n',
            "ab.decompositions must be a list of splits",
        ),
        (
            'gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook_env = "https://hooks.slack.com/services/T/B/x"\n',
            "[alerts] holds a URL: the webhook's URL is a secret, never in this file",
        ),
        ('gpus = ["l4"]\nworkloads = []\n[alerts]\nurl = "http://hooks.example.invalid/x"\n', "[alerts] holds a URL"),
        (
            'gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook_env = "PERF WEBHOOK"\n',
            "alerts.webhook_env must be an environment variable's name",
        ),
        ('gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook = "yes"\n', "alerts.webhook must be true or false"),
        (
            'gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook_en = "X"\n',
            "unknown key 'alerts.webhook_en'; did you mean 'alerts.webhook_env'?",
        ),
        ('gpus = ["l4"]\n', "needs gpus (the GPU runners, by label suffix) and workloads"),
        ('gpus = ["l4"\n', "is not TOML"),
    ],
)
def test_a_wrong_file_is_one_line_naming_the_key(tmp_path, settings, says):
    (tmp_path / "nightly.toml").write_text(settings)
    with pytest.raises(nightly.NightlyError) as err:
        nightly.load(tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_alerts_table_names_the_webhooks_variable_and_its_defaults_post_where_it_is_set(tmp_path):
    assert nightly.load(ROOT).alerts == nightly.Alerts(
        webhook=True, webhook_env="PERF_WEBHOOK_URL", where=str(ROOT / "nightly.toml")
    )
    (tmp_path / "nightly.toml").write_text('gpus = ["l4"]\nworkloads = []\n')
    assert nightly.load(tmp_path).alerts == nightly.Alerts(where=str(tmp_path / "nightly.toml"))
    (tmp_path / "nightly.toml").write_text(
        'gpus = ["l4"]\nworkloads = []\n[alerts]\nwebhook = false\nwebhook_env = "TEAM_HOOK"\n'
    )
    got = nightly.load(tmp_path).alerts
    assert (got.webhook, got.webhook_env) == (False, "TEAM_HOOK")


def test_an_ab_the_plan_cannot_run_is_refused_with_one_line_and_the_suite_still_runs(tmp_path, monkeypatch, capsys):
    """An A/B workload that no file declares, or a split of [ab] decompositions that the workload lacks: no A/B (and no
    bisect) tonight, one ::error:: line naming nightly.toml's key, the suite planned as on any night."""
    cases = (
        (
            TEAM.replace('workload = "tiny-qwen3"', 'workload = "my-chat"'),
            "nightly.toml: ab.workload = 'my-chat': no workload file declares it; known: ",
        ),
        (
            TEAM.replace('decompositions = ["2x2", "4x1"]', 'decompositions = ["8x1", "4x1"]'),
            "nightly.toml: ab.decompositions names 8x1, which tiny-qwen3 does not have (its batch.decompositions: "
            "1x4, 2x2, 4x1); name some of those",
        ),
    )
    for i, (settings, says) in enumerate(cases):
        (tmp_path / str(i)).mkdir()
        root = project(tmp_path / str(i), settings)
        code, out, env, summary = plan(root, monkeypatch, "a100")
        errors = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("::error::")]
        assert code == 0 and out["suite"] == "true" and env["PERF_WORKLOADS"] == "tiny-qwen3", summary
        assert (env["AB_WORKLOAD"], env["AB_DECOMPOSITIONS"]) == ("", "")
        assert (
            len(errors) == 1
            and says in errors[0]
            and f"the A/B: REFUSED, no A/B and no bisect tonight: {says}" in summary
        )


def test_hostile_inputs_are_refused_not_run(tmp_path, monkeypatch, capsys):
    root = project(tmp_path, TEAM)
    for inputs in (
        {"workloads": "tiny-qwen3 $(touch pwned)"},
        {"gpus": '["l4; id"]'},
        {"ab_decompositions": "4x1 `id`"},
    ):
        code, *_ = plan(root, monkeypatch, "a100", inputs)
        assert code == 2 and "::error::night-plan:" in capsys.readouterr().out
    assert not (root / "pwned").exists()


def test_doctor_says_what_the_teams_file_means_here_and_names_a_baseline_not_recorded_with_the_pins(
    tmp_path, monkeypatch
):
    root = project(tmp_path, TEAM)
    monkeypatch.setattr(doc, "gpu_names", lambda: ["NVIDIA A100-SXM4-80GB"])
    monkeypatch.setattr(doc, "detect_gpu", lambda: "a100")
    monkeypatch.setattr(doc, "_nvml", lambda: (None, None))
    (root / "baselines" / "a100").mkdir()
    (root / "baselines" / "a100" / "tiny-qwen3.json").write_text(
        json.dumps({"env": {"versions": {"transformers": "0.0.1", "trl": None}}})
    )
    lines: list[str] = []
    doc.doctor(workloads_dir=root / "workloads", baselines_dir=root / "baselines", project=root, out=lines.append)
    text = "\n".join(lines)
    assert (
        f"nightly tonight ({root / 'nightly.toml'}): a pinned and a latest job on the runner labelled gpu-a100" in text
    )
    assert "A/B (latest job): pinned vs latest tiny-qwen3 (2x2 4x1)" in text
    assert "pins: " in text and "was recorded with transformers 0.0.1 (pinned " in text and "tox -e pinned" in text
    (root / "nightly.toml").write_text("gpus = 1\n")
    lines.clear()
    assert (
        doc.doctor(workloads_dir=root / "workloads", baselines_dir=root / "baselines", project=root, out=lines.append)
        == 2
    )
    assert "nightly: BROKEN, the nightly would refuse to run: " in "\n".join(lines)


def test_a_broken_workload_the_file_does_not_name_is_a_line_of_the_plan_not_a_refusal(tmp_path, monkeypatch, capsys):
    root = project(tmp_path, TEAM)
    (root / "workloads").unlink()
    shutil.copytree(ROOT / "workloads", root / "workloads")
    (root / "workloads" / "typo.toml").write_text(
        (ROOT / "workloads" / "tiny-qwen3.toml")
        .read_text()
        .replace('name = "tiny-qwen3"', 'name = "typo"')
        .replace("[lora]\n", "[lora]\nrank = 3\n")
    )
    code, out, env, summary = plan(root, monkeypatch, "a100")
    assert code == 0 and env["PERF_WORKLOADS"] == "tiny-qwen3" and "typo.toml: BROKEN, not run tonight: " in summary


def test_a_broken_workload_the_file_names_goes_to_the_suite_named_in_the_plan(tmp_path, monkeypatch, capsys):
    """Named tonight, a broken workload stays in PERF_WORKLOADS (the suite fails one item and one verdict for it and
    measures the others); a name that no file declares is dropped with one ::error:: line; the plan exits 0."""
    root = project(
        tmp_path, TEAM.replace('workloads = ["tiny-qwen3"]', 'workloads = ["tiny-qwen3", "typo", "nope"]', 1)
    )
    (root / "workloads").unlink()
    (root / "workloads").mkdir()
    shutil.copy(ROOT / "workloads" / "tiny-qwen3.toml", root / "workloads")
    (root / "workloads" / "typo.toml").write_text('name = "typo"\n[model\n')  # not TOML: named by its stem
    code, out, env, summary = plan(root, monkeypatch, "a100")
    errors = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("::error::")]
    assert code == 0 and out["suite"] == "true" and env["PERF_WORKLOADS"] == "tiny-qwen3 typo", summary
    assert out["dropped"] == "nope" and env["AB_WORKLOAD"] == "tiny-qwen3"
    assert (
        "- typo: BROKEN, not measured (the suite fails one item and one verdict for it, and measures the others): "
        in summary
    )
    assert "workloads/typo.toml: not valid TOML" in summary and "\n- nope: NOT RUN, dropped: " in summary
    assert (
        len(errors) == 1
        and "names 'nope' for a100, which no workload file declares (known: tiny-qwen3, typo)" in errors[0]
    )


def test_doctor_refuses_an_ab_split_its_workload_lacks_and_a_name_no_file_declares(tmp_path, monkeypatch):
    """One line each, exit 2, before any GPU time: what the night's plan would refuse."""
    monkeypatch.setattr(doc, "gpu_names", lambda: ["NVIDIA A100-SXM4-80GB"])
    monkeypatch.setattr(doc, "detect_gpu", lambda: "a100")
    monkeypatch.setattr(doc, "_nvml", lambda: (None, None))
    root = project(tmp_path, TEAM.replace('decompositions = ["2x2", "4x1"]', 'decompositions = ["8x1"]'))
    lines: list[str] = []
    args = {"workloads_dir": root / "workloads", "baselines_dir": root / "baselines", "project": root}
    assert doc.doctor(**args, out=lines.append) == 2
    refused = [ln for ln in "\n".join(lines).splitlines() if "REFUSED" in ln]
    assert refused == [
        "  A/B (latest job): REFUSED, no A/B and no bisect tonight: "
        f"{root / 'nightly.toml'}: ab.decompositions names 8x1, which tiny-qwen3 does not have (its "
        "batch.decompositions: 1x4, 2x2, 4x1); name some of those"
    ]
    (root / "nightly.toml").write_text(TEAM.replace('workloads = ["tiny-qwen3"]', 'workloads = ["tiny-qwen4"]', 1))
    lines.clear()
    assert doc.doctor(**args, out=lines.append) == 2
    assert any(
        ln.startswith("  tiny-qwen4: ") and "names 'tiny-qwen4' for a100, which no workload file declares" in ln
        for ln in "\n".join(lines).splitlines()
    )
