"""A workload that cannot train, or a folder of workload files that cannot be told apart, is refused when it loads, with
one line naming the file: sizes of the architecture, bounds of a run's length and rank, a name's length, how deep a
file nests, and two files of one name. The other workloads of the folder still load. Nothing here trains."""

from pathlib import Path

import pytest

from harness.commands import cli
from harness.spec import MAX_DEPTH, SpecError, Workload
from harness.spec_folder import load_each, load_workload
from harness.spec_sections import MAX_RANK, MAX_STEPS

ROOT = Path(__file__).resolve().parent.parent
TINY = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()


def edited(old: str, new: str) -> str:
    assert old in TINY, old
    return TINY.replace(old, new, 1)


def refusal(path: Path, text: str) -> str:
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        Workload.load(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    return line


@pytest.mark.parametrize(
    "old, new, says",
    [
        (
            "num_attention_heads = 4",
            "num_attention_heads = 0",
            "model.config.num_attention_heads must be a positive integer, got 0",
        ),
        (
            "head_dim = 32",
            "head_dim = 0",
            "model.config.head_dim must be a positive integer, got 0",
        ),
        (
            "num_key_value_heads = 2",
            "num_key_value_heads = 3",
            "num_attention_heads = 4 is not a multiple of num_key_value_heads = 3",
        ),
        (
            "max_steps = 20",
            f"max_steps = {2**63 - 1}",
            f"train.max_steps = {2**63 - 1} is beyond its largest value, {MAX_STEPS:,}",
        ),
        ("r = 8", "r = 1000000000", f"lora.r = 1000000000 is beyond its largest value, {MAX_RANK:,}"),
        ("r = 8", "r = 1e9", "lora.r must be a positive integer, got 1000000000.0"),
    ],
)
def test_a_workload_that_cannot_train_is_refused_at_load(tmp_path, old, new, says):
    """0 attention heads trained and ended in a ZeroDivisionError; a step count of 2**63-1 and a rank of 1e9 loaded."""
    assert says in refusal(tmp_path / "x.toml", edited(old, new))


def test_the_bounds_themselves_load_and_steps_past_them_are_refused(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(edited("r = 8", f"r = {MAX_RANK}").replace("max_steps = 20", f"max_steps = {MAX_STEPS}"))
    w = Workload.load(path)
    assert (w.lora.r, w.train.max_steps) == (MAX_RANK, MAX_STEPS)
    with pytest.raises(SpecError, match=f"train.max_steps = {MAX_STEPS + 1} is beyond its largest value"):
        load_workload(ROOT / "workloads", "tiny-qwen3", MAX_STEPS + 1)


def test_two_files_of_one_name_are_both_refused_naming_both(tmp_path):
    """``shadow.toml`` declaring ``name = "tiny-qwen3"`` won over the shipped file by the order of file names."""
    (tmp_path / "tiny-qwen3.toml").write_text(TINY)
    (tmp_path / "shadow.toml").write_text(edited('description = "', 'description = "not the shipped one: '))
    (tmp_path / "other.toml").write_text(edited('name = "tiny-qwen3"', 'name = "other"'))
    loaded = load_each(tmp_path)
    assert list(loaded.workloads) == ["other"] and sorted(p.name for p in loaded.broken) == [
        "shadow.toml",
        "tiny-qwen3.toml",
    ]
    with pytest.raises(SpecError) as err:
        load_workload(tmp_path, "tiny-qwen3")
    line = str(err.value)
    assert "\n" not in line and "'tiny-qwen3' is declared by 2 files" in line, line
    assert str(tmp_path / "shadow.toml") in line and str(tmp_path / "tiny-qwen3.toml") in line


@pytest.mark.parametrize(
    "text, says",
    [
        (edited('name = "tiny-qwen3"', f'name = "{"a" * 5000}"'), "name has 5,000 characters; give at most 64"),
        (edited("[model]", f"x = {'[' * 50000}{']' * 50000}\n[model]"), "nested too deep to read"),
        (
            edited("[model]", f"x = {'[' * 20}{']' * 20}\n[model]"),
            f"nested 21 levels deep; a workload nests at most {MAX_DEPTH}",
        ),
    ],
    ids=["long-name", "deep-beyond-the-reader", "deep"],
)
def test_a_huge_name_or_deep_nesting_is_one_bad_file_and_the_others_load(tmp_path, capsys, text, says):
    """A 5,000-character name or a 50,000-deep array stopped the collection of every workload with a traceback."""
    (tmp_path / "tiny-qwen3.toml").write_text(TINY)
    (tmp_path / "bad.toml").write_text(text)
    loaded = load_each(tmp_path)
    assert list(loaded.workloads) == ["tiny-qwen3"] and says in loaded.broken[tmp_path / "bad.toml"]
    assert cli.main(["doctor", "--workloads-dir", str(tmp_path), "--baselines-dir", str(tmp_path / "b")]) == 2
    assert "bad.toml: BROKEN, not run:" in capsys.readouterr().out
