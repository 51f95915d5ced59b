"""The README is a guide: short, every term it uses defined, every link alive, and the walk-through follows it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TERMS = (
    "case",
    "run",
    "baseline",
    "regression / pass / inconclusive",
    "census",
    "A/A",
    "block",
    "pair",
    "launch",
    "MDS",
)


def test_the_readme_is_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_every_term_of_a_report_is_defined_once():
    for term in TERMS:
        assert len(re.findall(rf"\*\*{re.escape(term)}\*\*", README)) == 1, term


def test_every_linked_file_exists():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), target


def test_every_figure_links_its_evidence():
    for line in README.splitlines():
        if re.search(r"\d%", line) and "threshold" not in line:
            assert "evidence" in line or "docs/evidence" in README[README.index(line) : README.index(line) + 400], line


def test_the_walkthrough_runs_the_readmes_commands():
    walk = (ROOT / ".ci" / "walkthrough.sh").read_text()
    for cmd in (
        "pip install torch==2.13.0",
        "pytest perftests --gpu=cpu --workload tiny-qwen3 --repeats 1",
        "python -m harness doctor",
    ):
        assert cmd in README, cmd
    for cmd in (
        "pytest perftests --gpu=cpu --workload tiny-qwen3 --repeats 1",
        "python -m harness doctor",
        "--update-baselines",
    ):
        assert cmd in walk, cmd


def test_the_by_hand_baseline_command_is_the_one_the_missing_baseline_hint_gives(tiny, tmp_path):
    """Recorded without --census, a baseline leaves test_work skipping: the README says what the refusal says."""
    import pytest

    from harness.judging import baseline as bl

    with pytest.raises(bl.MissingBaseline) as err:
        bl.load(tmp_path, "l4", tiny)
    hint = re.search(r"`(pytest perftests [^`]+)`", str(err.value)).group(1)
    assert hint.replace(tiny.name, "W") in README and "--census" in hint
