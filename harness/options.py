"""Every option of the suite, declared once and shared by the pytest plugin and the command line.

As in pytest-benchmark, an option is data (:class:`Opt`) added to either parser by :func:`add`:
``add(group.addoption, SESSION)`` in the plugin, ``add(sub.add_argument, RUN + JUDGE)`` in the CLI.
Values are validated where they are parsed, by the ``parse_*`` functions given as ``type=``, so a bad
value is one line from argparse or pytest naming the option, what is wrong and what is allowed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bisect.config import STEP_BUDGET_MINUTES
from harness.judging.thresholds import CHANGE_ALPHA
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.sidebyside.config import DEFAULT_BUDGET_MINUTES, cpu_list, defaults_text
from harness.store.shifts import DEFAULT_RULE


def _parser(name: str, convert: Callable[[str], Any], ok: Callable[[Any], bool], expected: str, rule: str) -> Callable[[str], Any]:
    """An argparse ``type=``: ``convert`` the text, then check it with ``ok``; each failure is one line."""
    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"{rule}, got {text}")
        return v

    parse.__name__ = name
    return parse


parse_positive_int = _parser("parse_positive_int", int, lambda v: v >= 1, "a whole number >= 1", "must be >= 1")
parse_count = _parser("parse_count", int, lambda v: v >= 0, "a whole number >= 0", "must be >= 0")
parse_positive_float = _parser("parse_positive_float", float, lambda v: v > 0, "a number > 0", "must be positive")
parse_slowdown = _parser("parse_slowdown", float, lambda v: 0 <= v < 10, "a fraction such as 0.1 (10%)", "must be a fraction in [0, 10)")
parse_alpha = _parser("parse_alpha", float, lambda v: 0 < v < 0.5, "a probability such as 0.05", "must be in (0, 0.5)")
parse_threshold = _parser("parse_threshold", float, lambda v: 0 <= v < 1, "a fraction such as 0.05 (5%)", "must be a fraction in [0, 1)")



parse_cpus = _parser("parse_cpus", lambda t: list(cpu_list(t)), lambda v: bool(v) and min(v) >= 0, "a CPU list such as 0 or 2-3,6", "must name CPUs >= 0")


# ---- the project: where the relative defaults (workloads/, baselines/, perf-results/...) live ----------------------
ROOT_ENV = "HARNESS_ROOT"


def project_root() -> Path:
    """The project of the relative defaults: ``$HARNESS_ROOT`` if set; else the current directory if it holds
    workloads/ (a project laid out like this one); else the checkout this package runs from (the directory above
    ``harness/`` that holds pyproject.toml and workloads/); else the current directory."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV]).expanduser().resolve()
    here = Path.cwd()
    if (here / "workloads").is_dir():
        return here
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "workloads").is_dir():
        return checkout
    return here


class InProject(str):
    """A default path relative to :func:`project_root`; a path the user types stays relative to the current directory.
    argparse keeps a default of an option without ``type=`` as it is, so the path options here have none."""


def in_project(path: str | Path) -> Path:
    """``path`` as the command uses it: an :class:`InProject` default under the project root, any other path as given."""
    return project_root() / path if isinstance(path, InProject) else Path(path)


_UNSET = object()


@dataclass(frozen=True)
class Opt:
    flags: tuple[str, ...]
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    action: str | None = None
    choices: tuple[str, ...] | None = None
    hidden: bool = False  # test-only: accepted, kept out of --help
    nargs: int | str | None = None
    metavar: str | tuple[str, ...] | None = None

    def kwargs(self, default: Any = _UNSET, required: bool = False) -> dict[str, Any]:
        default = self.default if default is _UNSET else default
        text = self.help.replace("%", "%%")  # argparse formats help with %
        if default not in (None, False) and self.action != "append":
            text += " (default: %(default)s)"
        kw: dict[str, Any] = {"dest": self.dest, "help": argparse.SUPPRESS if self.hidden else text}
        if self.action:
            kw["action"] = self.action
            if self.action == "append":
                kw.update(default=default, type=self.type)
        else:
            kw.update(type=self.type, default=default)
        if self.choices:
            kw["choices"] = self.choices
        if self.nargs is not None:
            kw["nargs"] = self.nargs
        if self.metavar is not None:
            kw["metavar"] = self.metavar
        if required:
            kw["required"] = True
            kw.pop("default", None)
        return {k: v for k, v in kw.items() if v is not None or k == "default"}


