import dataclasses
from pathlib import Path

import pytest

from harness.spec import Decomposition, SpecError, Workload, changed_fields
from harness.spec_folder import load_workloads

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny_dict():
    return Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").to_dict()


def test_shipped_workloads_load():
    ws = load_workloads(ROOT / "workloads")
    assert {"qwen3-1.7b-lora", "qwen3-1.7b-lora-pretrained", "tiny-qwen3"} <= set(ws)
    ref = ws["qwen3-1.7b-lora"]
    assert [d.id for d in ref.decompositions] == ["1x4", "2x2", "4x1"]
    assert ref.model.config["vocab_size"] == 151936 and ref.model.config["num_hidden_layers"] == 28
    assert (ref.lora.r, ref.lora.alpha, ref.lora.dropout, ref.train.precision, ref.train.max_steps) == (
        16,
        32,
        0.0,
        "fp16",
        100,
    )


def test_round_trip_and_stable_hash(tiny_dict):
    a = Workload.from_dict(tiny_dict)
    b = Workload.from_dict(Workload.from_dict(tiny_dict).to_dict())
    assert a == b and a.hash == b.hash and len(a.hash) == 16


def test_hash_tracks_timing_fields_only(tiny_dict):
    w = Workload.from_dict(tiny_dict)
    renamed = dataclasses.replace(w, name="other", description="x", devices=("gpu",))
    assert renamed.hash == w.hash
    pretrained = dataclasses.replace(w, model=dataclasses.replace(w.model, init="pretrained", hub_id="some/model"))
    assert pretrained.hash == w.hash, "weights do not change compute"
    assert w.with_overrides(max_steps=3).hash != w.hash
    assert dataclasses.replace(w, lora=dataclasses.replace(w.lora, r=4)).hash != w.hash
    assert changed_fields(w.to_dict(), w.with_overrides(max_steps=3).to_dict()) == ["train.max_steps: 20 -> 3"]
    wider = dataclasses.replace(w, model=dataclasses.replace(w.model, config=dict(w.model.config, hidden_size=256)))
    assert wider.hash != w.hash and changed_fields(w.to_dict(), wider.to_dict()) == [
        "model.config.hidden_size: 128 -> 256"
    ]
    spelled_out = dataclasses.replace(
        w, model=dataclasses.replace(w.model, config=dict(w.model.config, attention_bias=False))
    )
    assert spelled_out.hash == w.hash, "a key written out at its default is the same architecture"


def test_shipped_baselines_match_their_workloads():
    """Every committed baseline was recorded for today's definition of its workload (the hash of its resolved spec)."""
    import json

    ws = load_workloads(ROOT / "workloads")
    for path in sorted((ROOT / "baselines").glob("*/*.json")):
        data = json.loads(path.read_text())
        w = ws[data["workload"]["name"]]
        assert data["workload"]["hash"] == w.hash, f"{path}: regenerate it for the workload's hash {w.hash}"
        assert Workload.from_dict(data["workload"]["spec"]).hash == w.hash, f"{path}: its spec is not the workload's"


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (
            lambda d: d["batch"].update(decompositions=["3x2"]),
            "decomposition 3x2 gives 6 samples per step, not the effective batch 4",
        ),
        (lambda d: d["train"].update(max_steps=-5), "train.max_steps must be a positive integer, got -5"),
        (lambda d: d["lora"].update(rank=8), "unknown field 'rank' in [lora]"),
        (lambda d: d.update(colour="red"), "unknown field 'colour'"),
        (lambda d: d["train"].update(precision="fp8"), "train.precision must be one of"),
        (lambda d: d["batch"].update(decompositions=["2by2"]), "is not MICROxGA"),
    ],
)
def test_bad_workloads_say_what_is_wrong(tiny_dict, mutate, expected):
    mutate(tiny_dict)
    with pytest.raises(SpecError) as err:
        Workload.from_dict(tiny_dict)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_decomposition_parse():
    assert Decomposition.parse("2x2") == Decomposition(2, 2, 1)
    assert Decomposition.parse("1x2x2").id == "1x2x2" and Decomposition.parse("1x2x2").product == 4


BAD = {
    "3x2": (
        'decompositions = ["1x4", "2x2", "4x1"]',
        'decompositions = ["1x4", "3x2"]',
        "decomposition 3x2 gives 6 samples per step, not the effective batch 4",
    ),
    "unknown": ("[lora]\n", "[lora]\nrank = 3\n", "unknown field 'rank'"),
    "negative": ("max_steps = 20", "max_steps = -1", "train.max_steps must be a positive integer, got -1"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_workload_fails_collection_with_one_line(perf_project, case):
    old, new, expected = BAD[case]
    path = perf_project.path / "workloads" / "tiny-qwen3.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    result = perf_project.runpytest_subprocess("perftests", "--gpu=cpu", "--collect-only")
    assert result.ret != 0
    lines = [ln for ln in result.outlines if expected in ln]
    assert lines, result.stdout.str()
    assert "bad workload:" in lines[0] and "Traceback" not in result.stdout.str()


def test_the_run_record_type_and_its_documentation_agree():
    """Every key of harness.record.RunRecord is described in docs/measurement.md, and the table names no other key."""
    import re

    from harness.record import RunRecord

    doc = (Path(__file__).resolve().parents[1] / "docs" / "measurement.md").read_text()
    keys = set(RunRecord.__annotations__)
    assert not [k for k in keys if f"`{k}`" not in doc], "document these run record keys in docs/measurement.md"
    table = [ln for ln in doc.split("## Census")[0].splitlines() if ln.startswith("| `")]
    named = {k for ln in table for k in re.findall(r"`([a-z_]+)`", ln.split("|")[1])}
    assert named <= keys, f"docs/measurement.md describes keys the record does not have: {sorted(named - keys)}"
