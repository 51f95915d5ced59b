"""pytest hooks only: options, GPU check, parametrisation, the session fixture and the terminal summary.

Everything that measures or judges lives in :mod:`harness.session` and below.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

import pytest

from .env import detect_gpu
from .session import Options, PerfSession
from .spec import SpecError, Workload, load_workloads

_GPU = pytest.StashKey[str]()
_WORKLOADS = pytest.StashKey[dict]()
_SESSION = pytest.StashKey[PerfSession]()
_RECORDED = pytest.StashKey[list]()
_OPTIONS = pytest.StashKey[Options]()


def pytest_addoption(parser):
    g = parser.getgroup("perf", "LoRA fine-tuning performance suite (harness)")
    g.addoption("--gpu", default="auto", help="short GPU name (t4, l4, a10, a100, h100, h200, ...), 'auto' (detect, the default) or 'cpu'")
    g.addoption("--repeats", type=int, default=5, help="fresh-process runs per decomposition (default 5)")
    g.addoption("--max-repeats", type=int, default=None, help="run more repeats of inconclusive cases, up to this many (alpha is split over the looks)")
    g.addoption("--steps", type=int, default=None, help="override max_steps for quick runs (changes the workload hash)")
    g.addoption("--results-dir", default="perf-results", help="where runs.jsonl, logs and reports go (default perf-results)")
    g.addoption("--baselines-dir", default=None, help="baseline store (default: <rootdir>/baselines)")
    g.addoption("--workloads-dir", default=None, help="workload specs (default: <rootdir>/workloads)")
    g.addoption("--workload", action="append", default=None, help="run this workload (repeatable); default: those for the device")
    g.addoption("--order", choices=("interleaved", "reversed"), default="interleaved", help="run order of decompositions within a round")
    try:
        g.addoption("--timeout", "--run-timeout", dest="run_timeout", type=float, default=1800.0, help="wall-clock limit per run, seconds")
    except (ValueError, argparse.ArgumentError):  # pytest-timeout owns --timeout
        g.addoption("--run-timeout", dest="run_timeout", type=float, default=1800.0, help="wall-clock limit per run, seconds")
    g.addoption("--update-baselines", action="store_true", help="record this session's runs as the new baseline for this GPU")
    g.addoption("--inject-slowdown", type=float, default=0.0, help="sleep this fraction of each step's time (sensitivity self-check)")
    g.addoption("--no-phases", action="store_true", help="turn off phase instrumentation (to measure its overhead)")
    g.addoption("--profile-steps", type=int, default=0, help="profile CUDA kernels over N steps after warm-up (evidence runs; not for baselines)")
    g.addoption("--alpha", type=float, default=None, help="override the baseline's alpha")
    g.addoption("--threshold", type=float, default=None, help="override the baseline's practical runtime threshold (fraction)")
    g.addoption("--calibrate", action="store_true", help="instead of the tests: A/A and --inject-slowdown (default 0.10) runs, then the minimum detectable slowdown")
    g.addoption("--fail-inconclusive", action="store_true", help="inconclusive runtime verdicts fail instead of being reported")
    g.addoption("--require-baseline", action="store_true", help="a missing baseline fails instead of skipping")
    g.addoption("--budget-minutes", type=float, default=None,
                help="start no run that would end past this many minutes (estimated from the case's slowest run, else the session's, else the baseline's train_runtime); the rest is left for --resume")
    g.addoption("--resume", action="store_true", help="continue the last session in --results-dir: its runs count, only the missing ones are made")


def pytest_configure(config):
    want = config.getoption("--gpu").lower()
    detected = detect_gpu()
    if want == "auto":
        want = detected
    elif want != "cpu" and want != detected:
        hint = f"--gpu={detected} or --gpu=auto" if detected != "cpu" else "--gpu=cpu on this machine, or on a machine with that GPU"
        raise pytest.UsageError(f"--gpu={want} but this machine has {detected}; run with {hint}")
    config.stash[_GPU] = want
    config.addinivalue_line("markers", "perf: a performance case of the harness")
    o = config.getoption
    budget = o("--budget-minutes")
    try:
        config.stash[_OPTIONS] = Options(
            gpu=want, results_dir=Path(o("--results-dir")), baselines_dir=Path(o("--baselines-dir") or _root(config) / "baselines"),
            repeats=o("--repeats"), max_repeats=o("--max-repeats"), order=o("--order"), timeout_s=o("run_timeout"),
            inject_slowdown=o("--inject-slowdown"), phases=not o("--no-phases"), alpha=o("--alpha"), threshold=o("--threshold"),
            update_baselines=o("--update-baselines"), fail_inconclusive=o("--fail-inconclusive"), faults=os.environ.get("HARNESS_FAULTS"),
            profile_steps=o("--profile-steps"), resume=o("--resume"), budget_s=None if budget is None else budget * 60,
            command="pytest " + " ".join(shlex.quote(a) for a in config.invocation_params.args))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _root(config) -> Path:
    return Path(config.rootpath)


def _workloads(config) -> dict[str, Workload]:
    """Workloads selected for this session (loaded once). SpecError becomes one collection-error line."""
    if _WORKLOADS in config.stash:
        return config.stash[_WORKLOADS]
    wdir = Path(config.getoption("--workloads-dir") or _root(config) / "workloads")
    gpu = config.stash[_GPU]
    try:
        found = load_workloads(wdir)
        names = config.getoption("--workload")
        if names:
            unknown = [n for n in names if n not in found]
            if unknown:
                raise SpecError(f"--workload {', '.join(unknown)}: no such workload in {wdir}; known: {', '.join(found)}")
            chosen = {n: found[n] for n in names}
        else:
            chosen = {n: w for n, w in found.items() if (gpu == "cpu" and "cpu" in w.devices) or (gpu != "cpu" and ("gpu" in w.devices or gpu in w.devices))}
        steps = config.getoption("--steps")
        chosen = {n: w.with_overrides(max_steps=steps) for n, w in chosen.items()}
    except SpecError as exc:
        config.stash[_WORKLOADS] = exc
        raise
    config.stash[_WORKLOADS] = chosen
    return chosen


def pytest_generate_tests(metafunc):
    if not {"perf_case", "perf_workload"} & set(metafunc.fixturenames):
        return
    error = None
    try:
        ws = _workloads(metafunc.config)
        if isinstance(ws, SpecError):
            raise ws
    except SpecError as exc:
        error = f"bad workload: {exc}"
    if error:
        pytest.fail(error, pytrace=False)
    if "perf_case" in metafunc.fixturenames:
        ids = [f"{w.name}-{d.id}" for w in ws.values() for d in w.decompositions]
        metafunc.parametrize("perf_case", [(w.name, d.id) for w in ws.values() for d in w.decompositions], ids=ids)
    else:
        metafunc.parametrize("perf_workload", list(ws), ids=list(ws))


def pytest_collection_modifyitems(config, items):
    updating = config.getoption("--update-baselines")
    keep, drop = [], []
    for item in items:
        name = getattr(item, "originalname", item.name)
        if (updating and name in ("test_runtime", "test_memory", "test_ordering")) or (not updating and name == "test_record_baseline"):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _progress(config):
    tr = config.pluginmanager.getplugin("terminalreporter")
    cap = config.pluginmanager.getplugin("capturemanager")

    def say(msg: str) -> None:
        if tr is None:
            print(msg, file=sys.stderr)
            return
        if cap is not None:
            with cap.global_and_fixture_disabled():
                tr.write_line(f"perf {msg}")
        else:
            tr.write_line(f"perf {msg}")

    return say


@pytest.fixture(scope="session")
def perf_session(request) -> PerfSession:
    """The session's runs, executed on first use for every case that the selected tests need."""
    config = request.config
    if _SESSION in config.stash:
        return config.stash[_SESSION].run()
    ws = _workloads(config)
    cases: list[tuple[str, str]] = []
    for item in request.session.items:
        cs = getattr(item, "callspec", None)
        if cs is None:
            continue
        if "perf_case" in cs.params:
            cases.append(tuple(cs.params["perf_case"]))
        elif "perf_workload" in cs.params:
            cases += [(cs.params["perf_workload"], d.id) for d in ws[cs.params["perf_workload"]].decompositions]
    cases = [c for c in dict.fromkeys(cases)]
    order = {(w.name, d.id): i for i, (w, d) in enumerate((w, d) for w in ws.values() for d in w.decompositions)}
    cases.sort(key=order.__getitem__)
    opts = config.stash[_OPTIONS]
    s = PerfSession(opts, ws, cases, progress=_progress(config))
    config.stash[_SESSION] = s
    budget = f", budget {opts.budget_s / 60:g} min" if opts.budget_s else ""
    s.progress(f"session {s.session_id}: {len(cases)} case(s) x {opts.repeats} repeat(s) on {opts.gpu}, order {opts.order}{budget}, "
               f"results in {opts.results_dir}")
    for note in s.plan_notes():
        s.progress(note)
    try:
        return s.run()
    except ValueError as exc:  # --resume of a session with other settings
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_runtestloop(session):
    """With --calibrate, run the sensitivity self-check instead of the test cases."""
    config = session.config
    if not config.getoption("--calibrate"):
        return None
    from .calibrate import calibrate

    say = _progress(config)
    o = config.getoption
    wdir = Path(o("--workloads-dir") or _root(config) / "workloads")
    code = 0
    for name in _workloads(config):
        args = argparse.Namespace(gpu=config.stash[_GPU], workload=name, repeats=o("--repeats"), slowdown=o("--inject-slowdown") or 0.10,
                                  steps=o("--steps"), workloads_dir=wdir, results_dir=Path(o("--results-dir")) / "calibrate", timeout=o("run_timeout"))
        code |= calibrate(args, out=say)
    if code:
        session.testsfailed = 1
    return True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    s = config.stash.get(_SESSION, None)
    if s is None or not s.executed:
        return
    from .report import terminal_summary

    terminal_summary(terminalreporter, s, config.stash.get(_RECORDED, None))


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config, machine_info):
    """pytest-benchmark's machine_info has no GPU; add the one this session ran on."""
    from .env import gpu_names

    machine_info["gpu"] = config.stash.get(_GPU, None)
    machine_info["gpu_names"] = gpu_names()


def record_update(config, staged) -> None:
    """Remember what --update-baselines wrote, for the before/after table."""
    config.stash[_RECORDED] = config.stash.get(_RECORDED, []) + list(staged)
