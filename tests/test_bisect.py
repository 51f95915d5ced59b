"""``python -m harness bisect``: the search plan on fake measurements (most tests), the loop on fake environments, and
end-to-end on CPU: fake releases of a small package ``lorafx`` built as wheels here (one adds a cast to every Linear
forward, which the census sees; one adds only host time, a sleep per optimizer step; one cannot be installed), and a
commit range of a small git repository made here, installed by path."""

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.bisect import plan
from harness.bisect.config import BisectConfig, parse_end
from harness.bisect.envs import EnvCache, commits, wheel_releases
from harness.bisect.plan import OK, UNINSTALLABLE, Candidate, Measured
from harness.bisect.report import markdown, summary
from harness.bisect.search import bisect
from harness.commands import cli
from harness.judging import census_diff
from harness.results.bisection import Bisection, Change, Unmeasured
from harness.results.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]

# ---- the fake package: the same wheel writer makes the test's wheels and is the git repository's build backend ----
BACKEND = '''
import base64, hashlib, os, zipfile


def write_wheel(directory, name, version, files, requires=()):
    """A pure-Python wheel of ``files`` (path -> text) with its metadata; its path."""
    info = f"{name}-{version}.dist-info"
    files = dict(files)
    metadata = f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n"
    files[f"{info}/METADATA"] = metadata + "".join(f"Requires-Dist: {r}\\n" for r in requires)
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\\n".join(record + [f"{info}/RECORD,,"]) + "\\n"
    path = os.path.join(directory, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, text in files.items():
            z.writestr(p, text)
    return path


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "lorafx", "__init__.py")) as fh:
        init = fh.read()
    files = {"lorafx/__init__.py": init, "lorafx.pth": "import lorafx\\n"}
    return os.path.basename(write_wheel(wheel_directory, "lorafx", "0.1", files))


def get_requires_for_build_wheel(config_settings=None):
    return []
'''
NS: dict = {}
exec(BACKEND, NS)
write_wheel = NS["write_wheel"]

# lorafx: from the release that sets CAST, every nn.Linear forward casts its input to float64 and back (aten ops the
# census counts); from the one that sets SLEEP_S, each optimizer step sleeps (host time only: one Python call more)
LORAFX = '''"""lorafx {version}: a fake release for the bisect tests."""
import importlib.abc, importlib.machinery, sys

VERSION = "{version}"
CAST = {cast}
SLEEP_S = {sleep}


def _patch():
    import torch

    if CAST:
        forward = torch.nn.Linear.forward

        def cast_forward(self, x):
            return forward(self, x.to(torch.float64).to(x.dtype))

        torch.nn.Linear.forward = cast_forward
    if SLEEP_S:
        import time
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        register_optimizer_step_pre_hook(lambda opt, args, kwargs: time.sleep(SLEEP_S))


class _AfterPeft(importlib.abc.MetaPathFinder):
    """Patches torch once peft is imported (the workers import it before they build the model); a find_spec alone
    (transformers asks whether peft is there) imports nothing, so the patch waits for the module's execution."""

    def find_spec(self, name, path=None, target=None):
        if name != "peft":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
                _patch()

        spec.loader.exec_module = exec_module
        return spec


if CAST or SLEEP_S:
    sys.meta_path.insert(0, _AfterPeft())
'''
CAST_FROM, SLEEP_FROM, BROKEN = "1.2", "1.5", "1.3"
RELEASES = [f"1.{i}" for i in range(8)]


def lorafx_source(version: str, cast: bool, sleep: float = 0.0) -> str:
    return LORAFX.format(version=version, cast=cast, sleep=sleep)


def lorafx_wheels(directory: Path, sleep: float = 0.05) -> Path:
    """lorafx 1.0 .. 1.7: the cast from 1.2, the sleep from 1.5; 1.3 requires a package that does not exist."""
    directory.mkdir(parents=True, exist_ok=True)
    for v in RELEASES:
        src = lorafx_source(v, v >= CAST_FROM, sleep if v >= SLEEP_FROM else 0.0)
        write_wheel(
            str(directory),
            "lorafx",
            v,
            {"lorafx/__init__.py": src, "lorafx.pth": "import lorafx\n"},
            requires=["lorafx-runtime>=1"] if v == BROKEN else (),
        )
    return directory