def prefixed(prefix: str, opts: tuple[Opt, ...], **help_for: str) -> tuple[Opt, ...]:
    """The same options under a prefix (pytest-benchmark's ``add_*_options(addoption, prefix=...)``): ``--block-steps``
    becomes ``--interleave-block-steps``, dest ``interleave_block_steps``; ``help_for`` replaces a help text by dest."""
    return tuple(Opt(tuple(f"--{prefix}-{f[2:]}" for f in o.flags), f"{prefix.replace('-', '_')}_{o.dest}", help_for.get(o.dest, o.help), o.type,
                     o.default, o.action, o.choices, o.hidden, o.nargs, o.metavar) for o in opts)


def add(add_option: Callable[..., Any], opts: tuple[Opt, ...], defaults: dict[str, Any] | None = None,
        required: tuple[str, ...] = ()) -> None:
    """Add ``opts`` with ``add_option`` (argparse's ``add_argument`` or pytest's ``group.addoption``).

    ``defaults`` overrides an option's default by dest; ``required`` lists dests that must be given (CLI).
    A flag that another plugin already owns (pytest-timeout's ``--timeout``) is dropped, its other flags kept.
    """
    defaults = defaults or {}
    for o in opts:
        kw = o.kwargs(defaults.get(o.dest, _UNSET), o.dest in required)
        try:
            add_option(*o.flags, **kw)
        except (ValueError, argparse.ArgumentError):
            if len(o.flags) < 2:
                raise
            add_option(*o.flags[1:], **kw)


# ---- the options ---------------------------------------------------------------------------------
GPU = Opt(("--gpu",), "gpu", "short GPU name (t4, l4, a10, a100, h100, h200, ...), 'auto' (detect) or 'cpu'", default="auto")
WORKLOAD = Opt(("--workload",), "workload", "a workload by name (workloads/NAME.toml)")
WORKLOADS = Opt(("--workload",), "workload", "run this workload (repeatable); default: those for the device", action="append")
DECOMPOSITIONS = Opt(("--decomposition",), "decomposition", "only these decompositions (repeatable); default all", action="append")
STEPS = Opt(("--steps",), "steps", "override max_steps for quick runs (changes the workload hash)", type=parse_positive_int)
REPEATS = Opt(("--repeats",), "repeats", "fresh-process runs per decomposition (and side); 0 with --census: census runs only", type=parse_count,
              default=5)
RESULTS_DIR = Opt(("--results-dir",), "results_dir", "where runs.jsonl, logs and reports go", default="perf-results")
WORKLOADS_DIR = Opt(("--workloads-dir",), "workloads_dir", "workload specs")
BASELINES_DIR = Opt(("--baselines-dir",), "baselines_dir", "baseline store (default: baselines/ of the project)")
TIMEOUT = Opt(("--timeout", "--run-timeout"), "run_timeout", "wall-clock limit per run, seconds", type=parse_positive_float, default=RUN_TIMEOUT_S)
ALPHA = Opt(("--alpha",), "alpha", "family-wise false-alarm rate (default: the baseline's; for an interleaved comparison the GPU's)", type=parse_alpha)
THRESHOLD = Opt(("--threshold",), "threshold", "practical runtime threshold, a fraction: 0.05 is +5% (default: the baseline's; +2% for an interleaved comparison)", type=parse_threshold)

MAX_REPEATS = Opt(("--max-repeats",), "max_repeats", "run more repeats of inconclusive cases, up to this many (alpha is split over the looks)",
                  type=parse_positive_int)
ORDER = Opt(("--order",), "order", "run order of decompositions within a round", default="interleaved", choices=("interleaved", "reversed"))
UPDATE_BASELINES = Opt(("--update-baselines",), "update_baselines", "record this session's runs as the new baseline for this GPU", action="store_true")
INJECT_SLOWDOWN = Opt(("--inject-slowdown",), "inject_slowdown", "sleep this fraction of each step's time (sensitivity self-check)",
                      type=parse_slowdown, default=0.0)
