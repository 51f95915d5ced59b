"""The pytest session's own options (the plugin's ``--repeats``, ``--resume``, ``--interleave-*``...) and ``SESSION``,
every option the plugin adds; the options it shares with the commands are declared in :mod:`harness.options`."""

from __future__ import annotations

from harness.options import (
    BASELINES_DIR,
    GPU,
    INJECT_WORK,
    JUDGE,
    REPEATS,
    RUN,
    TOTAL_BUDGET_MINUTES,
    WORKLOAD,
    Opt,
    parse_count,
    parse_positive_int,
    parse_slowdown,
    prefixed,
)
from harness.options_comparison import BUDGET_MINUTES, PYTHON_B, SET

MAX_REPEATS = Opt(
    ("--max-repeats",),
    "max_repeats",
    "run more repeats of inconclusive cases, up to this many (alpha is split over the looks)",
    type=parse_positive_int,
)
ORDER = Opt(
    ("--order",),
    "order",
    "run order of decompositions within a round",
    default="interleaved",
    choices=("interleaved", "reversed"),
)
UPDATE_BASELINES = Opt(
    ("--update-baselines",),
    "update_baselines",
    "record this session's runs as the new baseline for this GPU",
    action="store_true",
)
INJECT_SLOWDOWN = Opt(
    ("--inject-slowdown",),
    "inject_slowdown",
    "sleep this fraction of each step's time (sensitivity self-check)",
    type=parse_slowdown,
    default=0.0,
)
CENSUS = Opt(
    ("--census",),
    "census",
    "after the timed runs, one census run per case: count its work per step under the profiler "
    "(kernels, aten ops, syncs, allocations, Python calls) and judge it against the baseline's census",
    action="store_true",
)
NO_PHASES = Opt(
    ("--no-phases",), "no_phases", "turn off phase instrumentation (to measure its overhead)", action="store_true"
)
PROFILE_STEPS = Opt(
    ("--profile-steps",),
    "profile_steps",
    "profile CUDA kernels over N steps after warm-up (evidence runs; not for baselines)",
    type=parse_count,
    default=0,
)
CALIBRATE = Opt(
    ("--calibrate",),
    "calibrate",
    "instead of the tests: A/A and --inject-slowdown (default 0.10) runs, then the minimum detectable slowdown",
    action="store_true",
)
FAIL_INCONCLUSIVE = Opt(
    ("--fail-inconclusive",),
    "fail_inconclusive",
    "inconclusive runtime verdicts fail instead of being reported",
    action="store_true",
)
REQUIRE_BASELINE = Opt(
    ("--require-baseline",), "require_baseline", "a missing baseline fails instead of skipping", action="store_true"
)
RESUME = Opt(
    ("--resume",),
    "resume",
    "continue the last session in --results-dir: its runs count, only the missing ones are made",
    action="store_true",
)

# the pytest session's interleaved comparison against a second interpreter: the interleave options under --interleave-*
INTERLEAVE_SESSION = prefixed(
    "interleave",
    (PYTHON_B, BUDGET_MINUTES, SET),
    python_b="also compare every selected case against the environment of this interpreter, interleaved on this "
    "machine (python -m harness interleave, A = this interpreter); its verdicts are the test_interleaved tests",
    budget_minutes="device minutes per case, start-up included",
)

# every option of the pytest session
SESSION = (
    GPU,
    REPEATS,
    MAX_REPEATS,
    *RUN,
    BASELINES_DIR,
    WORKLOAD,
    ORDER,
    UPDATE_BASELINES,
    CENSUS,
    INJECT_SLOWDOWN,
    INJECT_WORK,
    NO_PHASES,
    PROFILE_STEPS,
    *JUDGE,
    CALIBRATE,
    FAIL_INCONCLUSIVE,
    REQUIRE_BASELINE,
    TOTAL_BUDGET_MINUTES,
    RESUME,
    *INTERLEAVE_SESSION,
)