# ---- fakes -------------------------------------------------------------------------------------------------
def fake_census(ops: dict[str, float], python_calls: float = 1000.0) -> dict:
    return {
        "fits": True,
        "device": "cpu",
        "ops": float(sum(ops.values())),
        "ops_by_name": dict(ops),
        "python_calls": python_calls,
        "cpu_op_ms": 1.0,
        "steps": [4, 8],
    }


def measured(ops: dict[str, float]) -> dict:
    return {"census": fake_census(ops), "step_ms": 100.0, "python": "x"}


class FakeEnvs:
    """Environments without pip: the interpreter of a candidate is its label; ``broken`` labels cannot be installed."""

    def __init__(self, broken=()):
        self.base_python, self.base, self.install_s, self.built, self.broken = (
            sys.executable,
            {"dists": {}, "site": []},
            0.0,
            0,
            set(broken),
        )

    def python_for(self, cand: Candidate) -> Measured:
        if cand.label in self.broken:
            return Measured(UNINSTALLABLE, reason="ERROR: No matching distribution found for lorafx-runtime>=1")
        return Measured(OK, cand.label)


def census_of_label(effects):
    """A census_fn: the counts of a candidate from its label, ``effects(label) -> ops``."""

    def census_fn(python, folder):
        return {"status": "ok", "census": fake_census(effects(python)), "step_time_median_ms": 100.0}

    return census_fn


def empty_wheels(directory: Path, name: str, versions) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for v in versions:
        (directory / f"{name}-{v}-py3-none-any.whl").write_bytes(b"")
    return directory


# ---- the plan ----------------------------------------------------------------------------------------------
def test_release_ladder_orders_the_releases_between_and_leaves_out_prereleases():
    vs = ["1.10", "1.2", "1.9", "2.0rc1", "1.3.post1", "0.9", "1.4.dev0"]
    assert plan.release_ladder(vs, "1.2", "1.10") == ["1.2", "1.3.post1", "1.9", "1.10"]
    assert plan.release_ladder(vs, "1.10", "1.2") == ["1.10", "1.9", "1.3.post1", "1.2"]
    assert plan.release_ladder(vs, "1.9", "2.0rc1") == ["1.9", "1.10", "2.0rc1"]
    with pytest.raises(ValueError, match="not a version"):
        plan.release_ladder(["x.y"], "1.0", "2.0")


@pytest.mark.parametrize("n", [2, 3, 5, 8, 9, 17, 33])
def test_census_search_finds_one_change_exactly_in_at_most_log2_runs_inside(n):
    for first_bad in range(1, n):
        calls = []

        def measure(i, calls=calls, first_bad=first_bad):
            calls.append(i)
            return Measured(OK, int(i >= first_bad))

        found = plan.census_search(n, measure, lambda a, b: a != b)
        assert [(b.lo, b.hi) for b in found.boundaries] == [(first_bad - 1, first_bad)]
        inside = [i for i in calls if 0 < i < n - 1]
        assert len(calls) == len(set(calls)), "a candidate was measured twice"
        assert len(inside) <= (math.ceil(math.log2(n - 1)) if n > 2 else 0)


def test_census_search_finds_each_of_several_changes_reusing_what_it_measured():
    values = {i: (i >= 3, i >= 11, i >= 12) for i in range(16)}
    calls = []
    found = plan.census_search(16, lambda i: calls.append(i) or Measured(OK, values[i]), lambda a, b: a != b)
    assert [(b.lo, b.hi) for b in found.boundaries] == [(2, 3), (10, 11), (11, 12)]
    assert len(calls) == len(set(calls)) <= 2 + 3 * math.ceil(math.log2(15))


def test_census_search_with_no_change_measures_the_ends_only():
    found = plan.census_search(8, lambda i: Measured(OK, 0), lambda a, b: a != b)
    assert found.outcome == "no_change" and found.measured == [0, 7] and not found.boundaries


def test_an_uninstallable_candidate_is_skipped_for_its_neighbour():
    found = plan.census_search(
        8, lambda i: Measured(UNINSTALLABLE, reason="no") if i == 3 else Measured(OK, i >= 2), lambda a, b: a != b
    )
    assert [(b.lo, b.hi, b.exact) for b in found.boundaries] == [(1, 2, True)]
    assert found.dead == {3: "no"} and 4 in found.measured


