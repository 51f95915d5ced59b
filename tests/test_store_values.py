"""A ``--store`` value never reaches git as one of its options: a value starting with ``-`` is refused in one line, and
the store's own git commands put ``--`` before the URL."""

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.commands import cli
from harness.store.git import GitStore, GitStoreError

NIGHT = Path(__file__).resolve().parent / "data" / "history" / "h200" / "lease5-round"


@pytest.mark.parametrize("value", ["-f.git", "--mirror=fetch.git"])
def test_a_store_value_starting_with_a_dash_is_refused_in_one_line(tmp_path, monkeypatch, capsys, value):
    """Both ended in .git, so they were taken for git URLs and reached ``git remote add`` as its options."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shutil.copytree(NIGHT, tmp_path / "night")
    for args in (
        ["store", "add", "night", f"--store={value}"],
        ["store", "alerts", f"--store={value}"],
        ["history", f"--store={value}"],
    ):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--store {value}: starts with '-'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["night"]  # no cache clone, no folder made


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command line")
def test_the_git_store_passes_its_url_after_a_double_dash(tmp_path):
    store = GitStore("-x.git", cache=tmp_path / "clone")
    with pytest.raises(GitStoreError):  # no such repository: the URL was taken as a URL, not as an option
        store.sync()
    url = subprocess.run(
        ["git", "-C", str(tmp_path / "clone"), "remote", "get-url", "origin"], capture_output=True, text=True
    )
    assert url.stdout.strip() == "-x.git"
