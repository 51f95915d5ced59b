"""The options of the interleaved comparisons: ``interleave``, ``ab``, ``confirm`` and ``advise``, and the
:class:`~harness.sidebyside.config.ComparisonConfig` that :func:`comparison_config` makes of them."""

from __future__ import annotations

from typing import Any

from harness.options import (
    DECOMPOSITION,
    TOTAL_BUDGET_MINUTES,
    Opt,
    parse_count,
    parse_cpus,
    parse_positive_float,
    parse_positive_int,
    parse_slowdown,
)
from harness.sidebyside.config import DEFAULT_BUDGET_MINUTES, defaults_text

# interleave: A against B on this machine, block-interleaved (harness.sidebyside.run); every other setting is a field of
# harness.sidebyside.config.ComparisonConfig, set with --set key=value
PYTHON_A = Opt(("--python-a",), "python_a", "interpreter (environment) of side A (default: this one)")
PYTHON_B = Opt(
    ("--python-b",), "python_b", "interpreter (environment) of side B, e.g. .tox/latest/bin/python (default: this one)"
)
BUDGET_MINUTES = Opt(
    ("--budget-minutes",),
    "budget_minutes",
    "device minutes per comparison, start-up included; the number of launches follows from it",
    type=parse_positive_float,
    default=DEFAULT_BUDGET_MINUTES,
)
SET = Opt(
    ("--set",), "set", "a research knob as key=value (repeatable); the defaults: " + defaults_text(), action="append"
)
SKIP_SAME_VERSIONS = Opt(
    ("--skip-same-versions",),
    "skip_same_versions",
    "make no runs when A and B have the same python and library versions (nightly: no new release)",
    action="store_true",
)
INJECT_SLOWDOWN_B = Opt(
    ("--inject-slowdown-b",),
    "inject_slowdown_b",
    "test-only: slow side B by this fraction (a sensitivity self-check)",
    type=parse_slowdown,
    default=0.0,
    hidden=True,
)
INJECT_WORK_B = Opt(("--inject-work-b",), "inject_work_b", "test-only", type=parse_count, default=0, hidden=True)
INJECT_WORK_B_PERCENT = Opt(
    ("--inject-work-b-percent",),
    "inject_work_b_percent",
    "test-only",
    type=parse_positive_float,
    default=0.0,
    hidden=True,
)
COMPARISON = (PYTHON_A, PYTHON_B, BUDGET_MINUTES, SET, INJECT_SLOWDOWN_B, INJECT_WORK_B, INJECT_WORK_B_PERCENT)
INTERLEAVE = (DECOMPOSITION, *COMPARISON, SKIP_SAME_VERSIONS)
CPUS = Opt(
    ("--cpus",), "cpus", "pin the resident workers to these CPUs (e.g. 0 or 2-3) (default: not pinned)", type=parse_cpus
)
FALLBACK_REPEATS = Opt(
    ("--fallback-repeats",),
    "fallback_repeats",
    "when A and B do not fit on the device at once: fresh-process runs per side instead",
    type=parse_positive_int,
    default=5,
)


def comparison_config(values: dict[str, Any], **fixed: Any):
    """The :class:`~harness.sidebyside.config.ComparisonConfig` of parsed options (``values`` by dest, ``--set`` items
    under ``set``) and ``fixed`` fields; a bad combination raises ValueError with one line."""
    from harness.sidebyside.config import ComparisonConfig, parse_sets

    direct = (
        "gpu",
        "python_a",
        "python_b",
        "budget_minutes",
        "alpha",
        "threshold",
        "skip_same_versions",
        "workloads_dir",
        "results_dir",
        "run_timeout",
        "inject_slowdown_b",
        "inject_work_b",
        "inject_work_b_percent",
    )
    fields_ = {k: values[k] for k in direct if values.get(k) is not None}
    return ComparisonConfig(**{**fields_, **parse_sets(values.get("set")), **fixed})


# ab: one workload under two Python environments on this machine (harness.suite.ab)
AB = (PYTHON_A, PYTHON_B, INJECT_SLOWDOWN_B, SKIP_SAME_VERSIONS)


# advise: the fastest split of an effective batch on this device (harness.workflows.advise)
EFFECTIVE = Opt(
    ("--effective",), "effective", "effective batch to split (default: the workload's)", type=parse_positive_int
)
PROBE_STEPS = Opt(
    ("--probe-steps",),
    "probe_steps",
    "timed steps of each fit probe (m x 1) after the warm-up",
    type=parse_positive_int,
    default=3,
)
BLOCK_SECONDS = Opt(
    ("--block-seconds",),
    "block_seconds",
    "length of a block in the comparisons, in seconds of the slower split's steps "
    "(k = ceil(this / its probe step), at least 1)",
    type=parse_positive_float,
    default=0.8,
)
ADVISE_PAIRS = Opt(
    ("--pairs",), "pairs", "pairs of blocks per comparison at most", type=parse_positive_int, default=200
)
ADVISE_LAUNCHES = Opt(("--launches",), "launches", "launches per comparison", type=parse_positive_int, default=2)
NO_CENSUS = Opt(
    ("--no-census",), "no_census", "no census window in the probes (no diagnosis column)", action="store_true"
)
SCREEN = Opt(
    ("--screen",),
    "screen",
    "splits whose probe-estimated step is more than this many times the fastest's are called slower "
    "without an interleaved comparison",
    type=parse_positive_float,
    default=1.5,
)
MEMORY_LIMIT_MICRO = Opt(
    ("--inject-memory-limit-micro",),
    "memory_limit_micro",
    "test-only: splits with a larger micro-batch run out of memory at their first step",
    type=parse_positive_int,
)
ADVISE = (
    EFFECTIVE,
    TOTAL_BUDGET_MINUTES,
    PROBE_STEPS,
    BLOCK_SECONDS,
    ADVISE_PAIRS,
    ADVISE_LAUNCHES,
    NO_CENSUS,
    SCREEN,
    CPUS,
    MEMORY_LIMIT_MICRO,
)

# confirm: each runtime regression of a report re-measured interleaved (harness.workflows.confirm)
CONFIRM = COMPARISON
