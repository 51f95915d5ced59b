r"""``python -m harness bisect``: which package, which release, which commit changed a case's work or its time
(:mod:`harness.bisect`, docs/bisect.md).

    python -m harness bisect --workload W --decomposition D --good transformers==5.17.0 --bad transformers==5.25.0 \
        [--wheels DIR]
    python -m harness bisect --workload W --decomposition D --good .tox/pinned/bin/python --bad .tox/latest/bin/python
    python -m harness bisect --workload W --decomposition D --checkout ../peft --good v0.17.0 --bad main

Exit codes: 0 the bisection ran to its answer (a change found, none, or an inconclusive step reported), 2 bad input
(one line), 3 an end of the range could not be measured.
"""

from __future__ import annotations

import re

from harness import options as opt
from harness.options_bisect import BISECT
from harness.options_comparison import SET


def run(a) -> int:
    from harness import api
    from harness.bisect.config import BisectConfig
    from harness.sidebyside.config import DEFAULT_THRESHOLD, parse_sets

    a = opt.folders(a)  # the API resolves --gpu
    cfg = BisectConfig(
        workload=a.workload,
        decomposition=a.decomposition,
        good=a.good,
        bad=a.bad,
        python=a.python,
        checkout=a.checkout,
        package=a.package,
        wheels=a.wheels,
        index_url=a.index_url,
        no_index=a.no_index,
        move_deps=a.move_deps,
        packages=tuple(p for p in re.split(r"[\s,]+", a.packages or "") if p),
        gpu=a.gpu,
        steps=a.steps,
        census_only=a.census_only,
        step_budget_minutes=a.step_budget_minutes,
        budget_minutes=a.total_budget_minutes,
        alpha=a.alpha,
        threshold=a.threshold if a.threshold is not None else DEFAULT_THRESHOLD,
        sets=parse_sets(a.set),
        workloads_dir=a.workloads_dir,
        results_dir=a.results_dir,
        env_cache=a.env_cache,
        run_timeout=a.run_timeout,
    )
    return api.bisect(cfg).exit_code


def add_parser(sub) -> None:
    """The ``bisect`` subcommand and its options."""
    bp = sub.add_parser(
        "bisect",
        help="which package, release or commit between a good and a bad environment changed the work of a case "
        "(census runs) or, where the census is equal, its time (interleaved comparisons); docs/bisect.md",
    )
    opt.add(bp.add_argument, (opt.GPU, opt.WORKLOAD, opt.DECOMPOSITION), required=("workload", "decomposition"))
    opt.add(bp.add_argument, BISECT, required=("good", "bad"))
    opt.add(
        bp.add_argument,
        (opt.STEPS, opt.WORKLOADS_DIR, opt.RESULTS_DIR, opt.TIMEOUT, SET, opt.ALPHA, opt.THRESHOLD),
        defaults={"workloads_dir": opt.InProject("workloads"), "results_dir": opt.InProject("perf-results/bisect")},
    )
    bp.set_defaults(fn=run, single=("workload", "decomposition"))
