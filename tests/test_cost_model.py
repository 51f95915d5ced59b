"""The cost model (harness/judging/cost_model.py, cost_fit.py) and ``python -m harness cost``: on synthetic cases made
by a known model (the calibration finds its mix, the predictions its changes), on the committed H200 baseline (the split
penalty within 15%, host-bound), and the evidence page's tables as its script prints them."""

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import pytest

from harness.commands.cli import main
from harness.judging import census_diff
from harness.judging import cost_fit as cf
from harness.judging import cost_model as cm
from harness.results.bisection import Bisection
from harness.results.block import Block
from harness.suite.runs import runs_of

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "baselines" / "h200" / "qwen3-1.7b-lora.json"
PAGE = ROOT / "docs" / "evidence" / "what-does-the-census-predict"

# a synthetic machine: host microseconds per Python call, aten op and launch; idle per micro-batch; counts affine in G
US = (2.0, 4.0, 12.0)
IDLE = 20.0
FIXED, PER_MICRO = (10_000, 2_000, 0), (100_000, 45_000, 11_000)


def work(g: int, kernel_ms: float = 100.0, extra=(0, 0, 0)) -> cm.Work:
    n = [f + g * u + e for f, u, e in zip(FIXED, PER_MICRO, extra)]
    return cm.Work(*n, kernel_ms=kernel_ms + 15.0 * (g - 1), micro_batches=g)


def true_step(w: cm.Work, extra_host_ms: float = 0.0) -> float:
    host = sum(c * n for c, n in zip(US, w.counts())) / 1000.0 + extra_host_ms
    return max(host, w.kernel_ms + w.micro_batches * IDLE)


def true_mix(w: cm.Work) -> cm.Mix:
    parts = [c * n for c, n in zip(US, w.counts())]
    return cm.Mix(*(p / sum(parts) for p in parts))


def synthetic_observations():
    base = work(1)
    case = cm.Case(base, true_step(base), (IDLE, IDLE))
    obs = [cf.Observation(f"{g}x", case, work(g), true_step(work(g)) / case.step_ms, 0.01) for g in (2, 4)]
    casts = work(1, extra=(400, 3000, 700))  # a change with another mix: many ops and launches, few Python calls
    obs.append(cf.Observation("casts", case, casts, true_step(casts) / case.step_ms, 0.005))
    return case, obs


def test_calibration_finds_the_mix_a_synthetic_machine_was_made_with():
    case, obs = synthetic_observations()
    cal = cf.calibrate(obs, (IDLE, IDLE))
    want = true_mix(case.work).shares()
    assert max(abs(a - b) for a, b in zip(cal.best.shares(), want)) <= 0.06
    assert cal.chi2 < 1.0 and cal.rel_error < 0.02
    # a change of Python calls only: predicted as the machine makes it, inside the interval
    target = case.work.plus(cm.Delta(python_calls=5_000))
    p = cm.predict_work(case, target, cal)
    truth = 100 * (true_step(target) / case.step_ms - 1)
    assert abs(p.delta_pct - truth) < 0.15 and p.lo <= truth <= p.hi
    assert p.bound == "host" and p.gpu_part == pytest.approx(0.0)


def test_splits_alone_cannot_tell_the_mix_but_still_predict_the_split_ratio():
    case, obs = synthetic_observations()
    splits_only = cf.calibrate(obs[:2], (IDLE, IDLE))
    spans = [
        max(m.shares()[i] for m in splits_only.feasible) - min(m.shares()[i] for m in splits_only.feasible)
        for i in range(3)
    ]
    assert max(spans) > 0.5  # affine counts: the mix is not identified
    assert obs[1].predicted(splits_only.best) == pytest.approx(obs[1].ratio, rel=0.02)


