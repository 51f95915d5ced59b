"""A verdict the user can trust: no torn record, no second run in one results dir, no report of an earlier run, and an
interrupt that stops whoever called the comparison."""

import contextlib
import errno
import gzip
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.commands import cli
from harness.files import append_jsonl, read_jsonl, results_lock
from harness.judging import baseline as bl
from harness.judging.judge import Judge, load_baselines
from harness.measuring import loop
from harness.reporting import report
from harness.results.run import Run
from harness.sidebyside import run as il
from harness.sidebyside.config import ComparisonConfig
from harness.sidebyside.launchers import Sides
from harness.sidebyside.loop import PROGRESS, Comparison
from harness.spec import SpecError, Workload
from harness.store import record as rec_mod
from harness.store.summary import records_of

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_write_is_an_error_and_leaves_no_torn_line(tmp_path, monkeypatch):
    path = tmp_path / "runs.jsonl"
    append_jsonl(path, {"run": 1})
    real_write = os.write
    monkeypatch.setattr(
        os, "write", lambda fd, data: real_write(fd, data[: len(data) // 2])
    )  # a disk that fills mid-record
    with pytest.raises(OSError, match="wrote .* bytes of a record"):
        append_jsonl(path, {"run": 2, "pad": "x" * 100})
    monkeypatch.undo()
    append_jsonl(path, {"run": 3})
    assert read_jsonl(path) == [{"run": 1}, {"run": 3}]


def test_a_second_run_in_the_same_results_dir_is_refused(tmp_path):
    with results_lock(tmp_path):
        with pytest.raises(
            ValueError,
            match=f"in use by another run \\(held by pid {os.getpid()}, since .*\\); "
            "wait for it, or give this one its own --results-dir",
        ):
            with results_lock(tmp_path):
                pass
    with results_lock(tmp_path):  # released: the next run may use it
        pass


def test_an_earlier_report_is_gone_before_a_comparison_starts(tmp_path, monkeypatch):
    """A rerun that dies before its report must not leave the earlier run's report to be read as its own."""
    stale = {"verdict": {"outcome": "regression", "message": "an earlier run"}}
    (tmp_path / "report.json").write_text(json.dumps(stale))
    cfg = ComparisonConfig(
        workload="tiny-qwen3",
        decomposition="4x1",
        gpu="cpu",
        python_b="/nonexistent/python",
        results_dir=str(tmp_path),
        workloads_dir=str(ROOT / "workloads"),
        pairs=4,
        launches=2,
    )
    with pytest.raises(ValueError, match="not an executable Python"):
        il.interleave(cfg, out=lambda _: None)  # refused before any run: the settings are checked first
    cfg = ComparisonConfig(
        workload="tiny-qwen3",
        decomposition="4x1",
        gpu="cpu",
        results_dir=str(tmp_path),
        skip_same_versions=True,
        workloads_dir=str(ROOT / "workloads"),
        pairs=4,
        launches=2,
    )
    made = il.interleave(
        cfg, out=lambda _: None
    )  # the same versions: nothing to run, and nothing of this run to report
    assert made.exit_code == 0 and made.verdict is None and "same versions" in made.reason
    assert (tmp_path / "report.json").exists()  # no run started, so the earlier report stays where it was

    def interrupted(*_, **__):
        raise KeyboardInterrupt("SIGTERM")

    cfg = ComparisonConfig(
        workload="tiny-qwen3",
        decomposition="4x1",
        gpu="cpu",
        results_dir=str(tmp_path),
        workloads_dir=str(ROOT / "workloads"),
        pairs=4,
        launches=2,
        cpus=(),
    )
    monkeypatch.setattr(Comparison, "run_launch", interrupted)
    with pytest.raises(KeyboardInterrupt):  # it reaches the caller: confirm, advise or pytest stops too
        il.interleave(cfg, out=lambda _: None)
    assert not (tmp_path / "report.json").exists() and (tmp_path / "progress.json").exists()


# ---- a torn record, an unchecked baseline, one bad record among many -------------------------------------------------
def test_a_torn_last_line_of_runs_jsonl_is_remade_on_resume_and_said_in_the_report(tmp_path, make):
    """A run whose record was torn (a kill -9, a full disk) counts as not made: --resume makes it again, on a line of
    its own, and the report says a torn line was skipped; the report's counts are what read_jsonl finds in the file."""
    times = {"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}
    make(times, [], repeats=2).run()
    runs = tmp_path / "out" / "runs.jsonl"
    text = runs.read_text()
    runs.write_text(
        text[: len(text) - 1 - len(text.splitlines()[-1]) // 2]
    )  # the last record cut mid-line, no newline after it
    assert len(read_jsonl(runs)) == 5
    calls = []
    s = make(times, calls, repeats=2, resume=True).run()
    assert calls == [("4x1", 2)] and s.resumed == 5  # the torn run, and only it, is made again
    data = report.build(s.judge(), s.session_id, notes=tuple(s.notes))
    said = f"{runs}:6: a torn last line"
    assert any(line.startswith("note: --resume: ") and said in line for line in report.terminal_lines(data))
    assert said in report.markdown(data) and said in json.dumps(data.to_json())
    assert len(read_jsonl(runs)) == 6 == sum(r.runs for r in data.rows)  # nothing glued onto the torn line
    assert runs.read_text().count("\n") == 7


def _stored_baseline(tmp_path, tiny, fake_runs) -> tuple[dict, Path, Path]:
    """A valid baseline of tiny-qwen3 on cpu (its file's JSON and where it goes) and a results dir of current runs."""
    runs = [Run.from_json(r) for r in fake_runs(tiny, [100, 101, 99, 100, 102])]
    data = bl.from_runs(tiny, "cpu", runs, "cmd").to_json()
    current = tmp_path / "current"
    current.mkdir()
    runs = [dict(r, run_id="now-" + r["run_id"], workload_spec=tiny.to_dict()) for r in fake_runs(tiny, [100, 101, 99])]
    (current / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    return data, bl.path_for(tmp_path / "baselines", "cpu", tiny.name), current


BAD_BASELINES = {  # what was wrong before: NaN and 50 gave exit 0 (every verdict inconclusive, or every one passing),
    # the negative step time "log_ratio needs positive values" without the file, NaN a crash, runs {} a silent skip
    "nan-threshold": (lambda d: d["thresholds"].update(runtime=float("nan")), "thresholds.runtime is nan"),
    "threshold-of-50": (lambda d: d["thresholds"].update(runtime=50), "thresholds.runtime is 50"),
    "alpha-out-of-range": (lambda d: d["thresholds"].update(alpha=0.9), "thresholds.alpha is 0.9"),
    "unknown-threshold": (lambda d: d["thresholds"].update(runtme=0.5), "thresholds.runtme is not a threshold"),
    "negative-step-time": (
        lambda d: d["decompositions"]["2x2"]["runs"][0].update(step_time_median_ms=-5.0),
        "decompositions.2x2.runs[0].step_time_median_ms is -5.0",
    ),
    "nan-step-time": (
        lambda d: d["decompositions"]["2x2"]["runs"][1].update(step_time_median_ms=float("nan")),
        "decompositions.2x2.runs[1].step_time_median_ms is nan",
    ),
    "step-time-of-wrong-type": (
        lambda d: d["decompositions"]["4x1"]["runs"][0].update(step_time_median_ms="fast"),
        "decompositions.4x1.runs[0].step_time_median_ms is a str",
    ),
    "runs-an-object": (
        lambda d: d["decompositions"]["1x4"].update(runs={}),
        "decompositions.1x4.runs is a dict, not a list",
    ),
    "no-runs": (lambda d: d["decompositions"]["1x4"].update(runs=[]), "decompositions.1x4.runs has no run"),
    "workload-of-wrong-type": (lambda d: d.update(workload="tiny-qwen3"), "workload is not an object"),
    "thresholds-a-list": (lambda d: d.update(thresholds=[0.05]), "thresholds is a list, not an object"),
}


@pytest.mark.parametrize("case", list(BAD_BASELINES))
def test_a_baseline_with_a_bad_value_is_refused_naming_its_file_and_key(tmp_path, tiny, fake_runs, capsys, case):
    spoil, said = BAD_BASELINES[case]
    data, path, current = _stored_baseline(tmp_path, tiny, fake_runs)
    spoil(data)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    with pytest.raises(bl.BaselineError) as err:
        bl.load(tmp_path / "baselines", "cpu", tiny)
    assert str(path) in str(err.value) and said in str(err.value) and "\n" not in str(err.value)
    assert cli.main(["compare", str(path), str(current)]) == 2  # bad input: one line, no verdict
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and said in err and "Traceback" not in err
    assert (
        cli.main(["report", str(current), "--baselines-dir", str(tmp_path / "baselines")]) == 2
    )  # it gave "fail" verdicts and exit 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and said in err and not (current / "report.json").exists()
    verdicts = Judge(
        {tiny.name: tiny},
        ((tiny.name, "2x2"),),
        (),
        load_baselines(tmp_path / "baselines", "cpu", {tiny.name: tiny}),
        gpu="cpu",
    ).runtime  # the pytest session: the case fails with that line, it is not skipped
    assert verdicts[f"{tiny.name}-2x2"].outcome == "fail" and said in verdicts[f"{tiny.name}-2x2"].message


def test_baseline_update_counts_a_results_dir_passed_three_times_once(tmp_path, tiny, fake_runs, capsys):
    """``baseline update D D/ D/.`` stored 2 runs as 6, meeting the 5-repeat minimum and narrowing the interval by
    repetition alone; a copy of D under another name adds no runs either, and an edited copy is refused."""
    d, store = tmp_path / "d", tmp_path / "baselines"
    d.mkdir()

    def write_runs(where, medians, **extra):
        where.mkdir(exist_ok=True)
        (where / "runs.jsonl").write_text(
            "".join(json.dumps(dict(r, workload_spec=tiny.to_dict(), **extra)) + "\n" for r in fake_runs(tiny, medians))
        )

    update = ["baseline", "update", "--gpu", "cpu", "--baselines-dir", str(store)]
    write_runs(d, [100, 101])
    assert cli.main([*update, str(d), f"{d}/", f"{d}/."]) == 2
    assert "has 2 run(s), at least 5 needed" in capsys.readouterr().err and not store.exists()
    write_runs(d, [100, 101, 99, 100, 102])
    shutil.copytree(d, tmp_path / "copy")
    assert cli.main([*update, str(d), f"{d}/", f"{d}/.", str(tmp_path / "copy")]) == 0
    stored = json.loads(bl.path_for(store, "cpu", tiny.name).read_text())
    assert {k: len(v["runs"]) for k, v in stored["decompositions"].items()} == {"1x4": 5, "2x2": 5, "4x1": 5}
    write_runs(tmp_path / "edited", [100, 101, 99, 100, 130])
    assert cli.main([*update, str(d), str(tmp_path / "edited")]) == 2
    assert "is recorded twice with different values" in capsys.readouterr().err
    write_runs(
        tmp_path / "nan", [100, 101, 99, 100, float("nan")]
    )  # a run a baseline cannot hold: refused, named, nothing written
    before = bl.path_for(store, "cpu", tiny.name).read_text()
    assert cli.main([*update, str(tmp_path / "nan")]) == 2
    err = capsys.readouterr().err
    assert "step_time_median_ms is nan" in err and "(run 1x4-4)" in err and err.count("\n") == 1
    assert bl.path_for(store, "cpu", tiny.name).read_text() == before


def test_history_leaves_out_and_names_a_bad_record_instead_of_failing_the_page(tmp_path, capsys):
    """One NaN step time failed the whole page (exit 2, the file not named); now that record, a line that is not a
    record and a torn last line are left out, each named on the terminal and on the page, and the rest is drawn."""
    d = tmp_path / "rec"
    shutil.copytree(ROOT / "tests" / "data" / "history" / "cpu-e2e" / "run-b" / "rec", d)
    lines = (d / "runs.jsonl").read_text().splitlines()
    bad = dict(json.loads(lines[0]), step_time_median_ms=float("nan"))
    (d / "runs.jsonl").write_text("\n".join([json.dumps(bad), "[1, 2]", *lines[1:]]) + '\n{"run_id": "torn')
    assert cli.main(["history", str(d), "--out", str(tmp_path / "page")]) == 0
    out, page = capsys.readouterr().out, (tmp_path / "page" / "index.html").read_text()
    data = json.loads((tmp_path / "page" / "history.json").read_text())
    said = [
        f"run {bad['run_id']}: step_time_median_ms is nan",
        "runs.jsonl:2: a JSON list, not a record",
        "a torn last line",
    ]
    assert all(s in out and html.escape(s) in page for s in said) and len(data["skipped"]) == 3
    assert data["results_dirs"][0]["runs"] == len(lines) - 1 and len(data["series"]) == 3


def _interleave_dir(root: Path) -> str:
    """What an interleave run that died before its report leaves: progress.json and the blocks of 6 pairs over 2
    launches."""
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    cfg = ComparisonConfig(
        workload=w.name,
        decomposition="4x1",
        gpu="cpu",
        workloads_dir=str(ROOT / "workloads"),
        results_dir=str(root),
        pairs=6,
        launches=2,
        unit="pair",
    )
    d = w.decomposition("4x1")
    settings = il.settings_of(cfg, w, Sides(d, d), Sides(sys.executable, sys.executable), 1, (6,))
    sid = settings.session_id
    launch = {"launch": 1, "startup_s": 1.0, "ready": {s: {"cuda": False} for s in "ab"}}
    root.mkdir()
    (root / PROGRESS).write_text(
        json.dumps(
            {
                "case": f"{w.name}-4x1",
                "t_start": 1000.0,
                "settings": settings.to_json(),
                "orders": [["a", "b"]] * 6,
                "launches": [launch, dict(launch, launch=2)],
            }
        )
    )
    blocks = [
        {
            "session_id": sid,
            "side": s,
            "launch": 1 + (p > 3),
            "pair": p,
            "order": ["a", "b"],
            "warmup": False,
            "k": 3,
            "step_times_ms": [100.0 + p % 3 + i for i in range(3)],
            "canary_ms": 2.0,
            "started_at": 1000.0 + p,
            "wall_s": 0.3,
            "cpu_s": 0.3,
            "global_step": 3,
            "other_cpus": 0.1,
            "gpu": None,
        }
        for p in range(1, 7)
        for s in "ab"
    ]
    (root / "blocks.jsonl").write_text("".join(json.dumps(b) + "\n" for b in blocks))
    return sid


def test_recover_leaves_out_and_names_a_block_of_the_wrong_shape_and_a_corrupt_progress_file(tmp_path, capsys):
    """A valid-JSON line of the wrong shape in blocks.jsonl was a KeyError traceback in recover; a corrupt progress.json
    an unnamed JSON error. Now the block is left out and named (on the terminal and in the report) and the rest judged;
    the progress file is named in one line that says what to do."""
    root = tmp_path / "run"
    sid = _interleave_dir(root)
    with open(root / "blocks.jsonl", "a") as fh:
        fh.write(json.dumps({"session_id": sid, "side": "a", "launch": 1, "pair": 2, "warmup": False}) + "\n")
        fh.write('{"session_id": "' + sid + '", "side": "b", "lau')
    assert cli.main(["recover", str(root)]) == 0
    out = capsys.readouterr().out
    rep = json.loads((root / "report.json").read_text())
    said = ["the block of pair 2, side 'a': step_times_ms is not a list", "blocks.jsonl:14: a torn last line"]
    assert all(s in out and any(s in x for x in rep["recovered"]["skipped"]) for s in said)
    assert (
        rep["recovered"]["pairs"] == rep["verdict"]["pairs"] == 6
        and "2 line(s) of blocks.jsonl left out" in rep["stopped"]
    )
    for text, what in (
        ('{"case": "tiny', "is unreadable"),
        (json.dumps({"case": "x", "settings": []}), "'settings' is not an object"),
    ):
        bad = tmp_path / f"bad-{len(text)}"
        _interleave_dir(bad)
        (bad / PROGRESS).write_text(text)
        assert cli.main(["recover", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{bad / PROGRESS}" in err and what in err and "rerun the comparison" in err


def test_the_report_command_says_a_torn_line_of_runs_jsonl_in_the_report(tmp_path, tiny, fake_runs, capsys):
    """``python -m harness report D`` over a runs.jsonl whose last record is torn: the report counts what read_jsonl
    finds and says, in report.md and report.json, which line was lost."""
    d = tmp_path / "d"
    d.mkdir()
    text = "".join(json.dumps(dict(r, workload_spec=tiny.to_dict())) + "\n" for r in fake_runs(tiny, [100, 101]))
    (d / "runs.jsonl").write_text(text[:-100])
    assert cli.main(["report", str(d), "--baselines-dir", str(tmp_path / "none")]) == 0
    said = f"{d / 'runs.jsonl'}:6: a torn last line"
    data = json.loads((d / "report.json").read_text())
    assert (
        any(said in n for n in data["notes"])
        and said in (d / "report.md").read_text()
        and said in capsys.readouterr().out
    )
    assert sum(r["runs"] for r in data["rows"]) == len(read_jsonl(d / "runs.jsonl")) == 5


def test_the_report_command_names_and_skips_a_run_of_the_wrong_shape_and_writes_no_nan(
    tmp_path, tiny, fake_runs, capsys
):
    """A NaN, infinite or string median in runs.jsonl, a line nested 100,000 deep or with a 4,301-digit integer ended
    ``report`` with exit 4: each line is now named in the report and on the terminal, and the other runs judged."""
    d = tmp_path / "d"
    d.mkdir()
    recs = [dict(r, workload_spec=tiny.to_dict()) for r in fake_runs(tiny, [100, 101, 99, 100, 102])]
    lines = [json.dumps(r) for r in recs]
    bad = {
        1: json.dumps(dict(recs[1], step_time_median_ms=float("nan"))),
        2: json.dumps(dict(recs[2], step_time_median_ms="fast")),
        3: json.dumps(dict(recs[3], train_runtime_s=float("inf"))),
        4: "[" * 100_000 + "]" * 100_000,
        5: '{"run_id": "r", "repeat": ' + "9" * 4301 + "}",
    }
    (d / "runs.jsonl").write_text("".join(bad.get(i, line) + "\n" for i, line in enumerate(lines)))
    assert cli.main(["report", str(d), "--baselines-dir", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    said = [
        f"runs.jsonl:2: run '{recs[1]['run_id']}': step_time_median_ms is nan, not a finite number",
        f"runs.jsonl:3: run '{recs[2]['run_id']}': step_time_median_ms is a str, not a finite number",
        f"runs.jsonl:4: run '{recs[3]['run_id']}': train_runtime_s is inf, not a finite number",
        "runs.jsonl:5: not a record (arrays and objects nested 100000 deep, more than 64)",
        "runs.jsonl:6: not a record (an integer of more than 4300 digits)",
    ]
    text = (d / "report.json").read_text()
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in report.json"))
    assert all(any(s in n for n in data["notes"]) and s in out for s in said), (out, data["notes"])
    assert sum(r["runs"] for r in data["rows"]) == len(recs) - len(bad)


def test_a_comparison_recovered_after_one_launch_writes_standard_json(tmp_path, capsys):
    """With the launch as the unit, one launch gives no interval: the recovered report wrote it as NaN, which browsers
    and jq refuse; it is null now, and the verdict says what one launch allows."""
    root = tmp_path / "run"
    _interleave_dir(root)
    prog = json.loads((root / PROGRESS).read_text())
    prog["settings"]["unit"] = "launch"
    prog["launches"] = prog["launches"][:1]
    (root / PROGRESS).write_text(json.dumps(prog))
    blocks = [dict(json.loads(ln), launch=1) for ln in (root / "blocks.jsonl").read_text().splitlines()]
    (root / "blocks.jsonl").write_text("".join(json.dumps(b) + "\n" for b in blocks))
    assert cli.main(["recover", str(root)]) in (0, 1)
    capsys.readouterr()
    data = json.loads((root / "report.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in report.json"))
    assert data["recovered"] and (data["verdict"] is None or data["verdict"]["outcome"] != "regression")


@pytest.mark.parametrize("alpha, says", [("x", "settings.alpha is a str"), (float("nan"), "settings.alpha is nan")])
def test_recover_refuses_settings_it_cannot_judge_with_in_one_line(tmp_path, capsys, alpha, says):
    """An alpha that is a string or NaN in progress.json ended recover with exit 4 (a TypeError, a ValueError in the
    look schedule): now exit 2, one line naming the file and the key."""
    root = tmp_path / "run"
    _interleave_dir(root)
    prog = json.loads((root / PROGRESS).read_text())
    prog["settings"]["alpha"] = alpha
    (root / PROGRESS).write_text(json.dumps(prog))
    assert cli.main(["recover", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{root / PROGRESS}: {says}, not a finite number" in err
    assert not (root / "report.json").exists()


def test_resume_skips_and_names_a_record_with_a_nan_median(tmp_path, make):
    """A resumed session judged a NaN median of the runs it took over: the run is named and made again instead."""
    times = {"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}
    make(times, [], repeats=1).run()
    runs = tmp_path / "out" / "runs.jsonl"
    recs = read_jsonl(runs)
    runs.write_text("".join(json.dumps(r) + "\n" for r in [*recs[:-1], dict(recs[-1], step_time_median_ms="x")]))
    calls = []
    s = make(times, calls, repeats=1, resume=True).run()
    said = f"run {recs[-1]['run_id']!r}: step_time_median_ms is a str, not a finite number"
    assert calls == [("4x1", 1)] and any(said in n for n in s.notes)


def test_resume_skips_and_names_a_record_of_the_wrong_shape(tmp_path, make):
    """A valid-JSON record that lacks what --resume reads (its case) is skipped and named, its run made again."""
    times = {"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}
    make(times, [], repeats=1).run()
    runs = tmp_path / "out" / "runs.jsonl"
    recs = read_jsonl(runs)
    runs.write_text(
        "".join(json.dumps(r) + "\n" for r in recs[:-1])
        + json.dumps({k: v for k, v in recs[-1].items() if k != "workload"})
        + "\n"
    )
    calls = []
    s = make(times, calls, repeats=1, resume=True).run()
    assert calls == [("4x1", 1)] and any(f"run {recs[-1]['run_id']!r} lacks its session, case" in n for n in s.notes)


# ---- one writer per results dir --------------------------------------------------------------------------------------
SESSION = ("perftests", "--gpu=cpu", "--results-dir", "out", "--repeats", "1", "-p", "no:cacheprovider")


def test_a_pytest_session_is_refused_at_once_where_another_run_writes(perf_project, fake_runner):
    """Two sessions in one --results-dir both ran (two sessions in one runs.jsonl): the second is refused before any
    run, with one line naming the holder, exit 2, and what the first wrote is left as it was."""
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    out = perf_project.path / "out"
    out.mkdir()
    (out / "runs.jsonl").write_text('{"run_id": "the-other-session"}\n')
    with results_lock(out):  # the other session, in its training
        res = perf_project.runpytest(*SESSION)
    text = res.stdout.str()
    assert res.ret == 2 and calls == [], text
    assert (
        f"is in use by another run (held by pid {os.getpid()}" in text and "give this one its own --results-dir" in text
    )
    assert (out / "runs.jsonl").read_text() == '{"run_id": "the-other-session"}\n' and not (
        out / "report.json"
    ).exists()
    assert perf_project.runpytest(*SESSION).ret in (0, 1) and len(calls) == 3  # released: the next session runs


def test_no_command_writes_beside_a_pytest_session_and_a_comparison_never_replaces_its_report(
    perf_project, fake_runner, monkeypatch, capsys
):
    """While a session trains, ``interleave`` and ``report`` into its results dir are refused at once (exit 2, naming
    it); after it, an interleaved comparison there is refused rather than replacing the session's report.json."""
    calls, beside = [], []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    run_one = loop.run_one
    out = perf_project.path / "out"
    interleave = [
        "interleave",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        str(out),
    ]
    monkeypatch.setattr(il, "launcher_for", lambda factory: pytest.fail("a worker started"))

    def while_training(*args):
        if not beside:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                beside.extend(
                    (cli.main(interleave), cli.main(["report", str(out), "--baselines-dir", str(out / "none")]), err)
                )
        return run_one(*args)

    monkeypatch.setattr(loop, "run_one", while_training)
    res = perf_project.runpytest(*SESSION)
    assert res.ret in (0, 1) and len(calls) == 3 and beside[:2] == [2, 2], res.stdout.str()
    err = beside[2].getvalue()
    assert err.count(f"{out} is in use by another run (held by pid {os.getpid()}") == 2, err
    session_report = (out / "report.json").read_text()
    assert json.loads(session_report)["rows"] and len(read_jsonl(out / "runs.jsonl")) == 3
    assert cli.main(interleave) == 2
    err = capsys.readouterr().err
    assert (
        "report.json is the report of another command (run " in err
        and "never replaces it" in err
        and err.count("\n") == 1
    )
    assert (out / "report.json").read_text() == session_report


def test_baseline_update_and_store_add_are_refused_where_another_one_writes(tmp_path, tiny, fake_runs, capsys):
    d = tmp_path / "d"
    d.mkdir()
    (d / "runs.jsonl").write_text(
        "".join(
            json.dumps(dict(r, workload_spec=tiny.to_dict())) + "\n" for r in fake_runs(tiny, [100, 101, 99, 100, 102])
        )
    )
    store, gpu_dir = tmp_path / "store", tmp_path / "baselines" / "cpu"
    gpu_dir.mkdir(parents=True)
    for held, args in (
        (gpu_dir, ["baseline", "update", str(d), "--gpu", "cpu", "--baselines-dir", str(tmp_path / "baselines")]),
        (store, ["store", "add", str(d), "--store", str(store)]),
    ):
        held.mkdir(exist_ok=True)
        with results_lock(held):
            assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert f"{held} is in use by another run (held by pid {os.getpid()}" in err and err.count("\n") == 1
        assert not [p for p in held.rglob("*") if p.name != ".lock"]  # nothing written
        assert cli.main(args) == 0  # released


# ---- exit codes as documented ----------------------------------------------------------------------------------------
def test_the_report_command_exits_1_on_a_regression_and_0_on_a_pass(tmp_path, tiny, fake_runs, capsys):
    data, path, current = _stored_baseline(tmp_path, tiny, fake_runs)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    report_cmd = ["report", str(current), "--baselines-dir", str(tmp_path / "baselines")]
    assert cli.main(report_cmd) == 0
    slow = [
        dict(r, run_id="slow-" + r["run_id"], workload_spec=tiny.to_dict()) for r in fake_runs(tiny, [140, 141, 139])
    ]
    (current / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in slow))
    assert cli.main(report_cmd) == 1  # docs/exit-codes.md: 1 on a regression; it was 0
    rep = json.loads((current / "report.json").read_text())
    assert any(v["outcome"] == "regression" for v in rep["verdicts"]) and "REGRESSION" in capsys.readouterr().out


def test_a_pytest_session_against_a_broken_baseline_fails_its_workload_before_any_run(
    perf_project, fake_runner, tiny, fake_runs
):
    """It trained every case and then failed the runtime checks; the baseline is refused first, naming its file and key:
    its workload is one failed item (exit 1), trained for nothing."""
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    runs = [Run.from_json(r) for r in fake_runs(tiny, [100, 101, 99, 100, 102])]
    data = bl.from_runs(tiny, "cpu", runs, "cmd").to_json()
    data["thresholds"]["runtime"] = float("nan")
    path = bl.path_for(perf_project.path / "baselines", "cpu", tiny.name)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    res = perf_project.runpytest(*SESSION)
    text = res.stdout.str()
    assert res.ret == 1 and calls == [] and "thresholds.runtime is nan" in text and str(path) in text, text
    assert not (perf_project.path / "out" / "runs.jsonl").exists()


# ---- a store record is untrusted input -------------------------------------------------------------------------------
NIGHT = ROOT / "tests" / "data" / "history" / "h200" / "lease3-4-fresh-checkout"


def _spoiled(rec: dict, how: str) -> bytes:
    """A record file as someone with push access to the store's branch might leave it."""
    if how == "nan-median":
        rec["cases"][0]["runs"][0]["median_ms"] = float("nan")
    elif how == "cases-a-string":
        rec["cases"] = "oops"
    elif how == "a-case-without-runs":
        del rec["cases"][1]["runs"]
    elif how == "a-count-a-string":
        rec["cases"][0]["step_time_ms"]["median"] = "fast"
    elif how == "huge":
        rec["pad"] = " " * (rec_mod.MAX_RECORD_BYTES + 1)
    return gzip.compress(json.dumps(rec).encode())  # json.dumps writes NaN as it is


SPOILED = {
    "nan-median": "a non-finite number (NaN)",
    "cases-a-string": "cases is a str, not a list",
    "a-case-without-runs": "cases[1].runs is missing",
    "a-count-a-string": "cases[0].step_time_ms.median is a str, not a finite number",
    "huge": "unpacks to more than 1 MiB",
}


def test_a_bad_record_in_the_store_is_named_and_left_out_and_the_page_and_alerts_are_still_made(
    tmp_path, monkeypatch, capsys
):
    """``cases: "oops"`` or a case without runs ended history and alerts with exit 4 (an AttributeError), a NaN with
    exit 2, every night; a gzip that unpacks to a GB took its size in memory. Each is now one warning naming its file,
    and the rest is drawn and judged."""
    from harness.store import DirStore

    monkeypatch.setattr(rec_mod, "MAX_RECORD_BYTES", 2**20)  # a small bound: the test need not unpack gigabytes
    base = records_of(NIGHT, track="pinned")[0]
    st = tmp_path / "store"
    good = [replace(base, session_id=f"night-{i}", started_at=f"2027-01-0{i + 1}T02:00:00+0000") for i in range(3)]
    DirStore(st).add(good)
    for i, how in enumerate(SPOILED):
        bad = dict(base.to_json(), session_id=f"bad-{how}")
        (st / "h200" / "pinned" / f"2027-02-0{i + 1}-bad-{how}.json.gz").write_bytes(_spoiled(bad, how))
    assert cli.main(["history", "--store", str(st), "--out", str(tmp_path / "page")]) == 0
    out = capsys.readouterr().out
    for how, said in SPOILED.items():
        assert (
            sum(
                f"bad-{how}.json.gz" in line and said in line
                for line in out.splitlines()
                if line.startswith("warning: ")
            )
            == 1
        ), (how, out)
    data = json.loads((tmp_path / "page" / "history.json").read_text())
    assert data["series"] and all(
        set(s["sessions"]) == {"night-0", "night-1", "night-2"} for s in data["series"] if s["sessions"]
    )
    assert cli.main(["store", "alerts", "--store", str(st), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: ") == len(SPOILED) and json.loads(out[out.index("{") :])["sessions"] == 3


def test_store_add_keeps_the_session_and_names_the_run_with_a_nan(tmp_path, capsys):
    """One NaN median lost the whole night ("Out of range float values are not JSON compliant", no file named)."""
    from harness.store import DirStore

    d = tmp_path / "night"
    shutil.copytree(NIGHT, d)
    recs = read_jsonl(d / "runs.jsonl")
    recs[3]["step_time_median_ms"] = float("nan")
    recs[5]["train_runtime_s"] = float("inf")
    (d / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    st = tmp_path / "store"
    st.mkdir()
    assert cli.main(["store", "add", str(d), "--store", str(st)]) == 0
    out = capsys.readouterr().out
    said = f"run {recs[3]['run_id']}: step_time_median_ms is nan, not a finite number; left out of the stored session"
    assert said in out
    assert f"run {recs[5]['run_id']}: train_runtime_s is inf, not a finite number; left out" in out
    files = list(st.rglob("*.json.gz"))
    assert len(files) == 1
    json.loads(
        gzip.decompress(files[0].read_bytes()), parse_constant=lambda c: pytest.fail(f"{c} in the stored record")
    )  # valid JSON
    (stored,) = DirStore(st).records()
    assert sum(len(c.runs) for c in stored.cases) == len(recs) - 2


# ---- workload values are finite and in range at load -----------------------------------------------------------------
# what passed the load: nan and inf crashed the run (NaN left in runs.jsonl),
# the 77-bit step count trained to the timeout
OUT_OF_RANGE = {
    "learning-rate-nan": (
        "learning_rate = 2e-4",
        "learning_rate = nan",
        "train.learning_rate is nan, not a finite number",
    ),
    "learning-rate-inf": (
        "learning_rate = 2e-4",
        "learning_rate = inf",
        "train.learning_rate is inf, not a finite number",
    ),
    "dropout-nan": ("dropout = 0.0", "dropout = nan", "lora.dropout is nan, not a finite number"),
    "steps-beyond-64-bits": (
        "max_steps = 20",
        "max_steps = 99999999999999999999999",
        "train.max_steps is an integer of 77 bits",
    ),
    "length-minus-inf": ("max_length = 128", "max_length = -inf", "train.max_length is -inf, not a finite number"),
    "rope-theta-inf": (
        "rope_theta = 1000000.0",
        "rope_theta = inf",
        "model.config.rope_theta is inf, not a finite number",
    ),
}


@pytest.mark.parametrize("case", list(OUT_OF_RANGE))
def test_a_workload_value_that_is_not_finite_or_out_of_range_is_refused_at_load(tmp_path, capsys, case):
    old, new, said = OUT_OF_RANGE[case]
    text = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
    assert old in text
    wdir = tmp_path / "workloads"
    wdir.mkdir()
    (wdir / "tiny-qwen3.toml").write_text(text.replace(old, new))
    args = [
        "census",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--workloads-dir",
        str(wdir),
        "--results-dir",
        str(tmp_path / "out"),
    ]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(wdir / "tiny-qwen3.toml") in err and said in err, err
    assert not (tmp_path / "out").exists()  # refused before any run


def test_an_override_beyond_64_bits_is_refused_as_well():
    with pytest.raises(
        SpecError, match="train.max_steps is an integer of 71 bits, beyond the 64 of a TOML integer"
    ):  # --steps
        Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").with_overrides(max_steps=2**70)


# ---- a full disk, a report linked out of the results dir -------------------------------------------------------------
def _full_disk_for_reports(monkeypatch) -> None:
    """fsync fails with ENOSPC for the temporary files of report.json and report.md (runs.jsonl is still written)."""
    real = os.fsync

    def fsync(fd):
        if "/.report." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the file of a descriptor through /proc")
def test_a_full_disk_names_the_report_and_ends_the_session_without_a_traceback(
    perf_project, fake_runner, monkeypatch, capsys, tiny, fake_runs
):
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    _full_disk_for_reports(monkeypatch)
    res = perf_project.runpytest(*SESSION)
    text, out = res.stdout.str(), perf_project.path / "out"
    assert res.ret == 1 and "Traceback" not in text and "INTERNALERROR" not in text, text
    assert (
        "error: the report was not written: out/report.json: No space left on device; "
        "3 run(s) of this session are kept in out/runs.jsonl: make room, then python -m harness report out" in text
    )
    assert len(read_jsonl(out / "runs.jsonl")) == 3 and not (out / "report.json").exists()
    d = perf_project.path / "d"  # the report command on the same disk: it said "I/O error" without the file
    d.mkdir()
    (d / "runs.jsonl").write_text(
        "".join(json.dumps(dict(r, workload_spec=tiny.to_dict())) + "\n" for r in fake_runs(tiny, [100, 101]))
    )
    assert cli.main(["report", str(d), "--baselines-dir", str(d / "none")]) == 4
    err = capsys.readouterr().err
    assert f"error: I/O error: {d / 'report.json'}: No space left on device" in err and err.count("\n") == 1


def test_a_report_linked_out_of_the_results_dir_is_refused_before_any_run(perf_project, fake_runner, tmp_path):
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.md").write_text("keep me\n")
    (perf_project.path / "out").mkdir()
    (perf_project.path / "out" / "report.md").symlink_to(outside / "victim.md")
    res = perf_project.runpytest(*SESSION)
    text = res.stdout.str()
    assert res.ret == 2 and calls == [] and "Traceback" not in text, text
    assert "report.md is a symbolic link to" in text and "results are written only inside their results dir" in text
    assert (outside / "victim.md").read_text() == "keep me\n"


# ---- --store and store add take what they were meant to --------------------------------------------------------------
@pytest.mark.parametrize("value", ["--upload-pack=touch pwned", "github.com/org/repo", "no-such-store"])
def test_a_store_that_is_neither_a_git_url_nor_an_existing_directory_is_refused(tmp_path, monkeypatch, capsys, value):
    """It silently became a new local folder of that name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "night").mkdir()
    shutil.copy(NIGHT / "runs.jsonl", tmp_path / "night" / "runs.jsonl")
    for args in (
        ["store", "add", "night", f"--store={value}"],
        ["store", "alerts", f"--store={value}"],
        ["history", f"--store={value}"],
    ):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--store {value}: not a git URL" in err and "no such directory" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["night"]  # nothing made


def test_store_add_of_the_root_folder_is_bounded(tmp_path, capsys):
    """``store add /`` walked the whole filesystem, reading every runs.jsonl on the machine."""
    (tmp_path / "store").mkdir()
    assert cli.main(["store", "add", "/", "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/: more than 10000 folders at or below it, not a results dir" in err
    assert list((tmp_path / "store").iterdir()) == []


# ---- the workflows' inputs -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [".", "..", "../baselines", "h200/../l4", "published", "l4 ", " l4", "L4", ""])
def test_check_gpu_name_refuses_a_path_a_folder_that_is_no_gpu_and_a_padded_name(name):
    res = subprocess.run(
        [sys.executable, str(ROOT / ".github" / "scripts" / "check-gpu-name.py"), name, "--repeats", "5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stdout.startswith("::error::gpu ") and res.stdout.count("\n") == 1, (
        res.stdout + res.stderr
    )


def test_check_gpu_name_still_takes_a_detected_name_and_a_gpu_with_baselines():
    for name in ("l4", "h200", "t4"):
        res = subprocess.run(
            [sys.executable, str(ROOT / ".github" / "scripts" / "check-gpu-name.py"), name],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="the workflow's steps run in bash")
def test_the_nightly_splits_its_list_inputs_without_globbing_them(tmp_path):
    """``for w in $PERF_WORKLOADS`` expanded a ``*`` to the files of the checkout."""
    text = (ROOT / ".github" / "workflows" / "reusable-nightly.yml").read_text()
    assert not re.search(r"for \w+ in \$", text), "an unquoted loop over a variable"
    (tmp_path / "a-file").write_text("")
    loop = next(line.strip() for line in text.splitlines() if 'read -ra names <<< "$PERF_WORKLOADS"' in line).split(
        "#"
    )[0]
    script = (
        f'{loop}\nworkloads=()\nfor w in "${{names[@]}}"; do workloads+=(--workload "$w"); done\n'
        'printf "%s\\n" "${workloads[@]}"'
    )
    res = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PERF_WORKLOADS": "tiny-qwen3 * qwen3-1.7b-lora"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.stdout.split() == ["--workload", "tiny-qwen3", "--workload", "*", "--workload", "qwen3-1.7b-lora"], (
        res.stdout
    )


def test_recover_names_and_leaves_out_a_block_with_phases_ms_an_empty_list(tmp_path, capsys):
    """``phases_ms: []`` was taken silently (and a non-empty list was an AttributeError where the phases are read)."""
    root = tmp_path / "run"
    _interleave_dir(root)
    lines = (root / "blocks.jsonl").read_text().splitlines()
    lines[4] = json.dumps(dict(json.loads(lines[4]), phases_ms=[]))
    lines[7] = json.dumps(dict(json.loads(lines[7]), phases_ms=[1.0]))
    (root / "blocks.jsonl").write_text("\n".join(lines) + "\n")
    assert cli.main(["recover", str(root)]) == 0
    out, rep = capsys.readouterr().out, json.loads((root / "report.json").read_text())
    said = [
        s
        for s in rep["recovered"]["skipped"]
        if "phases_ms is [" in s and "not an object of per-step times per phase" in s
    ]
    assert len(said) == 2 and all(s in out for s in said) and rep["recovered"]["pairs"] == 4


def test_cost_diff_of_censuses_of_two_workload_specs_warns(tmp_path, capsys):
    """It predicted a step change from the diff of two specs' censuses without a word."""
    lease = ROOT / "tests" / "data" / "history" / "census-h200" / "lease-b"
    shutil.copytree(lease / "a", tmp_path / "a")
    shutil.copytree(lease / "b", tmp_path / "b")
    runs = [dict(r, workload_hash="0123456789abcdef") for r in read_jsonl(tmp_path / "b" / "runs.jsonl")]
    (tmp_path / "b" / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    timing = str(ROOT / "baselines" / "h200" / "qwen3-1.7b-lora.json")
    assert cli.main(["cost", "--diff", str(tmp_path / "a"), str(tmp_path / "b"), "--timing", timing]) == 0
    out = capsys.readouterr().out
    warned = [
        ln
        for ln in out.splitlines()
        if ln.startswith("warning: ") and "different workload specs (hash c738c0c7db03583b != 0123456789abcdef)" in ln
    ]
    assert len(warned) == out.count("predicted ") == 3, out
    assert (
        cli.main(["cost", "--diff", str(lease / "a"), str(lease / "b"), "--timing", timing]) == 0
    )  # one spec: no warning
    assert "warning" not in capsys.readouterr().out


def test_a_bisect_of_a_package_or_release_that_is_not_there_is_bad_input_before_any_environment(tmp_path, capsys):
    """A misspelt package or version is exit 2 with one line, not a bisection that fails to install its ends (exit
    3)."""
    from harness.commands import cli as command_line

    wheels = tmp_path / "w"
    wheels.mkdir()
    for v in ("1.0", "1.1"):
        (wheels / f"lorafx-{v}-py3-none-any.whl").write_bytes(b"")
    argv = [
        "bisect",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--results-dir",
        str(tmp_path / "r"),
        "--wheels",
        str(wheels),
        "--env-cache",
        str(tmp_path / "envs"),
    ]
    assert command_line.main(argv + ["--good", "nosuchpkg==1.0", "--bad", "nosuchpkg==1.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0
        and "nosuchpkg==1.0: not a release in the wheels in" in err
        and "no release of that name" in err
    )
    assert command_line.main(argv + ["--good", "lorafx==1.0", "--bad", "lorafx==1.7"]) == 2
    assert "lorafx==1.7: not a release" in capsys.readouterr().err and not (tmp_path / "envs").exists()


def test_an_io_error_names_the_folder_it_happened_in_not_the_results_dir():
    """A read-only environment cache (or any folder) is named as such; the results dir is blamed only when no file is
    known."""
    from harness import exits

    line = exits.suite_error_line(PermissionError(13, "Permission denied", "/ro/cache/harness-bisect/env-1"), "bisect")
    assert "/ro/cache/harness-bisect/env-1: Permission denied; check that /ro/cache/harness-bisect is writable" in line
    assert "results dir" in exits.suite_error_line(OSError(28, "No space left on device"), "report")
