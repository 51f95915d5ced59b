"""``python -m harness confirm``: a stored-baseline runtime regression raises an alert only when an interleaved
comparison on the same machine confirms it."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from venvs import make_venv

from harness.sidebyside.config import ComparisonConfig
from harness.workflows.confirm import UNCONFIRMED, confirm

ROOT = Path(__file__).resolve().parents[1]


def _report(tmp_path, outcome="regression") -> Path:
    data = {
        "gpu": "cpu",
        "session_id": "s1",
        "rows": [
            {"workload": "tiny-qwen3", "decomposition": "4x1"},
            {"workload": "tiny-qwen3", "decomposition": "1x4"},
        ],
        "verdicts": [
            {
                "kind": "runtime",
                "case": "tiny-qwen3-4x1",
                "outcome": outcome,
                "message": "REGRESSION: x1.30 vs baseline",
            },
            {"kind": "runtime", "case": "tiny-qwen3-1x4", "outcome": "pass", "message": "pass"},
            {"kind": "memory", "case": "tiny-qwen3-1x4", "outcome": "regression", "message": "peak memory +20%"},
        ],
        "versions": {"torch": "x"},
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


def test_the_same_environment_cannot_confirm_and_raises_no_runtime_alert(tmp_path):
    lines = []
    same = ComparisonConfig(workload="", decomposition="", python_a=sys.executable, python_b=sys.executable)
    code = confirm(_report(tmp_path), same, results_dir=tmp_path / "c", out=lines.append).exit_code
    got = json.loads((tmp_path / "c" / "report.json").read_text())
    runtime = {v["case"]: v for v in got["verdicts"] if v["kind"] == "runtime"}
    assert (
        runtime["tiny-qwen3-4x1"]["outcome"] == UNCONFIRMED
        and "same environment" in runtime["tiny-qwen3-4x1"]["message"]
    )
    assert runtime["tiny-qwen3-1x4"]["outcome"] == "pass"
    # the memory regression is not a timing: it is kept, and it still fails
    assert any(v["kind"] == "memory" and v["outcome"] == "regression" for v in got["verdicts"]) and code == 1
    assert (
        got["confirm"]["confirmed"] == []
        and got["confirm"]["same_environment"]
        and got["rows"]
        and got["versions"] == {"torch": "x"}
    )
    assert not (tmp_path / "c" / "tiny-qwen3-4x1").exists()  # nothing was run


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "no such report"),
        ("{not json", "not a JSON report"),
        ('{"a": 1}', "not a suite report"),
        ('{"rows": [], "verdicts": ["oops"]}', "verdicts[0] is a str, not an object"),
        ('{"rows": [{"workload": "tiny-qwen3"}], "verdicts": []}', "rows[0].decomposition is missing"),
        (
            '{"rows": [], "verdicts": [{"kind": "runtime", "case": "tiny-qwen3-4x1", "outcome": "regression"}]}',
            "verdicts[0] is a runtime regression of 'tiny-qwen3-4x1', which has no row",
        ),
        ('{"rows": [], "verdicts": [{"kind": "runtime", "outcome": 5}]}', "verdicts[0].outcome is an int"),
        ("[" * 100_000 + "]" * 100_000, "arrays and objects nested 100000 deep"),
        ('{"rows": [], "verdicts": [], "x": ' + "9" * 4301 + "}", "an integer of more than 4300 digits"),
    ],
)
def test_a_bad_report_is_one_line(tmp_path, content, says):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    res = subprocess.run(
        [sys.executable, "-m", "harness", "confirm", str(path), "--set", "block_steps=1", "--set", "pairs=4"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert (
        res.returncode == 2
        and res.stderr.startswith("error: ")
        and says in res.stderr
        and "Traceback" not in res.stderr
    )
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.long
def test_a_real_slowdown_is_confirmed_and_none_is_not(tmp_path, fake_gh):
    """A and B are two virtualenvs of this interpreter, as the nightly's tox environments. B's injected 60% is
    confirmed, and the issue step files it from the confirmed report; with nothing injected the stored-baseline
    regression is not (pass or inconclusive), so no alert. 3 launches, so that the launch is the unit from the start (t
    over 3 launch estimates, 2 df): with 2, the launch screen can take a busy runner's two launches as the unit with 1
    df, which leaves even a large slowdown inconclusive."""
    pinned, latest = make_venv(tmp_path / "pinned"), make_venv(tmp_path / "latest")
    t = ComparisonConfig(
        workload="", decomposition="", python_a=pinned, python_b=latest, block_steps=2, pairs=12, launches=3
    )
    common = dict(workloads_dir=ROOT / "workloads", out=lambda _: None)
    slow = confirm(
        _report(tmp_path), replace(t, inject_slowdown_b=0.6), results_dir=tmp_path / "slow", **common
    ).exit_code
    got = json.loads((tmp_path / "slow" / "report.json").read_text())
    v = next(v for v in got["verdicts"] if v["case"] == "tiny-qwen3-4x1")
    assert (
        slow == 1
        and v["outcome"] == "regression"
        and "confirmed interleaved on this machine: REGRESSION: B/A x" in v["message"]
    )
    assert (
        got["confirm"]["confirmed"] == ["tiny-qwen3-4x1"]
        and (tmp_path / "slow" / "tiny-qwen3-4x1" / "blocks.jsonl").exists()
    )
    filed = fake_gh(json.loads(_report(tmp_path).read_text()), CONFIRM=str(tmp_path / "slow" / "report.json"))
    assert "perf regression: cpu latest runtime tiny-qwen3-4x1" in [
        c[c.index("--title") + 1] for c in filed if c[:2] == ["issue", "create"]
    ]
    flat = confirm(
        _report(tmp_path), replace(t, alpha=0.01), results_dir=tmp_path / "flat", **common
    ).exit_code  # an A/A: a false alarm at most 1% of the time
    got = json.loads((tmp_path / "flat" / "report.json").read_text())
    v = next(v for v in got["verdicts"] if v["case"] == "tiny-qwen3-4x1")
    assert v["outcome"] == UNCONFIRMED and v["interleaved"]["outcome"] in ("pass", "inconclusive", "improvement"), v
    assert flat == 1  # the memory regression of the report remains


def test_a_report_of_another_gpu_is_refused_before_any_run(tmp_path):
    path = _report(tmp_path)
    path.write_text(path.read_text().replace('"gpu": "cpu"', '"gpu": "l4"'))
    with pytest.raises(
        ValueError, match=r"a report of l4 cannot be confirmed here \(--gpu=l4 but this machine has cpu"
    ):
        confirm(path, results_dir=tmp_path / "c", out=lambda line: None)
    assert not (tmp_path / "c").exists()
