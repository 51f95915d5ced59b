"""Every option of the suite, declared once and shared by the pytest plugin and the command line.

As in pytest-benchmark, an option is data (:class:`Opt`) added to either parser by :func:`add`:
``add(group.addoption, SESSION)`` in the plugin, ``add(sub.add_argument, RUN + JUDGE)`` in the CLI.
Values are validated where they are parsed, by the ``parse_*`` functions given as ``type=``, so a bad
value is one line from argparse or pytest naming the option, what is wrong and what is allowed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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

    def kwargs(self, default: Any = _UNSET, required: bool = False) -> dict[str, Any]:
        kw: dict[str, Any] = {"dest": self.dest, "help": self.help.replace("%", "%%")}  # argparse formats help with %
        default = self.default if default is _UNSET else default
        if self.action:
            kw["action"] = self.action
            if self.action == "append":
                kw.update(default=default, type=self.type)
        else:
            kw.update(type=self.type, default=default)
        if self.choices:
            kw["choices"] = self.choices
        if required:
            kw["required"] = True
            kw.pop("default", None)
        return {k: v for k, v in kw.items() if v is not None or k == "default"}


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
STEPS = Opt(("--steps",), "steps", "override max_steps for quick runs (changes the workload hash)", type=parse_positive_int)
REPEATS = Opt(("--repeats",), "repeats", "fresh-process runs per decomposition (and side)", type=parse_positive_int, default=5)
RESULTS_DIR = Opt(("--results-dir",), "results_dir", "where runs.jsonl, logs and reports go", default="perf-results")
WORKLOADS_DIR = Opt(("--workloads-dir",), "workloads_dir", "workload specs (default: workloads/ of the project)")
BASELINES_DIR = Opt(("--baselines-dir",), "baselines_dir", "baseline store (default: baselines/ of the project)")
TIMEOUT = Opt(("--timeout", "--run-timeout"), "run_timeout", "wall-clock limit per run, seconds", type=parse_positive_float, default=1800.0)
ALPHA = Opt(("--alpha",), "alpha", "override the baseline's alpha (family-wise false-alarm rate)", type=parse_alpha)
THRESHOLD = Opt(("--threshold",), "threshold", "override the practical runtime threshold (fraction: 0.05 is +5%)", type=parse_threshold)

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

# groups: what a command that makes runs needs, what a judgement needs, and the pytest session's own
RUN = (STEPS, WORKLOADS_DIR, RESULTS_DIR, TIMEOUT)
JUDGE = (ALPHA, THRESHOLD)
SESSION = (GPU, REPEATS, MAX_REPEATS, *RUN, BASELINES_DIR, WORKLOADS, ORDER, UPDATE_BASELINES, CENSUS, INJECT_SLOWDOWN, INJECT_WORK, NO_PHASES,
           PROFILE_STEPS, *JUDGE, CALIBRATE, FAIL_INCONCLUSIVE, REQUIRE_BASELINE, BUDGET_MINUTES, RESUME)