INJECT_WORK = Opt(("--inject-work",), "inject_work", "test-only: N extra casts per LoRA layer forward (a regression made of real work)",
                  type=parse_count, default=0)
CENSUS = Opt(("--census",), "census", "after the timed runs, one census run per case: count its work per step under the profiler "
             "(kernels, aten ops, syncs, allocations, Python calls) and judge it against the baseline's census", action="store_true")
NO_PHASES = Opt(("--no-phases",), "no_phases", "turn off phase instrumentation (to measure its overhead)", action="store_true")
PROFILE_STEPS = Opt(("--profile-steps",), "profile_steps", "profile CUDA kernels over N steps after warm-up (evidence runs; not for baselines)",
                    type=parse_count, default=0)
CALIBRATE = Opt(("--calibrate",), "calibrate", "instead of the tests: A/A and --inject-slowdown (default 0.10) runs, then the minimum detectable slowdown",
                action="store_true")
FAIL_INCONCLUSIVE = Opt(("--fail-inconclusive",), "fail_inconclusive", "inconclusive runtime verdicts fail instead of being reported", action="store_true")
REQUIRE_BASELINE = Opt(("--require-baseline",), "require_baseline", "a missing baseline fails instead of skipping", action="store_true")
BUDGET_MINUTES = Opt(("--budget-minutes",), "budget_minutes", "start no run that would end past this many minutes (estimated from the case's slowest "
                     "run, else the session's, else the baseline's train_runtime); the rest is left for --resume", type=parse_positive_float)
RESUME = Opt(("--resume",), "resume", "continue the last session in --results-dir: its runs count, only the missing ones are made", action="store_true")

HISTORY_OUT = Opt(("--out",), "out_dir", "folder of the page: index.html (data embedded as JSON), method.html, history.json and "
                  "the page's script, style and charting library", default="perf-history")
HISTORY_SUMMARY = Opt(("--summary",), "summary", "append the newest night's \"what changed\" list, as markdown, to this file "
                      "(the nightly passes $GITHUB_STEP_SUMMARY)", metavar="FILE")
PAGE_URL = Opt(("--page-url",), "page_url", "the page's address, linked from --summary", default="")
CHANGE_ALPHA = Opt(("--alpha",), "alpha", "false-alarm rate of the change points of one series (Holm over its candidates)",
                   type=parse_alpha, default=CHANGE_ALPHA)
PENALTY = Opt(("--penalty",), "penalty", "k of the PELT penalty k * sigma^2 * log(n) on log session medians (3: modified BIC)",
              type=parse_positive_float, default=3.0)
# interleave: A against B on this machine, block-interleaved (harness.sidebyside.run); every other setting is a field of
# harness.sidebyside.config.ComparisonConfig, set with --set key=value
DECOMPOSITION = Opt(("--decomposition",), "decomposition", "the decomposition to compare, e.g. 4x1")
PYTHON_A = Opt(("--python-a",), "python_a", "interpreter (environment) of side A (default: this one)")
PYTHON_B = Opt(("--python-b",), "python_b", "interpreter (environment) of side B (default: this one)")
PAIR_BUDGET_MINUTES = Opt(("--budget-minutes",), "budget_minutes", "device minutes per comparison, start-up included; the number of "
                          "launches follows from it", type=parse_positive_float, default=DEFAULT_BUDGET_MINUTES)
SET = Opt(("--set",), "set", "a research knob as key=value (repeatable); the defaults: " + defaults_text(), action="append")
SKIP_SAME_VERSIONS = Opt(("--skip-same-versions",), "skip_same_versions", "make no runs when A and B have the same python and library versions "
                         "(nightly: no new release)", action="store_true")
