import json
from pathlib import Path

import pytest

from harness.commands import cli
from harness.judging import baseline as bl
from harness.judging.judge import Judge, load_baselines
from harness.results.run import Run
from harness.spec import Workload

ROOT = Path(__file__).resolve().parent.parent


def test_record_and_load_round_trip(tmp_path, tiny, fake_runs):
    path = bl.write(
        tmp_path,
        bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100, 101, 99, 100, 102])], "cmd"),
    )
    b = bl.load(tmp_path, "cpu", tiny)
    assert b.path == path and not b.imported and b.values("2x2", "step_time_median_ms") == [100, 101, 99, 100, 102]
    assert b.thresholds.runtime == 0.10  # the cpu default
    assert "[100, 100, 100" in path.read_text()  # number lists stay on one line


@pytest.mark.parametrize(
    "write, expected",
    [
        (None, "no baseline for tiny-qwen3 on cpu"),
        ("{not json", "is unreadable"),
        (json.dumps({"schema": 99}), "has schema 99, this suite reads schema 1"),
        (json.dumps([1, 2]), "has schema 'list'"),
        (
            "[" * 100_000 + "]" * 100_000,
            "is unreadable (ValueError: arrays and objects nested 100000 deep, more than 64)",
        ),
        ('{"schema": ' + "9" * 4301 + "}", "is unreadable (ValueError: an integer of more than 4300 digits)"),
    ],
)
def test_refusals_on_load(tmp_path, tiny, write, expected):
    if write is not None:
        (tmp_path / "cpu").mkdir()
        (tmp_path / "cpu" / "tiny-qwen3.json").write_text(write)
    with pytest.raises(bl.BaselineError) as err:
        bl.load(tmp_path, "cpu", tiny)
    assert expected in str(err.value) and "\n" not in str(err.value)
    if write is None:
        assert "--update-baselines" in str(err.value)


@pytest.mark.parametrize(
    "spoil, says",
    [
        (lambda t: t.replace('"provenance": {', '"provenance": {"x": ' + "[" * 5000 + "]" * 5000 + ", ", 1), "nested"),
        (lambda t: t.replace('"schema": 1', '"schema": 1, "x": ' + "9" * 4301, 1), "of more than 4300 digits"),
        (
            lambda t: t.replace('"step_time_median_ms": 100', '"step_time_median_ms": 1' + "0" * 400, 1),
            "step_time_median_ms is an integer of 1329 bits",
        ),
    ],
)
def test_a_baseline_nested_too_deep_or_with_a_huge_integer_is_one_line_naming_it(
    tmp_path, tiny, fake_runs, capsys, spoil, says
):
    """A baseline nested 5,000 deep (RecursionError), with a 4,301-digit integer (Python's int-string conversion limit)
    or a 401-digit one (OverflowError in the judging) ended ``report`` with a traceback and exit 4: now exit 2, one
    line that names the file."""
    d = tmp_path / "d"
    d.mkdir()
    runs = [dict(r, workload_spec=tiny.to_dict()) for r in fake_runs(tiny, [100, 101, 99, 100, 102])]
    (d / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    path = bl.write(
        tmp_path / "b",
        bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100, 101, 99, 100, 102])], "cmd"),
    )
    spoiled = spoil(path.read_text())
    assert spoiled != path.read_text()
    path.write_text(spoiled)
    assert cli.main(["report", str(d), "--baselines-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: baseline {path}") and says in err


def test_refuses_another_gpu_and_another_hash(tmp_path, tiny, fake_runs):
    data = bl.from_runs(tiny, "l4", [Run.from_json(r) for r in fake_runs(tiny, [100] * 5, gpu="l4")], "cmd")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "tiny-qwen3.json").write_text(json.dumps(data.to_json()))
    with pytest.raises(bl.BaselineError, match="was recorded on 'l4', not 'cpu'"):
        bl.load(tmp_path, "cpu", tiny)
    bl.write(tmp_path, bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100] * 5)], "cmd"))
    with pytest.raises(bl.BaselineError, match=r"another version of tiny-qwen3 .*train.max_steps: 20 -> 30"):
        bl.load(tmp_path, "cpu", tiny.with_overrides(max_steps=30))


