"""One block of an interleaved comparison as ``blocks.jsonl`` keeps it: one line per block, appended as it is measured
(``harness.sidebyside``) and read back by the analysis (``harness.judging.blocks``).

:class:`Block` is the record; :func:`block_problem` checks a line, :meth:`Block.from_json` reads it (of any version, the
keys a line lacks at their defaults) and :meth:`Block.to_json` writes one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SIDES = ("a", "b")


def _finite(x: object, lo: float = float("-inf")) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > lo


def _whole(x: object, lo: int = 0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= lo


def _phases(ph: object) -> bool:
    """A block's ``phases_ms``: per phase, a list of its per-step times (finite);
    where in the step B's time moved reads it."""
    return (
        isinstance(ph, dict)
        and bool(ph)
        and all(isinstance(v, list) and all(_finite(x) for x in v) for v in ph.values())
    )


def block_problem(r: Mapping[str, Any]) -> str | None:
    """Why a block record cannot be judged (a key the analysis reads missing, of the wrong type or not finite), or None.
    Readers of a stored ``blocks.jsonl`` (``recover``) leave such a record out and name it, instead of a traceback."""
    steps = r.get("step_times_ms")
    why = [
        (r.get("side") in SIDES, f"side is {r.get('side')!r}, not 'a' or 'b'"),
        (_whole(r.get("launch"), 1), f"launch is {r.get('launch')!r}, not a launch number"),
        (isinstance(r.get("warmup"), bool), f"warmup is {r.get('warmup')!r}, not true or false"),
        (r.get("warmup") is not False or _whole(r.get("pair"), 1), f"pair is {r.get('pair')!r}, not a pair number"),
        (
            isinstance(steps, list) and bool(steps) and all(_finite(x, 0) for x in steps),
            "step_times_ms is not a list of finite positive numbers",
        ),
        (
            all(_finite(r.get(k)) for k in ("started_at", "wall_s", "cpu_s")),
            "started_at, wall_s or cpu_s is not a finite number",
        ),
        (
            r.get("canary_ms") is None or _finite(r["canary_ms"], 0),
            f"canary_ms is {r.get('canary_ms')!r}, not a finite positive number",
        ),
        (
            all(r.get(k) is None or _finite(r[k]) for k in ("other_cpus", "inject_ms")),
            "other_cpus or inject_ms is not a finite number",
        ),
        (
            r.get("gpu") is None
            or (
                isinstance(r["gpu"], dict)
                and all(r["gpu"].get(k) is None or _finite(r["gpu"][k]) for k in ("sm_clock_mhz", "power_w", "temp_c"))
                and (r["gpu"].get("throttle_reasons") is None or _whole(r["gpu"]["throttle_reasons"]))
            ),
            "gpu is not an object of finite readings",
        ),
        (
            r.get("unit") is None or all(_whole(r.get(k), 1) for k in ("unit", "units", "micro_per_step")),
            "unit, units or micro_per_step is not a whole number >= 1",
        ),
        (
            r.get("phases_ms") is None or _phases(r["phases_ms"]),
            f"phases_ms is {str(r.get('phases_ms'))[:40]}, not an object of per-step times per phase",
        ),
    ]
    return next((text for ok, text in why if not ok), None)


@dataclass(frozen=True)
class GpuReading:
    """What the analysis reads of a block's NVML reading as it ended (:attr:`Block.gpu`, kept whole as the worker
    took it): the SM clock, the power, the temperature and the clock-event reasons (a bit mask)."""

    sm_clock_mhz: float | None
    power_w: float | None
    temp_c: float | None
    throttle_reasons: int | None

    @classmethod
    def from_json(cls, g: Mapping[str, Any]) -> GpuReading:
        return cls(g.get("sm_clock_mhz"), g.get("power_w"), g.get("temp_c"), g.get("throttle_reasons"))


