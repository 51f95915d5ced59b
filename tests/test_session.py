"""PerfSession logic with a fake runner: order of runs, the sequential extension, verdict plumbing."""

import pytest

from harness import options as opt
from harness.judging import baseline as bl
from harness.results.run import Run
from harness.suite import session as sess


def test_interleaved_and_reversed_order(tmp_path, tiny, make, fake_runner, clock):
    calls = []
    make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, calls, repeats=2).run()
    assert calls == [("1x4", 1), ("2x2", 1), ("4x1", 1), ("1x4", 2), ("2x2", 2), ("4x1", 2)]
    calls.clear()
    make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, calls, repeats=1, order="reversed").run()
    assert [c[0] for c in calls] == ["4x1", "2x2", "1x4"]


def test_inconclusive_cases_get_more_runs_up_to_max(tmp_path, tiny, make, fake_runner, clock):
    calls = []
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    rec = make(base, calls, repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", rec.records, "test"))
    calls.clear()
    # 2x2 is noisy around the threshold (inconclusive); the others are clearly fine.
    noisy = {
        "1x4": [100, 101, 99, 100, 100.5],
        "2x2": [80, 95, 82, 93, 79, 92, 84, 90, 81, 94],
        "4x1": [90, 91, 89, 90, 90.5],
    }
    s = make(noisy, calls, repeats=5, max_repeats=10).run()
    assert [c for c in calls if c[0] != "2x2"] == [(d, r) for r in range(1, 6) for d in ("1x4", "4x1")]
    assert [r for d, r in calls if d == "2x2"] == list(range(1, 11))
    assert s.looks_used == 2 and s.options.looks == 2
    v = s.judge().runtime
    assert v["tiny-qwen3-1x4"].outcome == "pass" and v["tiny-qwen3-2x2"].details["n_cur"] == 10
    assert "alpha/2 per look" in v["tiny-qwen3-2x2"].details["correction"]


def test_update_refuses_when_a_decomposition_was_not_run(tmp_path, tiny, make, fake_runner, clock):
    s = make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, [], repeats=5)
    s.cases = s.cases[:2]
    s.run()
    with pytest.raises(bl.BaselineError, match="4x1 were not run"):
        s.update_baselines_for(tiny.name)
    assert not (tmp_path / "baselines" / "cpu").exists()


