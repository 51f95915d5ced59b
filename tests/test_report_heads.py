"""The first lines of every report say, in plain words, the verdict, the change with its interval and what to do next;
the statistics come below them."""

from __future__ import annotations

import math
import random

import pytest

from harness.judging.paired import PairedCheck
from harness.reporting.interleave_head import head_lines

SETTINGS = {
    "workload": "w",
    "decomposition": "4x1",
    "gpu": "cpu",
    "python_a": "/envs/a/bin/python",
    "python_b": "/envs/b/bin/python",
    "inject_slowdown_b": 0.0,
    "inject_work_b": 0,
    "budget_minutes": 5.0,
    "alpha": 0.05,
    "threshold": 0.02,
}


def comparison(ratio: float, sd: float = 0.01, launches: int = 6, pairs: int = 8, looks: int = 1, **settings) -> dict:
    """A comparison's report as :func:`head_lines` reads it: its settings and the verdict of pairs drawn around
    ``ratio``."""
    rng = random.Random(7)
    groups = [[math.log(ratio) + rng.gauss(0, sd) for _ in range(pairs)] for _ in range(launches)]
    v = PairedCheck(0.05, 0.02, looks).decide(groups, "w-4x1")
    return {
        "settings": {**SETTINGS, **settings},
        "launch_sizes": [pairs] * launches,
        "pairs": pairs * launches,
        "verdict": {"outcome": v.outcome, "message": v.message, **v.details},
    }


@pytest.mark.parametrize(
    ("ratio", "sd", "outcome", "words"),
    [
        (1.10, 0.01, "regression", "REGRESSION: B takes "),
        (1.0, 0.005, "pass", "pass: B takes "),
        (0.90, 0.01, "improvement", "improvement: B takes "),
        (1.02, 0.2, "inconclusive", "inconclusive: B takes "),
    ],
)
def test_interleaved_head_says_verdict_change_interval_and_next_step(ratio, sd, outcome, words):
    r = comparison(ratio, sd)
    assert r["verdict"]["outcome"] == outcome
    first, judged, nxt = head_lines(r)[:3]
    assert first.startswith(words) and " per step than A (90% interval " in first and "threshold" in first
    assert judged.count("α") == 1 and "α 0.05" in judged
    assert nxt.startswith("next: ") and "sigma" not in nxt


def test_interleaved_head_says_alpha_once_with_its_looks():
    r = comparison(1.10, looks=4)
    lines = head_lines(r)
    assert "(97.5% interval " in lines[0] and "α 0.05, split over 4 looks" in lines[1]
    assert sum(ln.count("α") for ln in lines) == 1


def test_a_regression_between_two_environments_points_at_bisect():
    assert "python -m harness bisect" in head_lines(comparison(1.10))[2]


def test_an_inconclusive_comparison_says_how_to_rerun():
    assert "--budget-minutes 10" in head_lines(comparison(1.02, 0.2))[2]


def test_an_aa_whose_interval_excludes_no_change_says_what_it_means():
    r = comparison(0.985, 0.003, python_b=SETTINGS["python_a"])  # one environment, the interval wholly below 1.0
    assert r["verdict"]["outcome"] == "pass" and r["verdict"]["hi"] < 1
    nxt = head_lines(r)[2]
    assert "differ by more than the noise" in nxt and "drifted" in nxt and "rerun" in nxt
    quiet = comparison(1.0, 0.02, python_b=SETTINGS["python_a"])
    assert quiet["verdict"]["lo"] < 1 < quiet["verdict"]["hi"] and "nothing to do" in head_lines(quiet)[2]


def test_no_verdict_says_why_and_what_to_do():
    r = {"settings": SETTINGS, "verdict": None, "pairs": 1, "stopped": "budget of 5 min spent after 1 pairs"}
    first, nxt = head_lines(r)
    assert first.startswith("no verdict: 1 complete pair(s)") and nxt.startswith("next: rerun with --budget-minutes 10")


# ---- the suite's report ------------------------------------------------------------------------------------------
BASE = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}


def _suite(tmp_path, make, tiny, times, baseline=True):
    from harness.judging import baseline as bl
    from harness.reporting import report

    if baseline:
        bl.write(
            tmp_path / "baselines",
            bl.from_runs(tiny, "cpu", make(BASE, [], repeats=5).run().records, "test"),
        )
    return report.build(make(times, [], repeats=5).run().judge())