def test_one_uninstallable_candidate_costs_at_most_one_census_run_more():
    for n in range(3, 20):
        for first_bad in range(1, n):
            for dead in set(range(1, n - 1)) - {first_bad}:
                calls = []
                found = plan.census_search(
                    n,
                    lambda i, c=calls, d=dead, f=first_bad: (
                        c.append(i) or (Measured(UNINSTALLABLE) if i == d else Measured(OK, i >= f))
                    ),
                    lambda a, b: a != b,
                )
                assert found.boundaries[0].hi == first_bad
                assert len([i for i in calls if 0 < i < n - 1 and i != dead]) <= math.ceil(math.log2(n - 1)) + 1


def test_the_answer_is_narrowed_around_uninstallable_candidates():
    found = plan.census_search(
        8, lambda i: Measured(UNINSTALLABLE, reason="bad") if i in (3, 4) else Measured(OK, i >= 4), lambda a, b: a != b
    )
    b = found.boundaries[0]
    assert (b.lo, b.hi, b.skipped, b.exact) == (2, 5, (3, 4), False)


def test_an_end_that_cannot_be_measured_ends_the_search():
    found = plan.census_search(
        5, lambda i: Measured(UNINSTALLABLE, reason="x") if i == 4 else Measured(OK, 0), lambda a, b: a != b
    )
    assert found.outcome == "ends_failed" and found.dead == {4: "x"}


def outcomes(first_bad, inconclusive=()):
    return lambda i: Measured(OK, "inconclusive" if i in inconclusive else "regression" if i >= first_bad else "pass")


def test_timing_search_finds_the_first_regression_by_binary_search():
    for first_bad in range(1, 9):
        found = plan.timing_search(9, outcomes(first_bad))
        assert found.outcome == "changed" and (found.boundary.lo, found.boundary.hi) == (first_bad - 1, first_bad)
        assert len(found.steps) <= 1 + math.ceil(math.log2(8))


def test_an_inconclusive_step_is_reported_not_guessed():
    found = plan.timing_search(9, outcomes(6, inconclusive={4}))
    assert found.outcome == "inconclusive" and found.inconclusive_at == 4
    assert (found.boundary.lo, found.boundary.hi) == (0, 8), "the interval left when the step decided nothing"
    assert plan.timing_search(9, outcomes(9)).outcome == "no_change"
    assert plan.timing_search(9, outcomes(6, inconclusive={8})).outcome == "inconclusive"


def test_each_count_that_moved_is_named_and_attributed():
    base = fake_census({"aten::mm": 10})
    mid = fake_census({"aten::mm": 10, "aten::_to_copy": 4})
    end = dict(fake_census({"aten::mm": 12, "aten::_to_copy": 4}), attention_backend="flash")
    keys = plan.moved(census_diff.diff(base, end))
    assert keys == ["aten ops", "aten op aten::_to_copy", "aten op aten::mm", "attention backend"]
    at = [plan.moved(census_diff.diff(base, mid)), plan.moved(census_diff.diff(mid, end))]
    assert plan.attribute(keys, at) == {
        "aten ops": [0, 1],
        "aten op aten::_to_copy": [0],
        "aten op aten::mm": [1],
        "attention backend": [1],
    }


def test_an_end_is_an_interpreter_releases_a_wheel_or_a_commit(tmp_path):
    assert parse_end(sys.executable, "--good", None).kind == "python"
    assert parse_end("transformers==5.17.0, peft==0.17", "--good", None).pins == (
        ("transformers", "5.17.0"),
        ("peft", "0.17"),
    )
    wheel = write_wheel(str(tmp_path), "lorafx", "1.0", {"lorafx/__init__.py": ""})
    assert parse_end(wheel, "--good", None).pins == (("lorafx", "1.0"),)
    assert parse_end("abc123", "--good", "repo").kind == "commit"
    with pytest.raises(ValueError, match="name==version"):
        parse_end("transformers>=5", "--good", None)


# ---- the loop, on fake environments and measurements ---------------------------------------------------------
def config(tmp_path, **kw) -> BisectConfig:
    return BisectConfig(
        **{
            "workload": "tiny-qwen3",
            "decomposition": "4x1",
            "gpu": "cpu",
            "workloads_dir": str(ROOT / "workloads"),
            "results_dir": str(tmp_path / "results"),
            **kw,
        }
    )


