"""Every command that measures, judges, compares, reports or records is a shell over one function of ``harness.api``:
it parses its options into the API's config, calls that function once and exits with its result's exit code; and no
code of ``harness/commands/`` stands again in ``harness/api.py``."""

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import api
from harness.commands import cli

ROOT = Path(__file__).resolve().parent.parent
W = ["--workload", "tiny-qwen3"]

# command line -> the API function it calls, and what the call's config (or first argument) must hold
COMMANDS = [
    (
        ["census", *W, "--gpu", "cpu", "--decomposition", "4x1", "--inject-work", "2", "--timeout", "30"],
        "census",
        {"workload": "tiny-qwen3", "decompositions": ("4x1",), "gpu": "cpu", "inject_work": 2, "run_timeout": 30.0},
    ),
    (
        ["advise", *W, "--alpha", "0.01", "--cpus", "0", "--total-budget-minutes", "3"],
        "advise",
        {"workload": "tiny-qwen3", "gpu": "auto", "alpha": 0.01, "threshold": 0.02, "cpus": (0,), "budget_minutes": 3},
    ),
    (
        ["ab", *W, "--python-b", "py", "--threshold", "0.1", "--repeats", "2", "--skip-same-versions"],
        "ab",
        {"workload": "tiny-qwen3", "python_b": "py", "threshold": 0.1, "repeats": 2, "skip_same_versions": True},
    ),
    (
        ["compare", "runs-a", "runs-b", "--alpha", "0.01", "--markdown", "out.md"],
        "compare",
        {"results_dirs": ("runs-b",), "against": ("runs-a",), "alpha": 0.01, "markdown": "out.md", "out_dir": None},
    ),
    (
        ["report", "runs-1", "runs-2", "--out", "rep", "--allow-gpu-mismatch"],
        "judge",
        {"results_dirs": ("runs-1", "runs-2"), "against": (), "out_dir": "rep", "allow_gpu_mismatch": True},
    ),
    (
        ["baseline", "update", "runs", "--gpu", "cpu", *W, "--note", "why"],
        "update_baseline",
        {"results_dirs": ("runs",), "gpu": "cpu", "workloads": ("tiny-qwen3",), "note": "why"},
    ),
    (["recover", "runs"], "recover", "runs"),
    (
        ["interleave", *W, "--decomposition", "4x1", "--python-b", "py", "--set", "pairs=8"],
        "side_by_side",
        {"workload": "tiny-qwen3", "decomposition": "4x1", "python_b": "py", "pairs": 8},
    ),
    (["confirm", "report.json", "--python-a", "py"], "confirm", "report.json"),
    (
        ["bisect", *W, "--decomposition", "4x1", "--good", "trl==1.10.0", "--bad", "trl==1.11.0"],
        "bisect",
        {"workload": "tiny-qwen3", "good": "trl==1.10.0", "bad": "trl==1.11.0"},
    ),
]


@pytest.mark.parametrize("argv, function, expected", COMMANDS, ids=[c[1] for c in COMMANDS])
def test_each_command_calls_its_api_function_once_and_exits_with_its_result(
    monkeypatch, no_training, argv, function, expected
):
    calls = []

    def called(*args, **kwargs):
        calls.append((args, kwargs))
        return 3 if function == "update_baseline" else SimpleNamespace(exit_code=3)  # it returns its exit code

    monkeypatch.setattr(api, function, called)
    assert cli.main(argv) == 3
    assert len(calls) == 1, f"{argv[0]} called api.{function} {len(calls)} times"
    (first, *_), _ = calls[0]
    if isinstance(expected, str):
        assert first == expected
        return
    assert type(first).__name__.endswith("Config"), f"api.{function} was handed {first!r}, not its config"
    assert {k: getattr(first, k) for k in expected} == expected


def test_a_config_is_taken_alone_or_not_at_all(tmp_path, no_training):
    """A script passes the config, or the short arguments; never both (one of the two would be dropped unseen)."""
    from harness.errors import UsageError

    config = api.CensusConfig("tiny-qwen3", ("4x1",), results_dir=str(tmp_path / "out"))
    with pytest.raises(UsageError, match=r"^api.census: pass the CensusConfig alone \(and out\).*got it with repeats$"):
        api.census(config, repeats=2)
    with pytest.raises(UsageError, match=r"^api.judge: pass the JudgeConfig alone .*got it with out_dir$"):
        api.judge(api.JudgeConfig(("runs",)), out_dir="x")


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda: api.CensusConfig("w", "4x1"), "decompositions must be a list of names or paths, got '4x1'"),
        (lambda: api.CensusConfig("w", inject_work=-1), "inject_work must be a whole number >= 0, got -1"),
        (lambda: api.ABConfig("w", "py", repeats=1), "--repeats must be at least 2"),
        (lambda: api.ABConfig("w", "py", alpha=0.7), "alpha must be in (0, 0.5), got 0.7"),
        (lambda: api.AdviseConfig("w", screen=1.0), "--screen must be a number above 1"),
        (lambda: api.AdviseConfig("w", cpus=(-1,)), "cpus must be CPU numbers >= 0, got (-1,)"),
        (lambda: api.JudgeConfig(()), "results_dirs is empty; pass the results dir(s) to judge"),
        (lambda: api.JudgeConfig(("b",), threshold=1.5), "threshold must be a fraction in [0, 1), got 1.5"),
        (lambda: api.BaselineConfig(("r",), ""), "gpu must name the GPU the runs were made on"),
        (lambda: api.BaselineConfig(("r",), "cpu", min_repeats=0), "min_repeats must be a whole number >= 1"),
    ],
)
def test_a_config_refuses_a_bad_field_in_one_line(make, says):
    from harness.errors import BadInput

    with pytest.raises(BadInput) as err:
        make()
    assert says in str(err.value) and "\n" not in str(err.value)


def test_no_code_of_the_commands_stands_again_in_the_api():
    """``duplicates`` (a tool on PATH where the suite is developed) pairs places that share six or more lines; none
    pairs a command with the API, whose function the command calls instead."""
    if shutil.which("duplicates") is None:
        pytest.skip("the duplicates tool is not installed here")
    found = subprocess.run(
        ["duplicates", "--repo", "harness", "--most", "200", "--seconds", "120"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    if "incomplete:" in found:
        pytest.skip("duplicates did not read the whole package: " + found.split("incomplete:", 1)[1].strip())
    rows = [line for line in found.splitlines() if line.startswith("D")]
    assert rows or found.startswith("no duplicates"), found
    crossing = [r for r in rows if "commands/" in r and "api.py" in r]
    assert not crossing, "the commands repeat the API:\n" + "\n".join(crossing)