def test_budget_stops_before_a_run_that_would_overrun_and_resume_finishes(tmp_path, tiny, make, fake_runner, clock):
    calls = []
    times = {"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}
    fake_runner(times, calls, walls={"1x4": 30, "2x2": 20, "4x1": 10}, clock=clock)
    o = sess.Options(
        gpu="cpu", results_dir=tmp_path / "out", baselines_dir=tmp_path / "baselines", repeats=3, budget_s=100
    )
    cases = [(tiny.name, d.id) for d in tiny.decompositions]
    first = sess.PerfSession(o, {tiny.name: tiny}, cases, progress=lambda m: None, clock=clock).run()
    # round 1 ends at 60 s; 1x4 #2 (~30 s) ends at 90 <= 100; 2x2 #2 (~20 s) would end at 110: stop, 5 runs left
    assert calls == [("1x4", 1), ("2x2", 1), ("4x1", 1), ("1x4", 2)]
    assert first.left == 5 and "5 planned run(s) left" in first.incomplete and "--resume" in first.incomplete
    with pytest.raises(bl.BaselineError, match="INCOMPLETE"):
        first.update_baselines_for(tiny.name)
    calls.clear()
    resumed = sess.PerfSession(
        sess.Options(
            gpu="cpu", results_dir=tmp_path / "out", baselines_dir=tmp_path / "baselines", repeats=3, resume=True
        ),
        {tiny.name: tiny},
        cases,
        progress=lambda m: None,
        clock=clock,
    ).run()
    assert calls == [("2x2", 2), ("4x1", 2), ("1x4", 3), ("2x2", 3), ("4x1", 3)]
    assert (
        resumed.session_id == first.session_id
        and resumed.resumed == 4
        and resumed.left == 0
        and resumed.incomplete is None
    )
    assert sorted((r.decomposition_id, r.repeat) for r in resumed.records) == [
        (d, r) for d in ("1x4", "2x2", "4x1") for r in (1, 2, 3)
    ]
    resumed.update_baselines_for(tiny.name, min_repeats=3)  # a finished session records like any other
    assert bl.load(tmp_path / "baselines", "cpu", tiny).values("2x2", "step_time_median_ms") == [80.0] * 3


def test_a_case_not_run_within_the_budget_is_skipped_not_failed(tmp_path, tiny, make, fake_runner, clock):
    calls = []
    base = make({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, [], repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", base.records, "test"))
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls, walls={"1x4": 60, "2x2": 50}, clock=clock)
    o = sess.Options(
        gpu="cpu", results_dir=tmp_path / "b", baselines_dir=tmp_path / "baselines", repeats=2, budget_s=100
    )
    s = sess.PerfSession(
        o, {tiny.name: tiny}, [(tiny.name, d.id) for d in tiny.decompositions], progress=lambda m: None, clock=clock
    ).run()
    # 1x4 took 60 s; 2x2 has no run yet, so it is reckoned at the session's slowest (60 s): 120 > 100, stop
    assert calls == [("1x4", 1)] and s.left == 5
    v = s.judge().runtime
    assert (
        v["tiny-qwen3-4x1"].outcome == "skip"
        and "tiny-qwen3-4x1 not run yet: INCOMPLETE" in v["tiny-qwen3-4x1"].message
    )
    assert all(not x.failed for x in v.values())


def test_the_first_run_is_reckoned_from_the_baseline(tmp_path, tiny, make, fake_runner, clock):
    base = make({"1x4": [9000.0], "2x2": [80.0], "4x1": [90.0]}, [], repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", base.records, "test"))  # 1x4: train_runtime 90 s
    calls = []
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, calls, clock=clock)
    o = sess.Options(
        gpu="cpu", results_dir=tmp_path / "c", baselines_dir=tmp_path / "baselines", repeats=1, budget_s=60
    )
    s = sess.PerfSession(
        o, {tiny.name: tiny}, [(tiny.name, d.id) for d in tiny.decompositions], progress=lambda m: None, clock=clock
    ).run()
    assert calls == [] and s.left == 3  # a 90-s run does not fit in 60 s, so none starts


def test_resume_refuses_a_session_with_other_settings(tmp_path, tiny, make, fake_runner, clock):
    make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, [], repeats=1, inject_slowdown=0.3).run()
    s = make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, [], repeats=2, resume=True)
    with pytest.raises(
        ValueError,
        match=r"--resume: session .* ran tiny-qwen3-1x4 with other settings \(--inject-slowdown 0.3 != 0.0\)",
    ):
        s.run()


def test_resume_with_nothing_recorded_starts_a_new_session(tmp_path, tiny, make, fake_runner, clock):
    calls = []
    s = make({"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, calls, repeats=1, resume=True).run()
    assert len(calls) == 3 and s.resumed == 0
    with pytest.raises(opt.argparse.ArgumentTypeError, match="must be positive, got 0"):
        opt.parse_positive_float("0")


def test_no_extra_runs_against_a_baseline_from_several_machines(tmp_path, tiny, fake_runner, fake_runs):
    """More runs on this machine cannot narrow a machine-level interval, so --max-repeats adds none (GPU time saved)."""
    recs = []
    for machine, level in (("boot-a", 100.0), ("boot-b", 115.0)):
        for i in range(3):
            recs += [
                dict(r, run_id=f"{machine}-{r['run_id']}-{i}", env={"boot_id": machine})
                for r in fake_runs(tiny, [level])
            ]
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in recs], "test", min_repeats=1))
    calls, said = [], []
    fake_runner({"1x4": [108.0], "2x2": [108.0], "4x1": [108.0]}, calls)
    o = sess.Options(
        gpu="cpu", results_dir=tmp_path / "out", baselines_dir=tmp_path / "baselines", repeats=3, max_repeats=9
    )
    s = sess.PerfSession(
        o, {tiny.name: tiny}, [(tiny.name, d.id) for d in tiny.decompositions], progress=said.append
    ).run()
    assert len(calls) == 9  # the first look only
    v = s.judge().runtime["tiny-qwen3-1x4"]
    assert v.outcome == "inconclusive" and v.details["unit"] == "machine" and "other machines" in v.message
    assert any("none are added" in m for m in said)


def test_a_census_only_session_needs_the_census_and_plans_one_look():
    from harness.suite.session import Options

    assert Options(gpu="cpu", repeats=0, census=True).looks == 1
    with pytest.raises(ValueError, match="add --census"):
        Options(gpu="cpu", repeats=0)
    with pytest.raises(ValueError, match="census-only"):
        Options(gpu="cpu", repeats=0, census=True, max_repeats=3)
