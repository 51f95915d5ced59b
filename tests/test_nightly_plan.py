"""The nightly's plan (.github/scripts/night-plan.py) and its choice of what to bisect
(.github/scripts/night-bisect.py)."""

import json
from pathlib import Path

import pytest
from scripts import load_script

SCRIPTS = Path(__file__).resolve().parents[1] / ".github" / "scripts"


def script(name: str):
    return load_script(SCRIPTS / f"{name}.py")


night_plan, night_bisect = script("night-plan"), script("night-bisect")
W = [
    {"name": "qwen3-1.7b-lora", "runs_here": True, "baseline": "ok"},
    {"name": "qwen3-1.7b-qlora", "runs_here": True, "baseline": "ok"},
    {"name": "tiny-qwen3", "runs_here": False, "baseline": "missing"},
]


def job(**kw):
    return night_plan.Job(
        **{"gpu": "h200", "env": "pinned", "workloads": ("qwen3-1.7b-lora", "qwen3-1.7b-qlora"), **kw}
    )


def test_a_night_with_baselines_makes_one_timed_run_per_decomposition_and_a_census():
    p = night_plan.plan(job(), W, "pinned")
    assert (p["suite"], p["repeats"], p["versions"]) == (True, 1, "same")
    assert "then one census run per case" in p["lines"][0]


def test_a_first_night_makes_the_five_runs_a_first_baseline_needs_on_the_pinned_job_only():
    """The latest job of a release night is a census-only session whatever the baselines."""
    w = [dict(W[0], baseline="missing"), W[1]]
    assert night_plan.plan(job(), w, "pinned")["repeats"] == 5
    assert "qwen3-1.7b-lora" in night_plan.plan(job(), w, "pinned")["lines"][0]
    assert night_plan.plan(job(env="latest"), w, None)["repeats"] == 0
    # a workload not selected tonight does not make the night a first one
    assert night_plan.plan(job(workloads=("qwen3-1.7b-qlora",)), w, "pinned")["repeats"] == 1


def test_a_gpu_that_nightly_toml_gives_no_workload_makes_no_runs():
    p = night_plan.plan(job(workloads=()), W, "pinned")
    assert (p["suite"], p["repeats"]) == (False, 0) and "names no workload for h200" in p["lines"][0]


def test_latest_makes_no_runs_when_it_resolved_to_the_pins_and_the_ab_when_it_did_not():
    same = night_plan.plan(job(env="latest"), W, "transformers 5.17.0")
    assert (same["suite"], same["versions"]) == (False, "same") and "no runs" in same["lines"][0]
    new = night_plan.plan(job(env="latest"), W, None)
    assert (new["suite"], new["versions"], new["repeats"]) == (True, "differ", 0) and "A/B" in new["lines"][1]


def test_the_repeats_input_overrides_and_bad_input_is_one_line():
    assert night_plan.plan(job(repeats="3"), W, "pinned")["repeats"] == 3
    with pytest.raises(ValueError, match="whole number"):
        job(repeats="five")
    with pytest.raises(ValueError, match="PERF_GPU"):
        job(gpu="")


def test_an_unknown_workload_is_dropped_with_one_error_line_and_the_others_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERF_GPU", "h200")
    monkeypatch.setenv("PERF_ENV", "pinned")
    monkeypatch.setenv("NIGHT_INPUTS", json.dumps({"workloads": "no-such-workload tiny-qwen3"}))
    monkeypatch.setenv("GITHUB_ENV", str(tmp_path / "env"))
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert night_plan.main([]) == 0
    out = capsys.readouterr().out
    errors = [ln for ln in out.splitlines() if ln.startswith("::error::")]
    assert len(errors) == 1 and "names 'no-such-workload' for h200, which no workload file declares" in errors[0]
    assert "PERF_WORKLOADS=tiny-qwen3\n" in (tmp_path / "env").read_text() and "dropped=no-such-workload" in out