def test_several_packages_each_swapped_alone_then_the_one_that_moved_bisected(tmp_path):
    wheels = empty_wheels(tmp_path / "w", "a", ["1.0", "1.1", "1.2"])
    empty_wheels(wheels, "b", [f"2.{i}" for i in range(6)])

    def effects(label):  # b from 2.3 on adds two casts
        b = label.split("b ")[1]
        return {"aten::mm": 10, **({"aten::_to_copy": 2} if b >= "2.3" else {})}

    cfg = config(tmp_path, good="a==1.0 b==2.0", bad="a==1.2 b==2.5", wheels=str(wheels))
    res = bisect(
        cfg,
        envs=FakeEnvs(),
        census_fn=census_of_label(effects),
        predict=lambda lo, hi: {"delta_pct": 1.5, "lo": 1.0, "hi": 2.0},
        out=lambda s: None,
    )
    assert res.outcome == "changed" and res.search == "census"
    assert [(p.package, p.alone) for p in res.packages] == [("a", "unchanged"), ("b", "changed")]
    (c,) = res.changes
    assert (c.last_good, c.first_bad, c.exact) == ("a 1.0, b 2.2", "a 1.0, b 2.3", True)
    assert res.attribution == {
        "aten ops": ("a 1.0, b 2.2 -> a 1.0, b 2.3",),
        "aten op aten::_to_copy": ("a 1.0, b 2.2 -> a 1.0, b 2.3",),
    }
    assert c.predicted_pct == 1.5 and "+1.5%" in markdown(res)


def test_a_range_with_no_change_says_so(tmp_path):
    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels), census_only=True)
    res = bisect(cfg, envs=FakeEnvs(), census_fn=census_of_label(lambda label: {"aten::mm": 10}), out=lambda s: None)
    assert res.outcome == "no_change" and not res.changes and res.spent.census_runs == 2
    assert "no count or peak memory changed between lorafx 1.0 and lorafx 1.7" in "\n".join(summary(res))


def test_a_release_that_moved_peak_memory_alone_is_named_with_its_before_and_after(tmp_path):
    """Every count equal; the peak reserved memory drops 20% at 1.4 and drifts 1% at 1.6 (within the memory tolerance):
    the census search names 1.3 -> 1.4 and the memory, nothing else. The peaks come in the run record, beside a census
    that has none, as censuses recorded before they kept them."""
    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    gib = 2**30

    def census_fn(python, folder):
        v = python.split()[-1]
        peak = int(5.75 * gib) if v < "1.4" else int(4.60 * gib) if v < "1.6" else int(4.60 * gib * 1.01)
        return {
            "status": "ok",
            "census": dict(fake_census({"aten::mm": 10}), device="cuda"),
            "step_time_median_ms": 100.0,
            "peak_reserved_bytes": peak,
            "peak_allocated_bytes": 3 * gib,
        }

    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels), gpu="h200")
    res = bisect(
        cfg,
        envs=FakeEnvs(),
        census_fn=census_fn,
        compare_fn=lambda *a: pytest.fail("no timing search"),
        predict=None,
        out=lambda s: None,
    )
    assert res.outcome == "changed" and res.search == "census"
    (c,) = res.changes
    line = "peak reserved memory: 5.75 GiB -> 4.60 GiB (-20%)"
    assert (c.last_good, c.first_bad, c.exact, c.counts) == (
        "lorafx 1.3",
        "lorafx 1.4",
        True,
        ("peak reserved memory",),
    )
    assert c.memory == (line,) and c.diff == (line,)
    assert res.attribution == {"peak reserved memory": ("lorafx 1.3 -> lorafx 1.4",)}
    assert f"census change at lorafx 1.3 -> lorafx 1.4: {line}" in "\n".join(summary(res))
    assert f"  - {line}" in markdown(res) and "counts attributed here: peak reserved memory" in markdown(res)


def test_where_the_census_is_equal_each_step_is_an_interleaved_comparison_kept_as_it_came(tmp_path):
    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    seen = []

    def compare_fn(python_a, python_b, folder):
        seen.append(python_b)
        v = python_b.split()[-1]
        outcome = "inconclusive" if v == "1.3" else "regression" if v >= "1.5" else "pass"
        return Verdict(outcome, f"x{outcome}")

    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels))
    res = bisect(
        cfg,
        envs=FakeEnvs(broken={"lorafx 1.4"}),
        census_fn=census_of_label(lambda label: {"aten::mm": 10}),
        compare_fn=compare_fn,
        out=lambda s: None,
    )
    assert res.search == "timing" and seen[0] == "lorafx 1.7", "bad against good first"
    assert res.outcome == "inconclusive" and res.inconclusive[0].at == "lorafx 1.3"
    cfg = config(tmp_path, good="lorafx==1.3", bad="lorafx==1.7", wheels=str(wheels))
    res = bisect(
        cfg,
        envs=FakeEnvs(broken={"lorafx 1.4"}),
        census_fn=census_of_label(lambda label: {"aten::mm": 10}),
        compare_fn=compare_fn,
        out=lambda s: None,
    )
    (c,) = res.changes
    assert (c.kind, c.last_good, c.first_bad, c.exact) == ("timing", "lorafx 1.3", "lorafx 1.5", False)
    assert [s.label for s in c.skipped] == ["lorafx 1.4"] and [u.label for u in res.uninstallable] == ["lorafx 1.4"]
    assert "(not exact): slower, the census unchanged: xregression" in "\n".join(summary(res))


