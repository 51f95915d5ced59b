"""The commands that make runs: fresh-process runs (overhead, calibrate, census, ab), interleaved comparisons
(interleave, recover, confirm) and the advisor (advise); their parsers, added to the command line of
:mod:`harness.commands.cli`, and the functions that run them.
"""

from __future__ import annotations

from harness import options as opt
from harness.errors import UsageError
from harness.options_comparison import AB, ADVISE, CONFIRM, INTERLEAVE, comparison_config


def _cmd_advise(a) -> int:
    from harness import api

    a = opt.folders(a)  # the API resolves --gpu
    config = api.AdviseConfig(
        a.workload,
        a.gpu,
        effective=a.effective,
        budget_minutes=a.total_budget_minutes,
        probe_steps=a.probe_steps,
        block_seconds=a.block_seconds,
        pairs=a.pairs,
        launches=a.launches,
        census=not a.no_census,
        screen=a.screen,
        cpus=tuple(a.cpus or ()),
        memory_limit_micro=a.memory_limit_micro,
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
        run_timeout=a.run_timeout,
        **_set(a, "alpha", "threshold"),  # unset: the advice's defaults
    )
    return api.advise(config).exit_code


def _set(a, *dests: str) -> dict:
    """The options among ``dests`` that were given, by dest; one left unset keeps the config's default."""
    return {d: getattr(a, d) for d in dests if getattr(a, d) is not None}


def _cmd_confirm(a) -> int:
    from harness import api

    template = comparison_config(vars(opt.folders(a)), workload="", decomposition="")
    return api.confirm(a.report, template, workloads_dir=a.workloads_dir, results_dir=a.results_dir).exit_code


def _cmd_overhead(a) -> int:
    from harness.commands.overhead import measure, micro, micro_report

    if a.micro:
        try:  # "1x4=1510,4x1=394": each decomposition's step in ms, its grad-accum after the x
            steps = {d: (int(d.split("x")[1]), float(ms)) for d, ms in (kv.split("=") for kv in a.micro.split(","))}
        except (ValueError, IndexError):
            raise UsageError(f"--micro {a.micro}: expected DECOMP=MS,... such as 1x4=1510,4x1=394") from None
        print("\n".join(micro_report(micro(), steps)))
        return 0
    missing = [f"--{k}" for k in ("gpu", "workload", "decomposition") if not getattr(a, k)]
    if missing:
        raise UsageError(f"overhead needs {', '.join(missing)} (or --micro)")
    if a.repeats < 1:
        raise UsageError("overhead needs --repeats 1 or more (pairs of runs, phases on and off)")
    a = opt.here(a)
    return measure(
        gpu=a.gpu,
        workload=a.workload,
        decomposition=a.decomposition,
        pairs=a.repeats,
        steps=a.steps,
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
        run_timeout=a.run_timeout,
    )


def _cmd_calibrate(a) -> int:
    from harness.suite.calibrate import calibrate

    a = opt.here(a)
    return calibrate(
        gpu=a.gpu,
        workload=a.workload,
        repeats=a.repeats,
        slowdown=a.slowdown,
        steps=a.steps,
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
        run_timeout=a.run_timeout,
    )


def _cmd_ab(a) -> int:
    from harness import api

    a = opt.folders(a)  # the API resolves --gpu
    config = api.ABConfig(
        a.workload,
        a.python_b,
        python_a=a.python_a,
        decompositions=tuple(a.decomposition or ()),
        gpu=a.gpu,
        repeats=a.repeats,
        steps=a.steps,
        alpha=a.alpha,
        threshold=a.threshold,
        skip_same_versions=a.skip_same_versions,
        inject_slowdown_b=a.inject_slowdown_b,
        run_timeout=a.run_timeout,
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
    )
    return api.ab(config).exit_code


def _cmd_census(a) -> int:
    from harness import api

    a = opt.folders(a)  # the API resolves --gpu
    config = api.CensusConfig(
        a.workload,
        tuple(a.decomposition or ()),
        python=a.python,
        gpu=a.gpu,
        repeats=a.repeats,
        steps=a.steps,
        inject_work=a.inject_work,
        run_timeout=a.run_timeout,
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
    )
    return api.census(config).exit_code


def _cmd_interleave(a) -> int:
    from harness import api

    cfg = comparison_config(vars(opt.folders(a)), workload=a.workload, decomposition=a.decomposition)
    return api.side_by_side(cfg).exit_code  # the API resolves --gpu


def _cmd_recover(a) -> int:
    from harness import api

    return api.recover(a.results_dir).exit_code


def add_parsers(sub) -> None:
    """The commands that make runs: fresh-process runs, interleaved comparisons and the advisor."""
    run_defaults = {"workloads_dir": opt.InProject("workloads")}
    _fresh_process_parsers(sub, run_defaults)
    _interleaved_parsers(sub, run_defaults)
    _advise_parser(sub, run_defaults)


