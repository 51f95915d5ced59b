"""Shared fixtures of the self-tests: the tiny workload, fake run records, a fake runner, and a project layout for
pytester."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.files import append_jsonl
from harness.measuring import loop
from harness.spec import Workload
from harness.suite import session as sess

ROOT = Path(__file__).resolve().parent.parent

# The pytest sessions a self-test starts are no xdist workers, even when the self-tests are spread over CPUs (-n): a
# session that believed it was one would turn pytest-benchmark off and write no benchmark JSON.
for _name in [k for k in os.environ if k.startswith("PYTEST_XDIST_")]:
    os.environ.pop(_name)


# Spread over CPUs (-n), the self-tests go out by file (a module's fixtures, such as the census runs and the built
# wheel, are then made once), the files that take longest first: each worker takes the next file as it frees up, and
# the workers end together instead of one of them running a long file alone at the end. The files are listed by their
# time on a 2-core machine (pytest --durations); the others follow in collection order. In each file its slow tests go
# first: a worker takes its next file when two tests of the current one are left, and those should be short ones.
LONGEST_FIRST = (
    "tests/test_interleave.py",
    "tests/test_api.py",  # the API page's example
    "tests/test_bisect.py",
    "tests/test_stats_simulation.py",
    "tests/test_census.py",
    "tests/test_install.py",
    "tests/test_dashboard.py",
    "tests/test_simulate_nights.py",
    "tests/test_perf_cpu.py",
    "tests/test_loaders.py",
    "tests/test_pr_check.py",
    "tests/test_user_data.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(  # stable: the collection order kept otherwise
        key=lambda item: (rank.get(item.nodeid.split("::", 1)[0], len(rank)), item.get_closest_marker("slow") is None)
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """-n's default distribution (--dist load) by file, in the order above, instead of in chunks of consecutive
    tests, which would give one worker the first quarter of the tests, the longest files among them."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False  # the order above, not the number of tests in a file
    return LoadFileScheduling(config, log)


@pytest.fixture
def perf_project(pytester, monkeypatch):
    """A pytester directory laid out like the repo: conftest, perftests/, the tiny workload, empty baselines/."""
    shutil.copy(ROOT / "conftest.py", pytester.path / "conftest.py")
    shutil.copytree(ROOT / "perftests", pytester.path / "perftests", ignore=shutil.ignore_patterns("__pycache__"))
    (pytester.path / "workloads").mkdir()
    shutil.copy(ROOT / "workloads" / "tiny-qwen3.toml", pytester.path / "workloads")
    (pytester.path / "baselines").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("HARNESS_FAULTS", raising=False)
    return pytester


@pytest.fixture
def cut_splits(perf_project):
    """``cut_splits(splits)``: perf_project with tiny-qwen3 cut to ``splits`` (same hash: the split list is not
    hashed)."""

    def cut(splits: tuple[str, ...]):
        path = perf_project.path / "workloads" / "tiny-qwen3.toml"
        text = path.read_text()
        assert 'decompositions = ["1x4", "2x2", "4x1"]' in text
        path.write_text(
            text.replace(
                'decompositions = ["1x4", "2x2", "4x1"]',
                "decompositions = [" + ", ".join(f'"{s}"' for s in splits) + "]",
            )
        )
        return perf_project

    return cut


@pytest.fixture
def two_splits(cut_splits):
    """perf_project with tiny-qwen3 cut to the splits 1x4 and 4x1, for the end-to-end tests that need two splits for the
    ordering and equivalence checks but not three: a third of the runs saved."""
    return cut_splits(("1x4", "4x1"))


@pytest.fixture
def tiny():
    return Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")


def _fake_runs(w, medians, status="ok", gpu="cpu", **extra):
    """Records of one run per median for every decomposition of ``w``, each with flat step times."""
    out = []
    for d in w.decompositions:
        for i, m in enumerate(medians):
            out.append(
                {
                    "run_id": f"{d.id}-{i}",
                    "session_id": "s",
                    "workload": w.name,
                    "workload_hash": w.hash,
                    "decomposition_id": d.id,
                    "decomposition": d.as_dict(),
                    "repeat": i + 1,
                    "gpu": gpu,
                    "status": status,
                    "step_time_median_ms": m,
                    "train_runtime_s": m * w.train.max_steps / 1000,
                    "step_times_ms": [m] * w.train.max_steps,
                    "warmup_steps": w.measure.warmup_steps,
                    "peak_reserved_bytes": None,
                    "peak_allocated_bytes": None,
                    "tokens_per_s": 1.0,
                    "losses": [1.0] * w.train.max_steps,
                    "env": {"hostname": "h", "versions": {"torch": "x"}},
                    **extra,
                }
            )
    return out