def test_a_bisection_is_written_from_its_type_and_read_back_into_it(tmp_path):
    """Each timing step keeps its comparison's verdict; report.json, read back, is the same bisection (its changes
    ranked) and writes the same file; a file of the first format (no version) loads too."""
    from harness.bisect.report import write

    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)

    def compare_fn(python_a, python_b, folder):
        outcome = "regression" if python_b.split()[-1] >= "1.5" else "pass"
        return Verdict(outcome, f"x{outcome}")

    cfg = config(tmp_path, good="lorafx==1.3", bad="lorafx==1.7", wheels=str(wheels))
    res = bisect(
        cfg,
        envs=FakeEnvs(broken={"lorafx 1.4"}),
        census_fn=census_of_label(lambda label: {"aten::mm": 10}),
        compare_fn=compare_fn,
        out=lambda s: None,
    )
    (c,) = res.changes
    assert [s.message for s in c.steps] == ["xregression"] * len(c.steps) and c.boundary == "lorafx 1.3 -> lorafx 1.5"
    assert all(s.verdict == Verdict(s.outcome, f"x{s.outcome}") for s in res.steps if s.kind == "interleave")
    assert res.census is not None and not res.census.changed and res.spent.interleaved == len(c.steps)
    write(res, cfg.results_dir, out=lambda s: None)
    written = json.loads((Path(cfg.results_dir) / "report.json").read_text())
    back = Bisection.read(cfg.results_dir)
    assert back == res and back.to_json() == written and list(back.to_json()) == list(written)
    old = {k: v for k, v in written.items() if k != "format"}
    assert Bisection.from_json(old) == res


def test_an_end_that_cannot_be_installed_is_said_and_reported(tmp_path):
    from harness.bisect.report import write

    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels))
    res = bisect(
        cfg,
        envs=FakeEnvs(broken={"lorafx 1.7"}),
        census_fn=census_of_label(lambda label: {"aten::mm": 10}),
        out=lambda s: None,
    )
    assert res.outcome == "ends_failed" and "bad (lorafx 1.7)" in res.notes[0]
    assert res.uninstallable == (
        Unmeasured("lorafx 1.7", "ERROR: No matching distribution found for lorafx-runtime>=1"),
    )
    lines = []
    write(res, cfg.results_dir, out=lines.append)
    assert "could not measure an end" in lines[0] and (Path(cfg.results_dir) / "report.md").is_file()


