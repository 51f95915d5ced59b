"""The options of the commands over recorded results: ``history`` (the page of the store's series), ``store``
(``add``, ``alerts``) and ``cost`` (the cost model of a census)."""

from __future__ import annotations

from harness.judging import thresholds
from harness.options import GPU, JSON, OUT, WORKLOAD, Opt, parse_alpha, parse_positive_float
from harness.store.shifts import DEFAULT_RULE

# ---- history: the page of the store's series (harness.reporting.history) ---------------------------------------------
HISTORY_SUMMARY = Opt(
    ("--summary",),
    "summary",
    'append the newest night\'s "what changed" list, as markdown, to this file '
    "(the nightly passes $GITHUB_STEP_SUMMARY)",
    metavar="FILE",
)
PAGE_URL = Opt(("--page-url",), "page_url", "the page's address, linked from --summary", default="")
CHANGE_ALPHA = Opt(
    ("--change-alpha",),
    "change_alpha",
    "false-alarm rate of the change points of one series (Holm over its candidates)",
    type=parse_alpha,
    default=thresholds.CHANGE_ALPHA,
)
PENALTY = Opt(
    ("--penalty",),
    "penalty",
    "k of the PELT penalty k * sigma^2 * log(n) on log session medians (3: modified BIC)",
    type=parse_positive_float,
    default=3.0,
)
HISTORY = (OUT, CHANGE_ALPHA, PENALTY, HISTORY_SUMMARY, PAGE_URL)

# ---- cost: the cost model of a census (harness.judging.cost_model) ---------------------------------------------------
COST = (
    Opt(
        ("--model",),
        "model",
        "model the cost of each split from the censuses and timed runs of these results dirs or baseline files",
        nargs="+",
        metavar="PATH",
    ),
    Opt(
        ("--diff",),
        "diff",
        "predict the step change from A's census to B's (results dirs or baseline files)",
        nargs=2,
        metavar=("A", "B"),
    ),
    Opt(
        ("--timing",),
        "timing",
        "with --diff: take the step times and the calibration from these instead of A",
        nargs="+",
        metavar="PATH",
    ),
    Opt(
        ("--idle-ms",),
        "idle_ms",
        "the device path's idle time per micro-batch, LO,HI in ms, measured on GPU-bound steps (default: unknown)",
    ),
)

# ---- the results store (harness.store) -------------------------------------------------------------------------------
STORE = Opt(
    ("--store",),
    "store",
    "the results store: a directory, or a git URL or repository path (branch perf-results); docs/store.md",
)
STORE_CACHE = Opt(
    ("--cache",),
    "cache",
    "where a git store's branch is cloned (default: one folder per URL under $XDG_CACHE_HOME/harness-store)",
)
TRACK = Opt(("--track",), "track", "the environment the sessions ran in, e.g. pinned or latest")
STORE_ADD = (
    TRACK,
    Opt(("--runner",), "runner", "the runner's name (default: $RUNNER_NAME)"),
    Opt(("--image",), "image", "the container image digest the sessions ran in (default: $PERF_IMAGE)"),
)
STORE_ALERTS = (
    GPU,
    TRACK,
    Opt(("--new",), "new", "only the alerts that each series' newest session raised", action="store_true"),
    JSON,
    Opt(
        ("--issues",),
        "issues",
        "also write the alerts of --gpu as a report for .github/scripts/regression-issues.sh",
        metavar="FILE",
    ),
    Opt(
        ("--false-alerts-per-year",),
        "false_alerts_per_year",
        "expected false timing alerts of one series in 365 nights",
        type=parse_positive_float,
        default=DEFAULT_RULE.alpha,
        metavar="N",
    ),
)

# ---- alert: a job's flagged cases to the team's webhook (harness.commands.alert) -------------------------------------
ALERT = (
    Opt(("--env",), "env", "the job's environment or track, e.g. pinned or latest (default: $PERF_ENV)"),
    Opt(("--run-url",), "run_url", "the run's address (default: $RUN_URL, else the GitHub Actions run's)"),
    Opt(
        ("--confirm",),
        "confirm",
        "the confirmation's report (python -m harness confirm): runtime regressions count only where it confirms a "
        "REPORT's session, as for the issues",
        metavar="FILE",
    ),
    Opt(
        ("--changes",),
        "changes",
        "work verdicts that changed count too (the latest job on a night with new releases, as for the issues)",
        action="store_true",
    ),
)

INIT = (
    WORKLOAD,
    Opt(
        ("--harness",),
        "harness",
        "the harness the workflows call (default: this installed harness's repository at its version's tag)",
        metavar="OWNER/REPO@REF",
    ),
)
