"""The history page (``python -m harness history``): built from the committed H200 and CPU results, its embedded
data holds the expected series and sessions; the change-point detector finds a planted shift at its session and
keeps its false-alarm rate (tests/test_dashboard.py opens the page in a browser). Committed results and synthetic
series only: no training runs."""

import json
import re
import sys
from pathlib import Path

import pytest

from harness.commands import cli
from harness.judging import changepoints
from harness.reporting import history as hist
from harness.reporting import history_page

ROOT = Path(__file__).resolve().parent.parent
R = (
    ROOT / "tests" / "data" / "history"
)  # the runs.jsonl of docs/evidence/*/ that the page is built from, per-step arrays left out
H200 = [R / "h200" / d for d in ("lease1-100steps", "lease2-100steps", "lease3-4-fresh-checkout", "lease5-round")]
CENSUS = [R / "census-h200" / d for d in ("lease-a/a", "lease-b/a", "lease-b/b", "lease-c/a")]
AB = (
    R / "census-h200" / "lease-c" / "ab"
)  # a folder of results dirs (a/, b/): transformers 5.17.0 vs 5.24.0 at 40 steps
CPU = R / "cpu-e2e" / "run-b"  # rec/, aa/ and slow/ (the injected slowdown, left out)
ARGS = [*map(str, H200 + CENSUS), str(AB), str(CPU)]