def test_suite_report_opens_with_the_regression_its_interval_and_a_next_step(tmp_path, make, tiny):
    from harness.reporting import report

    data = _suite(tmp_path, make, tiny, {**BASE, "1x4": [x * 1.3 for x in BASE["1x4"]]})
    for lines in (
        report.terminal_lines(data),
        [ln.strip("*- ") for ln in report.markdown(data).splitlines()[2:] if ln.strip()],
    ):
        verdict, nxt = lines[0], lines[1]
        assert verdict.startswith("REGRESSION: 1 of 3 case(s) slower than the baseline: tiny-qwen3-1x4 +")
        assert "(interval +" in verdict and "2x2" not in verdict
        assert nxt.startswith("next: ") and "python -m harness confirm" in nxt


def test_suite_report_opens_with_a_pass_and_the_largest_change(tmp_path, make, tiny):
    from harness.reporting import report

    verdict, nxt = report.terminal_lines(_suite(tmp_path, make, tiny, BASE))[:2]
    assert (
        verdict.startswith("pass: 3 case(s) not slower than the baseline (the largest change: tiny-qwen3-")
        and "(interval " in verdict
    )
    assert nxt == "next: nothing to do"


def test_suite_report_without_a_baseline_says_how_to_record_one(tmp_path, make, tiny):
    from harness.reporting import report

    verdict, nxt = report.terminal_lines(_suite(tmp_path, make, tiny, BASE, baseline=False))[:2]
    assert verdict.startswith("no runtime verdict: no baseline for tiny-qwen3 on cpu")
    assert (
        nxt.startswith("next: `pytest perftests --gpu=cpu --workload tiny-qwen3 ")
        and "--census --update-baselines` records a baseline" in nxt
    )


def test_a_session_that_records_baselines_says_so_and_never_asks_to_record_one(tmp_path, make, tiny):
    from harness.reporting import report

    s = make(BASE, [], repeats=5, update_baselines=True).run()
    before = report.build(s.judge(), recorded=())  # nothing recorded yet (a refusal): still no "record one" hint
    [path] = [p for p, _old, _new in s.update_baselines_for(tiny.name)]
    data = report.build(s.judge(), recorded=(str(path),))
    for d in (before, data):
        text = "\n".join(report.terminal_lines(d)) + report.markdown(d)
        assert "record one with" not in text and "no baseline for" not in text and "records a baseline" not in text
    assert report.terminal_lines(before)[0].startswith("no baseline recorded")
    verdict, nxt = report.terminal_lines(data)[:2]
    assert verdict == f"baseline recorded: {path}" and nxt.startswith("next: commit the baseline file(s)")


# ---- one table per session -----------------------------------------------------------------------------------------
BENCH_SESSION = (
    "perftests",
    "--gpu=cpu",
    "--results-dir",
    "out",
    "--repeats",
    "1",
    "-p",
    "no:cacheprovider",
    "-k",
    "test_runtime",
    "--benchmark-json",
    "bench.json",
)


@pytest.fixture
def no_plots(monkeypatch):
    """Sessions in this process without figures: matplotlib imported again by a second in-process session fails."""
    from harness.reporting import plots

    monkeypatch.setattr(plots, "write_all", lambda data, results_dir: [])


def test_a_session_prints_the_suites_table_only_and_still_writes_the_benchmark_json(
    perf_project, fake_runner, no_plots
):
    import json

    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, [])
    text = perf_project.runpytest(*BENCH_SESSION).stdout.str()
    assert "perf summary" in text and "Name (time in " not in text, (
        text
    )  # pytest-benchmark's table heads its columns so
    assert len(json.loads((perf_project.path / "bench.json").read_text())["benchmarks"]) == 3


def test_benchmark_verbose_shows_pytest_benchmarks_table_again(perf_project, fake_runner, no_plots):
    fake_runner({"1x4": [100.0], "2x2": [80.0], "4x1": [90.0]}, [])
    shown = perf_project.runpytest(*BENCH_SESSION, "--benchmark-verbose")
    assert "Name (time in " in shown.stdout.str(), shown.stderr.str()[-2000:]
