"""compare groups runs by the hash each recorded, so results of an older harness (another hash rule) still compare."""

import json
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.results.run import Run
from harness.suite.compare import group

RUNS = Path(__file__).parent / "data/history/cpu-e2e/run-b/rec/runs.jsonl"


def test_runs_that_recorded_one_hash_group_together_even_under_another_hash_rule():
    recs = [json.loads(x) for x in RUNS.read_text().splitlines()]
    recs = [dict(r, workload_hash="0123456789abcdef") for r in recs]
    ((w, runs),) = group([Run.from_json(r) for r in recs], "A").values()
    assert len(runs) == len(recs) and w.name == recs[0]["workload"]


def test_runs_that_recorded_two_hashes_are_refused():
    recs = [json.loads(x) for x in RUNS.read_text().splitlines()][:2]
    recs[1] = dict(recs[1], workload_hash="fedcba9876543210")
    with pytest.raises(UsageError, match="two different specs"):
        group([Run.from_json(r) for r in recs], "A")
