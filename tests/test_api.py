"""``docs/api.md``'s example runs as written, on the CPU, against the project's workloads."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) == 1, "docs/api.md has one example"
    return blocks[0]


@pytest.mark.slow
def test_the_api_pages_example_runs_as_written(tmp_path):
    """Run from a folder of its own with the project's workloads beside it, as a user's script would."""
    (tmp_path / "workloads").symlink_to(ROOT / "workloads")
    script = tmp_path / "example.py"
    script.write_text(example())
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "aten ops per optimizer step:" in res.stdout and "\nregression " in res.stdout
    assert (tmp_path / "out" / "side-by-side" / "report.json").is_file() and (
        tmp_path / "out" / "judged" / "report.json"
    ).is_file()


def test_the_api_names_every_function_the_page_shows():
    from harness import api

    for name in re.findall(r"`api\.(\w+)\(", (ROOT / "docs" / "api.md").read_text()):
        assert callable(getattr(api, name, None)), f"docs/api.md shows api.{name}, which harness.api lacks"


def test_repeats_below_one_are_refused_with_one_line_and_nothing_runs(monkeypatch, tmp_path, capsys):
    """The call, and the census command, would otherwise end with no run as if it had passed."""
    from harness import api
    from harness.commands import cli
    from harness.errors import BadInput
    from harness.measuring import loop

    made = []
    monkeypatch.setattr(loop, "run_one", lambda req, *a, **kw: made.append(req))
    for call in (
        lambda: api.run_case("tiny-qwen3", repeats=0, gpu="cpu", results_dir=tmp_path),
        lambda: api.run_case("tiny-qwen3", repeats=-2, gpu="cpu", results_dir=tmp_path),
        lambda: api.census("tiny-qwen3", repeats=0, gpu="cpu", results_dir=tmp_path),
    ):
        with pytest.raises(BadInput, match=r"repeats must be at least 1 \(\w+ runs per decomposition\), got -?\d"):
            call()
    assert cli.main(["census", "--gpu", "cpu", "--workload", "tiny-qwen3", "--repeats", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --repeats must be at least 1 (census runs per decomposition), got 0"] and made == []


def test_the_api_finds_the_projects_workloads_and_their_data_from_another_directory(monkeypatch, tmp_path):
    """From a directory that is not the project: the default workloads folder is the project's, and a workload's
    relative data.id is read from its own project (the folder above its workloads folder), here and in the worker's
    request; a name that is not there lists the known ones."""
    import json

    from harness import api
    from harness.measuring import loop
    from harness.spec import SpecError

    sent = []
    ran = {"status": "ok", "wall_s": 1.0, "step_time_median_ms": 1.0, "train_runtime_s": 1.0}
    monkeypatch.setattr(loop, "run_one", lambda req, *a, **kw: sent.append(req.as_item()) or ran)
    monkeypatch.delenv("HARNESS_ROOT", raising=False)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert api.run_case("tiny-qwen3", "4x1", repeats=1, gpu="cpu", results_dir="out").exit_code == 0
    with pytest.raises(SpecError, match=r"no workload 'tiny-qwen4' in .*workloads; known: .*tiny-qwen3"):
        api.run_case("tiny-qwen4", repeats=1, gpu="cpu")
    with pytest.raises(SpecError, match="there is no workloads folder nowhere; pass the folder that holds x.toml"):
        api.run_case("x", repeats=1, gpu="cpu", workloads_dir="nowhere")
    project = tmp_path / "project"
    (project / "workloads").mkdir(parents=True)
    (project / "data").mkdir()
    rows = [{"messages": [{"role": "user", "content": "w1"}, {"role": "assistant", "content": "w2"}]}] * 4
    (project / "data" / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tiny = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
    (project / "workloads" / "chat.toml").write_text(
        tiny.replace('name = "tiny-qwen3"', 'name = "chat"').replace(
            'source = "synthetic"\nnum_samples = 64', 'source = "local"\nid = "data/chat.jsonl"\nnum_samples = 4'
        )
    )
    api.run_case("chat", "4x1", repeats=1, gpu="cpu", workloads_dir=project / "workloads", results_dir="out")
    assert sent[-1]["workload"]["data"]["id"] == str(project / "data" / "chat.jsonl")
