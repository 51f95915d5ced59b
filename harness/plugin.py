"""pytest hooks only: options, device check, parametrisation, the session fixture and the terminal summary.

Options are declared in :mod:`harness.options_session`; runs are made by :mod:`harness.suite.session`,
verdicts given by :mod:`harness.judging.judge`, reports written by :mod:`harness.reporting.report`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from harness import knobs
from harness import options as opt
from harness.exits import BAD_INPUT, os_error_text
from harness.measuring.env import detect_gpu, resolve_gpu
from harness.options_comparison import comparison_config
from harness.options_session import SESSION
from harness.results.verdict import Verdict
from harness.sigterm import SigtermStops
from harness.spec import SpecError, Workload
from harness.suite.session import Options, PerfSession

_GPU = pytest.StashKey[str]()
_WORKLOADS = pytest.StashKey[dict]()
_SESSION = pytest.StashKey[PerfSession]()
_OPTIONS = pytest.StashKey[Options]()
_BROKEN = pytest.StashKey[dict]()  # workload file -> its one line: not run, one failed item each (harness.broken)
_BROKEN_NAMES = pytest.StashKey[dict]()  # broken workload file -> the workload name it declares (its verdict's case)
_COMPARISON = pytest.StashKey[object]()  # the interleaved comparison's ComparisonConfig, its case left blank
_WRITE_FAILED = pytest.StashKey[str]()  # the line of an OSError writing the results dir: the session stopped on it


def pytest_addoption(parser):
    # right after pytest's general options, so that `pytest perftests --help` shows the suite's near its top
    opt.add(parser.getgroup("perf", "LoRA fine-tuning performance suite (harness)", after="general").addoption, SESSION)


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark's, which reads its options once
def pytest_configure(config):
    if hasattr(config.option, "benchmark_quiet") and not getattr(config.option, "benchmark_verbose", False):
        # one table per session, the suite's: pytest-benchmark's (other statistics of the same step times) is not
        # printed; its --benchmark-json is still written, and --benchmark-verbose shows its table again
        config.option.benchmark_quiet = True
    try:
        gpu = resolve_gpu(config.getoption("gpu"), detect_gpu())
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_GPU] = gpu
    config.pluginmanager.register(SigtermStops(_SESSION), "harness-sigterm")
    from harness.broken import BrokenFails

    config.pluginmanager.register(BrokenFails(), "harness-broken-fails")
    config.addinivalue_line("markers", "perf: a performance case of the harness")
    config.addinivalue_line("markers", "slow: a self-test that makes real training runs (deselect with -m 'not slow')")
    o = config.getoption
    budget = o("total_budget_minutes")
    try:
        config.stash[_OPTIONS] = Options(
            gpu=gpu,
            results_dir=Path(o("results_dir")),
            baselines_dir=Path(o("baselines_dir") or _root(config) / "baselines"),
            repeats=o("repeats"),
            max_repeats=o("max_repeats"),
            order=o("order"),
            timeout_s=o("run_timeout"),
            inject_slowdown=o("inject_slowdown"),
            inject_work=o("inject_work"),
            census=o("census"),
            phases=not o("no_phases"),
            alpha=o("alpha"),
            threshold=o("threshold"),
            update_baselines=o("update_baselines"),
            fail_inconclusive=o("fail_inconclusive"),
            faults=knobs.FAULTS.get(),
            profile_steps=o("profile_steps"),
            resume=o("resume"),
            budget_s=None if budget is None else budget * 60,
            command="pytest " + " ".join(shlex.quote(a) for a in config.invocation_params.args),
        )
        config.stash[_COMPARISON] = comparison_config(
            {
                "python_b": o("interleave_python_b"),
                "budget_minutes": o("interleave_budget_minutes"),
                "set": o("interleave_set"),
                "run_timeout": o("run_timeout"),
            },
            workload="",
            decomposition="",
            gpu=gpu,
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if problem := _bad_settings(o):
        raise pytest.UsageError(problem)
    if o("workload"):  # a name that no workload file declares is a typo of the command line: refused before collection
        try:
            _workloads(config)
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None


def _root(config) -> Path:
    """The project: ``$HARNESS_ROOT``; else pytest's rootdir, or, where that holds no workloads/, the directory pytest
    was started in; else the CLI's project (:func:`harness.options.project_root`). The rootdir is the common ancestor of
    the arguments that are paths, taken before conftest.py declares this plugin's options, so the value of
    ``--interleave-python-b /usr/bin/python3`` counts as one and can move it to /."""
    if knobs.ROOT.get():
        return opt.project_root()
    for d in (Path(config.rootpath), Path(config.invocation_params.dir)):
        if (d / "workloads").is_dir():
            return d
    return opt.project_root()


def _bad_settings(o) -> str | None:
    """The first setting of the plugin's own options that would spend device time for nothing, as one line; None when
    all are sound (the session's settings are checked by :class:`~harness.suite.session.Options`)."""
    from harness.measuring.interpreters import interpreter

    if o("update_baselines") and o("calibrate"):
        return "--calibrate replaces the tests and records no baseline; drop --update-baselines or --calibrate"
    if o("calibrate") and o("repeats") < 2:
        return f"--calibrate needs --repeats 2 or more (a run-to-run CV needs two runs per group), got {o('repeats')}"
    try:
        interpreter(o("interleave_python_b"), "b", "--interleave-python-b")
    except ValueError as exc:
        return str(exc)
    return None


def _workloads_dir(config) -> Path:
    return Path(config.getoption("workloads_dir") or _root(config) / "workloads")


def _workloads(config) -> dict[str, Workload]:
    """Workloads selected for this session (loaded and checked once, :mod:`harness.suite.selection`). A broken
    workload, named with --workload or not, is set aside (``_BROKEN``) and reported as one failed item and one failed
    verdict of its own while the others run; a SpecError (a --workload name that no file declares) is raised."""
    if _WORKLOADS in config.stash:
        return config.stash[_WORKLOADS]
    from harness.suite.selection import Request, select

    o = config.getoption
    checked = not (o("update_baselines") or o("calibrate"))  # recording replaces a baseline of another hash
    try:
        chosen = select(
            Request(
                _workloads_dir(config),
                config.stash[_GPU],
                tuple(o("workload") or ()),
                o("steps"),
                config.stash[_OPTIONS].baselines_dir if checked else None,
            )
        )
    except SpecError as exc:
        config.stash[_WORKLOADS] = exc
        raise
    config.stash[_WORKLOADS], config.stash[_BROKEN] = chosen.chosen, chosen.broken
    config.stash[_BROKEN_NAMES] = chosen.names
    return chosen.chosen


def pytest_generate_tests(metafunc):
    if not {"perf_case", "perf_workload"} & set(metafunc.fixturenames):
        return
    error = None
    try:
        ws = _workloads(metafunc.config)
        if isinstance(ws, SpecError):
            raise ws
    except SpecError as exc:
        from harness.broken import relative_line

        error = f"bad workload: {relative_line(str(exc), Path(metafunc.config.invocation_params.dir))}"
    if error:  # outside the except block: one line, no chained traceback
        pytest.fail(error, pytrace=False)
    if "perf_case" in metafunc.fixturenames:
        ids = [f"{w.name}-{d.id}" for w in ws.values() for d in w.decompositions]
        metafunc.parametrize("perf_case", [(w.name, d.id) for w in ws.values() for d in w.decompositions], ids=ids)
    else:
        metafunc.parametrize("perf_workload", list(ws), ids=list(ws))


@pytest.hookimpl(trylast=True)  # after -k and -m: a broken workload is always reported
def pytest_collection_modifyitems(session, config, items):
    updating, census = (
        config.getoption("update_baselines"),
        config.getoption("census"),
    )  # test_interleaved needs --interleave-python-b
    keep, drop = [], []
    none_left = bool(config.stash.get(_BROKEN, None)) and not config.stash.get(_WORKLOADS, None)
    for item in items:
        name = getattr(item, "originalname", item.name)
        if (
            # every selected workload is broken: its items say why, not a skip of an empty parameter set per test
            (none_left and {"perf_case", "perf_workload"} & set(getattr(item, "fixturenames", ())))
            or (updating and name in ("test_runtime", "test_memory", "test_ordering", "test_work", "test_interleaved"))
            or (not updating and name == "test_record_baseline")
            or (not census and name == "test_work")
            or (not config.getoption("interleave_python_b") and name == "test_interleaved")
        ):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if config.stash.get(_BROKEN, None):
        from harness.broken import items_for

        items += items_for(config.stash[_BROKEN], session)


def _progress(config):
    tr = config.pluginmanager.getplugin("terminalreporter")
    cap = config.pluginmanager.getplugin("capturemanager")

    def say(msg: str) -> None:
        if tr is None:
            print(msg, file=sys.stderr)
        elif cap is not None:
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
    order = {(w.name, d.id): i for i, (w, d) in enumerate((w, d) for w in ws.values() for d in w.decompositions)}
    return _start(config, sorted(dict.fromkeys(cases), key=order.__getitem__))


def _broken_lines(config) -> dict[str, str]:
    """The workloads set aside as broken, by name, each with its one line (its file named relative to where pytest
    started)."""
    from harness.broken import relative_line

    names, here = config.stash.get(_BROKEN_NAMES, {}), Path(config.invocation_params.dir)
    return {names.get(p, p.stem): relative_line(line, here) for p, line in config.stash.get(_BROKEN, {}).items()}


def _start(config, cases: list[tuple[str, str]]) -> PerfSession:
    """The session of ``cases`` (none: a session whose workloads are all broken, for its report), refused before its
    first run where its baselines or results dir are bad, then run."""
    opts = config.stash[_OPTIONS]
    s = PerfSession(opts, _workloads(config), cases, progress=_progress(config), broken=_broken_lines(config))
    _refuse_before_training(config, s)
    config.stash[_SESSION] = s
    budget = f", budget {opts.budget_s / 60:g} min" if opts.budget_s else ""
    s.progress(
        f"session {s.session_id}: {len(cases)} case(s) x {opts.repeats} repeat(s) on {opts.gpu}, "
        f"order {opts.order}{budget}, results in {opts.results_dir}"
        if cases
        else f"session {s.session_id}: no case to run (every selected workload is broken); its report names them, in "
        f"{opts.results_dir}"
    )
    for note in s.judge().plan_notes(opts.repeats):
        s.progress(note)
    try:
        return s.run()
    except ValueError as exc:  # an unwritable results dir, a --resume of other settings
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    except OSError as exc:  # a full disk, a read-only results dir: one line, no report written on the same disk
        config.stash[_WRITE_FAILED] = line = f"error: the session stopped: {os_error_text(exc)}; {_kept(s)}"
        pytest.exit(line, returncode=pytest.ExitCode.USAGE_ERROR)


def _kept(s: PerfSession) -> str:
    """What a session stopped by an I/O error kept, and what to do: never a claim of runs that were not written."""
    runs = s.options.results_dir / "runs.jsonl"
    if not s.records:
        return "no run was kept; make room (or pass another --results-dir) and run the session again"
    return (
        f"{len(s.records)} run(s) of this session are kept in {runs}: make room, then python -m harness report "
        f"{s.options.results_dir}, or run the session again with --resume to finish it"
    )


def _refuse_before_training(config, s: PerfSession) -> None:
    """Before the session's first run: refuse a broken stored baseline, hold the results dir's lock until pytest ends
    (a second session or command there is refused at once, naming this one), and refuse a report or runs.jsonl linked
    out of the results dir; each with one line and exit 2 (bad input)."""
    from contextlib import ExitStack

    from harness.files import InUse, OutsideResults, ensure_dir, refuse_links, results_lock
    from harness.judging.baseline import BadBaseline
    from harness.reporting.report import FILES, PLOTS
    from harness.reporting.session_summary import BASELINE_TABLE

    o = s.options
    bad = [] if o.update_baselines else [b for b in s.baselines.values() if isinstance(b, BadBaseline)]
    if bad:  # --update-baselines replaces it; any other session would judge nothing against it
        pytest.exit(f"bad baseline: {bad[0]}", returncode=BAD_INPUT)
    lock = ExitStack()
    try:
        lock.enter_context(results_lock(ensure_dir(o.results_dir)))
        # every file the session writes, refused now, not after the training
        refuse_links(*(o.results_dir / name for name in (*FILES, *PLOTS, BASELINE_TABLE, "runs.jsonl")))
    except (InUse, OutsideResults) as exc:
        lock.close()
        pytest.exit(str(exc), returncode=BAD_INPUT)
    except ValueError as exc:  # an unwritable results dir
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    except OSError as exc:  # a disk full from the start: its lock file is the first file written
        lock.close()
        pytest.exit(
            f"error: the session did not start: {os_error_text(exc)}; no run was made; make room (or pass another "
            "--results-dir) and run it again",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    config.add_cleanup(lock.close)  # after the terminal summary has written the report


@pytest.fixture(scope="session")
def perf_interleave(request):
    """``perf_interleave((workload, decomposition))``: that case compared against ``--interleave-python-b``,
    interleaved on this machine (``python -m harness interleave``, A = this interpreter, results in
    ``<results-dir>/interleave/<case>``); returns the exit code and the comparison's verdict
    (:class:`harness.results.verdict.Verdict`), or None when it made none."""
    config = request.config

    def run(case: tuple[str, str]) -> tuple[int, Verdict | None]:
        from dataclasses import replace

        from harness.sidebyside.run import interleave

        o = config.getoption
        out_dir = Path(o("results_dir")) / "interleave" / "-".join(case)
        cfg = replace(
            config.stash[_COMPARISON],
            workload=case[0],
            decomposition=case[1],
            workloads_dir=str(_workloads_dir(config)),
            results_dir=str(out_dir),
        )
        made = interleave(cfg, out=_progress(config))
        return made.exit_code, made.verdict

    return run


def pytest_runtestloop(session):
    """With --calibrate, run the sensitivity self-check instead of the test cases. Where every selected workload is
    broken (no test needs the session), an empty session is started first, so that the report names them."""
    config = session.config
    if not config.getoption("calibrate"):
        if (
            config.stash.get(_BROKEN, None)
            and not config.option.collectonly
            and _SESSION not in config.stash
            and not any("perf_session" in getattr(i, "fixturenames", ()) for i in session.items)
        ):
            _start(config, [])
        return None
    from harness.suite.calibrate import calibrate

    o = config.getoption
    code = 0
    for name in _workloads(config):
        code |= calibrate(
            gpu=config.stash[_GPU],
            workload=name,
            repeats=o("repeats"),
            slowdown=o("inject_slowdown") or 0.10,
            steps=o("steps"),
            workloads_dir=_workloads_dir(config),
            results_dir=Path(o("results_dir")) / "calibrate",
            run_timeout=o("run_timeout"),
            out=_progress(config),
        )
    if code:
        session.testsfailed = 1
    return True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    s = config.stash.get(_SESSION, None)
    if _WRITE_FAILED in config.stash:  # the session stopped on a write that failed, its one line said what was kept;
        return  # no report is written on that disk
    if s is None or not s.executed:
        if config.stash.get(_BROKEN, None):
            terminalreporter.section("perf summary")
            for line in _broken_lines(config).values():
                terminalreporter.write_line(f"not run, bad workload: {line}")
        return
    from harness.reporting.session_summary import terminal_summary

    try:
        terminal_summary(terminalreporter, s)
    except OSError as exc:  # a full disk, a read-only results dir: one line, and the session fails; the runs are kept
        if not exc.filename:
            exc.filename = str(s.options.results_dir)
        terminalreporter.write_line(f"error: the report was not written: {os_error_text(exc)}; {_kept(s)}")
        session = getattr(terminalreporter, "_session", None)  # pytest returns its exitstatus after this hook
        if session is not None and session.exitstatus == 0:
            session.exitstatus = 1


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config, machine_info):
    """pytest-benchmark's machine_info has no GPU; add the one this session ran on."""
    from harness.measuring.env import gpu_names

    machine_info["gpu"] = config.stash.get(_GPU, None)
    machine_info["gpu_names"] = gpu_names()