def test_a_broken_workload_is_planned_as_the_suites_failed_item_not_a_first_baseline():
    """Its baseline cannot be told: it neither asks for a first baseline's five runs nor is left out of the suite."""
    broken = {"qwen3-1.7b-qlora": "workloads/qwen3-1.7b-qlora.toml: unknown field 'rank' in [lora]"}
    p = night_plan.plan(job(), W[:1] + [dict(W[1], baseline="missing")], "pinned", broken)
    assert (p["suite"], p["repeats"]) == (True, 1)
    assert p["lines"][1].startswith("- qwen3-1.7b-qlora: BROKEN, not measured (the suite fails one item") and p[
        "lines"
    ][1].endswith("unknown field 'rank' in [lora]")
    alone = night_plan.plan(job(workloads=("qwen3-1.7b-qlora",)), W, "pinned", broken)
    assert (alone["suite"], alone["repeats"]) == (True, 1)  # the suite runs, to fail its item and write the report
    latest = night_plan.plan(job(env="latest"), W, "transformers 5.17.0", broken)
    assert latest["suite"] is False and "BROKEN, not measured: " in latest["lines"][-1]


def test_the_plan_writes_the_step_outputs(tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    night_plan.write({**night_plan.plan(job(env="latest"), W, None), "versions_key": "0123abcd"}, job(env="latest"))
    assert out.read_text().splitlines() == [
        "suite=true",
        "repeats=0",
        "versions=differ",
        "versions_key=0123abcd",
        "dropped=",
    ]


def test_the_versions_key_moves_with_any_version_of_either_environment():
    pinned, latest = {"torch": "2.11.0", "transformers": "5.17.0"}, {"torch": "2.11.0", "transformers": "5.25.0"}
    key = night_plan.versions_key(pinned, latest)
    assert key == night_plan.versions_key(dict(reversed(pinned.items())), latest) and len(key) == 16
    assert key != night_plan.versions_key(pinned, dict(latest, torch="2.11.1"))
    assert key != night_plan.versions_key(dict(pinned, transformers="5.18.0"), latest)


def reports(tmp_path: Path, work: dict, ab: dict) -> Path:
    (tmp_path / "report.json").write_text(
        json.dumps({"verdicts": [{"kind": "work", "case": f"w-{d}", "outcome": o} for d, o in work.items()]})
    )
    for d, o in ab.items():
        (tmp_path / "ab" / d).mkdir(parents=True)
        (tmp_path / "ab" / d / "report.json").write_text(
            json.dumps({"verdicts": [{"kind": "interleaved", "case": f"w-{d}", "outcome": o}]})
        )
    return tmp_path


@pytest.mark.parametrize(
    "work, ab, expected",
    [
        ({"4x1": "pass", "1x4": "pass"}, {"4x1": "pass"}, None),
        ({"4x1": "changed", "1x4": "pass"}, {"4x1": "pass"}, ("4x1", True)),
        (
            {"4x1": "pass", "1x4": "changed"},
            {"4x1": "inconclusive"},
            None,
        ),  # only the A/B workload's A/B decompositions
        ({"4x1": "pass"}, {"4x1": "regression"}, ("4x1", False)),
        ({"4x1": "regression"}, {"4x1": "regression"}, ("4x1", True)),
    ],
)
def test_the_bisect_takes_the_ab_regression_first_then_a_census_change(tmp_path, work, ab, expected):
    picked = night_bisect.choose("w", ["4x1"], reports(tmp_path, work, ab))
    assert (picked[:2] if picked else None) == expected


def test_the_bisect_command_bisects_pinned_against_this_job_within_its_budget(monkeypatch):
    monkeypatch.setenv("BISECT_BUDGET", "3")
    monkeypatch.setenv("PERF_WHEELS", "/wheels")
    cmd = " ".join(night_bisect.command("w", "4x1", True, "latest"))
    assert (
        "--good .tox/pinned/bin/python --bad .tox/latest/bin/python --move-deps "
        "--packages transformers,trl,peft,accelerate,datasets --total-budget-minutes 3" in cmd
    )
    assert cmd.endswith("--wheels /wheels --census-only")


def test_tonights_census_of_the_case_is_handed_to_the_bisect_as_bads(tmp_path):
    from harness.bisect.config import BisectConfig
    from harness.bisect.steps import Steps
    from harness.spec_folder import load_workload

    w = load_workload(Path(__file__).resolve().parents[1] / "workloads", "tiny-qwen3")
    rec = {
        "workload": "tiny-qwen3",
        "workload_hash": w.hash,
        "decomposition_id": "4x1",
        "gpu": "cpu",
        "status": "ok",
        "census": {"fits": True},
    }
    (tmp_path / "runs.jsonl").write_text(json.dumps({**rec, "census": None}) + "\n" + json.dumps(rec) + "\n")
    assert night_bisect.seed_census("tiny-qwen3", "4x1", "latest", tmp_path)
    assert not night_bisect.seed_census("tiny-qwen3", "1x4", "latest", tmp_path)
    cfg = BisectConfig(
        workload="tiny-qwen3",
        decomposition="4x1",
        good="a==1",
        bad="a==2",
        results_dir=str(tmp_path / "bisect"),
        workloads_dir=str(Path(__file__).resolve().parents[1] / "workloads"),
    )
    steps = Steps(cfg, envs=None)
    folder = next(p for p in (tmp_path / "bisect" / "census").iterdir() if p.is_dir())
    assert steps._kept(folder) == rec


def test_the_ab_gets_the_baselines_census_as_a_and_tonights_as_b(tmp_path):
    from harness.suite.runs import side_census

    ab_censuses = script("ab-censuses")
    c = {"fits": True, "device": "cuda", "ops": 10.0, "kernels": 5.0}
    (tmp_path / "base" / "h200").mkdir(parents=True)
    (tmp_path / "base" / "h200" / "w.json").write_text(
        json.dumps(
            {
                "workload": {"name": "w"},
                "decompositions": {
                    "4x1": {"decomposition": "4x1", "runs": [], "census": [{"run_id": "r", "census": c}]}
                },
            }
        )
    )
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "runs.jsonl").write_text(
        json.dumps({"workload": "w", "decomposition_id": "4x1", "status": "ok", "census": dict(c, ops=12.0)}) + "\n"
    )
    lines = ab_censuses.seed(tmp_path / "res", tmp_path / "base", "h200", "w", ["4x1", "1x4"])
    assert side_census(tmp_path / "res" / "ab" / "4x1" / "census-a", "w", "4x1")["ops"] == 10.0
    assert side_census(tmp_path / "res" / "ab" / "4x1" / "census-b", "w", "4x1")["ops"] == 12.0
    assert "w-1x4: no census of side A" in lines and "w-1x4: no census of side B" in lines


