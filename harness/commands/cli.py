"""Command line: ``python -m harness {baseline update | compare | report | overhead | calibrate | census | ab |
interleave | recover | confirm | advise | history | store {add | alerts} | alert | init | doctor | cost | bisect}``.

Options are declared once in :mod:`harness.options` (shared with the pytest plugin) and each command
is a function with keyword arguments. Exit codes (:mod:`harness.exits`, docs/exit-codes.md): 0 pass, 1 regression,
2 bad input (one line), 3 a measurement failed, 4 the suite's own error (one line, the traceback in a log file),
130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import argparse
import sys

from harness import exits
from harness import options as opt
from harness.errors import BadInput
from harness.judging import baseline as bl
from harness.measuring.resident import WorkerDied
from harness.measuring.runner import sigterm_as_interrupt
from harness.options_results import ALERT, HISTORY, INIT, STORE, STORE_ADD, STORE_ALERTS, STORE_CACHE


def _cmd_baseline_update(a) -> int:
    from harness import api

    a = opt.folders(a)  # the API resolves --gpu
    config = api.BaselineConfig(
        tuple(a.results_dirs),
        a.gpu,
        workloads=tuple(a.workload or ()),
        baselines_dir=a.baselines_dir,
        min_repeats=a.min_repeats,
        note=a.note,
    )
    return api.update_baseline(config)


def _judged(a, results_dirs: list[str], against: list[str] | None, **where):
    """The :class:`~harness.configs.JudgeConfig` of ``compare``'s and ``report``'s options."""
    from harness import api

    return api.JudgeConfig(
        tuple(results_dirs),
        tuple(against or ()),
        alpha=a.alpha,
        threshold=a.threshold,
        allow_gpu_mismatch=a.allow_gpu_mismatch,
        **where,
    )


def _cmd_compare(a) -> int:
    from harness import api

    return api.compare(_judged(a, a.b, a.a, markdown=a.markdown)).exit_code


def _cmd_report(a) -> int:
    from harness import api

    a = opt.folders(a)
    return api.judge(_judged(a, a.results_dirs, a.baseline, baselines_dir=a.baselines_dir, out_dir=a.out)).exit_code


def _cmd_doctor(a) -> int:
    from harness.commands.doctor import doctor

    a = opt.here(a)
    return doctor(
        workloads_dir=a.workloads_dir, baselines_dir=a.baselines_dir, project=opt.project_root(), as_json=a.json
    )


def _cmd_init(a) -> int:
    from harness.scaffold import Layout, lay_out

    layout = Layout.default(a.dir, workload=a.workload, uses=a.harness)
    laid = lay_out(layout)
    for rel in laid.written:
        print(f"wrote {rel}")
    for rel in laid.kept:
        print(f"kept {rel} (it exists)")
    print(
        f"\nNext, in {laid.root}:\n"
        f"  pytest perftests --gpu=cpu --workload {layout.workload} --repeats 1\n"
        "Then edit workloads/ and nightly.toml (gpus: your runners' labels), commit, and run the nightly once by hand: "
        "its first night records the baselines."
    )
    return 0


def _cmd_history(a) -> int:
    from harness.commands.history import history

    return history(
        a.results_dirs,
        out_dir=a.out,
        alpha=a.change_alpha,
        penalty=a.penalty,
        store=a.store,
        cache=a.cache,
        summary=a.summary,
        page_url=a.page_url,
    )


def _cmd_store_add(a) -> int:
    from harness.commands.store import store_add

    return store_add(a.results_dirs, store=a.store, track=a.track or "", runner=a.runner, image=a.image, cache=a.cache)


def _cmd_store_alerts(a) -> int:
    from harness.commands.store import store_alerts

    a = opt.here(a, this_machine=False)  # --gpu auto: this machine's GPU
    return store_alerts(
        store=a.store,
        cache=a.cache,
        new_only=a.new,
        gpu=a.gpu,
        track=a.track,
        as_json=a.json,
        issues=a.issues,
        alpha=a.false_alerts_per_year,
    )


def _cmd_alert(a) -> int:
    from harness.commands.alert import alert

    return alert(
        a.reports, env=a.env, run_url=a.run_url, confirm=a.confirm, changes=a.changes, project=opt.project_root()
    )


DESCRIPTION = (
    "The suite's commands beside `pytest perftests`: check this machine (doctor); compare two environments side by "
    "side (interleave, ab, confirm, recover); count the work per step (census) and find what changed it (bisect, "
    "cost); choose a split (advise); keep, judge and chart results (baseline, compare, report, store, history); "
    "post a job's flagged cases to the team's webhook (alert); "
    "measure the suite itself (overhead, calibrate). Each command's --help lists its options. Exit codes: 0 pass, "
    "1 regression, 2 bad input (nothing measured), 3 a measurement failed, 4 the suite's own error (its traceback in "
    "a log file), 130 Ctrl-C, 143 SIGTERM (docs/exit-codes.md)."
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=DESCRIPTION)
    sub = p.add_subparsers(dest="cmd", required=True)
    bp = sub.add_parser("baseline", help="record a GPU's baseline from results dirs (baseline update)").add_subparsers(
        dest="bcmd", required=True
    )
    up = bp.add_parser("update", help="record the runs of RESULTS_DIR(s) as the baseline of --gpu")
    up.add_argument("results_dirs", nargs="+")
    opt.add(
        up.add_argument,
        (opt.GPU, opt.WORKLOAD, opt.BASELINES_DIR),
        defaults={"baselines_dir": opt.InProject("baselines")},
        required=("gpu",),
    )
    opt.add(up.add_argument, (opt.MIN_REPEATS, opt.NOTE), defaults={"min_repeats": bl.MIN_REPEATS})
    up.set_defaults(fn=_cmd_baseline_update)

    cp = sub.add_parser(
        "compare",
        help="compare results dir B against A (a results dir, or a baseline file such as "
        "baselines/h200/qwen3-1.7b-lora.json) with the suite's statistics; exit 1 on a regression",
    )
    cp.add_argument("a", nargs=1)
    cp.add_argument("b", nargs=1)
    opt.add(cp.add_argument, opt.JUDGE)
    opt.add(cp.add_argument, (opt.MARKDOWN, opt.ALLOW_GPU_MISMATCH))
    cp.set_defaults(fn=_cmd_compare)

    rp = sub.add_parser(
        "report", help="write report.md, report.json and plots for RESULTS_DIR(s), into --out (default: the first one)"
    )
    rp.add_argument("results_dirs", nargs="+")
    opt.add(rp.add_argument, (opt.REPORT_BASELINE,))
    opt.add(rp.add_argument, (opt.BASELINES_DIR, *opt.JUDGE), defaults={"baselines_dir": opt.InProject("baselines")})
    opt.add(rp.add_argument, (opt.OUT, opt.ALLOW_GPU_MISMATCH))
    rp.set_defaults(fn=_cmd_report)

    hi = sub.add_parser(
        "history",
        help="the sessions of RESULTS_DIR(s) in time order per GPU x workload x decomposition, with version "
        "changes, census counts and change points, as a dashboard page opened from disk, written into --out: "
        "index.html (data embedded as JSON), method.html, history.json and the page's script, style and "
        "charting library",
    )
    hi.add_argument(
        "results_dirs",
        nargs="*",
        metavar="[TRACK=]RESULTS_DIR",
        help="results dirs, or folders of them (every runs.jsonl below); TRACK= keeps environments apart "
        "(pinned=DIR latest=DIR)",
    )
    opt.add(hi.add_argument, HISTORY, defaults={"out": "perf-history"})
    _store_options(hi.add_argument, required=False)
    hi.set_defaults(fn=_cmd_history)
    _store_commands(sub)
    _alert_command(sub)
    _init_command(sub)

    dr = sub.add_parser(
        "doctor",
        help="what this machine is to the suite: the detected GPU and its runner label, driver, CUDA and library "
        "versions, the workloads that run here and their baselines, what the nightly would do here, what is missing",
    )
    opt.add(
        dr.add_argument,
        (opt.WORKLOADS_DIR, opt.BASELINES_DIR),
        defaults={"workloads_dir": opt.InProject("workloads"), "baselines_dir": opt.InProject("baselines")},
    )
    opt.add(dr.add_argument, (opt.JSON,))
    dr.set_defaults(fn=_cmd_doctor)
    from harness.commands.run_commands import add_parsers as run_parsers  # the commands that make runs

    run_parsers(sub)
    from harness.commands.cost import add_parser as cost_parser  # the cost model: harness.judging.cost_model

    cost_parser(sub)
    from harness.commands.bisect import add_parser as bisect_parser  # which package, release or commit: harness.bisect

    bisect_parser(sub)
    return p


def _store_options(add, required: bool) -> None:
    opt.add(add, (STORE, STORE_CACHE), required=("store",) if required else ())


def _store_commands(sub) -> None:
    """``store add`` and ``store alerts``: the results store (harness.commands.store)."""
    sp = sub.add_parser(
        "store", help="the results store: one compact record per session, in a directory or on a git branch"
    ).add_subparsers(dest="scmd", required=True)
    ad = sp.add_parser(
        "add", help="add each session of RESULTS_DIR(s) to the store (a session stored already is stored once)"
    )
    ad.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR")
    _store_options(ad.add_argument, required=True)
    opt.add(ad.add_argument, STORE_ADD)
    ad.set_defaults(fn=_cmd_store_add)
    al = sp.add_parser(
        "alerts",
        help="environment regressions in the store: census counts that moved and timing shifts that held "
        "with the library pins unchanged; environment changes with no effect as notes; --gpu and --track keep only "
        "those sessions",
    )
    _store_options(al.add_argument, required=True)
    opt.add(al.add_argument, STORE_ALERTS, defaults={"gpu": None})
    al.set_defaults(fn=_cmd_store_alerts)


def _init_command(sub) -> None:
    """``init``: lay out a team's repository for the suite (harness.scaffold)."""
    it = sub.add_parser(
        "init",
        help="lay out a repository for the suite: perftests/, a first workload, baselines/, nightly.toml, tox.ini and "
        "the workflows that call this harness's reusable ones at its version; existing files are kept; --workload "
        "names the first workload (default: the folder's name and -lora)",
    )
    it.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the repository's folder (default: here)")
    opt.add(it.add_argument, INIT)
    it.set_defaults(fn=_cmd_init, single=("workload",))


