"""Reports from a session built with the fake runner of test_session."""

import json

from harness import baseline as bl
from harness import plots, report

from test_session import make, tiny  # noqa: F401  (fixture)


def test_report_files_summary_and_plots(tmp_path, tiny, monkeypatch):  # noqa: F811
    base = {"1x4": [100, 101, 99, 100, 100.5], "2x2": [80, 81, 79, 80, 80.5], "4x1": [90, 91, 89, 90, 90.5]}
    rec = make(tmp_path, tiny, monkeypatch, base, [], repeats=5).run()
    bl.write(tmp_path / "baselines", bl.from_runs(tiny, "cpu", rec.records, "test"))
    slow = {d: [x * 1.3 for x in v] for d, v in base.items()}
    s = make(tmp_path, tiny, monkeypatch, slow, [], repeats=5).run()
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    data = report.build(s)
    paths = report.write(data, tmp_path / "out") + plots.write_all(data, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "step_times.png", "phases.png", "step_traces.png"]
    assert all(p.stat().st_size > 1000 for p in paths[2:])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| tiny-qwen3 | 1 × 4 | 4 | 5/5 |" in md and "+30.0%" in md and "**regression** runtime `tiny-qwen3-1x4`" in md
    assert summary.read_text().startswith("earlier step\n## LoRA fine-tuning performance")
    js = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {v["outcome"] for v in js["verdicts"] if v["kind"] == "runtime"} == {"regression"}
    lines = report.terminal_lines(data)
    assert any(ln.startswith("tiny-qwen3-2x2") and "+30.0%" in ln and ln.endswith("regression") for ln in lines)
