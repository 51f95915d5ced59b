"""The command line as strict as the plugin: ``--gpu auto`` resolved and a mismatch refused, relative defaults from the
project root, and bad settings refused in one line before any training (for pytest: a usage error at configure)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import options as opt
from harness.commands import cli
from harness.measuring import env

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def on(monkeypatch):
    """``on("l4")``: this machine detects that device; the command functions record their arguments instead of
    training."""
    calls: dict[str, dict] = {}

    class Done(int):  # what the commands return: an exit code, or a result that carries one
        exit_code = 0

    def fake(name):
        def record(*args, **kw):
            calls[name] = dict(kw, args=args)
            return Done(0)

        return record

    from harness.sidebyside import run as interleave
    from harness.suite import ab, calibrate, census, compare
    from harness.workflows import advise

    for mod, name in (
        (calibrate, "calibrate"),
        (census, "census"),
        (ab, "ab"),
        (advise, "advise"),
        (interleave, "interleave"),
        (compare, "baseline_update"),
    ):
        monkeypatch.setattr(mod, name, fake(name))
    monkeypatch.delenv(opt.ROOT_ENV, raising=False)

    def machine(gpu: str):
        monkeypatch.setattr(env, "detect_gpu", lambda: gpu)
        return calls

    return machine


@pytest.mark.parametrize(
    "argv, fn",
    [
        (["calibrate", "--workload", "tiny-qwen3"], "calibrate"),
        (["census", "--workload", "tiny-qwen3"], "census"),
        (["ab", "--workload", "tiny-qwen3", "--python-b", sys.executable], "ab"),
        (["advise", "--workload", "tiny-qwen3"], "advise"),
        (["baseline", "update", "runs"], "baseline_update"),
    ],
)
def test_gpu_auto_is_the_detected_device(on, argv, fn):
    calls = on("l4")
    assert cli.main([*argv, "--gpu", "auto"]) == 0
    assert calls[fn]["gpu"] == "l4"
    assert cli.main([*argv, "--gpu", "L4"]) == 0 and calls[fn]["gpu"] == "l4"


def test_interleave_gets_the_detected_device(on):
    calls = on("h200")
    assert cli.main(["interleave", "--workload", "tiny-qwen3", "--decomposition", "4x1"]) == 0
    assert calls["interleave"]["args"][0].gpu == "h200"


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "--workload", "tiny-qwen3", "--gpu", "bogus"],
        ["calibrate", "--workload", "tiny-qwen3", "--gpu", "l4"],
        ["census", "--workload", "tiny-qwen3", "--gpu", "l4"],
        ["ab", "--workload", "tiny-qwen3", "--gpu", "t4", "--python-b", sys.executable],
        ["advise", "--workload", "tiny-qwen3", "--gpu", "auto-ish"],
        ["interleave", "--workload", "tiny-qwen3", "--decomposition", "4x1", "--gpu", "h200"],
        ["overhead", "--workload", "tiny-qwen3", "--decomposition", "4x1", "--gpu", "l4"],
    ],
)
def test_a_gpu_this_machine_does_not_have_is_refused_in_one_line(on, capsys, argv):
    calls = on("cpu")
    assert cli.main(argv) == 2 and not calls
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --gpu=") and "but this machine has cpu" in err[0]


def test_relative_defaults_are_the_projects(on, tmp_path, monkeypatch):
    """From a directory that is not the project, the defaults are the project's; a path typed stays the user's;
    a directory with its own workloads/ is its own project, and HARNESS_ROOT names one."""
    calls = on("cpu")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["calibrate", "--gpu", "cpu", "--workload", "tiny-qwen3"]) == 0
    assert calls["calibrate"]["workloads_dir"] == str(ROOT / "workloads")
    assert calls["calibrate"]["results_dir"] == str(ROOT / "perf-results" / "calibrate")
    assert cli.main(["calibrate", "--gpu", "cpu", "--workload", "tiny-qwen3", "--results-dir", "mine"]) == 0
    assert calls["calibrate"]["results_dir"] == "mine"
    (tmp_path / "workloads").mkdir()
    assert opt.project_root() == tmp_path
    monkeypatch.setenv(opt.ROOT_ENV, str(tmp_path / "elsewhere"))
    assert cli.main(["baseline", "update", "runs", "--gpu", "cpu"]) == 0
    assert calls["baseline_update"]["baselines_dir"] == str(tmp_path / "elsewhere" / "baselines")


def test_a_command_run_from_another_directory_finds_the_projects_workloads(tmp_path):
    """The bug: from /tmp, "no workload 'tiny-qwen3' in workloads; known: " with an empty list. Refused before any run
    (the mismatch of --steps 0) so nothing trains."""
    envs = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    envs.pop(opt.ROOT_ENV, None)
    res = subprocess.run(
        [sys.executable, "-m", "harness", "census", "--gpu", "cpu", "--workload", "nope"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=envs,
        timeout=120,
    )
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert f"no workload 'nope' in {ROOT / 'workloads'}; known: " in res.stderr and "tiny-qwen3" in res.stderr
    assert not (tmp_path / "perf-results").exists()


def _runs(tmp_path, fake_runs, tiny, label, found):
    d = tmp_path / "runs"
    d.mkdir()
    recs = fake_runs(tiny, [100, 101, 99, 100, 102], gpu=label, workload_spec=tiny.to_dict())
    for r in recs:
        r["env"] = dict(r["env"], gpu_short=found)
    (d / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def test_baseline_update_refuses_runs_that_ran_on_another_device(tmp_path, fake_runs, tiny, capsys):
    """Runs labelled l4 whose worker found the CPU (--gpu l4 on a CPU machine, before the CLI refused it) record no L4
    baseline."""
    d = _runs(tmp_path, fake_runs, tiny, "l4", "cpu")
    assert cli.main(["baseline", "update", str(d), "--gpu", "l4", "--baselines-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refusing to record a l4 baseline" in err[0] and "ran on cpu" in err[0]
    assert not (tmp_path / "b").exists()


def test_baseline_update_records_runs_of_their_own_device(tmp_path, fake_runs, tiny, monkeypatch):
    monkeypatch.setattr(env, "detect_gpu", lambda: "cpu")
    d = _runs(tmp_path, fake_runs, tiny, "cpu", "cpu")
    assert cli.main(["baseline", "update", str(d), "--gpu", "auto", "--baselines-dir", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "cpu" / "tiny-qwen3.json").exists()


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["ab", "--gpu", "cpu", "--workload", "tiny-qwen3", "--python-b", "/nonexistent/python"],
            "--python-b /nonexistent/python: not an executable",
        ),
        (
            ["ab", "--gpu", "cpu", "--workload", "tiny-qwen3", "--python-b", "/tmp"],
            "--python-b /tmp: not an executable",
        ),
        (
            ["ab", "--gpu", "cpu", "--workload", "tiny-qwen3", "--python-b", sys.executable, "--repeats", "1"],
            "--repeats must be at least 2",
        ),
        (
            ["census", "--gpu", "cpu", "--workload", "tiny-qwen3", "--python", "/nonexistent/python"],
            "--python /nonexistent/python: not an executable",
        ),
        (["calibrate", "--gpu", "cpu", "--workload", "tiny-qwen3", "--repeats", "1"], "--repeats must be at least 2"),
        (["overhead", "--micro", "1x4"], "--micro 1x4: expected DECOMP=MS,... such as 1x4=1510,4x1=394"),
    ],
)
def test_bad_command_settings_are_refused_before_any_run(tmp_path, capsys, monkeypatch, argv, says):
    from harness.suite import ab, calibrate, census

    for mod in (ab, calibrate, census):
        monkeypatch.setattr(mod, "run_slots", lambda *a, **k: pytest.fail("a run was started"))
    assert cli.main([*argv, "--results-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


@pytest.mark.parametrize(
    "args, says",
    [
        (
            ("--update-baselines", "--repeats", "1"),
            "--update-baselines records a baseline from at least 5 runs per decomposition, got --repeats 1",
        ),
        (
            ("--update-baselines", "--inject-slowdown", "0.1"),
            "--update-baselines records plain runs only; drop --inject-slowdown",
        ),
        (("--update-baselines", "--calibrate"), "--calibrate replaces the tests"),
        (("--calibrate", "--repeats", "1"), "--calibrate needs --repeats 2 or more"),
        (
            ("--interleave-python-b", "/nonexistent/python"),
            "--interleave-python-b /nonexistent/python: not an executable Python",
        ),
        (("--gpu", "bogus"), "--gpu=bogus but this machine has"),
    ],
)
def test_the_plugin_refuses_bad_settings_at_configure(perf_project, args, says):
    """A usage error before collection: one line, exit 2, no results dir made."""
    res = perf_project.runpytest("perftests", "-p", "no:cacheprovider", "--results-dir", "out", *args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in res.stderr.lines if ln.strip()]
    assert len(errors) == 1 and says in errors[0], res.stderr.str()
    assert not (perf_project.path / "out").exists()
