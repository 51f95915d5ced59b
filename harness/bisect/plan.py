"""The search plan of a bisection, pure: what a candidate is, which releases lie between two versions, and which
candidate to measure next given what was measured. No I/O: a measurement is a function the caller passes.

A **ladder** is the candidates from good (index 0) to bad (index n-1) in order: the releases of one package, or the
commits of a checkout. Two searches run on it:

* :func:`census_search`: the counts of a census are exact, so every change of them is found: an interval whose two
  ends differ is split at its middle and each half whose ends still differ is split again, down to adjacent
  candidates. One change costs ceil(log2(n - 1)) runs inside the ladder; several changes in one range are each found,
  reusing what was measured. (A change that is undone inside an interval whose ends are equal is not seen.)
* :func:`timing_search`: each step compares a candidate against good and has three outcomes; the search keeps the
  regression boundary between the last ``pass`` and the first ``regression``, and an ``inconclusive`` step ends it
  there: the interval left is reported, never guessed.

A candidate that cannot be installed (or whose measurement failed) is **dead**: the search takes its nearest
neighbour instead, and a boundary with dead candidates inside says which.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import BadInput
from harness.judging.census_diff import MEMORY

OK, UNINSTALLABLE, FAILED = "ok", "uninstallable", "failed"
KINDS = ("release", "commit", "wheel")


@dataclass(frozen=True)
class Install:
    """One package put on the base environment: ``release`` (``package==version`` from the index or the wheel
    directory), ``wheel`` (the file ``source``), or ``commit`` (``version`` is the commit of the checkout ``source``,
    installed by path)."""

    package: str
    version: str
    kind: str = "release"
    source: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise BadInput(f"install kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind != "release" and not self.source:
            raise BadInput(f"a {self.kind} install needs its source (a file or a checkout)")

    @property
    def label(self) -> str:
        return f"{self.package}@{self.version[:10]}" if self.kind == "commit" else f"{self.package} {self.version}"


@dataclass(frozen=True)
class Candidate:
    """An environment to measure: the base environment with ``installs`` on it, or, with ``python``, an interpreter
    as it is (an end given as an interpreter)."""

    installs: tuple[Install, ...] = ()
    python: str | None = None

    @property
    def label(self) -> str:
        if self.python:
            return self.python
        return ", ".join(i.label for i in self.installs) or "the base environment"

    def key(self) -> str:
        """A short stable name of this candidate (not of its environment: two candidates can resolve to one)."""
        blob = json.dumps([self.python, [(i.package, i.version, i.kind, i.source) for i in self.installs]])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def with_version(self, package: str, version: str, kind: str = "release", source: str = "") -> Candidate:
        """The same installs with ``package`` at ``version`` (added when absent)."""
        rest = tuple(i for i in self.installs if i.package != package)
        return Candidate(rest + (Install(package, version, kind, source),))


@dataclass(frozen=True)
class Measured:
    """What one step of a search saw: ``status`` ok (``value``: a census, or an outcome) or dead (``reason``)."""

    status: str
    value: Any = None
    reason: str = ""

    @property
    def dead(self) -> bool:
        return self.status != OK


# ---- releases --------------------------------------------------------------------------------------
def release_ladder(versions: Iterable[str], good: str, bad: str) -> list[str]:
    """The releases from ``good`` to ``bad``, both included, in that order (descending when bad is the older one).
    Pre-releases and dev releases between them count only when an end is one. Raises ValueError (one line) when a
    version cannot be read."""
    from packaging.version import InvalidVersion, Version

    try:
        g, b = Version(good), Version(bad)
        parsed = {Version(v): v for v in versions}
    except InvalidVersion as exc:
        raise BadInput(f"release {exc}: not a version; name releases as name==1.2.3") from None
    lo, hi = min(g, b), max(g, b)
    pre = g.is_prerelease or b.is_prerelease
    inside = sorted(v for v in parsed if lo < v < hi and (pre or not v.is_prerelease))
    ladder = [good] + [parsed[v] for v in inside] + [bad]
    return ladder if g <= b else [good] + [parsed[v] for v in reversed(inside)] + [bad]


def differing(good: dict[str, str], bad: dict[str, str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The packages at another version in ``bad`` than in ``good`` as ``(name, good_version, bad_version)``, sorted;
    and those in one of them only (they are not bisected: nothing to swap)."""
    both = sorted(k for k in set(good) & set(bad) if good[k] != bad[k])
    return [(k, good[k], bad[k]) for k in both], sorted(set(good) ^ set(bad))


# ---- the census search -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Boundary:
    """``lo`` is the last candidate like good and ``hi`` the first unlike it; ``skipped``: the dead ones between
    (the change lies at one of the boundaries they leave: ``exact`` when there are none)."""

    lo: int
    hi: int
    skipped: tuple[int, ...] = ()

    @property
    def exact(self) -> bool:
        return self.hi == self.lo + 1


@dataclass
class Search:
    """What a search found. ``boundaries`` (census) or ``boundary`` (timing); ``measured``: the indices measured in
    order (ends included), ``dead``: index -> reason; ``outcome``: ``changed``, ``no_change``, ``inconclusive`` (timing
    only: an inconclusive step at ``inconclusive_at`` left the interval ``boundary``) or ``ends_failed`` (an end could
    not be measured: ``dead`` says why)."""

    outcome: str
    boundaries: list[Boundary] = field(default_factory=list)
    measured: list[int] = field(default_factory=list)
    dead: dict[int, str] = field(default_factory=dict)
    steps: list[tuple[int, str]] = field(default_factory=list)
    inconclusive_at: int | None = None

    @property
    def boundary(self) -> Boundary | None:
        return self.boundaries[0] if self.boundaries else None


