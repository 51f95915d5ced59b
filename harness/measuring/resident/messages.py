"""The messages between a resident worker and its parent (the protocol is described in
:mod:`harness.measuring.resident`): commands in, reports out, one JSON object per line. One frozen dataclass per kind;
``to_json()`` is the line's object, :func:`read_command` and :func:`read_report` read one back. A line of a kind not
known here reads as :class:`Unknown`, for the reader to refuse with its own words.

Standard library only: the worker's entry module and the parent (which never imports torch) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Unknown:
    """A line of no kind known here (or a block of no steps), kept as it came."""

    raw: dict

    def to_json(self) -> dict:
        return self.raw


# ---- commands (parent -> worker) ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Go:
    """Build the trainer now (a pre-started worker, after ``held``)."""

    def to_json(self) -> dict:
        return {"cmd": "go"}


@dataclass(frozen=True)
class Stop:
    """End training cleanly (the end of the command pipe does the same)."""

    def to_json(self) -> dict:
        return {"cmd": "stop"}


@dataclass(frozen=True)
class Pin:
    """Move every thread to the measured CPUs (after a warm-up apart); answered by :class:`Pinned`."""

    def to_json(self) -> dict:
        return {"cmd": "pin"}


@dataclass(frozen=True)
class RunBlock:
    """Run ``k`` optimizer steps (``micro``: ``k`` micro-batches), with ``inject`` casts of injected work per LoRA
    forward when given; answered by :class:`BlockReport`."""

    k: int
    inject: float | None = None
    micro: bool = False

    def to_json(self) -> dict:
        return (
            {"cmd": "block", "k": int(self.k)}
            | ({"inject": float(self.inject)} if self.inject is not None else {})
            | ({"micro": True} if self.micro else {})
        )


Command = Go | Stop | Pin | RunBlock | Unknown
_SIMPLE = {"go": Go(), "stop": Stop(), "pin": Pin()}


def read_command(d: dict) -> Command:
    """The command in one line's object; :class:`Unknown` for anything else, a block of fewer than one step included."""
    cmd = d.get("cmd")
    if cmd in _SIMPLE:
        return _SIMPLE[cmd]
    if cmd == "block":
        try:
            k = int(d.get("k", 0))
        except (TypeError, ValueError):
            return Unknown(d)
        if k >= 1:
            inject = d.get("inject")
            return RunBlock(k, None if inject is None else float(inject), bool(d.get("micro")))
    return Unknown(d)


# ---- reports (worker -> parent) -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Held:
    """A pre-started worker has imported (in ``preload_s``) and waits for :class:`Go`."""

    preload_s: float | None
    event: ClassVar[str] = "held"

    def to_json(self) -> dict:
        return {"event": self.event, "preload_s": self.preload_s}


@dataclass(frozen=True)
class Ready:
    """The trainer is built and waits for its first block: set-up times (``timing_s``), host probe, CUDA, CPUs, torch
    threads, malloc settings, the injected work's layers and kind, and the environment (``env``)."""

    timing_s: dict | None = None
    host_probe: dict | None = None
    cuda: dict | None = None
    cpus: list[int] | None = None
    torch_threads: int | None = None
    malloc: dict | None = None
    inject_work_layers: int | None = None
    inject_kind: str | None = None
    env: dict | None = None
    event: ClassVar[str] = "ready"

    def to_json(self) -> dict:
        return {
            "event": self.event,
            "timing_s": self.timing_s,
            "host_probe": self.host_probe,
            "cuda": self.cuda,
            "cpus": self.cpus,
            "torch_threads": self.torch_threads,
            "malloc": self.malloc,
            "inject_work_layers": self.inject_work_layers,
            "inject_kind": self.inject_kind,
            "env": self.env,
        }


@dataclass(frozen=True)
class BlockReport:
    """One block's measurements (the protocol's ``block`` report); ``inject_ms`` only where the worker injects work."""

    k: int
    step_times_ms: list[float]
    gpu: dict | None = None
    canary_ms: float | None = None
    wall_s: float | None = None
    cpu_s: float | None = None
    started_at: float | None = None
    global_step: int | None = None
    other_cpus: float | None = None
    steal_cpus: float | None = None
    phases_ms: dict | None = None
    losses: list[float] | None = None
    inject_ms: float | None = None
    event: ClassVar[str] = "block"

    def to_json(self) -> dict:
        return {
            "event": self.event,
            "k": self.k,
            "gpu": self.gpu,
            "step_times_ms": self.step_times_ms,
            "canary_ms": self.canary_ms,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "started_at": self.started_at,
            "global_step": self.global_step,
            "other_cpus": self.other_cpus,
            "steal_cpus": self.steal_cpus,
            "phases_ms": self.phases_ms,
            "losses": self.losses,
        } | ({"inject_ms": self.inject_ms} if self.inject_ms is not None else {})


@dataclass(frozen=True)
class Pinned:
    """The worker's threads are on ``cpus`` now (the answer to :class:`Pin`)."""

    cpus: list[int]
    event: ClassVar[str] = "pinned"

    def to_json(self) -> dict:
        return {"event": self.event, "cpus": self.cpus}


@dataclass(frozen=True)
class Stopped:
    """Training ended on the command after ``blocks`` blocks, ``worker_total_s`` after the worker's start."""

    blocks: int
    worker_total_s: float
    event: ClassVar[str] = "stopped"

    def to_json(self) -> dict:
        return {"event": self.event, "blocks": self.blocks, "worker_total_s": self.worker_total_s}


@dataclass(frozen=True)
class Failed:
    """The worker failed: ``status`` (``oom`` or ``error``) and its one-line ``error``."""

    status: str | None
    error: str | None
    event: ClassVar[str] = "error"

    def to_json(self) -> dict:
        return {"event": self.event, "status": self.status, "error": self.error}


Report = Held | Ready | BlockReport | Pinned | Stopped | Failed | Unknown


def read_report(d: dict) -> Report:
    """The report in one line's object; :class:`Unknown` for an event not known here."""
    event = d.get("event")
    try:
        if event == Held.event:
            return Held(d.get("preload_s"))
        if event == Ready.event:
            return Ready(**{k: v for k, v in d.items() if k != "event"})
        if event == BlockReport.event:
            return BlockReport(**{k: v for k, v in d.items() if k != "event"})
        if event == Pinned.event:
            return Pinned(d["cpus"])
        if event == Stopped.event:
            return Stopped(d["blocks"], d["worker_total_s"])
        if event == Failed.event:
            return Failed(d.get("status"), d.get("error"))
    except (KeyError, TypeError):  # a known event without its fields
        pass
    return Unknown(d)


def event_of(report: Report) -> str | None:
    """The report's event name, as its line says it."""
    return report.raw.get("event") if isinstance(report, Unknown) else report.event
