"""One writer per results dir: every command and API call that writes a results dir holds its lock
(``harness.files.results_lock``), and a second one there is refused at once with one line naming the holder, before any
training; a lock whose holder died is taken over."""

import json
import os
import sys
from pathlib import Path

import pytest

from harness import api
from harness.commands import cli
from harness.files import InUse, results_lock

ROOT = Path(__file__).resolve().parents[1]
TINY = {"gpu": "cpu", "workloads_dir": ROOT / "workloads"}
WORKLOAD = ["--workload", "tiny-qwen3", "--workloads-dir", str(ROOT / "workloads"), "--gpu", "cpu"]


def _suite_report(tmp_path: Path) -> Path:
    """A suite report with one runtime regression, as ``confirm`` reads it."""
    path = tmp_path / "suite-report.json"
    path.write_text(
        json.dumps(
            {
                "gpu": "cpu",
                "session_id": "s1",
                "rows": [{"workload": "tiny-qwen3", "decomposition": "4x1"}],
                "verdicts": [
                    {"kind": "runtime", "case": "tiny-qwen3-4x1", "outcome": "regression", "message": "x1.30"}
                ],
            }
        )
    )
    return path


def _stopped_comparison(root: Path) -> Path:
    """What an interleave run keeps from its start: its blocks and progress files (their content is never read while
    the run holds its lock)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "blocks.jsonl").write_text("")
    (root / "progress.json").write_text("{}")
    return root


COMMANDS = {
    "census": lambda d, tmp: ["census", *WORKLOAD, "--results-dir", str(d)],
    "calibrate": lambda d, tmp: ["calibrate", *WORKLOAD, "--repeats", "2", "--results-dir", str(d)],
    "overhead": lambda d, tmp: ["overhead", *WORKLOAD, "--decomposition", "4x1", "--results-dir", str(d)],
    "ab": lambda d, tmp: ["ab", *WORKLOAD, "--repeats", "2", "--python-b", sys.executable, "--results-dir", str(d)],
    "advise": lambda d, tmp: ["advise", *WORKLOAD, "--results-dir", str(d)],
    "confirm": lambda d, tmp: ["confirm", str(_suite_report(tmp)), "--results-dir", str(d)],
    "recover": lambda d, tmp: ["recover", str(_stopped_comparison(d))],
    "bisect": lambda d, tmp: [
        "bisect",
        *WORKLOAD,
        "--decomposition",
        "4x1",
        "--good",
        "transformers==4.0.0",
        "--bad",
        "transformers==4.1.0",
        "--results-dir",
        str(d),
    ],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_into_a_held_results_dir_is_refused_before_any_run(tmp_path, no_training, capsys, command):
    """A census into a session's dir trained beside its timed runs, a recover of a live comparison wrote a report into
    it: each writer is refused at once, exit 2, one line naming the holder, nothing written."""
    held = tmp_path / "out"
    held.mkdir()
    args = COMMANDS[command](held, tmp_path)
    before = sorted(p.name for p in held.rglob("*"))
    with results_lock(held):  # the other run, in its training
        assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert f"{held} is in use by another run (held by pid {os.getpid()}, since " in err and err.count("\n") == 1, err
    assert sorted(p.name for p in held.rglob("*")) == sorted({*before, ".lock"})  # nothing written


def test_recover_of_a_live_comparison_says_to_stop_it_first(tmp_path, capsys):
    root = _stopped_comparison(tmp_path / "il")
    with results_lock(root):
        assert cli.main(["recover", str(root)]) == 2
    err = capsys.readouterr().err
    assert "stop it first: recover judges a run that has stopped" in err and not (root / "report.json").exists()


@pytest.mark.parametrize(
    "call",
    [
        lambda d: api.run_case("tiny-qwen3", "4x1", repeats=1, results_dir=d, **TINY),
        lambda d: api.census("tiny-qwen3", ["4x1"], results_dir=d, **TINY),
        lambda d: api.advise("tiny-qwen3", results_dir=d, **TINY),
        lambda d: api.judge([d / "b"], against=[d / "a"], out_dir=d),
    ],
    ids=["run_case", "census", "advise", "judge"],
)
def test_a_second_api_call_into_one_results_dir_is_refused(tmp_path, no_training, call):
    """Two ``api.run_case`` into one dir both trained: the second (here: beside a held lock) is refused with InUse."""
    held = tmp_path / "out"
    held.mkdir()
    with results_lock(held):
        with pytest.raises(InUse, match=f"in use by another run \\(held by pid {os.getpid()}, since .*"):
            call(held)
    assert [p.name for p in held.iterdir()] == [".lock"]


def test_the_lock_of_a_holder_that_died_is_taken_over(tmp_path):
    """The lock is the kernel's (flock): a holder killed with -9 leaves its ``.lock`` file, naming it, but holds
    nothing."""
    (tmp_path / ".lock").write_text("pid 999999999, since 2020-01-01 00:00:00: python -m harness census\n")
    with results_lock(tmp_path):
        assert (tmp_path / ".lock").read_text().startswith(f"pid {os.getpid()}, since ")