def test_tonight_splits_the_named_workloads_into_run_broken_and_unknown(tmp_path):
    """Pure: the files that do not load by the name they declare (a second file of a loaded name is not that
    workload's), a baseline the suite refuses as broken, an unknown name dropped, and the A/B's own checks."""
    from harness.commands.doctor_nightly import tonight
    from harness.nightly import parse

    n = parse(
        {
            "gpus": ["h200"],
            "workloads": ["a", "b", "stale", "typo", "nope"],
            "ab": {"workload": "a", "decompositions": ["4x1", "8x1"]},
        }
    )
    workloads = [
        {"name": "a", "baseline": "ok", "decompositions": ["1x4", "4x1"]},
        {"name": "b", "baseline": "missing", "decompositions": ["4x1"]},
        {
            "name": "stale",
            "baseline": "unusable: baseline s.json is for another version of stale",
            "decompositions": [],
        },
    ]
    (tmp_path / "a-copy.toml").write_text('name = "a"\n')  # a second file of a: declares a, is not a's
    broken = {
        tmp_path / "typo.toml": "w/typo.toml: not valid TOML",
        tmp_path / "a-copy.toml": "a-copy.toml: used twice",
    }
    t = tonight(n, "h200", workloads, broken)
    assert t.workloads == ("a", "b", "stale", "typo") and list(t.unknown) == ["nope"]
    assert t.broken == {
        "stale": "baseline s.json is for another version of stale",
        "typo": "w/typo.toml: not valid TOML",
    }
    assert "ab.decompositions names 8x1, which a does not have (its batch.decompositions: 1x4, 4x1)" in t.ab
