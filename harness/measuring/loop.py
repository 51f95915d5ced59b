"""The fresh-run loop: any set of sides x cases x repeats, each run a fresh worker process, in the chosen order, with
progress.

A *side* says how its runs are made and where they are recorded: the plain session, the two
environments of ``ab`` (A, B), the groups of ``calibrate`` (A, A', S), phases on and off of
``overhead``. Every side makes fresh-process runs (:class:`FreshSide`); side-by-side comparisons on
resident workers have their own loop (:mod:`harness.sidebyside.loop`).

:func:`schedule` lays out the slots, :func:`run_slots` executes them in order, stopping before a
slot when ``stop`` says so (``--total-budget-minutes``); the records it returns are already in each side's
``runs.jsonl``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.errors import BadInput
from harness.files import new_id
from harness.measuring.runner import RunRequest, run_one
from harness.record import headline
from harness.spec import Decomposition, Workload

ORDERS = ("interleaved", "reversed")


class Side(Protocol):
    @property
    def name(self) -> str: ...  # read only: a frozen side's field is one

    def run(self, slot: Slot, *, timeout_s: float, gpu: str, fault: str | None = None) -> dict: ...


@dataclass(frozen=True)
class FreshSide:
    """Runs in fresh worker processes with these switches, recorded in ``results_dir/runs.jsonl``."""

    name: str = ""  # "" for a plain session; shown in progress lines otherwise
    results_dir: Path = Path("perf-results")
    session_id: str = field(default_factory=new_id)
    python: str | None = None
    phases: bool = True
    inject_slowdown: float = 0.0
    inject_work: int = 0
    profile_steps: int = 0
    census: bool = False

    def request(self, slot: Slot, fault: str | None = None) -> RunRequest:
        return RunRequest(
            slot.workload,
            slot.decomposition,
            slot.repeat,
            phases=self.phases,
            inject_slowdown=self.inject_slowdown,
            inject_work=self.inject_work,
            fault=fault,
            profile_steps=self.profile_steps,
            census=self.census,
            python=self.python,
        )

    def run(self, slot: Slot, *, timeout_s: float, gpu: str, fault: str | None = None) -> dict:
        return run_one(self.request(slot, fault), self.results_dir, self.session_id, timeout_s, gpu)


@dataclass(frozen=True)
class Slot:
    side: Side
    workload: Workload
    decomposition: Decomposition
    repeat: int

    @property
    def case(self) -> tuple[str, str]:
        return self.workload.name, self.decomposition.id

    @property
    def label(self) -> str:
        who = f"{self.side.name.upper()} " if self.side.name else ""
        return f"{who}{self.workload.name}-{self.decomposition.id} run {self.repeat}"


def schedule(
    sides: Sequence[Side],
    cases: Sequence[tuple[Workload, Decomposition]],
    repeats: int,
    *,
    order: str = "interleaved",
    sides_inside: bool = True,
    alternate: bool = False,
    first_repeat: int = 1,
) -> list[Slot]:
    """Rounds ``first_repeat .. first_repeat + repeats - 1`` of every side x case.

    * ``order``: cases as given (``interleaved``: A B C) or reversed (C B A);
    * ``sides_inside``: per case all sides (``ab``: 1x4 A, 1x4 B, 2x2 A, ...), else per side all cases
      (``calibrate``: A over all cases, then A', then S);
    * ``alternate``: even rounds take the sides in reverse (A B, B A, ...: ABBA), so slow drift lands on both.
    """
    if order not in ORDERS:
        raise BadInput(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    seq = list(cases) if order == "interleaved" else list(reversed(cases))
    out = []
    for r in range(first_repeat, first_repeat + repeats):
        ss = list(sides)[::-1] if alternate and (r - first_repeat) % 2 else list(sides)
        if sides_inside:
            out += [Slot(s, w, d, r) for (w, d) in seq for s in ss]
        else:
            out += [Slot(s, w, d, r) for s in ss for (w, d) in seq]
    return out


@dataclass
class Ran:
    records: list[dict]
    left: int = 0  # slots not started because ``stop`` said so
    stopped: str | None = None  # why


def run_slots(
    slots: Sequence[Slot],
    *,
    timeout_s: float,
    gpu: str,
    progress: Callable[[str], None] = print,
    faults: dict[tuple[str, int], str] | None = None,
    stop: Callable[[Slot], str | None] | None = None,
    done: int = 0,
    total: int | None = None,
    on_record: Callable[[Slot, dict], None] | None = None,
) -> Ran:
    """Execute ``slots`` in order; progress lines are ``[n/total] LABEL: started`` and ``[n/total] LABEL: <headline>``.

    ``stop(slot)`` is asked before each slot; a message stops the loop there (the message is printed,
    the rest is counted in ``left``). ``done`` runs count before the first slot (``--resume``, later looks).
    """
    total = total if total is not None else done + len(slots)
    ran = Ran([])
    for i, slot in enumerate(slots):
        if stop is not None and (why := stop(slot)):
            ran.left, ran.stopped = len(slots) - i, why
            progress(f"{why}; {ran.left} run(s) left: rerun the same command with --resume")
            break
        n = done + len(ran.records) + 1
        progress(f"[{n}/{total}] {slot.label}: started")
        rec = slot.side.run(
            slot, timeout_s=timeout_s, gpu=gpu, fault=(faults or {}).get((slot.decomposition.id, slot.repeat))
        )
        ran.records.append(rec)
        if on_record is not None:
            on_record(slot, rec)
        progress(f"[{n}/{total}] {slot.label}: {headline(rec)}")
    return ran