def test_host_work_shows_one_for_one_and_gpu_work_hides_until_the_gpu_bounds_the_step():
    case = cm.Case(work(1), 400.0, (20.0, 20.0))  # device path 120 ms of a 400 ms step
    host = cm.predict_work(case, case.work, None, extra_host_ms=20.0)
    assert host.delta_pct == pytest.approx(5.0) and host.host_part == pytest.approx(5.0)
    hidden = cm.predict_work(case, case.work.plus(cm.Delta(kernel_ms=200.0)))
    assert hidden.delta_pct == pytest.approx(0.0) and hidden.hi == pytest.approx(0.0)
    shows = cm.predict_work(
        case, case.work.plus(cm.Delta(kernel_ms=380.0))
    )  # device path 500 ms: the GPU now bounds it
    assert shows.delta_pct == pytest.approx(25.0) and shows.gpu_part == pytest.approx(25.0)
    gpu_bound = cm.Case(work(1, kernel_ms=480.0), 500.0, (20.0, 20.0))
    assert gpu_bound.bound == "GPU"
    p = cm.predict_work(gpu_bound, gpu_bound.work.plus(cm.Delta(kernel_ms=50.0)))
    assert p.delta_pct == pytest.approx(10.0) and p.gpu_part == pytest.approx(10.0)


def test_without_calibration_the_interval_spans_every_mix_and_an_unknown_idle():
    case = cm.Case(work(1), 400.0)
    only_ops = cm.predict_work(case, case.work.plus(cm.Delta(ops=case.work.ops * 0.1)))
    assert only_ops.lo == pytest.approx(0.0, abs=1e-9) and only_ops.hi == pytest.approx(10.0)
    gpu = cm.predict_work(case, case.work.plus(cm.Delta(kernel_ms=10.0)))
    assert gpu.delta_pct == pytest.approx(0.0) and gpu.hi > 0  # the idle might fill the step


def test_predict_takes_a_census_diff_a_mapping_or_the_changed_census():
    data = json.loads(BASELINE.read_text())
    base = data["decompositions"]["4x1"]["census"][0]["census"]
    cur = dict(base, ops=base["ops"] + 148, python_calls=base["python_calls"] + 309)
    by_diff = cm.predict(base, 423.7, census_diff.diff(base, cur))
    by_map = cm.predict(base, {"step_ms": 423.7}, {"ops": 148, "python_calls": 309})
    by_census = cm.predict(base, {"step_time_median_ms": 423.7}, cur)
    assert by_diff.delta_pct == pytest.approx(by_map.delta_pct) == pytest.approx(by_census.delta_pct)
    assert 0 < by_map.delta_pct < 0.5 and by_map.gpu_part == pytest.approx(0.0)
    with pytest.raises(ValueError, match="unknown keys"):
        cm.predict(base, 423.7, {"opz": 1})
    with pytest.raises(ValueError, match="no step_ms"):
        cm.predict(base, {}, {"ops": 1})
    with pytest.raises(ValueError, match="shares"):
        cm.Mix(0.5, 0.5, 0.5)


def baseline_splits():
    return cf.split_cases({k: v for (_, k), v in runs_of(BASELINE).items()})


def test_the_h200_split_penalty_is_predicted_within_15_percent_without_its_own_ratio():
    splits = baseline_splits()
    assert [s.split for s in splits] == ["4x1", "2x2", "1x4"]
    for split, measured, pred, lo, hi, cal in cf.leave_one_out(splits, idle_ms=(60.0, 80.0)):
        assert f"{split}/4x1" not in cal.names
        assert abs(pred / measured - 1) < 0.15 and lo <= pred <= hi
    for s in splits:  # GPU busy 10-25%: host-bound, whichever mix
        assert s.case((60.0, 80.0)).bound == "host"
    # every mix puts 1x4/4x1 between its Python-calls-only and launches-only values, all within 15% of the measured
    ref, s14 = splits[0], splits[2]
    obs = cf.split_observation(ref, s14, (60.0, 80.0))
    for mix in (cm.Mix(1, 0, 0), cm.Mix(0, 1, 0), cm.Mix(0, 0, 1)):
        assert abs(obs.predicted(mix) / obs.ratio - 1) < 0.15


def run_cli(*args) -> tuple[int, str]:
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = main(["cost", *args])
    return rc, buf.getvalue() + err.getvalue()


