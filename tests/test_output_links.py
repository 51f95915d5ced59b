"""A writer of several files checks every path it writes before it writes the first: a file linked out of its folder is
refused with one line, and the files before it are left as they were (report.json was rewritten, then report.md
refused)."""

import json
from pathlib import Path

import pytest

from harness.commands import cli
from harness.files import OutsideResults
from harness.reporting import history_page
from harness.reporting.history_data import History, Rule


def _results_with_a_report(tmp_path: Path, tiny, fake_runs) -> Path:
    d = tmp_path / "d"
    d.mkdir()
    (d / "runs.jsonl").write_text(
        "".join(json.dumps(dict(r, workload_spec=tiny.to_dict())) + "\n" for r in fake_runs(tiny, [100, 101, 99]))
    )
    (d / "report.json").write_text('{"an": "earlier report"}')
    return d


@pytest.mark.parametrize("linked", ["report.md", "step_times.png"])
def test_report_refuses_a_linked_output_before_it_rewrites_any(tmp_path, tiny, fake_runs, capsys, linked):
    d = _results_with_a_report(tmp_path, tiny, fake_runs)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (d / linked).symlink_to(victim)
    assert cli.main(["report", str(d), "--baselines-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{d / linked} is a symbolic link to {victim}" in err, err
    assert (d / "report.json").read_text() == '{"an": "earlier report"}' and victim.read_text() == "keep me\n"
    assert not (d / "report.md").exists() or (d / "report.md").is_symlink()


def test_the_history_page_refuses_a_linked_file_before_it_writes_any(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text("keep me\n")
    (out / "index.html").symlink_to(victim)
    with pytest.raises(OutsideResults, match="index.html is a symbolic link to"):
        history_page.write(History("", "", (), Rule(k=1.0, alpha=0.05, min_size=2), {}, (), ()), out)
    assert [p.name for p in out.iterdir()] == ["index.html"] and victim.read_text() == "keep me\n"