def test_bad_ends_are_refused_in_one_line(tmp_path, capsys):
    argv = [
        "bisect",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--results-dir",
        str(tmp_path),
    ]
    assert cli.main(argv + ["--good", sys.executable, "--bad", "lorafx==1.0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--good is an interpreter but --bad is releases" in err
    assert cli.main(argv + ["--good", "lorafx==1.0", "--bad", "peft==1.0"]) == 2
    assert "name the same packages" in capsys.readouterr().err


# ---- real environments -----------------------------------------------------------------------------------------
def lorafx_repo(path: Path) -> list[str]:
    """A git repository of lorafx, built by the in-tree backend: 4 commits, the cast from the third on."""
    path.mkdir()
    (path / "lorafx").mkdir()
    (path / "backend.py").write_text(BACKEND)
    (path / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
        '[project]\nname = "lorafx"\nversion = "0.1"\n'
    )
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    shas = []
    for i, cast in enumerate([False, False, True, True]):
        (path / "lorafx" / "__init__.py").write_text(lorafx_source(f"0.1+c{i}", cast))
        (path / "NOTES").write_text(f"commit {i}\n")
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", f"commit {i}"], check=True)
        shas.append(
            subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        )
    return shas


def census_from_env(python, folder):
    """A census_fn that asks the environment which lorafx it has: the cast shows as two more aten ops."""
    got = subprocess.run(
        [python, "-c", "import lorafx; print(lorafx.CAST, lorafx.VERSION)"], capture_output=True, text=True, check=True
    ).stdout.split()
    return {
        "status": "ok",
        "census": fake_census({"aten::mm": 10, **({"aten::_to_copy": 2} if got[0] == "True" else {})}),
        "step_time_median_ms": 1.0,
    }


def test_a_commit_range_is_bisected_over_a_checkout_installed_by_path(tmp_path):
    shas = lorafx_repo(tmp_path / "repo")
    assert commits(tmp_path / "repo", shas[0], shas[-1]) == shas
    cfg = config(
        tmp_path,
        checkout=str(tmp_path / "repo"),
        good=shas[0],
        bad=shas[-1],
        no_index=True,
        env_cache=str(tmp_path / "envs"),
    )
    res = bisect(cfg, census_fn=census_from_env, out=lambda s: None)
    assert res.mode == "commits" and res.outcome == "changed"
    (c,) = res.changes
    assert (c.last_good, c.first_bad, c.exact) == (f"lorafx@{shas[1][:10]}", f"lorafx@{shas[2][:10]}", True)
    assert res.spent.environments_built == 4


def test_an_environment_is_built_once_and_a_release_that_cannot_be_installed_is_recorded(tmp_path):
    wheels = lorafx_wheels(tmp_path / "wheels")
    assert wheel_releases(wheels, "LoraFX") == RELEASES
    envs = EnvCache(tmp_path / "envs", sys.executable, wheels=str(wheels), out=lambda s: None)
    got = envs.python_for(Candidate((plan.Install("lorafx", "1.2"),)))
    assert got.status == OK
    assert (
        subprocess.run(
            [got.value, "-c", "import lorafx, torch; print(lorafx.VERSION)"], capture_output=True, text=True
        ).stdout.strip()
        == "1.2"
    )
    again = EnvCache(tmp_path / "envs", sys.executable, wheels=str(wheels), out=lambda s: None)
    assert again.python_for(Candidate((plan.Install("lorafx", "1.2"),))).value == got.value and again.built == 0
    broken = envs.python_for(Candidate((plan.Install("lorafx", BROKEN),)))
    assert broken.status == UNINSTALLABLE and "lorafx-runtime" in broken.reason
    write_wheel(str(wheels), "iniconfig", "99.0", {"iniconfig/__init__.py": ""})  # the base has another iniconfig
    write_wheel(str(wheels), "lorafx", "1.8", {"lorafx/__init__.py": ""}, requires=["iniconfig>=99"])
    needs = Candidate((plan.Install("lorafx", "1.8"),))
    assert "iniconfig" in envs.python_for(needs).reason, "not installable beside the base's iniconfig"
    moved = EnvCache(
        tmp_path / "envs", sys.executable, wheels=str(wheels), move_deps=True, out=lambda s: None
    ).python_for(needs)
    assert moved.status == OK


# ---- end to end on CPU: real census runs ----------------------------------------------------------------------------
def run_bisect(tmp_path, wheels, *extra) -> dict:
    argv = [
        "bisect",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--steps",
        "12",
        "--wheels",
        str(wheels),
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        str(tmp_path / "results"),
        "--env-cache",
        str(tmp_path / "envs"),
        *extra,
    ]
    assert cli.main(argv) == 0
    return Bisection.read(tmp_path / "results")  # the report as the bisect wrote it, read back into its type


@pytest.mark.slow
def test_the_census_names_the_release_that_added_work_and_a_range_without_says_so(tmp_path):
    wheels = lorafx_wheels(tmp_path / "wheels")
    res = run_bisect(tmp_path, wheels, "--good", "lorafx==1.0", "--bad", "lorafx==1.7", "--census-only")
    assert res.outcome == "changed" and res.search == "census"
    (c,) = res.changes
    assert (c.last_good, c.first_bad, c.exact) == ("lorafx 1.1", "lorafx 1.2", True)
    assert "aten op aten::_to_copy" in c.counts and any("aten::_to_copy" in ln for ln in c.diff)
    assert [u.label for u in res.uninstallable] == ["lorafx 1.3"] and "lorafx-runtime" in res.uninstallable[0].reason
    n = len(RELEASES)
    assert c.measured_inside <= math.ceil(math.log2(n)) + 1
    assert res.spent.census_runs <= math.ceil(math.log2(n)) + 3, "the two ends and at most ceil(log2 N) + 1 inside"
    # the sleep from 1.5 on is host time only: between 1.4 and 1.7 no count changed (both censuses measured already)
    res = run_bisect(tmp_path, wheels, "--good", "lorafx==1.4", "--bad", "lorafx==1.7", "--census-only")
    assert res.outcome == "no_change" and res.spent.census_runs == 0 and res.spent.census_reused == 2


def test_two_interpreters_are_bisected_by_the_package_that_differs(tmp_path):
    wheels = lorafx_wheels(tmp_path / "wheels")
    ends = EnvCache(tmp_path / "ends", sys.executable, wheels=str(wheels), out=lambda s: None)
    good, bad = (ends.python_for(Candidate((plan.Install("lorafx", v),))).value for v in ("1.1", "1.4"))
    cfg = config(tmp_path, good=good, bad=bad, wheels=str(wheels), env_cache=str(tmp_path / "envs"))
    res = bisect(cfg, census_fn=census_from_env, out=lambda s: None)
    assert res.mode == "interpreters" and [(p.package, p.good, p.bad) for p in res.packages] == [
        ("lorafx", "1.1", "1.4")
    ]
    (c,) = res.changes
    assert (c.last_good, c.first_bad, c.exact) == ("lorafx 1.1", "lorafx 1.2", True)
    assert res.packages[0].alone == "changed" and res.spent.environments_built == 2, (
        "lorafx 1.4 alone on good's, and 1.2"
    )


# ---- long: real census runs over commits, and interleaved steps for the release that adds only host time -------------
@pytest.mark.long
def test_a_commit_range_is_bisected_by_real_census_runs(tmp_path):
    shas = lorafx_repo(tmp_path / "repo")
    argv = [
        "bisect",
        "--gpu",
        "cpu",
        "--workload",
        "tiny-qwen3",
        "--decomposition",
        "4x1",
        "--steps",
        "12",
        "--checkout",
        str(tmp_path / "repo"),
        "--good",
        shas[0],
        "--bad",
        shas[-1],
        "--no-index",
        "--census-only",
        "--workloads-dir",
        str(ROOT / "workloads"),
        "--results-dir",
        str(tmp_path / "results"),
        "--env-cache",
        str(tmp_path / "envs"),
    ]
    assert cli.main(argv) == 0
    res = Bisection.read(tmp_path / "results")
    (c,) = res.changes
    assert (c.first_bad, c.exact) == (f"lorafx@{shas[2][:10]}", True) and "aten op aten::_to_copy" in c.counts


@pytest.mark.long
def test_the_release_that_adds_only_host_time_is_named_by_interleaved_steps(tmp_path):
    wheels = lorafx_wheels(tmp_path / "wheels", sleep=0.05)
    res = run_bisect(
        tmp_path,
        wheels,
        "--good",
        "lorafx==1.4",
        "--bad",
        "lorafx==1.7",
        "--step-budget-minutes",
        "1",
        "--set",
        "pairs=60",
    )
    assert res.search == "timing" and res.outcome == "changed"
    (c,) = res.changes
    assert (c.kind, c.last_good, c.first_bad, c.exact) == ("timing", "lorafx 1.4", "lorafx 1.5", True)
    assert [s.outcome for s in c.steps] == ["regression", "regression"] and res.spent.interleaved == 2


def test_a_budget_stops_the_search_and_the_answer_is_the_range_left(tmp_path, monkeypatch):
    import itertools

    from harness.bisect import steps as steps_mod

    clock = itertools.count(0.0, 30.0)  # every census run takes 30 s on this clock (two readings)
    monkeypatch.setattr(steps_mod.time, "monotonic", lambda: next(clock))
    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels), budget_minutes=1.6)
    res = bisect(
        cfg,
        envs=FakeEnvs(),
        census_fn=census_of_label(
            lambda label: {"aten::mm": 10, **({"aten::_to_copy": 2} if label >= "lorafx 1.2" else {})}
        ),
        out=lambda s: None,
    )
    assert res.spent.census_runs == 3  # the two ends and one step: a fourth would end past 96 s
    (c,) = res.changes
    assert not c.exact and any("budget spent" in s.reason for s in c.skipped)
    assert any(s.outcome.startswith("skipped: budget spent") for s in res.steps)


