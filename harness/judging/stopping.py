"""When an interleaved comparison stops: a conclusive look, the planned pairs, or the budget (start-up included).

:class:`StopRule` is passed to the command's loop (:mod:`harness.sidebyside.loop`), and the simulation of the verdict's
false alarms and power (:func:`harness.judging.simulate.simulate_interleave`) stops by the same rule.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from statistics import fmean

from harness.judging import paired as pd
from harness.judging.stats import Verdict


@dataclass
class Progress:
    """What a comparison has measured so far."""

    t_start: float = field(default_factory=time.time)
    groups: list[list[float]] = field(default_factory=list)  # pair log ratios by launch
    launches: list[dict] = field(
        default_factory=list
    )  # per launch: start-up, warm-up, stopping, what its workers reported
    pair_wall: list[float] = field(default_factory=list)
    verdict: Verdict | None = None
    stopped: str | None = None

    @property
    def pairs(self) -> int:
        return sum(map(len, self.groups))

    @property
    def pair_s(self) -> float:
        return fmean(self.pair_wall) if self.pair_wall else 0.0

    def elapsed(self) -> float:
        return time.time() - self.t_start

    def add(self, launch: int, d: float) -> None:
        while len(self.groups) < launch:
            self.groups.append([])
        self.groups[launch - 1].append(d)


@dataclass(frozen=True)
class StopRule:
    plan: pd.Plan
    check: pd.PairedCheck
    budget_s: float | None = None

    def over_budget(self, p: Progress, need_s: float) -> bool:
        return self.budget_s is not None and p.elapsed() + need_s > self.budget_s

    def before_launch(self, p: Progress, launch: int, startup_s: float) -> str | None:
        """Why launch ``launch`` should not start (``startup_s``: its expected start-up), or None."""
        if p.verdict is not None and p.verdict.outcome in pd.CONCLUSIVE:
            return "conclusive"
        if launch > 1 and self.over_budget(p, startup_s + 2 * p.pair_s):
            return f"budget of {self.budget_s / 60:g} min spent before launch {launch}"
        return None

    def before_pair(self, p: Progress) -> str | None:
        if self.over_budget(p, p.pair_s):
            return f"budget of {self.budget_s / 60:g} min spent after {p.pairs} pairs"
        return None

    def fit(self, p: Progress, launch: int, made: int, overhead_s: float) -> int:
        """How many pairs launch ``launch`` (``made`` so far) should make so that it and every later launch get about as
        many, all within the budget, at the costs measured so far: ``overhead_s`` per launch (start-up, warm-up,
        stopping) and the mean pair. m solves (m - made) p + later (overhead + m p) = time left. Unbounded without a
        budget or before a pair."""
        if self.budget_s is None or not p.pair_wall:
            return self.plan.pairs
        later = self.plan.launches - launch
        left = self.budget_s - p.elapsed()
        return max(0, int((left - later * overhead_s + made * p.pair_s) / (p.pair_s * (1 + later))))

    def look(self, p: Progress, n: int, launch: int, case: str) -> Verdict | None:
        """The verdict at ``n`` pairs where a look is planned there (once every launch has 2 pairs), else None."""
        looks = self.plan.looks
        if n in looks and launch == self.plan.launches and len(p.groups[-1]) >= 2:
            return self.check.decide(p.groups, case, looks.index(n) + 1)
        return None

    def run(self, groups: list[list[float]]) -> tuple[Verdict, int]:
        """The verdict this rule reaches on pair log ratios that arrive in this order (per launch, as a comparison would
        make them), and the pairs it takes: the simulation's comparison, without the budget."""
        p, v = Progress(), None
        for launch, g in enumerate(groups, 1):
            for d in g:
                p.add(launch, d)
                if (got := self.look(p, p.pairs, launch, "B/A")) is not None:
                    v = got
                    if v.outcome in pd.CONCLUSIVE:
                        return v, p.pairs
        return v, p.pairs
