"""The options of ``bisect``: the range and where its releases come from
(:class:`harness.bisect.config.BisectConfig`)."""

from __future__ import annotations

from harness.bisect.config import STEP_BUDGET_MINUTES
from harness.options import TOTAL_BUDGET_MINUTES, Opt, parse_positive_float

GOOD = Opt(
    ("--good",),
    "good",
    "the good end: an interpreter, name==version (several: space- or comma-separated), a wheel file, "
    "or with --checkout a commit",
)
BAD = Opt(("--bad",), "bad", "the bad end, given as --good is")
BASE_PYTHON = Opt(
    ("--base-python",),
    "python",
    "the base environment the releases or commits are installed on (default: this interpreter)",
)
WHEELS = Opt(
    ("--wheels",),
    "wheels",
    "install releases from this wheel directory alone (pip --no-index --find-links), and list them from it",
    metavar="DIR",
)
INDEX_URL = Opt(("--index-url",), "index_url", "the package index to install and list releases from (default: pip's)")
NO_INDEX = Opt(
    ("--no-index",),
    "no_index",
    "install nothing from an index (offline; a checkout builds with the base's tools)",
    action="store_true",
)
MOVE_DEPS = Opt(
    ("--move-deps",),
    "move_deps",
    "let a release bring its dependencies at other versions than the base environment's "
    "(default: such a release is reported as not installable beside the others)",
    action="store_true",
)
PACKAGES = Opt(
    ("--packages",),
    "packages",
    "with interpreters as ends: try only these of the packages that moved (comma-separated), "
    "e.g. transformers,trl,peft,accelerate,datasets; the others are named in the report",
)
CHECKOUT = Opt(
    ("--checkout",),
    "checkout",
    "a git checkout of a pure-Python package: --good and --bad are commits of it",
    metavar="REPO",
)
PACKAGE = Opt(
    ("--package",), "package", "with --checkout: its distribution name, where pyproject.toml and setup.py do not say it"
)
CENSUS_ONLY = Opt(
    ("--census-only",),
    "census_only",
    "census runs only: where no count changed, say so without timing",
    action="store_true",
)
STEP_BUDGET = Opt(
    ("--step-budget-minutes",),
    "step_budget_minutes",
    "device minutes of each interleaved comparison, start-up included",
    type=parse_positive_float,
    default=STEP_BUDGET_MINUTES,
)
ENV_CACHE = Opt(
    ("--env-cache",),
    "env_cache",
    "where the environments are built and kept (default: $XDG_CACHE_HOME/harness-bisect)",
    metavar="DIR",
)
BISECT = (
    GOOD,
    BAD,
    BASE_PYTHON,
    WHEELS,
    INDEX_URL,
    NO_INDEX,
    MOVE_DEPS,
    PACKAGES,
    CHECKOUT,
    PACKAGE,
    CENSUS_ONLY,
    STEP_BUDGET,
    TOTAL_BUDGET_MINUTES,
    ENV_CACHE,
)