@pytest.mark.parametrize(
    "records, expected",
    [
        (
            lambda w, fake_runs: fake_runs(w, [100] * 5)[:-1] + fake_runs(w, [100], status="oom")[-1:],
            "1 run(s) failed (4x1: oom)",
        ),
        (lambda w, fake_runs: fake_runs(w, [100] * 4), "has 4 run(s), at least 5 needed"),
        (lambda w, fake_runs: fake_runs(w, [100] * 5, inject_slowdown=0.1), "injected slowdown"),
    ],
)
def test_update_refusals_write_nothing(tmp_path, tiny, records, expected, fake_runs):
    path = bl.write(tmp_path, bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100] * 5)], "old"))
    before = path.read_text()
    with pytest.raises(bl.BaselineError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in records(tiny, fake_runs)], "new")
    assert path.read_text() == before


def imported_session(gpu, current):
    w = Workload.load(ROOT / "workloads" / "qwen3-1.7b-lora-pretrained.toml")
    recs = []
    for d, values in current.items():
        for v in values:
            recs.append(
                {
                    "workload": w.name,
                    "decomposition_id": d,
                    "status": "ok",
                    "train_runtime_s": v,
                    "step_time_median_ms": v * 10,
                    "peak_reserved_bytes": 5 * 2**30,
                    "losses": None,
                }
            )
    return Judge(
        {w.name: w},
        tuple((w.name, d) for d in current),
        tuple(Run.from_json(r) for r in recs),
        load_baselines(ROOT / "baselines", gpu, {w.name: w}),
        gpu=gpu,
    )


def test_imported_t4_baseline_runtime_ordering_not_memory():
    same = imported_session(
        "t4", {"1x4": [285, 288, 280, 290, 284], "2x2": [255, 262, 258, 266, 259], "4x1": [248, 252, 246, 255, 250]}
    )
    b = same.baselines["qwen3-1.7b-lora-pretrained"]
    assert b.imported and b.runtime_metric("1x4") == "train_runtime_s"
    rt = same.runtime
    assert all("train_runtime" in v.message for v in rt.values())
    assert not any(v.failed for v in rt.values())
    order = {v.case.split(":")[1]: v.outcome for v in same.ordering("qwen3-1.7b-lora-pretrained")}
    assert order["4x1<1x4"] == "pass" and order["2x2~4x1"] == "tie"  # the published B/C ranges overlap
    assert same.memory("qwen3-1.7b-lora-pretrained", "1x4").outcome == "skip"
    slow = imported_session(
        "t4", {"1x4": [285, 288, 280, 290, 284], "2x2": [255, 262, 258, 266, 259], "4x1": [330, 335, 328, 340, 332]}
    )
    assert slow.runtime["qwen3-1.7b-lora-pretrained-4x1"].outcome == "regression"
    assert any(v.outcome == "fail" for v in slow.ordering("qwen3-1.7b-lora-pretrained"))


def test_imported_l4_baseline_orders_4x1_before_1x4():
    s = imported_session("l4", {"1x4": [218, 221, 216, 224, 219], "4x1": [124, 126, 125, 123, 127]})
    order = {v.case.split(":")[1]: v.outcome for v in s.ordering("qwen3-1.7b-lora-pretrained")}
    assert order == {"4x1<1x4": "pass"}
    assert all(v.outcome == "pass" for v in s.runtime.values())


