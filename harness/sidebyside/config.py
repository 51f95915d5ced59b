"""One interleaved comparison's settings: :class:`ComparisonConfig`, frozen and validated where it is made.

The command line, the pytest plugin, ``confirm``, ``advise`` and the nightly build one and pass it whole. Its defaults
are the settings the nightly runs with, so that ``python -m harness interleave --workload W --decomposition D --python-b
PY`` needs nothing else: block length and grain from the decomposition, CPU pinning, pre-start and warm-apart from the
CPUs this process may use, and the number of launches from the budget (the evidence behind each default:
``docs/evidence/which-block-length/``, ``docs/evidence/how-many-launches/``,
``docs/evidence/does-prestart-save-time/``).

Research knobs are set with ``--set key=value`` (:func:`parse_sets`); the test-only injections are fields as well, kept
out of ``--help``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from harness.errors import BadInput
from harness.judging.thresholds import INTERLEAVED
from harness.measuring.runner import RUN_TIMEOUT_S

AUTO = "auto"
GRAINS = ("step", "micro", AUTO)
METRICS = ("median", "mean", "min")
TESTS = ("rank", "t")
UNITS = ("launch", "pair")
DEFAULT_THRESHOLD = INTERLEAVED
DEFAULT_BUDGET_MINUTES = 10.0
LAUNCHES_PER_MINUTE = 2  # launches=auto: this many per budget minute
MIN_LAUNCHES = 3  # the fewest with which the launch can be the unit of the verdict
AUTO_BLOCK_STEPS = 1  # steps (or, at the micro grain, steps of micro-batch turns) per block


@dataclass(frozen=True)
class ComparisonConfig:
    """Every setting of an interleaved comparison of side A against side B on this machine.

    What to compare: ``workload``, ``decomposition`` (and ``decomposition_b`` when B runs another split of the same
    batch, as the advisor does), the interpreters ``python_a`` and ``python_b`` (default: this one), ``gpu``.
    How long: ``budget_minutes`` of device time, start-up included (None: until ``pairs`` are made).
    How to judge: ``alpha`` (None: the GPU's default), ``threshold`` (+2%).

    Research knobs (``--set``), each ``auto`` where the machine or the case decides:
    ``block_steps`` (steps per block), ``grain`` (``step``; ``micro``: single micro-batches in turns, for a
    decomposition with gradient accumulation), ``warmup_steps`` per side and launch, ``pairs`` (a cap), ``launches``,
    ``look_every``, ``seed``, ``cpus`` (both workers pinned to these; auto: the last CPU where there are two or more),
    ``prestart`` (the next launch's workers import on the other CPUs meanwhile), ``warm_apart`` (a pre-started launch's
    two sides warm up at once on those CPUs), ``block_metric``, ``test``, ``unit``, ``drop_first_step``,
    ``malloc_default``, ``phases``, ``fallback_repeats`` (fresh runs per side when the two sides do not fit on the
    device at once).

    Test-only: ``inject_slowdown_b`` (B sleeps this fraction of each step), ``inject_work_b`` (B casts N extra times per
    LoRA forward), ``inject_work_b_percent`` (B does host work sized on this machine to slow its step this much).
    """

    workload: str
    decomposition: str
    decomposition_b: str | None = None
    python_a: str | None = None
    python_b: str | None = None
    gpu: str = AUTO
    budget_minutes: float | None = DEFAULT_BUDGET_MINUTES
    alpha: float | None = None
    threshold: float = DEFAULT_THRESHOLD
    skip_same_versions: bool = False
    workloads_dir: str = "workloads"
    results_dir: str = "perf-results/interleave"
    run_timeout: float = RUN_TIMEOUT_S
    # research knobs
    block_steps: int | str = AUTO
    grain: str = AUTO
    warmup_steps: int = 2
    pairs: int = 800
    launches: int | str = AUTO
    look_every: int | None = None
    seed: int | None = None
    cpus: tuple[int, ...] | str = AUTO
    prestart: bool | str = AUTO
    warm_apart: bool | str = AUTO
    block_metric: str = "median"
    test: str = "rank"
    unit: str | None = None
    drop_first_step: bool = False
    malloc_default: bool = False
    phases: bool = True
    fallback_repeats: int = 5
    # test-only
    inject_slowdown_b: float = 0.0
    inject_work_b: int = 0
    inject_work_b_percent: float = 0.0
    hold_cpus: tuple[int, ...] = ()  # set by resolved(): the CPUs outside cpus, where pre-started workers import

    def __post_init__(self) -> None:
        if isinstance(self.cpus, list):
            object.__setattr__(self, "cpus", tuple(self.cpus))
        for problem in _problems(self):
            raise BadInput(problem)

    # ---- what "auto" resolves to -------------------------------------------------------------
    def resolved(
        self, grad_accum: int, same_split: bool = True, available: list[int] | None = None
    ) -> ComparisonConfig:
        """The same settings with every ``auto`` made concrete, for a decomposition with ``grad_accum`` micro-batches
        per step (``same_split``: B runs A's decomposition) on a process that may use the CPUs ``available`` (default:
        its affinity)."""
        grain = ("micro" if grad_accum > 1 and same_split else "step") if self.grain == AUTO else self.grain
        if grain == "micro" and (grad_accum < 2 or not same_split):
            raise BadInput(
                "grain=micro needs one decomposition with gradient accumulation (grad-accum > 1): use the default grain"
            )
        block_steps = AUTO_BLOCK_STEPS if self.block_steps == AUTO else self.block_steps
        launches = self.launches
        if launches == AUTO:
            launches = max(MIN_LAUNCHES, round(LAUNCHES_PER_MINUTE * self.budget_minutes)) if self.budget_minutes else 6
            launches = min(launches, self.pairs // 2)  # a pair cap below 2 pairs per launch means fewer launches
        if self.pairs < 2 * launches:
            raise BadInput(
                f"pairs={self.pairs} is too few for {launches} launches: every launch needs at least 2 pairs "
                f"(set pairs to {2 * launches} or more)"
            )
        cpus_all = sorted(available if available is not None else os.sched_getaffinity(0))
        cpus = ((cpus_all[-1],) if len(cpus_all) > 1 else ()) if self.cpus == AUTO else self.cpus
        spare = [c for c in cpus_all if c not in cpus]
        prestart = bool(cpus and spare) if self.prestart == AUTO else self.prestart
        if prestart and not (cpus and spare):
            raise BadInput(
                "prestart needs cpus and CPUs outside them to import the next launch's workers on (this process may "
                f"use {cpus_all}): set cpus to fewer of them"
            )
        warm_apart = prestart if self.warm_apart == AUTO else self.warm_apart
        if warm_apart and not prestart:
            raise BadInput("warm_apart needs prestart: only a pre-started launch has CPUs outside cpus to warm up on")
        return replace(
            self,
            grain=grain,
            block_steps=block_steps,
            launches=launches,
            cpus=cpus,
            prestart=prestart,
            warm_apart=warm_apart,
            unit=self.unit or ("launch" if launches >= MIN_LAUNCHES else "pair"),
            hold_cpus=tuple(spare) if prestart else (),
        )


RESEARCH = (
    "block_steps",
    "grain",
    "warmup_steps",
    "pairs",
    "launches",
    "look_every",
    "seed",
    "cpus",
    "prestart",
    "warm_apart",
    "block_metric",
    "test",
    "unit",
    "drop_first_step",
    "malloc_default",
    "phases",
    "fallback_repeats",
)
TEST_ONLY = ("inject_slowdown_b", "inject_work_b", "inject_work_b_percent")


def _problems(c: ComparisonConfig):
    """Each broken rule of ``c``, as one line that names the setting and what is allowed."""

    def whole(name, lo=1, allow=()):
        v = getattr(c, name)
        if v in allow or (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            return None
        return (
            f"{name} must be a whole number >= {lo}"
            + (f" or {' or '.join(map(str, allow))}" if allow else "")
            + f", got {v!r}"
        )

    checks = [
        whole("block_steps", allow=(AUTO,)),
        whole("warmup_steps"),
        whole("pairs", lo=2),
        whole("launches", allow=(AUTO,)),
        whole("fallback_repeats"),
        whole("inject_work_b", lo=0),
        None if c.look_every is None else whole("look_every"),
    ]
    yield from (x for x in checks if x)
    for name, allowed in (("grain", GRAINS), ("block_metric", METRICS), ("test", TESTS)):
        if getattr(c, name) not in allowed:
            yield f"{name} must be one of {', '.join(allowed)}, got {getattr(c, name)!r}"
    if c.unit not in (None, *UNITS):
        yield f"unit must be one of {', '.join(UNITS)}, got {c.unit!r}"
    for name in ("prestart", "warm_apart"):
        if getattr(c, name) not in (True, False, AUTO):
            yield f"{name} must be true, false or auto, got {getattr(c, name)!r}"
    if c.cpus != AUTO and (not isinstance(c.cpus, tuple) or any(not isinstance(x, int) or x < 0 for x in c.cpus)):
        yield f"cpus must be a CPU list such as 3 or 2-3,6, or auto, got {c.cpus!r}"
    if c.budget_minutes is not None and not c.budget_minutes > 0:
        yield f"budget_minutes must be positive, got {c.budget_minutes!r}"
    if c.alpha is not None and not 0 < c.alpha < 0.5:
        yield f"alpha must be in (0, 0.5), got {c.alpha!r}"
    if not 0 <= c.threshold < 1:
        yield f"threshold must be a fraction in [0, 1), got {c.threshold!r}"
    if not 0 <= c.inject_slowdown_b < 10:
        yield f"inject_slowdown_b must be a fraction in [0, 10), got {c.inject_slowdown_b!r}"
    if c.inject_work_b_percent < 0 or (c.inject_work_b_percent and c.inject_work_b):
        yield (
            f"inject_work_b_percent must be positive and without inject_work_b, got {c.inject_work_b_percent} (and "
            f"{c.inject_work_b})"
        )


# ---- --set key=value ------------------------------------------------------------------------------
def cpu_list(text: str) -> tuple[int, ...]:
    """``"2-3,6"`` -> ``(2, 3, 6)``; ValueError on anything else."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(out))


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise BadInput(text)


_CONVERT = {
    "cpus": cpu_list,
    "prestart": _bool,
    "warm_apart": _bool,
    "drop_first_step": _bool,
    "malloc_default": _bool,
    "phases": _bool,
    "inject_slowdown_b": float,
    "inject_work_b_percent": float,
    "inject_work_b": int,
    "seed": int,
    "look_every": int,
    "warmup_steps": int,
    "pairs": int,
    "fallback_repeats": int,
    "block_steps": int,
    "launches": int,
}


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``["pairs=8", "cpus=0-1"]`` -> ``{"pairs": 8, "cpus": (0, 1)}``: the fields of ``--set``; ``auto`` stays
    ``auto``. A bad item is one line that names it and the keys allowed."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in RESEARCH + TEST_ONLY:
            raise BadInput(f"--set takes key=value with a key among {', '.join(RESEARCH)}; got {item!r}")
        text = text.strip()
        if key == "cpus" and text in ("", "none"):
            out[key] = ()
            continue
        if text == AUTO or key not in _CONVERT:
            out[key] = None if text in ("", "none") and key in ("unit", "seed", "look_every") else text
            continue
        try:
            out[key] = _CONVERT[key](text)
        except ValueError:
            raise BadInput(f"--set {key}: cannot read {text!r}") from None
    return out


def defaults_text() -> str:
    """``key=default`` for every research knob: the help of ``--set``."""
    d = {f.name: f.default for f in fields(ComparisonConfig)}
    return ", ".join(
        f"{k}={'none' if d[k] is None else str(d[k]).lower() if isinstance(d[k], bool) else d[k]}" for k in RESEARCH
    )