def probe_order(lo: int, hi: int) -> list[int]:
    """The candidates strictly between ``lo`` and ``hi``, nearest to the middle first (the lower of two equally
    near)."""
    mid = (lo + hi) / 2
    return sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))


class _Ladder:
    """Measurements of one ladder, each made once, with the dead ones remembered."""

    def __init__(self, measure: Callable[[int], Measured]):
        self.measure, self.values, self.result = measure, {}, Search("no_change")

    def get(self, i: int) -> Measured:
        if i not in self.values:
            m = self.values[i] = self.measure(i)
            self.result.measured.append(i)
            if m.dead:
                self.result.dead[i] = m.reason or m.status
        return self.values[i]

    def probe(self, lo: int, hi: int) -> int | None:
        """The live candidate between ``lo`` and ``hi`` nearest to the middle, measuring until one is found."""
        for i in probe_order(lo, hi):
            if not self.get(i).dead:
                return i
        return None

    def boundary(self, lo: int, hi: int) -> Boundary:
        return Boundary(lo, hi, tuple(i for i in range(lo + 1, hi) if i in self.result.dead))


def census_search(n: int, measure: Callable[[int], Measured], differ: Callable[[Any, Any], bool]) -> Search:
    """Every boundary of the ladder ``0 .. n-1`` where ``differ(value(lo), value(hi))``; ``measure(i)`` is called at
    most once per index. See the module docstring."""
    lad = _Ladder(measure)
    ends = [lad.get(0), lad.get(n - 1)] if n >= 2 else []
    if len(ends) < 2 or any(m.dead for m in ends):
        lad.result.outcome = "ends_failed"
        return lad.result
    todo = [(0, n - 1)] if differ(ends[0].value, ends[1].value) else []
    while todo:
        lo, hi = todo.pop()
        mid = lad.probe(lo, hi)
        if mid is None:
            lad.result.boundaries.append(lad.boundary(lo, hi))
            continue
        v = lad.get(mid).value
        halves = [(lo, mid)] if differ(lad.get(lo).value, v) else []
        halves += [(mid, hi)] if differ(v, lad.get(hi).value) else []
        todo += reversed(halves)  # the lower half first
    lad.result.boundaries.sort(key=lambda b: b.lo)
    lad.result.outcome = "changed" if lad.result.boundaries else "no_change"
    return lad.result


# ---- the timing search -----------------------------------------------------------------------------
REGRESSION, PASS, INCONCLUSIVE = "regression", "pass", "inconclusive"


def timing_search(n: int, compare: Callable[[int], Measured]) -> Search:
    """The first candidate of ``1 .. n-1`` whose time is a regression against good (index 0), by binary search;
    ``compare(i)`` gives ``regression``, ``pass``, ``improvement`` (counted as pass) or ``inconclusive``. The bad end is
    compared first: without a regression there, nothing is searched."""
    lad = _Ladder(compare)
    top = lad.get(n - 1) if n >= 2 else Measured(FAILED, reason="a ladder needs two ends")
    if top.dead:
        lad.result.outcome = "ends_failed"
        return lad.result
    lad.result.steps.append((n - 1, top.value))
    if top.value != REGRESSION:
        lad.result.outcome = INCONCLUSIVE if top.value == INCONCLUSIVE else "no_change"
        lad.result.inconclusive_at = n - 1 if top.value == INCONCLUSIVE else None
        return lad.result
    lo, hi = 0, n - 1
    while (mid := lad.probe(lo, hi)) is not None:
        outcome = lad.get(mid).value
        lad.result.steps.append((mid, outcome))
        if outcome == INCONCLUSIVE:
            lad.result.outcome, lad.result.inconclusive_at = INCONCLUSIVE, mid
            lad.result.boundaries = [lad.boundary(lo, hi)]
            return lad.result
        lo, hi = (lo, mid) if outcome == REGRESSION else (mid, hi)
    lad.result.outcome, lad.result.boundaries = "changed", [lad.boundary(lo, hi)]
    return lad.result


# ---- which counts moved ----------------------------------------------------------------------------
TOTALS = {
    "ops": "aten ops",
    "kernels": "kernel launches",
    "python_calls": "Python calls",
}  # the totals :func:`moved` names


def moved(d) -> list[str]:
    """The counts that differ in a :class:`harness.judging.census_diff.CensusDiff`, one name each: ``aten ops`` (the
    total), ``aten op aten::_to_copy``, ``kernel <name>``, ``Python calls``, ``sync <name>``, ``allocator <name>``,
    ``attention backend``, and the peaks of memory that moved beyond the memory tolerance (``peak reserved memory``,
    ``peak allocated memory``). Each is attributed to a boundary on its own."""
    out = [name for k, name in TOTALS.items() if k in d.counters] + [MEMORY[c.name] for c in d.memory]
    out += [f"aten op {c.name}" for c in d.ops] + [f"kernel {c.name}" for c in d.kernels]
    out += [f"sync {c.name}" for c in d.syncs] + [f"allocator {c.name}" for c in d.alloc]
    return out + (["attention backend"] if d.attention else [])


def attribute(keys: Iterable[str], at_boundaries: list[list[str]]) -> dict[str, list[int]]:
    """For each count that moved from good to bad, the boundaries (their positions in ``at_boundaries``, the counts
    moved at each) where it moved; an empty list means no boundary accounts for it."""
    return {k: [i for i, ks in enumerate(at_boundaries) if k in ks] for k in keys}