def test_committed_h200_baseline_matches_the_workload_and_tells_the_order():
    """The measured H200 baseline loads against today's workload spec (a spec edit must come with a new baseline)."""
    w = Workload.load(ROOT / "workloads" / "qwen3-1.7b-lora.toml")
    b = bl.load(ROOT / "baselines", "h200", w)
    assert not b.imported and b.runtime_metric("4x1") == "step_time_median_ms"
    assert all(len(b.values(d, "step_time_median_ms")) >= bl.MIN_REPEATS for d in ("1x4", "2x2", "4x1"))
    assert (
        len(b.data.provenance.sessions or ()) > 1 and len(b.data.provenance.machines or ()) == 5
    )  # several leases, and it says so
    recs = [
        {
            "workload": w.name,
            "decomposition_id": d,
            "status": "ok",
            "step_time_median_ms": v,
            "train_runtime_s": v / 10,
            "peak_reserved_bytes": b.values(d, "peak_reserved_bytes")[0],
            "losses": b.losses(d),
        }
        for d in ("1x4", "2x2", "4x1")
        for v in b.values(d, "step_time_median_ms")
    ]
    s = Judge(
        {w.name: w},
        tuple((w.name, d) for d in ("1x4", "2x2", "4x1")),
        tuple(Run.from_json(r) for r in recs),
        {w.name: b},
        gpu="h200",
    )
    order = {v.case.split(":")[1]: v.outcome for v in s.ordering(w.name)}
    assert order == {"2x2<1x4": "pass", "4x1<1x4": "pass", "4x1<2x2": "pass"}
    assert not any(v.failed for v in s.runtime.values())


def test_runs_are_grouped_by_machine(tmp_path, tiny, fake_runs):
    recs = fake_runs(tiny, [100, 101, 99, 100, 102])
    for i, r in enumerate(recs):
        r["env"] = dict(r["env"], boot_id="boot-a" if r["repeat"] <= 3 else "boot-b")
        r["run_id"] = f"r{i}"
    b = bl.Baseline(tmp_path, bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in recs], "cmd"))
    assert b.grouped("1x4", "step_time_median_ms") == [[100, 101, 99], [100, 102]]
    assert b.data.provenance.machines == ("boot-a", "boot-b")
    same = bl.Baseline(
        tmp_path,
        bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100, 101, 99, 100, 102])], "cmd"),
    )
    assert same.grouped("1x4", "step_time_median_ms") == [
        [100, 101, 99, 100, 102]
    ]  # one session, no boot id: one machine


def test_a_session_says_up_front_what_a_multi_machine_baseline_can_detect():
    w = Workload.load(ROOT / "workloads" / "qwen3-1.7b-lora.toml")
    s = Judge({w.name: w}, ((w.name, "4x1"),), (), load_baselines(ROOT / "baselines", "h200", {w.name: w}), gpu="h200")
    (note,) = s.plan_notes(repeats=5)
    assert "spans 5 machines" in note and "4x1 x1.22" in note  # as in docs/evidence/h200-baseline-and-its-noise/
    assert note.endswith(
        "--repeats 4 is enough (the baseline's machines have at most 4 runs each)"
    )  # 2 + 3 + 4 + 1 + 1 runs
    assert "is enough" not in s.plan_notes(repeats=4)[0]
    assert Judge({}, (), (), {}, gpu="t4").plan_notes(repeats=5) == []


def test_two_census_only_sessions_compare_their_peak_memory_and_say_why_time_is_not_compared(tmp_path, tiny, fake_runs):
    """A pull request's check judges the head's censuses against the base's: census runs only on both sides. Their
    peak memory is compared (a census run records it as a timed run does), and the runtime check says that no timed
    run exists rather than asking for a baseline to be recorded."""
    from harness.suite.compare import compare

    gib = 2**30
    for side, peak in (("a", 4 * gib), ("b", 5 * gib)):
        runs = fake_runs(
            tiny, [100.0], gpu="l4", census={"fits": True}, peak_reserved_bytes=peak, workload_spec=tiny.to_dict()
        )
        (tmp_path / side).mkdir()
        (tmp_path / side / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    rep = compare([str(tmp_path / "a")], [str(tmp_path / "b")], out_dir=tmp_path / "out", out=lambda m: None)
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    memory = {v["case"]: v["outcome"] for v in data["verdicts"] if v["kind"] == "memory"}
    assert memory and set(memory.values()) == {"fail"}, data["verdicts"]  # +1 GiB: beyond the memory tolerance
    runtime = [v["message"] for v in data["verdicts"] if v["kind"] == "runtime"]
    assert runtime and all("census runs only" in m and "--update-baselines" not in m for m in runtime), runtime
    assert {r["peak_reserved_gib"]["median"] for r in data["rows"]} == {5.0} and rep.exit_code == 1
