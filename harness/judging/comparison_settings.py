"""What an interleaved comparison ran with, as one frozen :class:`ComparisonSettings`: built once from its resolved
configuration (:func:`harness.sidebyside.run.settings_of`), passed on as itself to the loop, the judging and the report,
written as the ``settings`` of ``progress.json`` and ``report.json`` (:meth:`~ComparisonSettings.to_json`) and read
back from them (:meth:`~ComparisonSettings.from_json`), older files' keys included.

The names are the glossary's (docs/measurement.md): ``max_pairs`` is the cap on pairs (``--set pairs=``), never a
count made; ``launches_planned`` the number of launches planned (``--set launches=``), never the launches' records;
``alpha`` the family-wise false-alarm rate, split over the ``looks`` (:attr:`~ComparisonSettings.alpha_per_look`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from harness.values import FLAG, NUMBER, TEXT, Items, Obj, mismatch

# the file's key of each field whose name differs from it (the key the report has always had)
KEYS = {"block_metric": "metric"}
# a key of older files -> the key it is now: a key that named two concepts in one file
RENAMED = {"pairs": "max_pairs", "launches": "launches_planned"}

if TYPE_CHECKING:
    from harness.judging.paired import PairedCheck

SHAPE = Obj(
    {
        **dict.fromkeys(("session_id", "gpu", "metric", "test", "unit"), TEXT),
        **dict.fromkeys(("alpha", "threshold", "launches_planned"), NUMBER),
        "looks": Items(NUMBER),
        "drop_first_step": FLAG,
    },
    required=("session_id", "alpha", "threshold", "looks", "metric"),
)  # what the judging reads of a comparison's recorded settings


def upgraded(data: Mapping) -> dict:
    """A recorded ``settings`` object with the keys of older files renamed to today's (:data:`RENAMED`)."""
    out = dict(data)
    for old, new in RENAMED.items():
        if old in out and new not in out:
            out[new] = out.pop(old)
    return out


def settings_problem(data: Mapping) -> str | None:
    """What in a comparison's recorded settings (progress.json's, or its report's; today's keys) the judging could not
    use, as ``settings.alpha is a str, not a finite number``; None when nothing. Alpha and the threshold in their
    ranges, as the comparison's options (:class:`harness.sidebyside.config.ComparisonConfig`) take them."""
    if why := mismatch(data, SHAPE, "settings"):
        return why
    if not 0 < data["alpha"] < 0.5:
        return f"settings.alpha is {data['alpha']!r}, not a level in (0, 0.5)"
    if not 0 <= data["threshold"] < 1:
        return f"settings.threshold is {data['threshold']!r}, not a fraction in [0, 1)"
    return None


@dataclass(frozen=True, kw_only=True)
class ComparisonSettings:
    """Every setting of one interleaved comparison, each ``auto`` resolved, as recorded. How it is judged: ``alpha``
    (family-wise), ``threshold``, ``looks`` (the pair counts at which it looks), ``block_metric`` and
    ``drop_first_step`` (of each block's step times), ``test`` and ``unit`` (of replication; None: the launch from
    :data:`harness.judging.launches.MIN_LAUNCH_UNIT` launches with pairs on, else the pair); ``session_id`` (the
    run's blocks; None: every block). The rest says what ran: the sides, the plan, the CPUs, the injected work. A
    setting an older file lacks is None."""

    gpu: str | None = None
    workload: str | None = None
    workload_hash: str | None = None
    decomposition: str | None = None
    decomposition_b: str | None = None
    python_a: str | None = None
    python_b: str | None = None
    inject_slowdown_b: float | None = None
    inject_work_b: float | None = None
    inject_work_b_percent: float | None = None
    inject_kind: str | None = None
    block_steps: int | None = None
    grain: str | None = None
    max_pairs: int | None = None
    launches_planned: int | None = None
    look_every: int | None = None
    looks: tuple[int, ...] = (1,)
    budget_minutes: float | None = None
    alpha: float
    threshold: float
    seed: int | None = None
    drop_first_step: bool = False
    phases: bool | None = None
    block_metric: str = "median"
    test: str = "rank"
    unit: str | None = None
    prestart: bool | None = None
    prestart_at: str | None = None
    hold_cpus: tuple[int, ...] | None = None
    warm_apart: bool | None = None
    cpus: tuple[int, ...] | None = None
    malloc_default: bool | None = None
    warmup_steps: int | None = None
    session_id: str | None = None
    config: Mapping[str, Any] | None = None  # the configuration it was resolved from, as given
    inject_calibration: Mapping[str, Any] | None = None  # what sizing the injected work measured (once it has)

    def __post_init__(self) -> None:
        for name in ("looks", "hold_cpus", "cpus"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def alpha_per_look(self) -> float:
        """The level each look tests at: the family-wise ``alpha`` split over the planned looks."""
        return self.alpha / max(len(self.looks), 1)

    def check(self, unit: str | None = None) -> PairedCheck:
        """The paired check these settings judge with; ``unit``: the one to use where ``self.unit`` is None."""
        # imported here: the readers of a report (the alert) run with the standard library alone, the judging with scipy
        from harness.judging.paired import PairedCheck

        return PairedCheck(self.alpha, self.threshold, len(self.looks), test=self.test, unit=self.unit or unit)

    def judged_as(self, **changes: Any) -> ComparisonSettings:
        """The same settings judged another way (``block_metric``, ``drop_first_step``, ``test``, ``unit``)."""
        return replace(self, **changes)

    def to_json(self) -> dict:
        """The ``settings`` object of progress.json and report.json: every field under its key (:data:`KEYS`), the
        CPU lists as lists (an empty one as null); the configuration and the calibration only where there is one."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("config", "inject_calibration") and v is None:
                continue
            if isinstance(v, tuple):
                v = list(v) or (None if f.name in ("hold_cpus", "cpus") else [])
            elif isinstance(v, Mapping):
                v = dict(v)
            out[KEYS.get(f.name, f.name)] = v
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> ComparisonSettings:
        """The settings of a ``settings`` object as :meth:`to_json` writes it (older files' keys upgraded); the keys
        the judging reads checked first (:func:`settings_problem`), a key of no field left out."""
        data = upgraded(data)
        keys = {KEYS.get(f.name, f.name): f.name for f in fields(cls)}
        return cls(**{keys[k]: v for k, v in data.items() if k in keys})