def test_a_search_its_budget_cut_short_resumes_from_its_kept_censuses(tmp_path, monkeypatch):
    """The nightly keeps the bisect's census folders across nights with the same versions: the next night measures only
    what the last one did not, and finishes the search."""
    import itertools

    from harness.bisect import steps as steps_mod
    from harness.spec_folder import load_workload

    clock = itertools.count(0.0, 30.0)
    monkeypatch.setattr(steps_mod.time, "monotonic", lambda: next(clock))
    w = load_workload(ROOT / "workloads", "tiny-qwen3")

    def census_fn(python, folder):  # a census run as the harness writes it: a runs.jsonl in its folder
        rec = {
            "status": "ok",
            "workload_hash": w.hash,
            "decomposition_id": "4x1",
            "gpu": "cpu",
            "step_time_median_ms": 100.0,
            "census": fake_census({"aten::mm": 10, **({"aten::_to_copy": 2} if python >= "lorafx 1.2" else {})}),
        }
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "runs.jsonl").write_text(json.dumps(rec) + "\n")
        return rec

    wheels = empty_wheels(tmp_path / "w", "lorafx", RELEASES)
    cfg = config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", wheels=str(wheels), budget_minutes=1.6)
    first = bisect(cfg, envs=FakeEnvs(), census_fn=census_fn, out=lambda s: None)
    assert first.spent.census_runs == 3 and not first.changes[0].exact
    second = bisect(cfg, envs=FakeEnvs(), census_fn=census_fn, out=lambda s: None)
    (c,) = second.changes
    assert (c.last_good, c.first_bad, c.exact) == ("lorafx 1.1", "lorafx 1.2", True)
    assert second.spent.census_reused == 3 and second.spent.census_runs == 2  # only what the first did not measure


