"""The typed run record: every committed runs.jsonl reads into Runs and writes back as it was read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.results import formats
from harness.results.census import Census
from harness.results.run import Run

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("tests/data/**/runs.jsonl"), *ROOT.glob("baselines/**/runs.jsonl")])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_record_round_trips(path):
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            run = Run.from_json(raw)
            out = run.to_json()
            assert out == formats.RUN.stamp(raw) and list(out) == list(formats.RUN.stamp(raw))
            assert json.dumps(out) == json.dumps(formats.RUN.stamp(raw))  # the census's keys keep their order too
            assert Run.from_json(json.loads(json.dumps(out))) == run


def test_a_run_is_typed_and_keeps_what_it_does_not_type():
    raw = {
        "run_id": "r1",
        "workload": "tiny",
        "decomposition_id": "2x2",
        "status": "ok",
        "step_times_ms": [9.0, 5.0, 6.0],
        "warmup_steps": 1,
        "tokens_per_s": None,
        "env": {"boot_id": "b", "versions": {"torch": "2.5"}},
        "census": {"fits": False, "device": "cpu", "logging_steps": 2, "steps": None, "n": None, "reason": "short"},
        "host_probe": {"x": 1},
        "future_key": 3,
    }
    run = Run.from_json(raw)
    assert run.ok and run.is_census and not run.census_fits and isinstance(run.census, Census)
    assert run.steady_step_times_ms == (5.0, 6.0) and run.tokens_per_s is None and run.machine_id == "b"
    assert run.versions == {"torch": "2.5"} and run.host_probe == {"x": 1} and run.detail("future_key") == 3
    assert run.to_json() == formats.RUN.stamp(raw) and list(run.to_json())[-1] == "future_key"
    with pytest.raises(formats.FormatError):
        Run.from_json({"format": 99})
