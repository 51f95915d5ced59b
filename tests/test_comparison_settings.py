"""A comparison's settings: one frozen type, written to progress.json and report.json and read back into itself, older
files' keys included; one name per concept."""

from pathlib import Path

from harness.judging.comparison_settings import ComparisonSettings, settings_problem, upgraded
from harness.sidebyside.config import ComparisonConfig
from harness.sidebyside.launchers import Sides
from harness.sidebyside.run import settings_of
from harness.spec import Workload

ROOT = Path(__file__).resolve().parents[1]


def _settings() -> ComparisonSettings:
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    decs = Sides(w.decomposition("4x1"), w.decomposition("4x1"))
    cfg = ComparisonConfig(workload=w.name, decomposition="4x1", gpu="cpu").resolved(1, True, available=[0, 1])
    return settings_of(cfg, w, decs, Sides("pa", "pb"), 7, (40, 80), "interleave-x")


def test_settings_are_written_and_read_back_as_themselves():
    s = _settings()
    data = s.to_json()
    assert ComparisonSettings.from_json(data) == s and settings_problem(data) is None
    # the cap on pairs and the launches planned have names of their own: "pairs" and "launches" name counts and lists
    assert data["max_pairs"] == 800 and data["launches_planned"] == s.launches_planned >= 3
    assert "pairs" not in data and "launches" not in data
    assert data["metric"] == s.block_metric == "median" and data["hold_cpus"] == [0] and data["cpus"] == [1]
    assert s.alpha_per_look == s.alpha / 2 and s.check().per_look == s.alpha_per_look


def test_an_older_files_settings_read_under_todays_names():
    old = {k: v for k, v in _settings().to_json().items() if k not in ("max_pairs", "launches_planned", "config")}
    old.update(pairs=12, launches=3)
    s = ComparisonSettings.from_json(old)
    assert (s.max_pairs, s.launches_planned, s.config) == (12, 3, None)
    assert upgraded(old)["max_pairs"] == 12 and "config" not in s.to_json()


def test_settings_judged_another_way_keep_the_rest():
    s = _settings()
    t = s.judged_as(block_metric="min", drop_first_step=True, unit="pair")
    assert (t.block_metric, t.drop_first_step, t.check().unit) == ("min", True, "pair")
    assert (t.session_id, t.alpha, t.looks) == (s.session_id, s.alpha, s.looks)