@dataclass(frozen=True)
class Block:
    """One block of one ``side`` in a ``launch``: ``k`` steps (``step_times_ms``) of a warm-up (``warmup``; a
    ``calibration`` block of the injected work is one), or of a pair (``pair``, its ``order`` and the block's
    ``position`` in it). At the micro grain a block is one ``unit`` of the pair's ``units`` (one micro-batch,
    ``micro_per_step`` of them to a step). Beside the steps: the host canary, the wall and CPU seconds, the worker's
    step count, the CPUs other processes and the hypervisor took, the GPU's reading as it ended, the time of each phase
    per step, the losses, the switches of its side and the injected work its own clock measured (``inject_ms``)."""

    session_id: str | None
    side: str
    launch: int
    k: int
    step_times_ms: tuple[float, ...]
    pair: int | None = None
    position: int | None = None
    order: str | None = None
    warmup: bool = False
    calibration: bool = False
    unit: int | None = None
    units: int | None = None
    micro_per_step: int | None = None
    canary_ms: float | None = None
    started_at: float = 0.0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    global_step: int | None = None
    other_cpus: float | None = None
    steal_cpus: float | None = None
    gpu: Mapping[str, Any] | None = None
    phases_ms: Mapping[str, list[float]] | None = None
    losses: tuple[float, ...] | None = None
    inject_slowdown: float | None = None
    inject_work: float | None = None
    inject_ms: float | None = None

    @classmethod
    def from_json(cls, r: Mapping[str, Any]) -> Block:
        """A line of ``blocks.jsonl`` (checked first by :func:`block_problem`)."""
        losses = r.get("losses")
        return cls(
            session_id=r.get("session_id"),
            side=r["side"],
            launch=r["launch"],
            k=r.get("k", len(r["step_times_ms"])),
            step_times_ms=tuple(r["step_times_ms"]),
            pair=r.get("pair"),
            position=r.get("position"),
            order=r.get("order"),
            warmup=bool(r.get("warmup")),
            calibration=bool(r.get("calibration")),
            unit=r.get("unit"),
            units=r.get("units"),
            micro_per_step=r.get("micro_per_step"),
            canary_ms=r.get("canary_ms"),
            started_at=r.get("started_at", 0.0),
            wall_s=r.get("wall_s", 0.0),
            cpu_s=r.get("cpu_s", 0.0),
            global_step=r.get("global_step"),
            other_cpus=r.get("other_cpus"),
            steal_cpus=r.get("steal_cpus"),
            gpu=r.get("gpu"),
            phases_ms=r.get("phases_ms"),
            losses=None if losses is None else tuple(losses),
            inject_slowdown=r.get("inject_slowdown"),
            inject_work=r.get("inject_work"),
            inject_ms=r.get("inject_ms"),
        )

    @property
    def reading(self) -> GpuReading | None:
        """The GPU's reading as the block ended, as the analysis reads it; None without one (a CPU run, no NVML)."""
        return None if self.gpu is None else GpuReading.from_json(self.gpu)

    def where(self) -> dict[str, Any]:
        """Where in the comparison the block ran, as the line says it: its pair and position, and its unit at the micro
        grain or that it was a calibration block."""
        out: dict[str, Any] = {"pair": self.pair, "position": self.position, "order": self.order, "warmup": self.warmup}
        if self.unit is not None:
            out.update(unit=self.unit, units=self.units, micro_per_step=self.micro_per_step)
        if self.calibration:
            out["calibration"] = True
        return out

    def to_json(self) -> dict[str, Any]:
        """The line as the comparison appends it (:meth:`harness.results.formats.Format.stamp` adds the version)."""
        out = {
            "session_id": self.session_id,
            "side": self.side,
            "launch": self.launch,
            **self.where(),
            "k": self.k,
            "step_times_ms": list(self.step_times_ms),
            "canary_ms": self.canary_ms,
            "started_at": self.started_at,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "global_step": self.global_step,
            "other_cpus": self.other_cpus,
            "steal_cpus": self.steal_cpus,
            "gpu": None if self.gpu is None else dict(self.gpu),
            "phases_ms": None if self.phases_ms is None else dict(self.phases_ms),
            "losses": None if self.losses is None else list(self.losses),
            "inject_slowdown": self.inject_slowdown,
            "inject_work": self.inject_work,
        }
        if self.inject_ms is not None:
            out["inject_ms"] = self.inject_ms
        return out