def _fresh_process_parsers(sub, run_defaults: dict) -> None:
    """overhead, calibrate, census and ab: each run in a fresh process."""
    op = sub.add_parser("overhead", help="phases on vs off, interleaved ABBA, on one decomposition")
    opt.add(op.add_argument, (opt.MICRO,))
    opt.add(
        op.add_argument,
        (opt.GPU, opt.WORKLOAD, *opt.RUN),
        defaults={**run_defaults, "gpu": None, "results_dir": opt.InProject("perf-results/overhead")},
    )
    opt.add(op.add_argument, (opt.DECOMPOSITION, opt.REPEATS))
    op.set_defaults(fn=_cmd_overhead, single=("workload", "decomposition"))

    ca = sub.add_parser("calibrate", help="A/A and injected-slowdown runs; prints the minimum detectable slowdown")
    opt.add(
        ca.add_argument,
        (opt.GPU, opt.WORKLOAD, opt.REPEATS, *opt.RUN),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/calibrate")},
        required=("workload",),
    )
    opt.add(ca.add_argument, (opt.SLOWDOWN,))
    ca.set_defaults(fn=_cmd_calibrate, single=("workload",))

    ce = sub.add_parser(
        "census",
        help="census runs only: count the work per optimizer step (kernels, aten ops, syncs, allocations, "
        "Python calls), and whether the counts are identical across runs",
    )
    opt.add(
        ce.add_argument,
        (opt.GPU, opt.WORKLOAD, opt.DECOMPOSITION, opt.REPEATS, *opt.RUN, opt.INJECT_WORK),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/census"), "repeats": 1},
        required=("workload",),
    )
    opt.add(ce.add_argument, (opt.PYTHON,))
    ce.set_defaults(fn=_cmd_census, single=("workload",))

    ab = sub.add_parser(
        "ab", help="one workload under two Python environments, interleaved on this machine; B judged against A"
    )
    opt.add(
        ab.add_argument,
        (opt.GPU, opt.WORKLOAD, opt.DECOMPOSITION, opt.REPEATS, *opt.RUN, *opt.JUDGE),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/ab")},
        required=("workload",),
    )
    opt.add(ab.add_argument, AB, required=("python_b",))
    ab.set_defaults(fn=_cmd_ab, single=("workload",))


def _interleaved_parsers(sub, run_defaults: dict) -> None:
    """interleave, recover and confirm: A against B on two resident workers."""
    il = sub.add_parser(
        "interleave",
        help="A against B on this machine, block-interleaved on two resident workers over several launches; "
        "exit 1 on a regression",
    )
    opt.add(
        il.add_argument,
        (opt.GPU, opt.WORKLOAD, *INTERLEAVE, opt.WORKLOADS_DIR, opt.RESULTS_DIR, opt.TIMEOUT, *opt.JUDGE),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/interleave")},
        required=("workload", "decomposition"),
    )
    il.set_defaults(fn=_cmd_interleave, single=("workload", "decomposition"))
    rc = sub.add_parser(
        "recover",
        help="judge an interleave run that stopped before its report (the machine lost, a kill -9, a job's "
        "timeout) from the blocks and launches its results dir kept; writes report.json and report.md, never over "
        "the run's own",
    )
    rc.add_argument("results_dir", help="the run's --results-dir (holds blocks.jsonl and progress.json)")
    rc.set_defaults(fn=_cmd_recover)
    cf = sub.add_parser(
        "confirm",
        help="re-measure each runtime regression of a suite report interleaved on this machine (A = the reference "
        "environment, B = the one the report measured); unconfirmed ones raise no alert; writes the confirmed "
        "report.json",
    )
    cf.add_argument("report", help="report.json of a suite session")
    opt.add(
        cf.add_argument,
        (*CONFIRM, opt.WORKLOADS_DIR, opt.RESULTS_DIR, opt.TIMEOUT, *opt.JUDGE),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/confirm")},
    )
    cf.set_defaults(fn=_cmd_confirm)


def _advise_parser(sub, run_defaults: dict) -> None:
    """advise: which split of the effective batch is fastest here."""
    ad = sub.add_parser(
        "advise",
        help="which micro-batch x grad-accum split of the effective batch is fastest here: fit probes, "
        "interleaved comparisons, census diagnosis; table, report, plot and the TOML lines that pin it",
    )
    opt.add(
        ad.add_argument,
        (opt.GPU, opt.WORKLOAD, *ADVISE, opt.WORKLOADS_DIR, opt.RESULTS_DIR, opt.TIMEOUT, *opt.JUDGE),
        defaults={**run_defaults, "results_dir": opt.InProject("perf-results/advise"), "total_budget_minutes": 10.0},
        required=("workload",),
    )
    ad.set_defaults(fn=_cmd_advise, single=("workload",))
