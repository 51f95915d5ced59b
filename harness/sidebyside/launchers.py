"""How a launch's two resident workers come to be ready, behind one interface (:func:`launcher_for` picks one).

* :class:`Plain`: both workers start at the launch, import, build, and warm up one after the other.
* :class:`Prestarted`: while a launch runs, the next launch's workers import on the CPUs outside the measured ones, so
  that a later launch costs only its build and warm-up (each launch is still a fresh process).
* :class:`WarmApart`: a pre-started launch's two sides build and warm up at once, each on its own half of the spare
  CPUs, then move to the measured CPUs for the pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from harness.measuring.resident import ResidentWorker, WorkerDied
from harness.results.block import Block
from harness.sidebyside.config import ComparisonConfig
from harness.spec import Decomposition, Workload

SIDES = ("a", "b")
T = TypeVar("T")
Record = Callable[..., Block]  # record(side, launch, report, **where) -> the block record


class Sides(NamedTuple, Generic[T]):
    """One value per side of a comparison: ``a`` (the baseline) and ``b``."""

    a: T
    b: T

    def of(self, side: str) -> T:
        """The value of ``side`` ('a' or 'b')."""
        return self.a if side == "a" else self.b


@dataclass(frozen=True)
class Switches:
    """The test-only switches of one side's workers: the injected sleep (a share of the step) and the injected work
    per LoRA forward (:class:`~harness.measuring.injected_work.InjectWork`)."""

    inject_slowdown: float = 0.0
    inject_work: float = 0.0


@dataclass(frozen=True)
class WorkerFactory:
    """The two workers of a launch, as the settings ask."""

    cfg: ComparisonConfig  # resolved
    workload: Workload
    decs: Sides[Decomposition]
    work_dir: Path
    python: Sides[str]
    switches: dict[str, Switches]
    inject_kind: str
    faults: dict = field(default_factory=dict)

    def make(
        self, launch: int, hold: list[int] | None = None, apart: dict[str, list[int]] | None = None
    ) -> dict[str, ResidentWorker]:
        c = self.cfg
        return {
            s: ResidentWorker(
                s.upper(),
                self.workload,
                self.decs.of(s),
                self.work_dir,
                gpu=c.gpu,
                launch=launch,
                python=self.python.of(s),
                phases=c.phases,
                fault=self.faults.get((s, launch)),
                cpus=list(c.cpus) or None,
                malloc_default=c.malloc_default,
                timeout_s=c.run_timeout,
                hold_cpus=hold,
                inject_kind=self.inject_kind,
                warm_cpus=(apart or {}).get(s),
                inject_slowdown=self.switches[s].inject_slowdown,
                inject_work=self.switches[s].inject_work,
            )
            for s in SIDES
        }


def each(workers, act: Callable) -> None:
    """``act(w)`` for every worker in order, also after one of them raised (a results dir turned read-only, a second
    Ctrl-C): a cleanup never leaves a later worker running. What was raised comes out after the last worker."""
    workers = list(workers)
    if workers:
        try:
            act(workers[0])
        finally:
            each(workers[1:], act)


def warm_cpus(hold: list[int]) -> dict[str, list[int]]:
    """Where each side of a launch warming up apart builds and warms up: A the first half of the hold CPUs, B the rest
    (one hold CPU: both on it, still at once)."""
    half = max(1, len(hold) // 2)
    return {"a": hold[:half], "b": hold[half:] or hold[:half]}


class Plain:
    def __init__(self, factory: WorkerFactory):
        self.factory = factory
        self.next: dict[str, ResidentWorker] | None = None
        self.restarted: dict[int, str] = {}  # launch -> why its pre-started workers were replaced by fresh ones

    def open(self, launch: int) -> dict[str, ResidentWorker]:
        """The launch's workers, starting (not yet ready)."""
        workers = self.factory.make(launch)
        try:
            for s in SIDES:
                workers[s].start(wait=False)
        except BaseException:
            each(workers.values(), lambda w: w.kill())
            raise
        return workers

    def prepare_next(self, launch: int, last: int) -> None:
        """Called once the launch's workers are ready."""

    def warm_up(
        self, workers: dict[str, ResidentWorker], launch: int, steps: int, amount: dict, record: Record
    ) -> dict | None:
        """The launch's warm-up blocks, sides in turn (A first in odd launches); what warming apart did, or None."""
        for s in SIDES if launch % 2 else SIDES[::-1]:
            record(
                s,
                launch,
                workers[s].block(steps, inject=amount[s]),
                amount[s],
                pair=None,
                position=None,
                order=None,
                warmup=True,
            )
        return None

    def discard(self) -> None:
        """Kill workers started for a launch that will not come."""
        spare, self.next = self.next or {}, None
        each(spare.values(), lambda w: w.kill())


class Prestarted(Plain):
    apart = False

    def open(self, launch: int) -> dict[str, ResidentWorker]:
        """The launch's workers: the pre-started ones released, or fresh ones. A pre-started worker that died while it
        waited (killed from outside, say) measured nothing: both are killed and the launch starts afresh, once; a
        fresh start that fails is the environment's failure and is raised."""
        workers, self.next = self.next or self.factory.make(launch), None
        try:
            for s in SIDES:
                if workers[s].hold_cpus:
                    workers[s].release()
                else:
                    workers[s].start(wait=False)
        except WorkerDied as exc:
            each(workers.values(), lambda w: w.kill())
            if not workers["a"].hold_cpus:
                raise
            self.restarted[launch] = str(exc)
            return super().open(launch)
        except BaseException:
            each(workers.values(), lambda w: w.kill())
            raise
        return workers

    def prepare_next(self, launch: int, last: int) -> None:
        if launch < last:  # the next launch imports on the other CPUs from here on, beside the warm-up too
            hold = list(self.factory.cfg.hold_cpus)
            self.next = self.factory.make(launch + 1, hold, warm_cpus(hold) if self.apart else None)
            for s in SIDES:
                self.next[s].start(wait=False)


class WarmApart(Prestarted):
    apart = True

    def warm_up(
        self, workers: dict[str, ResidentWorker], launch: int, steps: int, amount: dict, record: Record
    ) -> dict | None:
        if not workers["a"].warm_cpus:  # the first launch was not pre-started
            return super().warm_up(workers, launch, steps, amount, record)
        for s in SIDES:  # both sides at once, each on its own CPUs, then home to the measured ones
            workers[s].send_block(steps, inject=amount[s])
        for s in SIDES:
            record(s, launch, workers[s].recv_block(), amount[s], pair=None, position=None, order=None, warmup=True)
        return {s: {"warm_cpus": workers[s].warm_cpus, "home": workers[s].pin_home()} for s in SIDES}


def launcher_for(factory: WorkerFactory) -> Plain:
    cfg = factory.cfg
    return WarmApart(factory) if cfg.warm_apart else Prestarted(factory) if cfg.prestart else Plain(factory)


@dataclass(frozen=True)
class Hooks:
    """The one test seam of a comparison; the product passes none. ``faults`` (as ``HARNESS_FAULTS``):
    ``"b#2=sigkill@6"`` kills side B's worker of launch 2 at its step 6; ``launcher``: makes the launcher from the
    worker factory instead of :func:`launcher_for` (stand-in workers)."""

    faults: str | None = None
    launcher: Callable[[WorkerFactory], Plain] | None = None


NO_HOOKS = Hooks()
