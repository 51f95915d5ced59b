"""The real loaders: pretrained weights and a local conversational dataset saved by the test itself,
and a hub that cannot be reached. Each run is a real worker process."""

import dataclasses
from pathlib import Path

import pytest

from harness.measuring.runner import RunRequest, run_one
from harness.spec import DataSpec, Workload

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny():
    w = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    return dataclasses.replace(
        w, train=dataclasses.replace(w.train, max_steps=4), measure=dataclasses.replace(w.measure, warmup_steps=1)
    )


@pytest.fixture
def saved_model_and_data(tmp_path, tiny):
    """A random tiny Qwen3 with its tokenizer, and 32 chat conversations, saved like hub downloads."""
    import datasets
    from transformers import AutoConfig, AutoModelForCausalLM

    from harness.measuring.build import in_memory_tokenizer

    tok = in_memory_tokenizer()
    model = AutoModelForCausalLM.from_config(
        AutoConfig.for_model("qwen3", **dict(tiny.model.config, vocab_size=len(tok)))
    )
    model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    rows = [
        {
            "messages": [
                {"role": "user", "content": " ".join(f"w{(i * 7 + j) % 200}" for j in range(20 + i))},
                {"role": "assistant", "content": " ".join(f"w{(i * 3 + j) % 200}" for j in range(30))},
            ]
        }
        for i in range(32)
    ]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "data"))
    return tmp_path / "model", tmp_path / "data"


def test_pretrained_model_and_local_chat_dataset(tmp_path, tiny, saved_model_and_data):
    model_dir, data_dir = saved_model_and_data
    w = dataclasses.replace(
        tiny,
        model=dataclasses.replace(tiny.model, init="pretrained", hub_id=str(model_dir), config={}),
        data=DataSpec(source="local", id=str(data_dir), num_samples=16, shuffle_seed=42, chat_template=True),
        decompositions=tiny.decompositions[:1],
    )
    rec = run_one(RunRequest(w, w.decompositions[0], 1), tmp_path / "out", "s", 300, "cpu")
    assert rec["status"] == "ok", rec.get("stderr_tail")
    assert len(rec["losses"]) == 4 and all(x > 0 for x in rec["losses"])
    assert rec["tokens_per_s"] > 0


def test_unreachable_hub_fails_with_one_line(tmp_path, tiny, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    w = dataclasses.replace(
        tiny,
        model=dataclasses.replace(tiny.model, init="pretrained", hub_id="Qwen/Qwen3-1.7B"),
        decompositions=tiny.decompositions[:1],
    )
    rec = run_one(RunRequest(w, w.decompositions[0], 1), tmp_path / "out", "s", 300, "cpu")
    assert rec["status"] == "error"
    assert rec["error"].startswith("cannot load tokenizer 'Qwen/Qwen3-1.7B'")
    assert "hub is unreachable or the id is wrong" in rec["error"] and "\n" not in rec["error"]
    w2 = dataclasses.replace(
        tiny, data=DataSpec(source="hub", id="trl-lib/Capybara"), decompositions=tiny.decompositions[:1]
    )
    rec2 = run_one(RunRequest(w2, w2.decompositions[0], 1), tmp_path / "out", "s", 300, "cpu")
    assert rec2["status"] == "error" and rec2["error"].startswith("cannot load dataset 'trl-lib/Capybara'"), rec2[
        "error"
    ]


def test_files_written_atomically_are_as_readable_as_any_other(tmp_path):
    """mkstemp makes its file 0600; a report written through it must get the mode a plain open() would give it."""
    import os

    from harness.files import write_atomic, write_json_atomic

    write_atomic(tmp_path / "report.md", "# report\n")
    write_json_atomic(tmp_path / "report.json", {"a": 1})
    (tmp_path / "plain.txt").write_text("x")
    want = (tmp_path / "plain.txt").stat().st_mode & 0o777
    assert {(tmp_path / f).stat().st_mode & 0o777 for f in ("report.md", "report.json")} == {want}
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporary left behind
