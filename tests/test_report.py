"""Reports from a session built with the fake runner of test_session."""

import json
from dataclasses import replace

import pytest

from harness.judging import baseline as bl
from harness.reporting import plots, report, step_analysis
from harness.results.report_row import RowCensus
from harness.results.suite_report import ReportData


def test_report_files_summary_and_plots(tmp_path, tiny, make, monkeypatch):
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    rec = make(base, [], repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", rec.records, "test"))
    slow = {d: [x * 1.3 for x in v] for d, v in base.items()}
    s = make(slow, [], repeats=5).run()
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    data = report.build(s.judge())
    paths = report.write(data, tmp_path / "out") + plots.write_all(data, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "step_times.png", "phases.png", "step_traces.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths[2:])
    md = (tmp_path / "out" / "report.md").read_text()
    assert (
        "| tiny-qwen3 | 1 × 4 | 4 | 5/5 |" in md and "+30.0%" in md and "**regression** runtime `tiny-qwen3-1x4`" in md
    )
    assert summary.read_text().startswith("earlier step\n## LoRA fine-tuning performance")
    js = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {v["outcome"] for v in js["verdicts"] if v["kind"] == "runtime"} == {"regression"}
    assert ReportData.read(tmp_path / "out") == data  # report.json reads back as the report that wrote it
    # what is drawn: bars at the medians, the change and verdict over each case, one trace per run
    figs = {name: make(data) for name, make in plots.FIGURES.items()}
    ax = figs["step_times.png"].axes[0]
    heights = sorted(round(b.get_height(), 6) for b in ax.patches)
    assert heights == sorted(round(m, 6) for m in (100, 80, 90, 130, 104, 117))
    assert sorted(t.get_text() for t in ax.texts) == ["+30.0%\nregression"] * 3
    assert [len(a.get_lines()) for a in figs["step_traces.png"].axes] == [5, 5, 5]
    assert figs["phases.png"].axes[0].texts[0].get_text().startswith("no phase data")
    lines = report.terminal_lines(data)
    assert any(ln.startswith("tiny-qwen3-2x2") and "+30.0%" in ln and ln.endswith("regression") for ln in lines)


def _with_phases(records, backward):
    """Fake runs with phase timings: the step split as data 1, forward 30, optimizer 4, other 5, backward the rest."""
    out = []
    for r in records:
        n, step = len(r.step_times_ms), r.step_time_median_ms
        phases = {"data": 1.0, "forward": 30.0, "backward": backward(step), "optimizer": 4.0, "other": 5.0}
        out.append(replace(r, phases_ms={k: [v] * n for k, v in phases.items()}))
    return out


def test_report_says_which_phase_moved(tmp_path, tiny, make, monkeypatch):
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    rec = make(base, [], repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", _with_phases(rec.records, lambda s: s - 40), "test"))
    stored = bl.load(tmp_path / "baselines", "cpu", tiny)
    assert stored.phases("1x4") == {"data": 1.0, "forward": 30.0, "backward": 60.0, "optimizer": 4.0, "other": 5.0}
    # 1x4 is 30 ms slower, all of it in backward
    s = make({**base, "1x4": [x + 30 for x in base["1x4"]]}, [], repeats=5).run()
    s.records[:] = _with_phases(s.records, lambda st: st - 40)
    s._judged = None  # the session's judge of its records as they were before
    data = report.build(s.judge())
    row = next(r for r in data.rows if r.decomposition == "1x4")
    assert row.where.startswith(
        "median step +30.0 ms; backward +30.0 ms (+50%)"
    )  # report.json: the issue script quotes it
    (top, *rest) = step_analysis.where(row)
    assert (
        top[0] == "backward"
        and abs(top[1] - 30) < 1e-9
        and abs(top[2] - 0.5) < 1e-9
        and all(d == 0 for _, d, _ in rest)
    )
    assert (
        "where tiny-qwen3-1x4 moved vs baseline (medians): median step +30.0 ms; backward +30.0 ms (+50%)"
        in "\n".join(report.terminal_lines(data))
    )
    md = report.markdown(data)
    assert "### Where the step time moved against the baseline" in md
    assert "| tiny-qwen3-1x4 | +30.0 | +0.0 (+0%) | +0.0 (+0%) | +30.0 (+50%) | +0.0 (+0%) | +0.0 (+0%) | - |" in md
    # with host probes on both sides, the line says how the machine itself moved (here: 20% slower host)
    s.records[:] = [
        replace(r, host_probe={"launch_us": 6.0 if r.decomposition_id == "1x4" else 5.0}) for r in s.records
    ]
    s._judged = None
    entry = stored.data.decompositions["1x4"]
    probed_runs = tuple(replace(r, host_probe={"launch_us": 5.0}) for r in entry.runs)
    decompositions = {**stored.data.decompositions, "1x4": replace(entry, runs=probed_runs)}
    stored = replace(stored, data=replace(stored.data, decompositions=decompositions))
    probed = report.build(replace(s.judge(), baselines={tiny.name: stored}))
    row = next(r for r in probed.rows if r.decomposition == "1x4")
    assert step_analysis.probe_moved(row) == pytest.approx(0.2) and row.where.endswith(
        "; host launch probe +20% vs baseline"
    )
    assert "| +0.0 (+0%) | +20% |" in report.markdown(probed)
    assert (
        step_analysis.probe_moved(next(r for r in probed.rows if r.decomposition == "2x2")) is None
    )  # no probe in the baseline's 2x2 runs
    # a session without phase timings (--no-phases): no section, no line
    plain = report.build(make(base, [], repeats=5).run().judge())
    assert all(step_analysis.where(r) == [] for r in plain.rows)
    assert "Where the step time moved" not in report.markdown(plain)


def test_a_diagnosis_says_what_limits_the_step_and_writes_only_what_it_found(tiny):
    """GPU busy from the census's kernel time, launches per sample and MFU against the GPU's peak; on a GPU the table
    does not know, the MFU is said to be unknown, and the JSON keeps only the parts it found."""
    census = RowCensus(ops=5000.0, kernels=1000.0, kernel_ms=90.0)
    d = step_analysis.diagnosis(census, 100.0, tiny, "NVIDIA H100 80GB HBM3")
    assert d.bound == "GPU-bound" and d.peak_flops_of and d.mfu is not None
    text = step_analysis.diagnosis_text(d)
    assert text.startswith("GPU busy 90% (90 ms of kernels in a 100 ms step): GPU-bound") and "MFU " in text
    unknown = step_analysis.diagnosis(census, 100.0, tiny, "a machine of its own")
    assert unknown.peak_flops_of is None and "MFU unknown" in step_analysis.diagnosis_text(unknown)
    assert "peak_flops_of" in unknown.to_json() and "mfu" not in unknown.to_json()
    cpu = step_analysis.diagnosis(RowCensus(ops=5000.0, kernels=0.0), None, tiny, "cpu")
    assert cpu.gpu_busy is None and step_analysis.diagnosis_text(cpu) == "5,000 aten ops per step"
    assert set(cpu.to_json()) == {"step_ms", "kernel_ms", "kernels", "ops", "flops_per_step", "peak_flops_of"}