INJECT_SLOWDOWN_B = Opt(("--inject-slowdown-b",), "inject_slowdown_b", "test-only", type=parse_slowdown, default=0.0, hidden=True)
INJECT_WORK_B = Opt(("--inject-work-b",), "inject_work_b", "test-only", type=parse_count, default=0, hidden=True)
INJECT_WORK_B_PERCENT = Opt(("--inject-work-b-percent",), "inject_work_b_percent", "test-only", type=parse_positive_float, default=0.0, hidden=True)
COMPARISON = (PYTHON_A, PYTHON_B, PAIR_BUDGET_MINUTES, SET, INJECT_SLOWDOWN_B, INJECT_WORK_B, INJECT_WORK_B_PERCENT)
INTERLEAVE = (DECOMPOSITION, *COMPARISON, SKIP_SAME_VERSIONS)
CPUS = Opt(("--cpus",), "cpus", "pin the resident workers to these CPUs (e.g. 0 or 2-3) (default: not pinned)", type=parse_cpus)
FALLBACK_REPEATS = Opt(("--fallback-repeats",), "fallback_repeats", "when A and B do not fit on the device at once: fresh-process runs "
                       "per side instead", type=parse_positive_int, default=5)


def comparison_config(values: dict[str, Any], **fixed: Any):
    """The :class:`~harness.sidebyside.config.ComparisonConfig` of parsed options (``values`` by dest, ``--set`` items under
    ``set``) and ``fixed`` fields; a bad combination raises ValueError with one line."""
    from harness.sidebyside.config import ComparisonConfig, parse_sets

    direct = ("gpu", "python_a", "python_b", "budget_minutes", "alpha", "threshold", "skip_same_versions", "workloads_dir", "results_dir",
              "run_timeout", "inject_slowdown_b", "inject_work_b", "inject_work_b_percent")
    fields_ = {k: values[k] for k in direct if values.get(k) is not None}
    return ComparisonConfig(**{**fields_, **parse_sets(values.get("set")), **fixed})


# the other commands' own options
MIN_REPEATS = Opt(("--min-repeats",), "min_repeats", "fewest runs per decomposition a baseline may be recorded from", type=parse_positive_int, default=5)
NOTE = Opt(("--note",), "note", "a note stored with the baseline (why it was recorded)", default="")
MARKDOWN = Opt(("--markdown",), "markdown", "also write the Markdown report here")
ALLOW_GPU_MISMATCH = Opt(("--allow-gpu-mismatch",), "allow_gpu_mismatch", "judge runs of another GPU than the baseline's", action="store_true")
BASELINE_DIRS = Opt(("--baseline",), "baseline", "results dir(s) to use as the baseline instead of baselines/")
REPORT_OUT = Opt(("--out",), "out", "folder of the report (default: the first results dir)")
MICRO = Opt(("--micro",), "micro", "instead: time one mark and one hook pair here and report their share of steps of these lengths, "
            "as DECOMP=MS,...")
OVERHEAD_DECOMPOSITION = Opt(("--decomposition",), "decomposition", "the decomposition whose phases are measured on and off")
OVERHEAD_PAIRS = Opt(("--pairs",), "pairs", "pairs of runs (phases on, phases off)", type=parse_positive_int, default=5)
SLOWDOWN = Opt(("--slowdown",), "slowdown", "the injected slowdown the calibration must detect", type=parse_slowdown, default=0.10)
PYTHON = Opt(("--python",), "python", "interpreter (environment) to run the workers with (default: this one)")
AB_PYTHON_B = Opt(("--python-b",), "python_b", "interpreter (environment) of side B, e.g. .tox/latest/bin/python")
AB_INJECT_SLOWDOWN_B = Opt(("--inject-slowdown-b",), "inject_slowdown_b", "sensitivity self-check: slow side B by this fraction",
                           type=parse_slowdown, default=0.0)
AB = (PYTHON_A, AB_PYTHON_B, AB_INJECT_SLOWDOWN_B, SKIP_SAME_VERSIONS)


# advise: the fastest split of an effective batch on this device (harness.workflows.advise)
EFFECTIVE = Opt(("--effective",), "effective", "effective batch to split (default: the workload's)", type=parse_positive_int)
ADVISE_BUDGET = Opt(("--budget-minutes",), "budget_minutes", "device minutes for the whole advice, probes included; the comparisons share "
                    "what the probes leave", type=parse_positive_float, default=10.0)
PROBE_STEPS = Opt(("--probe-steps",), "probe_steps", "timed steps of each fit probe (m x 1) after the warm-up", type=parse_positive_int, default=3)
BLOCK_SECONDS = Opt(("--block-seconds",), "block_seconds", "length of a block in the comparisons, in seconds of the slower split's steps "
                    "(k = ceil(this / its probe step), at least 1)", type=parse_positive_float, default=0.8)
