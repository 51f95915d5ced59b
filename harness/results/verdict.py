"""A verdict: its outcome, the line that says it, and the figures behind it (the ratio and its interval, the test)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from harness.errors import BadInput

FAILING = ("regression", "fail")  # the outcomes that fail a check (exit code 1)


@dataclass(frozen=True)
class Verdict:
    """``outcome``: pass, regression, improvement, inconclusive, fail, unconfirmed, ...; ``message``: the one line a
    report prints; ``details``: every other key of the verdict as written (``ratio``, ``lo``, ``hi``, ``pairs``,
    ``prediction``)."""

    outcome: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.outcome, str) or not self.outcome:
            raise BadInput(f"a verdict needs an outcome, got {self.outcome!r}")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def failed(self) -> bool:
        return self.outcome in FAILING

    @property
    def ratio(self) -> float | None:
        return self.details.get("ratio")

    @property
    def interval(self) -> tuple[float, float] | None:
        lo, hi = self.details.get("lo"), self.details.get("hi")
        return None if lo is None or hi is None else (lo, hi)

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "message": self.message, **self.details}

    @classmethod
    def from_json(cls, data: Mapping | None) -> Verdict | None:
        """The verdict of a report's ``verdict`` object; None for none (or one without an outcome)."""
        if not isinstance(data, Mapping) or not data.get("outcome"):
            return None
        return cls(
            str(data["outcome"]),
            str(data.get("message", "")),
            {k: v for k, v in data.items() if k not in ("outcome", "message")},
        )
