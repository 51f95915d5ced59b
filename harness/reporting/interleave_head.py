"""The first lines of an interleaved comparison's report, in plain words: the verdict, the change and its interval,
the false-alarm rate the verdict was judged at (said here once), and what to do next, read from the report's verdict as
a :class:`harness.results.verdict.Verdict`. The statistics behind them are the report's details
(:mod:`harness.reporting.interleave`)."""

from __future__ import annotations

from harness.judging.comparison_settings import ComparisonSettings
from harness.results.verdict import Verdict

WORDS = {"regression": "REGRESSION", "pass": "pass", "improvement": "improvement", "inconclusive": "inconclusive"}


def signed(x: float) -> str:
    """A relative change in percent with its sign: ``+8.1%``, ``-1.2%``."""
    return f"{x * 100:+.1f}%"


def change_text(v: Verdict) -> str:
    """``B takes 8.1% longer per step than A (90% interval +5.0% to +11.0%)``: the change and its interval, whose level
    is the verdict's (each end a one-sided bound at the α per look)."""
    r, (lo, hi) = v.ratio, v.interval
    how = f"{(r - 1) * 100:.1f}% longer" if r >= 1 else f"{(1 - r) * 100:.1f}% less time"
    level = f"{(1 - 2 * v.alpha) * 100:.4g}%"
    return f"B takes {how} per step than A ({level} interval {signed(lo - 1)} to {signed(hi - 1)})"


def reading(v: Verdict) -> str:
    """What the interval says against the threshold, by outcome."""
    t = f"{v.details['threshold']:.1%}"
    if v.outcome == "regression":
        return f"slower by more than the {t} threshold"
    if v.outcome == "improvement":
        return f"faster by more than the {t} threshold"
    if v.outcome == "pass":
        return f"not slower by more than the {t} threshold"
    if v.details.get("df", 1) < 1:
        return "too few launches with pairs to decide"
    return f"the interval reaches past the {t} threshold, so it neither passes nor fails"


def judged_text(v: Verdict, launches: int) -> str:
    """The one place the verdict's α is said: the family-wise rate, split over the planned looks."""
    looks = v.details.get("looks") or 1
    split = f", split over {looks} looks" if looks > 1 else ""
    return (
        f"judged on {v.details['pairs']} pairs in {launches} launch(es), "
        f"at a false-alarm rate of α {v.details.get('alpha_total', v.alpha):g}{split}"
    )


def is_aa(s: ComparisonSettings) -> bool:
    """Both sides one environment, one decomposition, nothing injected: an A/A comparison, which should find no
    change."""
    return (
        s.python_a == s.python_b
        and (s.decomposition_b or s.decomposition) == s.decomposition
        and not s.inject_slowdown_b
        and not s.inject_work_b
    )


def injected(s: ComparisonSettings) -> bool:
    return bool(s.inject_slowdown_b or s.inject_work_b)


def rerun_text(s: ComparisonSettings) -> str:
    budget = s.budget_minutes
    return (
        f"rerun with --budget-minutes {2 * budget:g} (this run had {budget:g})"
        if budget
        else "rerun with a larger --budget-minutes"
    )


def next_step(r: dict) -> str:
    """What to do next, in plain words, from the outcome and the kind of comparison."""
    s, v = ComparisonSettings.from_json(r["settings"]), Verdict.from_json(r.get("verdict"))
    if v is None:
        return f"next: {rerun_text(s)}: the comparison stopped before it had 2 complete pairs"
    out, aa = v.outcome, is_aa(s)
    if aa and drifted(v):
        return f"next: {AA_DRIFT}"
    if out == "inconclusive":
        return f"next: {rerun_text(s)}; more launches narrow the interval"
    if aa:
        return "next: nothing to do: the machine is steady enough for a comparison of this size"
    if injected(s):
        return (
            "next: nothing to do: the injected slowdown was found"
            if out == "regression"
            else f"next: the injected slowdown was missed; {rerun_text(s)} and compare the plan below"
        )
    if out == "regression":
        return (
            "next: B's environment is slower on this machine: see where the step moved (below), "
            "and find the release that did it with `python -m harness bisect`"
        )
    if out == "improvement":
        return (
            "next: nothing to fix; if the speed-up is unexpected, "
            "check that both sides do the same work (`python -m harness census`)"
        )
    return "next: nothing to do"


def drifted(v: Verdict) -> bool:
    """The interval excludes 1.0: the two sides differ by more than the noise."""
    lo, hi = v.interval
    return lo > 1 or hi < 1


# an A/A whose interval excludes 1.0: what it means and what to do
AA_DRIFT = (
    "A and B are one environment, yet the interval excludes no change: they differ by more than the noise, "
    "so the machine drifted during the run or the order of A and B matters; "
    "rerun it, and trust no comparison on this machine until an A/A's "
    "interval includes no change (the other load and the clocks below may say why)"
)


def head_lines(r: dict) -> list[str]:
    """The report's first lines: the verdict with the change and its interval, how it was judged, and the next step (for
    an A/A whose interval excludes 1.0, what that means)."""
    v = Verdict.from_json(r.get("verdict"))
    if v is None:
        head = f"no verdict: {r.get('pairs', 0)} complete pair(s); at least 2 are needed" + (
            f" ({r['stopped']})" if r.get("stopped") else ""
        )
        return [head, next_step(r)]
    return [
        f"{WORDS.get(v.outcome, v.outcome)}: {change_text(v)}: {reading(v)}",
        judged_text(v, len(r.get("launch_sizes") or [])),
        next_step(r),
    ]