def test_cost_command_on_the_baseline_and_on_a_census_diff():
    rc, out = run_cli("--model", str(BASELINE), "--idle-ms", "60,80")
    assert rc == 0 and "1x4/4x1: measured x" in out and "host-bound" in out and "us per launch" in out
    lease = ROOT / "tests" / "data" / "history" / "census-h200" / "lease-b"
    rc, out = run_cli("--diff", str(lease / "a"), str(lease / "b"), "--timing", str(BASELINE))
    assert rc == 0 and out.count("predicted +") == 3 and "aten ops per optimizer step" in out
    rc, out = run_cli("--diff", str(lease / "a"), str(lease / "b"))
    assert rc == 2 and "no timed run" in out and len(out.strip().splitlines()) == 1
    rc, out = run_cli("--model", str(BASELINE), "--idle-ms", "9,1")
    assert rc == 2 and "--idle-ms" in out
    rc, out = run_cli()
    assert rc == 2 and "--model" in out


def test_the_evidence_page_holds_its_script_output():
    spec = importlib.util.spec_from_file_location("census_predict", PAGE / "predict.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mod.main()
    page = (PAGE / "README.md").read_text()
    missing = [ln for ln in buf.getvalue().splitlines() if ln.strip() and ln not in page]
    assert not missing, (
        "the page is out of date; paste the output of `python docs/evidence/what-does-the-census-predict/predict.py`:\n"
        + "\n".join(missing[:5])
    )


CPU_CENSUS = {"fits": True, "ops": 5_000, "python_calls": 20_000, "kernels": None, "kernel_ms": None, "cpu_op_ms": 80.0}


def test_a_cpu_census_is_all_host_work_and_predicts_without_dividing_by_zero():
    more_ops = dict(CPU_CENSUS, ops=6_000)
    p = cm.predict(
        CPU_CENSUS, 100.0, more_ops
    )  # every mix, the launches-only one too: no launches, so no share of the step
    assert p.bound == "CPU" and p.busy == 0 and p.gpu_part == pytest.approx(0.0)
    assert p.lo == pytest.approx(0.0, abs=1e-9) and p.hi == pytest.approx(20.0) and p.lo <= p.delta_pct <= p.hi
    assert "all host" in p.line()
    # host time injected beside the census shows one for one, under every mix
    injected = cm.predict(CPU_CENSUS, 100.0, {"host_ms": 5.0})
    assert (
        injected.delta_pct == pytest.approx(5.0)
        and injected.lo == pytest.approx(5.0)
        and injected.hi == pytest.approx(5.0)
    )
    # a mix with all its share on launches says nothing of a CPU step: the counts it has share the time equally
    assert cm.Mix(0, 0, 1).host_units(cm.Work.of(CPU_CENSUS), cm.Work.of(CPU_CENSUS)) == pytest.approx(1.0)


def test_a_census_the_model_cannot_use_gives_a_one_line_reason_not_an_exception():
    empty = dict(CPU_CENSUS, ops=0, python_calls=0)
    with pytest.raises(ValueError, match="no Python calls, aten ops or launches counted"):
        cm.predict(empty, 100.0, {"ops": 10})
    for census, timing in ((empty, 100.0), (CPU_CENSUS, None), ({"fits": False, "reason": "window too short"}, 100.0)):
        rec = cm.prediction_record(census, {"step_ms": timing}, {"ops": 10})
        assert set(rec) == {"reason"} and rec["reason"].startswith("no prediction: ") and "\n" not in rec["reason"]
    assert cm.prediction_record(CPU_CENSUS, {"step_ms": 100.0}, {"ops": 500})["delta_pct"] > 0


def test_the_prediction_beside_the_measured_change_of_an_interleaved_comparison():
    more_ops = dict(CPU_CENSUS, ops=6_000)
    rec = cm.beside_measured(CPU_CENSUS, more_ops, 100.0, {"ratio": 1.03, "lo": 1.01, "hi": 1.05})
    assert (
        rec["measured_pct"] == pytest.approx(3.0)
        and rec["measured_lo"] == pytest.approx(1.0)
        and 0 < rec["delta_pct"] < 20
    )
    line = cm.beside_line(rec)
    assert line.startswith("predicted +") and "measured +3.0% [+1.0%, +5.0%]" in line
    assert cm.beside_line(cm.beside_measured(CPU_CENSUS, None, 100.0, None)) == "no prediction: no census of side B"
    assert cm.beside_line(cm.beside_measured(CPU_CENSUS, more_ops, None, None)).startswith("no prediction: ")


def test_a_kernel_time_longer_than_the_step_is_said_and_the_interval_spans_both_paths():
    gpu = {"fits": True, "ops": 1000.0, "python_calls": 2000.0, "kernels": 100.0, "kernel_ms": 200.0}
    p = cm.predict(gpu, 100.0, {"kernel_ms": 20.0})  # +10% of kernel time; the step is half the kernel time
    assert p.reason.startswith("the census does not explain the timed step: its device work alone takes 200.0 ms")
    assert p.lo <= 0.0 and p.hi >= 10.0 and p.reason in p.line() and p.record()["reason"] == p.reason
    rec = cm.beside_measured(gpu, dict(gpu, kernel_ms=220.0), 100.0, {"ratio": 1.1, "lo": 1.09, "hi": 1.11})
    assert cm.beside_line(rec).endswith(p.reason) and "measured +10.0%" in cm.beside_line(rec)
    assert cm.predict(gpu, 190.0, {"kernel_ms": 20.0}).reason is None  # within the tolerance of the step


def test_the_bisect_hook_predicts_a_cpu_change_or_prints_the_reason():
    from harness.bisect.report import predicted_text
    from harness.bisect.search import predicted_cost
    from harness.bisect.steps import CensusProbe

    def probe(census, step_ms=None):
        return CensusProbe(census, step_ms, "python")

    got = predicted_cost(probe(CPU_CENSUS, 100.0), probe(dict(CPU_CENSUS, ops=5_500)))
    assert got["bound"] == "CPU" and 0 < got["delta_pct"] <= 10.0 and predicted_text(got).startswith("+")
    why = predicted_cost(probe(CPU_CENSUS), probe(CPU_CENSUS))
    assert predicted_text(why) == why["reason"] and why["reason"].startswith("no prediction: case timing")


def interleave_blocks(ratio: float, launches: int = 3, pairs: int = 4) -> list[Block]:
    """Blocks of an interleaved comparison whose B is ``ratio`` times as slow as A, with a little spread."""
    out, n = [], 0
    for launch in range(1, launches + 1):
        for _ in range(pairs):
            n += 1
            for pos, side in enumerate("ab", 1):
                f = ratio * (1 + 0.005 * (n * 7 % 5 - 2)) if side == "b" else 1.0  # pairs that differ a little
                steps = [100.0 * f * (1 + 0.004 * ((n + j) % 3 - 1)) for j in range(4)]
                out.append(
                    Block(
                        session_id="s",
                        side=side,
                        launch=launch,
                        pair=n,
                        position=pos,
                        order="ab",
                        warmup=False,
                        k=4,
                        step_times_ms=tuple(steps),
                        canary_ms=1.0,
                        wall_s=0.4,
                        cpu_s=0.4,
                        other_cpus=0.0,
                    )
                )
    return out


def finish_interleave(root: Path, ratio: float) -> dict:
    from harness.judging.blocks import comparison_verdict, grouped, pairs_of
    from harness.results.progress import Launch
    from harness.sidebyside.config import ComparisonConfig
    from harness.sidebyside.finish import finish
    from harness.sidebyside.launchers import Sides
    from harness.sidebyside.run import settings_of
    from harness.spec import Workload

    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    decs = Sides(w.decomposition("4x1"), w.decomposition("4x1"))
    cfg = ComparisonConfig(workload=w.name, decomposition="4x1", gpu="cpu").resolved(decs.a.grad_accum, True)
    s = settings_of(cfg, w, decs, Sides("pa", "pb"), 1, (12,), "s")
    blocks = interleave_blocks(ratio)
    launches = [Launch(i, 1.0, {"a": {}, "b": {}}) for i in (1, 2, 3)]
    groups = grouped(pairs_of(blocks))
    finish(
        root,
        settings=s,
        orders=[],
        stopped=None,
        launch_records=launches,
        blocks=blocks,
        groups=groups,
        verdict=comparison_verdict(groups, s.check(), None, "tiny-qwen3-4x1"),
        case="tiny-qwen3-4x1",
        wall=10.0,
        cpu=None,
        calibrated=False,
        out=lambda _: None,
    )
    return json.loads((root / "report.json").read_text())


def test_an_interleaved_report_shows_the_prediction_beside_the_measurement_or_why_not(tmp_path):
    report = finish_interleave(tmp_path, 1.05)
    assert set(report["prediction"]) == {"reason"} and "prediction" not in report["verdicts"][0]
    assert f"no prediction: no census of either side in {tmp_path / 'census-a'}" in (tmp_path / "report.md").read_text()
    for side, census in (("a", CPU_CENSUS), ("b", dict(CPU_CENSUS, ops=5_500))):
        (tmp_path / f"census-{side}").mkdir()
        (tmp_path / f"census-{side}" / "runs.jsonl").write_text(
            json.dumps(
                {
                    "workload": "tiny-qwen3",
                    "decomposition_id": "4x1",
                    "status": "ok",
                    "census": census,
                    "step_time_median_ms": 120.0,
                }
            )
            + "\n"
        )
    report = finish_interleave(tmp_path, 1.05)
    p = report["verdicts"][0]["prediction"]
    assert p == report["prediction"] == report["verdict"]["prediction"]
    assert 0 <= p["lo"] < p["delta_pct"] < p["hi"] <= 10.0 and p["bound"] == "CPU"
    assert p["measured_lo"] < p["measured_pct"] < p["measured_hi"] and p["measured_pct"] == pytest.approx(5.0, abs=0.5)
    line = next(ln for ln in (tmp_path / "report.md").read_text().splitlines() if "predicted" in ln)
    assert (
        line.startswith("- two-path: predicted +") and ", measured +5." in line and p["model"] == "two-path"
    )  # no timelines


def test_the_bisect_report_ranks_its_changes_by_predicted_cost(tmp_path):
    from harness.bisect import report as br

    def change(label, predicted, kind="census"):
        return {
            "package": "lorafx",
            "kind": kind,
            "last_good": f"lorafx {label}",
            "first_bad": f"lorafx {label}.1",
            "exact": True,
            "diff": [f"aten ops {label}"],
            "counts": ["ops"],
            "measured_inside": 0,
            "ladder": 2,
            "predicted": predicted,
            "steps": [{"label": f"lorafx {label}.1", "outcome": "regression", "message": "slower"}],
        }

    changes = [
        change("1", {"delta_pct": 0.5, "lo": 0.1, "hi": 0.9}),
        change("2", {"reason": "no prediction: census: no usable counts"}),
        change("3", {"delta_pct": -4.0, "lo": -5.0, "hi": -3.0}),
        change("4", None, "timing"),
    ]
    res = {
        "case": "tiny-qwen3-4x1",
        "gpu": "cpu",
        "mode": "releases",
        "good": "lorafx 1",
        "bad": "lorafx 4.1",
        "outcome": "changed",
        "search": "census",
        "packages": [{"package": "lorafx"}],
        "changes": changes,
        "inconclusive": [],
        "uninstallable": [],
        "notes": [],
        "steps": [],
        "spent": {
            "device_s": 1,
            "census_runs": 4,
            "census_reused": 0,
            "interleaved": 0,
            "install_s": 1,
            "environments_built": 4,
        },
    }
    made = Bisection.from_json(res)
    assert [c.last_good[-1] for c in br.ranked(made.changes)] == ["3", "1", "2", "4"]
    br.write(made, tmp_path, out=lambda _: None)
    assert [c["last_good"][-1] for c in json.loads((tmp_path / "report.json").read_text())["changes"]] == [
        "3",
        "1",
        "2",
        "4",
    ]
    md = (tmp_path / "report.md").read_text()
    assert "ranked by their predicted cost" in md and md.index("last good `lorafx 3`") < md.index(
        "last good `lorafx 1`"
    ) < md.index("last good `lorafx 2`")
    assert "- predicted cost: no prediction: census: no usable counts" in md
    printed = [ln for ln in br.summary(made) if "change at" in ln]
    assert "lorafx 3 ->" in printed[0] and "lorafx 4 ->" in printed[-1]