# H200 4x1 timing sessions in time order (census sessions are not among them)
H200_4X1 = [
    "20261129T174449-2c0a7d",
    "20261129T175443-fad8b1",
    "20261129T202842-3f22e4",
    "20261129T203508-6f9442",
    "20261129T204143-e4cd8a",
    "20261129T225758-06c514",
    "20261130T035854-eff4a5",
    "ab-20261130T192205-f66675-a",
    "ab-20261130T192205-f66675-b",
]
H200_CENSUS = [
    "census-20261130T190812-1a3bb1",
    "census-20261130T191025-91591c",
    "census-20261130T191324-a0725f",
    "census-20261130T191605-4816a5",
    "census-20261130T191907-c93566",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("history")
    assert cli.main(["history", *ARGS, "--out", str(out)]) == 0
    return out


def embedded(index: Path) -> dict:
    """The full history data written beside the page (the page itself holds its compact form, checked in a browser by
    tests/test_dashboard.py)."""
    assert index.is_file()
    return json.loads(index.with_name("history.json").read_text())


def test_page_from_the_committed_h200_and_cpu_results(page):
    data = embedded(page / "index.html")
    series = {s["key"]: s for s in data["series"]}
    assert sorted(series) == [
        f"{g}/{d}" for g in ("cpu/tiny-qwen3", "h200/qwen3-1.7b-lora") for d in ("1x4", "2x2", "4x1")
    ]
    s = series["h200/qwen3-1.7b-lora/4x1"]
    assert s["sessions"] == H200_4X1
    assert s["census_sessions"] == H200_CENSUS
    assert [t["session_id"] for t in s["timeline"]] == sorted(
        H200_4X1 + H200_CENSUS, key=lambda x: next(t["started_at"] for t in s["timeline"] if t["session_id"] == x)
    )
    by = {(t["session_id"], t["kind"]): t for t in s["timeline"]}
    aa = by["20261129T225758-06c514", "timing"]  # five runs over two machines (a resumed session)
    assert (
        aa["runs"] == 5
        and aa["machines"] == ["91f3a6e8", "d2ee8eb1"]
        and aa["min_ms"] <= aa["median_ms"] <= aa["max_ms"]
    )
    assert by["20261129T174449-2c0a7d", "timing"]["machines"] == [
        f"dir:{R / 'h200' / 'lease1-100steps'}"
    ]  # before boot ids
    assert by["20261129T174449-2c0a7d", "timing"]["median_ms"] == pytest.approx(394.2, abs=0.05)
    cen = by["census-20261130T190812-1a3bb1", "census"]
    assert cen["ops"] == pytest.approx(50192.6) and cen["kernels"] == pytest.approx(
        10937.4
    )  # normalised: no annotation
    # version changes, named: the census's release pair, and the A/B at 40 steps (a spec change, then transformers)
    changes = [
        (v["kind"], v["session_id"], [hist.change_text(hist.VersionDiff(**c)) for c in v["changes"]])
        for v in s["version_changes"]
    ]
    assert changes == [
        ("timing", "ab-20261130T192205-f66675-a", ["spec c738c0c7→67a81c07 (train.max_steps: 100 -> 40)"]),
        ("timing", "ab-20261130T192205-f66675-b", ["transformers 5.17.0→5.24.0"]),
        ("census", "census-20261130T191605-4816a5", ["transformers 5.17.0→5.24.0"]),
        ("census", "census-20261130T191907-c93566", ["transformers 5.24.0→5.17.0"]),
    ]
    assert series["h200/qwen3-1.7b-lora/1x4"]["sessions"] == [
        "20261129T174449-2c0a7d",
        "20261129T175819-2bfdb3",
        "20261129T202842-3f22e4",
        "20261129T203508-6f9442",
        "20261129T204143-e4cd8a",
        "20261129T225758-06c514",
        "20261130T035854-eff4a5",
    ]
    # the committed H200 history has no change point: the spread between leases is larger than any step in it
    assert all(not x["change_points"] for x in data["series"])
    cpu = series["cpu/tiny-qwen3/4x1"]
    assert cpu["sessions"] == ["20261129T194328-26dad2", "20261129T194533-7206ce"] and not cpu["census_sessions"]
    assert data["excluded_runs"] == {"injected slowdown or work": 15}  # cpu-e2e/run-b/slow
    html = (page / "index.html").read_text()
    assert not re.search(
        r'(src|href)="(https?:)?//', html
    )  # nothing from the network: every script and style lies beside the page
    local = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert set(history_page.SCRIPTS) | set(history_page.STYLES) <= set(local) and all(
        (page / f).is_file() for f in local
    )
    assert "PELT" not in html and "PELT" in (page / "method.html").read_text()  # the method is a linked note


def test_census_runs_never_enter_the_timing_series(page):
    data = embedded(page / "index.html")
    census_ids = {
        json.loads(line)["session_id"] for d in CENSUS for line in (d / "runs.jsonl").read_text().splitlines()
    }
    for s in data["series"]:
        assert not census_ids & set(s["sessions"])
        assert all(t["kind"] == "census" for t in s["timeline"] if t["session_id"] in census_ids)


def test_tracks_keep_environments_apart(tmp_path, capsys):
    assert (
        cli.main(["history", f"pinned={R / 'ab-cpu' / 'a'}", f"latest={R / 'ab-cpu' / 'b'}", "--out", str(tmp_path)])
        == 0
    )
    data = embedded(tmp_path / "index.html")
    assert sorted(s["key"] for s in data["series"]) == [
        f"cpu/tiny-qwen3/{d}/{t}" for d in ("1x4", "2x2", "4x1") for t in ("latest", "pinned")
    ]
    assert all(not s["version_changes"] for s in data["series"])
    assert "cpu · tiny-qwen3 · 1x4 · latest: 1 sessions" in capsys.readouterr().out


def test_without_ruptures_the_command_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ruptures", None)
    assert cli.main(["history", str(CPU), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install ruptures" in err
    assert not (tmp_path / "index.html").exists()


def test_a_folder_without_results_is_refused(tmp_path, capsys):
    assert cli.main(["history", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no runs.jsonl" in capsys.readouterr().err


# ---- the detector on synthetic series --------------------------------------------------------------
# Rule (harness/judging/changepoints.py): PELT on log session medians, penalty 3 * sigma^2 * log(n) with sigma from
# successive differences; Welch t between neighbouring segments, p times the positions scanned, Holm at 0.05
# over the candidates, pruning the least significant. Series: 30 sessions, log-normal noise sd 2%.
N, SIGMA, SERIES = 30, 0.02, 200
# 200 series: the binomial SE of a 5% rate is 1.5%; the rate must stay within alpha + 2 SE
FALSE_ALARM_BOUND = 0.08


def test_a_planted_shift_is_found_at_its_session():
    values = changepoints.synthetic(7, N, SIGMA, shift=0.12, at=17)
    det = changepoints.detect(values)
    assert [c.index for c in det.kept] == [17]
    c = det.kept[0]
    assert (
        c.lo < c.ratio < c.hi and abs(c.ratio - 1.12) < 0.03 and c.p < 0.05 and (c.n_before, c.n_after) == (17, 13)
    )  # SE of the ratio ~0.008


def test_planted_shifts_over_many_seeds():
    """+12% (6 sigma) from the 15th of 30 sessions, 200 seeds: measured found 0.985, exactly that one change point
    0.95."""
    r = changepoints.simulate(SERIES, N, SIGMA, shift=0.12, at=15, first_seed=1000)
    assert r["found"] >= 0.95 and r["exact"] >= 0.90, r


def test_false_alarm_rate_without_a_shift():
    """200 series without a shift: the share with any change point (measured 0.050) stays below alpha + 2 SE."""
    r = changepoints.simulate(SERIES, N, SIGMA)
    assert r["any"] <= FALSE_ALARM_BOUND, r


def test_short_and_flat_series_have_no_change_point():
    assert changepoints.detect([400.0, 500.0, 400.0]).note.startswith("3 sessions")
    assert changepoints.detect([400.0] * 10).kept == ()
    assert (
        changepoints.robust_sigma([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]) > 0
    )  # a single step: sigma from the plain sd, not 0


def test_a_record_of_a_newer_format_or_a_census_of_the_wrong_shape_is_named_not_read():
    """The page reads each record as a Run; one it cannot read so is left out with one line saying why."""
    rec = {"gpu": "cpu", "workload": "w", "decomposition_id": "1x4", "status": "ok", "step_time_median_ms": 1.0}
    assert hist.record_problem(rec) is None
    assert "newer than this harness reads" in hist.record_problem(dict(rec, format=99))
    assert hist.record_problem(dict(rec, census={"fits": True, "steps": 5})).startswith("unreadable (TypeError")
    assert "census count" in hist.record_problem(dict(rec, census={"fits": True, "ops": float("nan")}))
