"""``python -m harness advise``: the splits of an effective batch, fit probes, interleaved comparisons and the
answer."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from processes import live_processes

from harness.results.run import Run
from harness.spec import Workload
from harness.workflows.advise import block_steps_for, pairs_for, recommend, split_verdict
from harness.workflows.advise_probe import Drift, Probe, estimate_step
from harness.workflows.advise_report import GIB, Findings, report_lines

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ["8x1", "4x2", "2x4", "1x8"]


def _probes(fit=SPLITS, step=None, mem=None):
    step = step or {"8x1": 100.0, "4x2": 110.0, "2x4": 150.0, "1x8": 260.0}
    return {
        s: Probe("ok", probe_ms=step[s], step_ms=step[s], peak_reserved_bytes=(mem or {}).get(s))
        if s in fit
        else Probe("oom", error="CUDA out of memory")
        for s in SPLITS
    }


def _cmp(outcome, ratio):
    return split_verdict(outcome, "", ratio, (ratio * 0.99, ratio * 1.01))


def test_splits_of_an_effective_batch_largest_micro_batch_first():
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    assert [d.id for d in w.with_splits(16).decompositions] == ["16x1", "8x2", "4x4", "2x8", "1x16"]
    assert [d.id for d in w.with_splits().decompositions] == ["4x1", "2x2", "1x4"]
    assert [d.id for d in w.with_splits(7).decompositions] == ["7x1", "1x7"]
    assert block_steps_for(300.0, 0.8) == 3 and block_steps_for(1100.0, 0.8) == 1 and block_steps_for(0.0, 0.8) == 1


def test_the_answer_separated_tied_open_and_only_accumulation():
    sep = recommend(
        SPLITS,
        _probes(),
        {"4x2": _cmp("regression", 1.1), "2x4": _cmp("regression", 1.5), "1x8": _cmp("regression", 2.6)},
        "8x1",
    )
    assert sep.recommended == "8x1" and "faster than every other split that fits" in sep.lines[-1]
    # a tie: the split with less memory wins
    tie = recommend(
        SPLITS,
        _probes(mem={"8x1": 9 * GIB, "4x2": 5 * GIB, "2x4": 3 * GIB, "1x8": 2 * GIB}),
        {"4x2": _cmp("pass", 1.01), "2x4": _cmp("regression", 1.5), "1x8": _cmp("regression", 2.6)},
        "8x1",
    )
    assert tie.recommended == "4x2" and tie.ties == ("8x1", "4x2") and "needs the least memory" in tie.lines[0]
    # not separated within the budget: said so
    unsure = recommend(SPLITS, _probes(), {"4x2": _cmp("inconclusive", 1.02), "2x4": _cmp("regression", 1.5)}, "8x1")
    assert unsure.recommended == "8x1" and unsure.open == ("4x2", "1x8") and "not separated" in unsure.lines[-1]
    # the probes misranked: the interleaved comparison wins
    flip = recommend(
        SPLITS,
        _probes(),
        {"4x2": _cmp("improvement", 0.93), "2x4": _cmp("regression", 1.5), "1x8": _cmp("regression", 2.6)},
        "8x1",
    )
    assert flip.recommended == "4x2" and "found 4x2 faster" in flip.lines[0]
    only = recommend(SPLITS, _probes(fit=["1x8"]), {}, "1x8")
    assert only.recommended == "1x8" and "gradient accumulation is the only option" in only.lines[-1]
    none = recommend(SPLITS, _probes(fit=[]), {}, None)
    assert none.recommended is None and "no split fits" in none.lines[0]
    assert none.to_json() == {"recommended": None, "lines": list(none.lines), "ties": []}


def test_a_split_estimated_from_its_micro_batch_probe_and_the_pairs_that_fit_the_budget():
    # m x 1 probe: 2 warm-up steps, 3 timed steps (then census steps, slower, which the estimate must not read)
    rec = {
        "status": "ok",
        "step_time_median_ms": 100.0,
        "warmup_steps": 2,
        "phases_ms": {
            "data": [9, 9, 2, 2, 2, 50],
            "forward": [9, 9, 30, 30, 30, 90],
            "backward": [9, 9, 50, 50, 50, 150],
            "optimizer": [5] * 6,
            "other": [13] * 6,
        },
    }
    run = Run.from_json(rec)
    assert estimate_step(run, 1, 3) == pytest.approx(100.0)
    assert estimate_step(run, 4, 3) == pytest.approx(4 * 82 + 18)  # the per-micro-batch part 4 times, the rest once
    no_phases = Run.from_json({"step_time_median_ms": 100.0})
    assert estimate_step(no_phases, 4, 3) == pytest.approx(400.0)  # no phases: 4 whole steps
    assert (
        pairs_for(172.0, 1, 3155.0, 2, 200) == 35
        and pairs_for(1000.0, 1, 100.0, 2, 200) == 200
        and pairs_for(10.0, 1, 1000.0, 2, 200) == 8
    )


def test_a_screened_split_shows_its_estimate_and_no_interval():
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").with_splits(8)
    probes = _probes()
    compared = {
        "4x2": _cmp("regression", 1.1),
        "2x4": _cmp("regression", 1.5),
        "1x8": split_verdict("regression", "", 2.6, None, screened=True),
    }
    r = Findings(
        workload=w.name,
        gpu="cpu",
        effective_batch=8,
        splits=tuple(SPLITS),
        probes=probes,
        fastest_probe="8x1",
        compared=compared,
        answer=recommend(SPLITS, probes, compared, "8x1"),
        screen=1.5,
        screen_used=1.6,
        drift=Drift(10.0, 10.7, 1.07, "1x1"),
    )
    assert compared["1x8"].to_json() == {
        "outcome": "regression",
        "message": "",
        "ratio": 2.6,
        "lo": None,
        "hi": None,
        "screened": True,
    }
    text = "\n".join(report_lines(r, w))
    assert "~x2.60 by the probes, screened" in text and "x1.100 [1.089, 1.111] regression" in text
    assert "within x1.60 of the fastest" in text and "drift check" in text and "RECOMMENDED: 8x1" in text


@pytest.mark.slow
@pytest.mark.long
def test_advise_on_cpu_with_an_injected_memory_limit(tmp_path):
    """tiny-qwen3, effective batch 4: 4x1 runs out of memory (injected above micro-batch 2), 2x2 and 1x4 are compared
    interleaved, the answer names one of them with a table, a report, a plot and the TOML lines, and no worker is
    left."""
    args = [
        sys.executable,
        "-m",
        "harness",
        "advise",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--inject-memory-limit-micro",
        "2",
        "--total-budget-minutes",
        "2.5",
        "--pairs",
        "24",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        str(tmp_path / "out"),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("HARNESS_FAULTS", None)
    res = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    text = res.stdout + res.stderr
    assert res.returncode == 0, text
    assert "4x1 does not fit: OutOfMemoryError: CUDA out of memory" in text and "Traceback" not in text
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["probes"]["4x1"]["status"] == "oom" and {report["probes"][s]["status"] for s in ("2x2", "1x4")} == {
        "ok"
    }
    rec = report["answer"]["recommended"]
    assert rec in ("2x2", "1x4") and f"RECOMMENDED: {rec} (effective batch 4 on cpu)" in text
    assert f'decompositions = ["{rec}"]' in text and "[batch]" in text and "effective = 4" in text
    other = "1x4" if report["fastest_probe"] == "2x2" else "2x2"
    assert report["compared"][other]["outcome"] in ("regression", "pass", "improvement", "inconclusive")
    assert (tmp_path / "out" / "advice.png").stat().st_size > 0 and (
        tmp_path / "out" / "report.md"
    ).read_text().startswith("# advise tiny-qwen3")
    assert all(report["probes"][s].get("census") for s in ("2x2", "1x4"))  # a census window per probe that fits
    assert report["compared"][other].get("lo") is not None  # the nearest split is always compared interleaved
    # one probe process: the drift anchor (1x1) and a record per split, the out-of-memory one included, all kept
    probes = [json.loads(line) for line in (tmp_path / "out" / "probe" / "runs.jsonl").read_text().splitlines()]
    assert [(p["decomposition_id"], p["status"]) for p in probes] == [
        ("1x1", "ok"),
        ("4x1", "oom"),
        ("2x1", "ok"),
        ("1x1", "ok"),
    ]
    assert len({p["series_of"] for p in probes}) == 1 and report["drift"]["ratio"] > 0
    assert (
        live_processes(b"harness.measuring.worker", lambda _, cmd: any(str(tmp_path).encode() in c for c in cmd)) == []
    )
    assert (
        live_processes(b"harness.measuring.resident", lambda _, cmd: any(str(tmp_path).encode() in c for c in cmd))
        == []
    )
