"""A write into a results dir (or a store) that fails, a full disk above all: one line naming the file and what the
system said, never a traceback, and never a claim that runs were kept when none were written."""

import errno
import json
import os
from pathlib import Path

import pytest

from harness.commands import cli
from harness.files import append_jsonl, read_jsonl, write_atomic

ROOT = Path(__file__).resolve().parents[1]
SESSION = ("perftests", "--gpu=cpu", "--results-dir", "out", "--repeats", "1", "-p", "no:cacheprovider")
FULL = OSError(errno.ENOSPC, "No space left on device")  # as the system raises it: naming no file
needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the file of a descriptor via /proc")


def _full_for(monkeypatch, name: str, *calls: str) -> None:
    """The os functions ``calls`` (``write``, ``pwrite``) fail with ENOSPC on the descriptors of the files ``name``."""
    for call in calls:
        real = getattr(os, call)

        def full(fd, *args, _real=real):
            if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == name:
                raise OSError(FULL.errno, FULL.strerror)
            return _real(fd, *args)

        monkeypatch.setattr(os, call, full)


@needs_proc
def test_a_disk_full_from_the_start_stops_the_session_before_any_run_in_one_line(
    perf_project, fake_runner, monkeypatch
):
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    _full_for(monkeypatch, ".lock", "write", "pwrite")  # the first file a session writes
    res = perf_project.runpytest(*SESSION)
    text = res.stdout.str()
    assert res.ret == 4 and calls == [] and "Traceback" not in text and "INTERNALERROR" not in text, text
    assert "error: the session did not start: out/.lock: No space left on device; no run was made" in text
    assert "kept in" not in text


@needs_proc
def test_a_disk_that_fills_at_the_first_run_says_no_run_was_kept(perf_project, fake_runner, monkeypatch):
    """A full disk said "runs are kept in runs.jsonl" of a runs.jsonl that was empty."""
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    _full_for(monkeypatch, "runs.jsonl", "write")
    res = perf_project.runpytest(*SESSION)
    text = res.stdout.str()
    assert res.ret == 4 and len(calls) == 1 and "Traceback" not in text and "INTERNALERROR" not in text, text
    assert "error: the session stopped: out/runs.jsonl: No space left on device; no run was kept" in text, text
    assert text.count("error: the session stopped") == 1 and "are kept in" not in text
    assert not (perf_project.path / "out" / "report.json").exists()
    assert read_jsonl(perf_project.path / "out" / "runs.jsonl") == []


def test_a_failed_write_names_the_file_it_was_writing(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(FULL.errno, FULL.strerror)))
    with pytest.raises(OSError) as err:
        append_jsonl(tmp_path / "runs.jsonl", {"run": 1})
    assert (err.value.filename, err.value.strerror) == (str(tmp_path / "runs.jsonl"), "No space left on device")
    monkeypatch.undo()
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(FULL.errno, FULL.strerror)))
    with pytest.raises(OSError) as err:
        write_atomic(tmp_path / "report.json", "{}")
    assert err.value.filename == str(tmp_path / "report.json") and [p.name for p in tmp_path.iterdir()] == [
        "runs.jsonl"  # no temporary file left
    ]


def test_store_add_on_a_full_disk_names_the_record_file(tmp_path, monkeypatch, capsys):
    """``store add`` said "I/O error::", naming no file."""
    real = Path.write_bytes
    store = tmp_path / "store"
    store.mkdir()

    def write_bytes(self, data):
        if self.is_relative_to(store):
            raise OSError(FULL.errno, FULL.strerror)
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    history = ROOT / "tests" / "data" / "history" / "h200" / "lease5-round"
    assert cli.main(["store", "add", str(history), "--store", str(store), "--track", "pinned"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "I/O error::" not in err, err
    assert f"error: I/O error: {store}/" in err and ".json.gz: No space left on device; check that" in err, err


def test_a_results_file_never_holds_nan_or_infinity(tmp_path):
    """A figure that is not a number (the interval of a comparison recovered after one launch) is written as null: the
    file is standard JSON that every reader takes."""
    from harness.files import write_json_atomic

    path = tmp_path / "report.json"
    write_json_atomic(
        path, {"verdict": {"ratio": 1.01, "lo": float("nan"), "hi": float("inf")}, "rows": [(float("-inf"),)]}
    )

    def refuse(name):
        raise ValueError(f"not standard JSON: {name}")

    data = json.loads(path.read_text(), parse_constant=refuse)
    assert data == {"verdict": {"ratio": 1.01, "lo": None, "hi": None}, "rows": [[None]]}
