"""The option type and the options several commands share, declared once for the pytest plugin and the command line.

As in pytest-benchmark, an option is data (:class:`Opt`) added to either parser by :func:`add`:
``add(group.addoption, SESSION)`` in the plugin, ``add(sub.add_argument, RUN + JUDGE)`` in the CLI.
Values are validated where they are parsed, by the ``parse_*`` functions given as ``type=``, so a bad
value is one line from argparse or pytest naming the option, what is wrong and what is allowed.
The options of one family live beside this module: the pytest session's in :mod:`harness.options_session`,
the interleaved comparisons' in :mod:`harness.options_comparison`, bisect's in :mod:`harness.options_bisect`
and those of the commands over recorded results in :mod:`harness.options_results`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.sidebyside.config import cpu_list
from harness.spec_folder import ROOT_ENV as ROOT_ENV
from harness.spec_folder import project_root


def _parser(
    name: str, convert: Callable[[str], Any], ok: Callable[[Any], bool], expected: str, rule: str
) -> Callable[[str], Any]:
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
parse_slowdown = _parser(
    "parse_slowdown", float, lambda v: 0 <= v < 10, "a fraction such as 0.1 (10%)", "must be a fraction in [0, 10)"
)
parse_alpha = _parser("parse_alpha", float, lambda v: 0 < v < 0.5, "a probability such as 0.05", "must be in (0, 0.5)")
parse_threshold = _parser(
    "parse_threshold", float, lambda v: 0 <= v < 1, "a fraction such as 0.05 (5%)", "must be a fraction in [0, 1)"
)


parse_cpus = _parser(
    "parse_cpus",
    lambda t: list(cpu_list(t)),
    lambda v: bool(v) and min(v) >= 0,
    "a CPU list such as 0 or 2-3,6",
    "must name CPUs >= 0",
)


# ---- the project: where the relative defaults (workloads/, baselines/, perf-results/...) live ------------------------
# (:func:`harness.spec_folder.project_root`, which the library's defaults share)
class InProject(str):
    """A default path relative to :func:`project_root`; a path the user types stays relative to the current directory.
    argparse keeps a default of an option without ``type=`` as it is, so the path options here have none."""


def in_project(path: str | Path) -> Path:
    """``path`` as the command uses it: an :class:`InProject` default under the project root, any other path as
    given."""
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
    return tuple(
        Opt(
            tuple(f"--{prefix}-{f[2:]}" for f in o.flags),
            f"{prefix.replace('-', '_')}_{o.dest}",
            help_for.get(o.dest, o.help),
            o.type,
            o.default,
            o.action,
            o.choices,
            o.hidden,
            o.nargs,
            o.metavar,
        )
        for o in opts
    )


def add(
    add_option: Callable[..., Any],
    opts: tuple[Opt, ...],
    defaults: dict[str, Any] | None = None,
    required: tuple[str, ...] = (),
) -> None:
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


# ---- the options that several commands share -------------------------------------------------------------------------
GPU = Opt(
    ("--gpu",), "gpu", "short GPU name (t4, l4, a10, a100, h100, h200, ...), 'auto' (detect) or 'cpu'", default="auto"
)
# --workload and --decomposition are repeatable everywhere; a command that takes one refuses a second (:func:`single`)
WORKLOAD = Opt(
    ("--workload",),
    "workload",
    "a workload by name (workloads/NAME.toml); repeatable where the command takes several, which then default to "
    "those for the device",
    action="append",
)
DECOMPOSITION = Opt(
    ("--decomposition",),
    "decomposition",
    "a decomposition (micro-batch x grad-accum split) by name, e.g. 4x1; repeatable where the command takes several, "
    "which then default to all of the workload's",
    action="append",
)
STEPS = Opt(
    ("--steps",), "steps", "override max_steps for quick runs (changes the workload hash)", type=parse_positive_int
)
REPEATS = Opt(
    ("--repeats",),
    "repeats",
    "fresh-process runs per decomposition (and side); 0 with --census: census runs only",
    type=parse_count,
    default=5,
)
RESULTS_DIR = Opt(("--results-dir",), "results_dir", "where runs.jsonl, logs and reports go", default="perf-results")
WORKLOADS_DIR = Opt(("--workloads-dir",), "workloads_dir", "workload specs")
BASELINES_DIR = Opt(("--baselines-dir",), "baselines_dir", "baseline store (default: baselines/ of the project)")
TIMEOUT = Opt(
    ("--timeout", "--run-timeout"),
    "run_timeout",
    "wall-clock limit per run, seconds",
    type=parse_positive_float,
    default=RUN_TIMEOUT_S,
)
ALPHA = Opt(
    ("--alpha",),
    "alpha",
    "family-wise false-alarm rate (default: the baseline's; for an interleaved comparison the GPU's)",
    type=parse_alpha,
)
TOTAL_BUDGET_MINUTES = Opt(
    ("--total-budget-minutes",),
    "total_budget_minutes",
    "device minutes for the whole command: no run, probe or comparison is started that would end past them, and what "
    "is left is reported (a pytest session's is finished with --resume)",
    type=parse_positive_float,
)
THRESHOLD = Opt(
    ("--threshold",),
    "threshold",
    "practical runtime threshold, a fraction: 0.05 is +5% (default: the baseline's; +2% for an interleaved comparison)",
    type=parse_threshold,
)
INJECT_WORK = Opt(
    ("--inject-work",),
    "inject_work",
    "test-only: N extra casts per LoRA layer forward (a regression made of real work)",
    type=parse_count,
    default=0,
)

# the own options of baseline, compare, report, overhead, calibrate, census and doctor
MIN_REPEATS = Opt(
    ("--min-repeats",),
    "min_repeats",
    "fewest runs per decomposition a baseline may be recorded from",
    type=parse_positive_int,
    default=5,
)
NOTE = Opt(("--note",), "note", "a note stored with the baseline (why it was recorded)", default="")
MARKDOWN = Opt(("--markdown",), "markdown", "also write the Markdown report here")
ALLOW_GPU_MISMATCH = Opt(
    ("--allow-gpu-mismatch",),
    "allow_gpu_mismatch",
    "judge runs of another GPU than the baseline's",
    action="store_true",
)
BASELINE_DIRS = Opt(("--baseline",), "baseline", "results dir(s) to use as the baseline instead of baselines/")
OUT = Opt(("--out",), "out", "the folder the command writes its report or page to")
MICRO = Opt(
    ("--micro",),
    "micro",
    "instead: time one mark and one hook pair here and report their share of steps of these lengths, as DECOMP=MS,...",
)
SLOWDOWN = Opt(
    ("--slowdown",), "slowdown", "the injected slowdown the calibration must detect", type=parse_slowdown, default=0.10
)
PYTHON = Opt(("--python",), "python", "interpreter (environment) to run the workers with (default: this one)")
REPORT_BASELINE = Opt(("--baseline",), "baseline", BASELINE_DIRS.help, nargs="*")
JSON = Opt(("--json",), "json", "print the output as JSON instead of text", action="store_true")

# groups: what a command that makes runs needs, and what a judgement needs
RUN = (STEPS, WORKLOADS_DIR, RESULTS_DIR, TIMEOUT)
JUDGE = (ALPHA, THRESHOLD)


def single(a, dests: tuple[str, ...]):
    """The parsed options of a command that takes one of each of ``dests`` (repeatable options such as --workload):
    each list becomes its one value, None when not given; a second value is refused in one line."""
    for dest in dests:
        values = getattr(a, dest, None)
        if not isinstance(values, list):
            continue
        if len(values) > 1:
            flag = "--" + dest.replace("_", "-")
            raise UsageError(f"{flag} given {len(values)} times ({', '.join(values)}); this command takes one {flag}")
        setattr(a, dest, values[0] if values else None)
    return a


def folders(a):
    """The parsed options with their relative default paths the project's (:func:`harness.options.in_project`)."""
    for key in ("workloads_dir", "results_dir", "baselines_dir"):
        if getattr(a, key, None) is not None:
            setattr(a, key, str(in_project(getattr(a, key))))
    return a


def here(a, this_machine: bool = True):
    """The parsed options as a command uses them, checked before it makes any run: relative default paths are the
    project's (:func:`folders`); ``--gpu auto`` is the detected device, and for a command that makes runs here
    (``this_machine``) another name must be it (or ``cpu``), as in the pytest plugin (:func:`harness.api.here`).
    A command that calls an API function which resolves the GPU itself takes :func:`folders` alone."""
    from harness import api
    from harness.measuring.env import detect_gpu

    folders(a)
    if getattr(a, "gpu", None):
        if this_machine:
            a.gpu = api.here(a.gpu)
        else:
            a.gpu = detect_gpu() if a.gpu.lower() == "auto" else a.gpu.lower()
    return a