def _alert_command(sub) -> None:
    """``alert``: a job's flagged cases to the team's webhook (harness.commands.alert)."""
    at = sub.add_parser(
        "alert",
        help="post the flagged cases of REPORT(s) (a suite's, an interleaved comparison's, the store's alerts) as one "
        "message, each with the command that reproduces it, to the webhook whose URL is in the environment variable "
        "that nightly.toml's [alerts] names; nothing when none is flagged or the variable is unset",
    )
    at.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="a suite's report.json, an interleaved comparison's, or the file of `store alerts --issues`; "
        "one that is missing (its step stopped before it) is skipped",
    )
    opt.add(at.add_argument, ALERT)
    at.set_defaults(fn=_cmd_alert)


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code is one of :mod:`harness.exits`, and a failure is one line on stderr."""
    args = parser().parse_args(argv)
    try:
        # a SIGTERM anywhere in the command ends it as Ctrl-C does: its workers killed first
        with sigterm_as_interrupt():
            return args.fn(opt.single(args, getattr(args, "single", ())))
    except (BadInput, bl.BaselineError) as exc:
        # a refused input, said in one line; any other ValueError is the suite's own
        print(f"error: {exc}", file=sys.stderr)
        return exits.BAD_INPUT
    except WorkerDied as exc:  # a worker died where the command judges nothing of what it kept
        print(f"error: {exc}", file=sys.stderr)
        return exits.MEASUREMENT_FAILED
    except KeyboardInterrupt as exc:
        # Ctrl-C, or SIGTERM (runner.Terminated): the workers are killed, finished runs kept
        if not getattr(exc, "said", False):  # interleave says it with its kept blocks
            print(
                f"interrupted ({exc or 'Ctrl-C'}): stopped, its workers killed; what finished is kept in the "
                "results dir",
                file=sys.stderr,
            )
        return exits.of_interrupt(exc)
    except Exception as exc:
        # I/O (a read-only results dir, a full disk) or a bug: one line, the traceback in a log file
        print(exits.suite_error_line(exc, " ".join(sys.argv[1:] if argv is None else argv)), file=sys.stderr)
        return exits.SUITE_ERROR
