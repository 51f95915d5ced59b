"""What an interleaved comparison keeps as it runs (``progress.json``, rewritten at each launch's start and end): its
case, start time, settings, the order of each pair and its launches (both workers started, their pairs, both closed),
as the report's ``launches`` keep them too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from harness.results import formats

REQUIRED = ("launch", "startup_s", "ready")  # what every launch record has had; the rest is left out where unset


@dataclass(frozen=True)
class Launch:
    """Launch number ``launch``: the seconds until both workers were ready (``startup_s``), what each side's worker
    reported then (``ready``, by side), its environment (``env``, by side), whether it was pre-started, the pairs
    planned for it; once it ran: why its pre-started workers were replaced (``restarted``), what warming the two sides
    apart did (``warm_apart``), the warm-up's seconds, why it made fewer pairs than planned (``fitted``) and the seconds
    its workers took to close. A field that is None is not in the record."""

    launch: int
    startup_s: float
    ready: Mapping[str, Mapping[str, Any]]
    env: Mapping[str, Any] | None = None
    prestarted: bool | None = None
    pairs_planned: int | None = None
    restarted: str | None = None
    warm_apart: Mapping[str, Any] | None = None
    warmup_s: float | None = None
    fitted: str | None = None
    close_s: float | None = None

    @property
    def cost_s(self) -> float:
        """What the launch cost besides its pairs: its start-up, warm-up and close."""
        return self.startup_s + (self.warmup_s or 0.0) + (self.close_s or 0.0)

    def side(self, side: str) -> Mapping[str, Any]:
        """What ``side``'s worker reported when it was ready (empty where the record has no such side)."""
        return self.ready.get(side) or {}

    def env_of(self, side: str) -> Any:
        """``side``'s environment as its worker described it; None where the record has none."""
        return (self.env or {}).get(side)

    @staticmethod
    def problem(obj: object) -> str | None:
        """Why ``obj`` is not a launch record, in a few words; None when it is one."""
        if not isinstance(obj, Mapping):
            return "a launch is not an object"
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            return f"a launch lacks {', '.join(missing)}"
        return None if isinstance(obj["ready"], Mapping) else "a launch's ready is not an object"

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Launch:
        """A launch record (checked first by :meth:`problem`); keys this harness does not know are left out."""
        return cls(**{f.name: obj[f.name] for f in fields(cls) if f.name in obj})

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k in REQUIRED}


@dataclass(frozen=True)
class Kept:
    """``progress.json``: the comparison's ``case``, its start time (``t_start``), its ``settings`` as written (read by
    :mod:`harness.judging.comparison_settings`), the order of each pair and the records of its launches so far."""

    case: str
    t_start: float
    settings: Mapping[str, Any]
    orders: list
    launches: list[Launch]

    @staticmethod
    def problem(obj: object, settings_problem: Callable[[Mapping[str, Any]], str | None]) -> str | None:
        """Why ``obj`` (read by :data:`formats.PROGRESS`) is not a comparison's progress, in a few words, its settings
        checked by ``settings_problem``; None when it is one."""
        if not isinstance(obj, Mapping):
            return "it is not an object"
        if not isinstance(obj.get("settings"), Mapping):
            return "'settings' is not an object"
        if (why := settings_problem(obj["settings"])) is not None:
            return why
        launches = obj.get("launches")
        if not isinstance(launches, list) or any(Launch.problem(li) for li in launches):
            return "'launches' is not a list of launches"
        if not isinstance(obj.get("t_start"), (int, float)):
            return "'t_start' is not a number"
        if not isinstance(obj.get("case"), str) or not isinstance(obj.get("orders"), list):
            return "'case' or 'orders' is missing"
        return None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Kept:
        """The progress ``obj`` (checked first by :meth:`problem`)."""
        launches = [Launch.from_json(li) for li in obj["launches"]]
        return cls(obj["case"], obj["t_start"], obj["settings"], obj["orders"], launches)

    def to_json(self) -> dict[str, Any]:
        """The file as the comparison writes it, with its format version."""
        return formats.PROGRESS.stamp(
            {
                "case": self.case,
                "t_start": self.t_start,
                "settings": dict(self.settings),
                "orders": list(self.orders),
                "launches": [li.to_json() for li in self.launches],
            }
        )