def test_packages_limits_an_interpreter_bisect_to_the_libraries_asked_for(tmp_path, monkeypatch):
    from harness.bisect import axes

    envs = FakeEnvs()
    envs.base = {"dists": {"lorafx": "1.0", "httpx": "1.0"}, "site": []}
    monkeypatch.setattr(axes.ev, "describe", lambda python: {"dists": {"lorafx": "1.7", "httpx": "2.0"}})
    monkeypatch.setattr(axes, "releases_of", lambda cfg, envs, package: RELEASES)
    good, bad = tmp_path / "good", tmp_path / "bad"
    for p in (good, bad):
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    cfg = config(tmp_path, good=str(good), bad=str(bad), packages=("lorafx",), census_only=True)
    res = bisect(cfg, envs=envs, census_fn=census_of_label(lambda label: {"aten::mm": 10}), out=lambda s: None)
    assert [p.package for p in res.packages] == ["lorafx"] and res.left_out == ("httpx 1.0 -> 2.0",)
    assert any("(not among --packages): httpx 1.0 -> 2.0" in n for n in res.notes)
    with pytest.raises(ValueError, match="--packages"):
        config(tmp_path, good="lorafx==1.0", bad="lorafx==1.7", packages=("lorafx",))


def test_a_change_names_its_counts_once_not_each_kernel_again():
    from harness.bisect.report import counts_text

    counts = [
        "aten ops",
        "kernel launches",
        "aten op aten::reshape",
        "aten op aten::view",
        "kernel void at::native::" + "x" * 300,
        "Python calls",
    ]
    assert counts_text(counts) == "aten ops, kernel launches, Python calls, 2 aten ops by name, 1 kernel by name"
    assert counts_text(["Python calls"]) == "Python calls"


def test_a_release_boundary_says_how_to_measure_it_alone():
    from harness.bisect.report import recheck_command

    res = Bisection(
        "qwen3-1.7b-lora-4x1", "h100", "interpreters", ".tox/pinned/bin/python", "bad/python", "changed", move_deps=True
    )
    c = Change("transformers", "transformers 5.24.0", "transformers 5.25.0", True, 3, "census")
    assert recheck_command(res, c) == (
        "python -m harness bisect --workload qwen3-1.7b-lora --decomposition 4x1 --base-python .tox/pinned/bin/python "
        "--move-deps --good transformers==5.24.0 --bad transformers==5.25.0 --census-only"
    )
    releases = replace(res, case="w-2x2", mode="releases", move_deps=False)
    assert recheck_command(releases, replace(c, kind="timing")).endswith(
        "--good transformers==5.24.0 --bad transformers==5.25.0"
    )
    assert recheck_command(res, replace(c, last_good="peft@0123456789")) is None  # a commit: its checkout is needed