ADVISE_PAIRS = Opt(("--pairs",), "pairs", "pairs of blocks per comparison at most", type=parse_positive_int, default=200)
ADVISE_LAUNCHES = Opt(("--launches",), "launches", "launches per comparison", type=parse_positive_int, default=2)
NO_CENSUS = Opt(("--no-census",), "no_census", "no census window in the probes (no diagnosis column)", action="store_true")
SCREEN = Opt(("--screen",), "screen", "splits whose probe-estimated step is more than this many times the fastest's are called slower "
             "without an interleaved comparison", type=parse_positive_float, default=1.5)
MEMORY_LIMIT_MICRO = Opt(("--inject-memory-limit-micro",), "memory_limit_micro", "test-only: splits with a larger micro-batch run out of "
                         "memory at their first step", type=parse_positive_int)
ADVISE = (EFFECTIVE, ADVISE_BUDGET, PROBE_STEPS, BLOCK_SECONDS, ADVISE_PAIRS, ADVISE_LAUNCHES, NO_CENSUS, SCREEN, CPUS, MEMORY_LIMIT_MICRO)

# confirm: each runtime regression of a report re-measured interleaved (harness.workflows.confirm)
CONFIRM = COMPARISON

# the pytest session's interleaved comparison against a second interpreter: the interleave options under --interleave-*
INTERLEAVE_SESSION = prefixed("interleave", (PYTHON_B, PAIR_BUDGET_MINUTES, SET),
                              python_b="also compare every selected case against the environment of this interpreter, interleaved on this "
                              "machine (python -m harness interleave, A = this interpreter); its verdicts are the test_interleaved tests",
                              budget_minutes="device minutes per case, start-up included")

# groups: what a command that makes runs needs, what a judgement needs, and the pytest session's own
RUN = (STEPS, WORKLOADS_DIR, RESULTS_DIR, TIMEOUT)
JUDGE = (ALPHA, THRESHOLD)
SESSION = (GPU, REPEATS, MAX_REPEATS, *RUN, BASELINES_DIR, WORKLOADS, ORDER, UPDATE_BASELINES, CENSUS, INJECT_SLOWDOWN, INJECT_WORK, NO_PHASES,
           PROFILE_STEPS, *JUDGE, CALIBRATE, FAIL_INCONCLUSIVE, REQUIRE_BASELINE, BUDGET_MINUTES, RESUME, *INTERLEAVE_SESSION)
HISTORY = (HISTORY_OUT, CHANGE_ALPHA, PENALTY, HISTORY_SUMMARY, PAGE_URL)


# ---- bisect: the range and where its releases come from (harness.bisect.config.BisectConfig) ------------------------
GOOD = Opt(("--good",), "good", "the good end: an interpreter, name==version (several: space- or comma-separated), a wheel file, "
           "or with --checkout a commit")
BAD = Opt(("--bad",), "bad", "the bad end, given as --good is")
BASE_PYTHON = Opt(("--python",), "python", "the base environment the releases or commits are installed on (default: this interpreter)")
WHEELS = Opt(("--wheels",), "wheels", "install releases from this wheel directory alone (pip --no-index --find-links), and list "
             "them from it", metavar="DIR")
INDEX_URL = Opt(("--index-url",), "index_url", "the package index to install and list releases from (default: pip's)")
NO_INDEX = Opt(("--no-index",), "no_index", "install nothing from an index (offline; a checkout builds with the base's tools)",
               action="store_true")
MOVE_DEPS = Opt(("--move-deps",), "move_deps", "let a release bring its dependencies at other versions than the base environment's "
                "(default: such a release is reported as not installable beside the others)", action="store_true")
PACKAGES = Opt(("--packages",), "packages", "with interpreters as ends: try only these of the packages that moved (comma-separated), "
               "e.g. transformers,trl,peft,accelerate,datasets; the others are named in the report")
