"""Where the census windows fall in a run: the op window starts after the warm-up, rounded up to whole logging
periods, and counts whole logging periods; the Python-calls window follows it. :func:`census_max_steps` is the
``max_steps`` a census run needs where a workload's run is too short for both.

This module imports nothing outside the standard library, so the pytest parent can use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_STEPS = 3  # a census window covers at least this many optimizer steps


@dataclass(frozen=True)
class WindowPlan:
    """Where the census windows go (``harness/census.py``): ``start`` (steps skipped), ``n`` (steps counted), and
    whether the op window (``fits``) and the Python-calls window after it (``python_fits``) fit in ``max_steps``;
    ``reason`` says why the op window does not fit, ``python_reason`` why the Python-calls window does not."""

    start: int
    n: int
    logging_steps: int
    max_steps: int
    fits: bool
    python_fits: bool
    reason: str | None = None
    python_reason: str | None = None

    def to_json(self) -> dict:
        """The plan as a dict: the reasons only where there is one."""
        d = {
            "start": self.start,
            "n": self.n,
            "logging_steps": self.logging_steps,
            "max_steps": self.max_steps,
            "fits": self.fits,
            "python_fits": self.python_fits,
        }
        if self.reason is not None:
            d["reason"] = self.reason
        if self.python_reason is not None:
            d["python_reason"] = self.python_reason
        return d


def window_plan(warmup_steps: int, logging_steps: int, max_steps: int) -> WindowPlan:
    """Where the census windows go in a run of ``max_steps`` (:class:`WindowPlan`)."""
    period = max(int(logging_steps or 1), 1)
    start = period * max(math.ceil(max(warmup_steps, 0) / period), 1)  # at least one period: step 1 is never steady
    n = period * math.ceil(MIN_STEPS / period)
    fits, python_fits = start + n <= max_steps, start + 2 * n <= max_steps
    reason = python_reason = None
    if not fits:
        reason = (
            f"window does not fit: steps {start + 1}-{start + n} (warm-up {warmup_steps} rounded up to a multiple of "
            f"the logging period {period}, then {n} steps = whole logging periods, at least {MIN_STEPS}) need "
            f"max_steps >= {start + n}, the run has {max_steps}"
        )
    elif not python_fits:
        python_reason = (
            f"Python-calls window does not fit: steps {start + n + 1}-{start + 2 * n} need max_steps >= "
            f"{start + 2 * n}, the run has {max_steps}"
        )
    return WindowPlan(start, n, period, max_steps, fits, python_fits, reason, python_reason)


def census_max_steps(warmup_steps: int, logging_steps: int, max_steps: int) -> int | None:
    """The ``max_steps`` a census run needs where a workload's run is too short for both windows, else None. A census
    run ends itself once its windows are counted, so its ``max_steps`` is only a bound: raising it moves neither the
    steps counted nor the work in them."""
    plan = window_plan(warmup_steps, logging_steps, max_steps)
    return None if plan.python_fits else plan.start + 2 * plan.n
