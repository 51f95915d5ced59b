"""A verdict the user can trust: no torn record, no second run in one results dir, no report of an earlier run, and an
interrupt that stops whoever called the comparison."""

import json
import os
from pathlib import Path

import pytest

from harness.commands import interleave as il
from harness.engine.config import ComparisonConfig
from harness.engine.loop import Comparison
from harness.files import append_jsonl, read_jsonl, results_lock

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_write_is_an_error_and_leaves_no_torn_line(tmp_path, monkeypatch):
    path = tmp_path / "runs.jsonl"
    append_jsonl(path, {"run": 1})
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[: len(data) // 2]))  # a disk that fills mid-record
    with pytest.raises(OSError, match="wrote .* bytes of a record"):
        append_jsonl(path, {"run": 2, "pad": "x" * 100})
    monkeypatch.undo()
    append_jsonl(path, {"run": 3})
    assert read_jsonl(path) == [{"run": 1}, {"run": 3}]


def test_a_second_run_in_the_same_results_dir_is_refused(tmp_path):
    with results_lock(tmp_path):
        with pytest.raises(ValueError, match="in use by another run; give this one its own --results-dir"):
            with results_lock(tmp_path):
                pass
    with results_lock(tmp_path):  # released: the next run may use it
        pass


def test_an_earlier_report_is_gone_before_a_comparison_starts(tmp_path, monkeypatch):
    """A rerun that dies before its report must not leave the earlier run's report to be read as its own."""
    stale = {"verdict": {"outcome": "regression", "message": "an earlier run"}}
    (tmp_path / "report.json").write_text(json.dumps(stale))
    cfg = ComparisonConfig(workload="tiny-qwen3", decomposition="4x1", gpu="cpu", python_b="/nonexistent/python", results_dir=str(tmp_path),
                           workloads_dir=str(ROOT / "workloads"), pairs=4, launches=2)
    with pytest.raises(ValueError, match="not an executable Python"):
        il.interleave(cfg, out=lambda _: None)  # refused before any run: the settings are checked first
    cfg = ComparisonConfig(workload="tiny-qwen3", decomposition="4x1", gpu="cpu", results_dir=str(tmp_path), skip_same_versions=True,
                           workloads_dir=str(ROOT / "workloads"), pairs=4, launches=2)
    assert il.interleave(cfg, out=lambda _: None) == 0  # the same versions: nothing to run, and nothing of this run to report
    assert (tmp_path / "report.json").exists()  # no run started, so the earlier report stays where it was

    def interrupted(*_, **__):
        raise KeyboardInterrupt("SIGTERM")

    cfg = ComparisonConfig(workload="tiny-qwen3", decomposition="4x1", gpu="cpu", results_dir=str(tmp_path),
                           workloads_dir=str(ROOT / "workloads"), pairs=4, launches=2, cpus=())
    monkeypatch.setattr(Comparison, "run_launch", interrupted)
    with pytest.raises(KeyboardInterrupt):  # it reaches the caller: confirm, advise or pytest stops too
        il.interleave(cfg, out=lambda _: None)
    assert not (tmp_path / "report.json").exists() and (tmp_path / "progress.json").exists()