CHECKOUT = Opt(("--checkout",), "checkout", "a git checkout of a pure-Python package: --good and --bad are commits of it", metavar="REPO")
PACKAGE = Opt(("--package",), "package", "with --checkout: its distribution name, where pyproject.toml and setup.py do not say it")
CENSUS_ONLY = Opt(("--census-only",), "census_only", "census runs only: where no count changed, say so without timing", action="store_true")
STEP_BUDGET = Opt(("--step-budget-minutes",), "step_budget_minutes", "device minutes of each interleaved comparison, start-up included",
                  type=parse_positive_float, default=STEP_BUDGET_MINUTES)
BISECT_BUDGET = Opt(("--budget-minutes",), "budget_minutes", "device minutes of the whole bisection: no step is started that would "
                    "end past them, and the answer is the range left (default: no limit)", type=parse_positive_float)
ENV_CACHE = Opt(("--env-cache",), "env_cache", "where the environments are built and kept (default: $XDG_CACHE_HOME/harness-bisect)",
                metavar="DIR")
BISECT = (GOOD, BAD, BASE_PYTHON, WHEELS, INDEX_URL, NO_INDEX, MOVE_DEPS, PACKAGES, CHECKOUT, PACKAGE, CENSUS_ONLY, STEP_BUDGET,
          BISECT_BUDGET, ENV_CACHE)

# ---- cost: the cost model of a census (harness.judging.cost_model) ------------------------------------------------------
COST = (Opt(("--census",), "census", "results dirs or baseline files whose censuses and timed runs to model", nargs="+", metavar="PATH"),
        Opt(("--diff",), "diff", "predict the step change from A's census to B's (results dirs or baseline files)", nargs=2,
            metavar=("A", "B")),
        Opt(("--timing",), "timing", "with --diff: take the step times and the calibration from these instead of A", nargs="+",
            metavar="PATH"),
        Opt(("--idle-ms",), "idle_ms", "the device path's idle time per micro-batch, LO,HI in ms, measured on GPU-bound steps "
            "(default: unknown)"))

# ---- the results store (harness.store) and doctor ---------------------------------------------------------------------
STORE = Opt(("--store",), "store", "the results store: a directory, or a git URL or repository path (branch perf-results); docs/store.md")
STORE_CACHE = Opt(("--cache",), "cache", "where a git store's branch is cloned (default: one folder per URL under "
                  "$XDG_CACHE_HOME/harness-store)")
STORE_ADD = (Opt(("--track",), "track", "the environment the sessions ran in, e.g. pinned or latest (default: none)", default=""),
             Opt(("--runner",), "runner", "the runner's name (default: $RUNNER_NAME)"),
             Opt(("--image",), "image", "the container image digest the sessions ran in (default: $PERF_IMAGE)"))
STORE_ALERTS = (Opt(("--gpu",), "gpu", "only this GPU's sessions"), Opt(("--track",), "track", "only this track's sessions"),
                Opt(("--new",), "new", "only the alerts that each series' newest session raised", action="store_true"),
                Opt(("--json",), "json", "alerts and notes as JSON", action="store_true"),
                Opt(("--issues",), "issues", "also write the alerts of --gpu as a report for .github/scripts/regression-issues.sh",
                    metavar="FILE"),
                Opt(("--alpha",), "alpha", "expected false timing alerts of one series in 365 nights", type=float,
                    default=DEFAULT_RULE.alpha))
REPORT_BASELINE = Opt(("--baseline",), "baseline", BASELINE_DIRS.help, nargs="*")
DOCTOR_JSON = Opt(("--json",), "json", "the same facts as JSON", action="store_true")


def here(a, this_machine: bool = True):
    """The parsed options as a command uses them, checked before it makes any run: relative default paths are the
    project's (:func:`harness.options.in_project`); ``--gpu auto`` is the detected device, and for a command that makes
    runs here (``this_machine``) another name must be it (or ``cpu``), as in the pytest plugin."""
    from harness.measuring.env import detect_gpu, resolve_gpu

    for key in ("workloads_dir", "results_dir", "baselines_dir"):
        if getattr(a, key, None) is not None:
            setattr(a, key, str(in_project(getattr(a, key))))
    if getattr(a, "gpu", None):
        detected = detect_gpu()
        a.gpu = resolve_gpu(a.gpu, detected) if this_machine else (detected if a.gpu.lower() == "auto" else a.gpu.lower())
    return a
