"""PerfSession logic with a fake runner: order of runs, the sequential extension, verdict plumbing."""

from pathlib import Path

import pytest

from harness import baseline as bl
from harness import session as sess
from harness.spec import Workload

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny():
    return Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")


def fake_runner(times: dict[str, list[float]], calls: list):
    """run_one stand-in: the n-th run of a decomposition gets times[d][n % len]."""

    def run_one(req, results_dir, session_id, timeout_s, gpu):
        d = req.decomposition.id
        k = sum(1 for c in calls if c[0] == d)
        calls.append((d, req.repeat))
        m = times[d][k % len(times[d])]
        w = req.workload
        return {"run_id": f"{d}-{k}", "session_id": session_id, "workload": w.name, "workload_hash": w.hash, "decomposition_id": d,
                "repeat": req.repeat, "gpu": gpu, "status": "ok", "step_time_median_ms": m, "train_runtime_s": m / 100,
                "step_times_ms": [m] * w.train.max_steps, "warmup_steps": w.measure.warmup_steps, "losses": [1.0] * w.train.max_steps,
                "peak_reserved_bytes": None, "peak_allocated_bytes": None, "tokens_per_s": 1.0, "wall_s": 1.0, "env": {}}
    return run_one


def make(tmp_path, tiny, monkeypatch, times, calls, **opts):
    monkeypatch.setattr(sess, "run_one", fake_runner(times, calls))
    o = sess.Options(gpu="cpu", results_dir=tmp_path / "out", baselines_dir=tmp_path / "baselines", **opts)
    return sess.PerfSession(o, {tiny.name: tiny}, [(tiny.name, d.id) for d in tiny.decompositions], progress=lambda m: None)


def test_interleaved_and_reversed_order(tmp_path, tiny, monkeypatch):
    calls = []
    make(tmp_path, tiny, monkeypatch, {"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, calls, repeats=2).run()
    assert calls == [("1x4", 1), ("2x2", 1), ("4x1", 1), ("1x4", 2), ("2x2", 2), ("4x1", 2)]
    calls.clear()
    make(tmp_path, tiny, monkeypatch, {"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, calls, repeats=1, order="reversed").run()
    assert [c[0] for c in calls] == ["4x1", "2x2", "1x4"]


def test_inconclusive_cases_get_more_runs_up_to_max(tmp_path, tiny, monkeypatch):
    calls = []
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    rec = make(tmp_path, tiny, monkeypatch, base, calls, repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", rec.records, "test"))
    calls.clear()
    # 2x2 is noisy around the threshold (inconclusive); the others are clearly fine.
    noisy = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 95, 82, 93, 79, 92, 84, 90, 81, 94], "4x1": [90, 91, 89, 90, 90.5]}
    s = make(tmp_path, tiny, monkeypatch, noisy, calls, repeats=5, max_repeats=10).run()
    assert [c for c in calls if c[0] != "2x2"] == [(d, r) for r in range(1, 6) for d in ("1x4", "4x1")]
    assert [r for d, r in calls if d == "2x2"] == list(range(1, 11))
    assert s.looks_used == 2 and s.options.looks == 2
    v = s.runtime_verdicts()
    assert v["tiny-qwen3-1x4"].outcome == "pass" and v["tiny-qwen3-2x2"].details["n_cur"] == 10
    assert "alpha/2 per look" in v["tiny-qwen3-2x2"].details["correction"]


def test_update_refuses_when_a_decomposition_was_not_run(tmp_path, tiny, monkeypatch):
    s = make(tmp_path, tiny, monkeypatch, {"1x4": [1.0], "2x2": [1.0], "4x1": [1.0]}, [], repeats=5)
    s.cases = s.cases[:2]
    s.run()
    with pytest.raises(bl.BaselineError, match="4x1 were not run"):
        s.update_baselines_for(tiny.name)
    assert not (tmp_path / "baselines" / "cpu").exists()
