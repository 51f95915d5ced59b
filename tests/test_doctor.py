"""``python -m harness doctor``: the machine, its runner label, the workloads and baselines here, the nightly's plan and
what is missing; on this CPU machine, and on a faked GPU (no run is made)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import doctor as doc
from harness.judging import baseline as bl
from harness.results.run import Run
from harness.spec import Workload

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never a connection attempt from the tests
    monkeypatch.delenv("HARNESS_ROOT", raising=False)


def _doctor(**kw) -> list[str]:
    lines: list[str] = []
    assert doc.doctor(out=lines.append, **kw) == 0
    return "\n".join(lines).splitlines()


def test_doctor_from_another_directory_finds_the_project_and_says_json(tmp_path):
    """Run from a directory that is not the project: the project's workloads are found; --json is the same facts."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("HARNESS_ROOT", None)
    res = subprocess.run(
        [sys.executable, "-m", "harness", "doctor", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    f = json.loads(res.stdout)
    assert f["workloads_dir"] == str(ROOT / "workloads")
    names = {w["name"]: w for w in f["workloads"]}
    assert "tiny-qwen3" in names and names["tiny-qwen3"]["runs_here"] is (f["gpu"] == "cpu")
    assert set(f["libraries"]) == set(doc.LIBRARIES) and f["nightly"]["found"] and f["nightly"]["matrix"]
    assert set(f["missing"]["tools"]) == {"gh", "jq", "tox"} and "cannot check the hub from here" in f["missing"]["hub"]


def test_doctor_on_this_cpu_machine(tmp_path, fake_runs, monkeypatch):
    """No GPU: no runner label; tiny-qwen3 runs here and is judged against its baseline, the others have none; the
    nightly runs on GPU runners only; the hub is offline and the pretrained workload needs it."""
    monkeypatch.setattr(doc, "gpu_names", lambda: [])
    monkeypatch.setattr(doc, "detect_gpu", lambda: "cpu")
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    bl.write(
        tmp_path,
        bl.from_runs(
            w,
            "cpu",
            [Run.from_json(r) for r in fake_runs(w, [100, 101, 99, 100, 102], workload_spec=w.to_dict())],
            "test",
        ),
    )
    text = _doctor(workloads_dir=ROOT / "workloads", baselines_dir=tmp_path, project=ROOT)
    assert text[0].startswith("GPU: none detected (cpu)") and "gpu-" not in text[0]
    assert any(ln.startswith("python ") and "bitsandbytes" in ln for ln in text)
    line = next(ln for ln in text if ln.strip().startswith("tiny-qwen3: runs here"))
    assert str(tmp_path / "cpu" / "tiny-qwen3.json") in line
    assert any(
        "qwen3-1.7b-lora-pretrained: not selected here" in ln and "needs the hub: Qwen/Qwen3-1.7B" in ln for ln in text
    )
    assert any(ln.startswith("nightly") and "GPU runners only" in ln for ln in text)
    assert any(ln.strip().startswith("tiny-qwen3: judge against") for ln in text)
    assert any(
        ln.strip().startswith("hub (for Qwen/Qwen3-1.7B") and "cannot check the hub from here" in ln for ln in text
    )
    assert any(ln.strip().startswith("HF_TOKEN: ") for ln in text)


def test_doctor_on_a_gpu_runner_says_its_label_and_the_nightlys_plan(tmp_path, monkeypatch):
    """A faked L4: the label gpu-l4, the driver, and for the GPU workload without an L4 baseline what the nightly does
    (a first baseline from tonight's runs), and the A/B of pinned vs latest, all from the project's nightly.toml."""
    monkeypatch.setattr(doc, "gpu_names", lambda: ["NVIDIA L4"])
    monkeypatch.setattr(doc, "detect_gpu", lambda: "l4")
    monkeypatch.setattr(doc, "_nvml", lambda: ("570.86", "12.8"))
    (tmp_path / "nightly.toml").write_text(
        'gpus = ["l4", "t4"]\nworkloads = ["qwen3-1.7b-lora"]\n[ab]\nworkload = "qwen3-1.7b-lora"\n'
        'decompositions = ["1x4", "4x1"]\n'
    )
    f = doc.facts(ROOT / "workloads", tmp_path / "baselines", tmp_path)
    assert f.machine.runner_label == "gpu-l4" and f.machine.driver == "570.86"
    n = f.nightly
    assert (
        n.runs_here and n.ab_workload == "qwen3-1.7b-lora" and n.ab_decompositions == ("1x4", "4x1") and n.ab_runs_here
    )
    plan = {p.workload: p.action for p in n.plan}
    assert plan == {"qwen3-1.7b-lora": "bootstrap"}
    text = doc.text(f)
    assert "self-hosted, linux, gpu-l4" in text[0] and "570.86" in text[1] and "12.8" in text[1]
    assert any("nightly tonight" in ln for ln in text) and any(
        "A/B (latest job): pinned vs latest qwen3-1.7b-lora" in ln for ln in text
    )


def test_doctor_on_a_gpu_missing_from_the_matrix(tmp_path, monkeypatch):
    monkeypatch.setattr(doc, "gpu_names", lambda: ["NVIDIA A100-SXM4-80GB"] * 2)
    monkeypatch.setattr(doc, "detect_gpu", lambda: "a100")
    monkeypatch.setattr(doc, "_nvml", lambda: (None, None))
    text = _doctor(workloads_dir=ROOT / "workloads", baselines_dir=tmp_path, project=ROOT)
    assert "gpu-a100" in text[0] and "2 x NVIDIA A100-SXM4-80GB" in text[0]
    assert any(ln.startswith("nightly") and 'have no a100; add "a100" there' in ln for ln in text)


def test_a_workload_that_does_not_load_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.toml").write_text('name = "bad"\n[model]\n')
    lines: list[str] = []
    assert doc.doctor(workloads_dir=tmp_path, baselines_dir=tmp_path, project=ROOT, out=lines.append) == 2
    text = "\n".join(lines).splitlines()
    assert f"workloads ({tmp_path}): 1 cannot run (BROKEN below), the others can" in text
    assert any(ln.startswith("  bad.toml: BROKEN, not run: ") and "bad.toml" in ln for ln in text)
    assert any(ln.strip().startswith("HF_TOKEN") for ln in text)  # the rest is still said


def test_doctor_says_whether_the_pull_request_check_is_set_up(tmp_path, monkeypatch):
    """The workflow file, the labels it uses and the GPUs of nightly.toml it runs on; without the file, not set up."""
    monkeypatch.setattr(doc, "gpu_names", lambda: ["NVIDIA L4"])
    monkeypatch.setattr(doc, "detect_gpu", lambda: "l4")
    monkeypatch.setattr(doc, "_nvml", lambda: (None, None))
    text = "\n".join(doc.text(doc.facts(ROOT / "workloads", tmp_path, ROOT)))
    assert (
        f"pull-request check ({ROOT / '.github' / 'workflows' / 'pr-check.yml'}): set up; "
        "the label perf-check starts it" in text
    )
    assert "perf-accepted accepts a measured regression" in text and "gh label create perf-check" in text
    assert "runs on the runners labelled gpu-l4, gpu-t4, gpu-h200 (nightly.toml gpus); base pins" in text
    (tmp_path / "nightly.toml").write_text('gpus = ["t4"]\nworkloads = []\n[pr]\nlabel = "bench"\n')
    f = doc.facts(ROOT / "workloads", tmp_path, tmp_path)
    assert f.pr_check.found is False and f.pr_check.pr is not None and f.pr_check.pr.label == "bench"
    assert f.pr_check.to_json()["settings"]["label"] == "bench"
    assert "pull-request check: not set up (no " in "\n".join(doc.text(f))
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "pr-check.yml").write_text("name: x\n")
    text = "\n".join(doc.text(doc.facts(ROOT / "workloads", tmp_path, tmp_path)))
    assert "the label bench starts it" in text and "gpu-t4 (nightly.toml gpus), not this one" in text