@pytest.fixture
def fake_runs():
    return _fake_runs


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake_runner(
    times: dict[str, list[float]], calls: list, walls: dict[str, float] | None = None, clock: FakeClock | None = None
):
    """run_one stand-in: the n-th run of a decomposition gets times[d][n % len]; it appends to runs.jsonl like the real
    one."""

    def run_one(req, results_dir, session_id, timeout_s, gpu):
        d = req.decomposition.id
        k = sum(1 for c in calls if c[0] == d)
        calls.append((d, req.repeat))
        m = times[d][k % len(times[d])]
        w = req.workload
        wall = (walls or {}).get(d, 1.0)
        if clock is not None:
            clock.now += wall
        rec = {
            "run_id": f"{session_id}-{d}-{req.repeat}-{k}",
            "session_id": session_id,
            "workload": w.name,
            "workload_hash": w.hash,
            "decomposition_id": d,
            "repeat": req.repeat,
            "gpu": gpu,
            "status": "ok",
            "step_time_median_ms": m,
            "train_runtime_s": m / 100,
            "step_times_ms": [m] * w.train.max_steps,
            "warmup_steps": w.measure.warmup_steps,
            "losses": [1.0] * w.train.max_steps,
            "peak_reserved_bytes": None,
            "peak_allocated_bytes": None,
            "tokens_per_s": 1.0,
            "wall_s": wall,
            "env": {},
            "inject_slowdown": req.inject_slowdown,
            "inject_work": req.inject_work,
            "phases_enabled": req.phases,
            "profile_steps": req.profile_steps,
            # a census run counts the work of its steps (a few counts here); a timed run has none
            "census": {"fits": True, "device": "cpu", "ops": 100.0, "kernels": 0.0} if req.census else None,
        }
        Path(results_dir).mkdir(parents=True, exist_ok=True)
        append_jsonl(Path(results_dir) / "runs.jsonl", rec)
        return rec

    return run_one


@pytest.fixture
def fake_runner(monkeypatch):
    """``fake_runner(times, calls, walls=None, clock=None)`` puts a fake ``run_one`` under the run loop."""

    def install(times, calls, walls=None, clock=None):
        monkeypatch.setattr(loop, "run_one", _fake_runner(times, calls, walls, clock))

    return install


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def make(tmp_path, tiny, fake_runner):
    """``make(times, calls, **options)``: a PerfSession of the tiny workload on the fake runner."""

    def build(times, calls, **opts):
        fake_runner(times, calls)
        o = sess.Options(gpu="cpu", results_dir=tmp_path / "out", baselines_dir=tmp_path / "baselines", **opts)
        return sess.PerfSession(
            o, {tiny.name: tiny}, [(tiny.name, d.id) for d in tiny.decompositions], progress=lambda m: None
        )

    return build


# ---- the regression-issue script against a fake gh CLI ---------------------------------------------------------------
ISSUE_SCRIPT = ROOT / ".github" / "scripts" / "regression-issues.sh"
FAKE_GH = r"""#!/usr/bin/env bash
# records its arguments, one JSON list a line; `issue list` prints $FAKE_GH_ISSUES
printf '%s\0' "$@" |
    python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().split("\0")[:-1]))' >> "$FAKE_GH_LOG"
if [[ "$1 $2" == "issue list" ]]; then cat "$FAKE_GH_ISSUES"; fi
"""


@pytest.fixture
def fake_gh(tmp_path):
    """Runs the nightly's regression-issue script against a fake gh CLI: ``run(report, open_issues, **env)`` returns the
    gh calls it made, one argument list each."""
    if shutil.which("bash") is None or shutil.which("jq") is None:
        pytest.skip("the issue script needs bash and jq")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gh = bindir / "gh"
    gh.write_text(FAKE_GH)
    gh.chmod(0o755)
    log, issues = tmp_path / "gh.log", tmp_path / "issues.json"
    log.write_text("")
    issues.write_text("[]")
    env = dict(
        os.environ,
        PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
        FAKE_GH_LOG=str(log),
        FAKE_GH_ISSUES=str(issues),
        GH_TOKEN="x",
        PERF_ENV="latest",
        RUN_URL="https://example.invalid/run/1",
    )

    def run(report: dict | None, open_issues: list[dict] = (), **extra_env: str):
        issues.write_text(json.dumps(list(open_issues)))
        path = tmp_path / "report.json"
        if report is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(json.dumps(report))
        proc = subprocess.run(
            ["bash", str(ISSUE_SCRIPT)],
            env=dict(env, REPORT=str(path), **extra_env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        log.write_text("")
        return calls

    return run


@pytest.fixture
def no_training(monkeypatch):
    """Any run started fails the test: a refused command or call trains nothing (fresh runs and advise's probes)."""
    from harness.workflows import advise_probe

    def trained(*args, **kwargs):
        pytest.fail("a run started where the input or the results dir should have refused it first")

    monkeypatch.setattr(loop, "run_one", trained)
    monkeypatch.setattr(advise_probe, "run_one", trained)
