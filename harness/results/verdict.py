"""A verdict as a result reports it: what it judged (its kind and case), its outcome, the line that says it, and the
figures behind it (the ratio and its interval, the test, alpha per look and the unit of replication).

The judging's own :class:`harness.judging.stats.Verdict` is one check's verdict on one case (its ``kind`` and ``case``,
every figure in ``details``), as the suite's checks and each look of an interleaved comparison make it; a comparison
reports the one verdict it decided as this type (:func:`harness.judging.blocks.comparison_verdict`), and a suite report
each of its verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from harness.errors import BadInput

FAILING = ("regression", "fail")  # the outcomes that fail a check (exit code 1)
# the keys of a verdict's JSON that its typed fields hold, besides outcome and message
FIELDS = ("kind", "case", "ratio", "lo", "hi", "test", "alpha", "unit", "repro", "interleaved")
TEXTS = ("kind", "case", "test", "unit", "repro")  # the typed fields written as they are


@dataclass(frozen=True)
class Verdict:
    """``outcome``: pass, regression, improvement, inconclusive, fail, unconfirmed, ...; ``message``: the one line a
    report prints; ``kind``: what a suite report's verdict judged (``runtime``, ``memory``, ``work``, ``ordering``,
    ``equivalence``, ``bad-workload``) and ``case`` what of (``W-MxG`` or ``W``); ``ratio``: B/A (or current/baseline);
    ``interval``: its (lo, hi); ``test``: the test that gave them (``signed-rank``, ``t``); ``alpha``: the level per
    look; ``unit``: the unit of replication (``launch``, ``pair``); ``repro``: the command that reproduces it
    (:mod:`harness.results.repro`); ``interleaved``: a confirmed suite verdict's interleaved comparison's verdict; each
    None where the verdict has none. ``details``: every other key of the verdict as written (``pairs``,
    ``p_regression``, ``prediction``, ``stored_message``, ...)."""

    outcome: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)
    ratio: float | None = field(default=None, kw_only=True)
    interval: tuple[float, float] | None = field(default=None, kw_only=True)
    test: str | None = field(default=None, kw_only=True)
    alpha: float | None = field(default=None, kw_only=True)
    unit: str | None = field(default=None, kw_only=True)
    kind: str | None = field(default=None, kw_only=True)
    case: str | None = field(default=None, kw_only=True)
    repro: str | None = field(default=None, kw_only=True)
    interleaved: Verdict | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, str) or not self.outcome:
            raise BadInput(f"a verdict needs an outcome, got {self.outcome!r}")
        if self.interval is not None:
            object.__setattr__(self, "interval", tuple(self.interval))
            if len(self.interval) != 2:
                raise BadInput(f"a verdict's interval is (lo, hi), got {self.interval!r}")
        twice = [k for k, v in self._fields().items() if v is not None and k in self.details]
        if twice:
            raise BadInput(f"a verdict's {', '.join(twice)} given both as a field and in its details: give it once")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def _fields(self) -> dict[str, Any]:
        """The typed fields as the JSON keys they are written under (:data:`FIELDS`)."""
        lo, hi = self.interval if self.interval is not None else (None, None)
        figures = {"ratio": self.ratio, "lo": lo, "hi": hi, "test": self.test, "alpha": self.alpha, "unit": self.unit}
        return {
            "kind": self.kind,
            "case": self.case,
            **figures,
            "repro": self.repro,
            "interleaved": self.interleaved.to_json() if self.interleaved is not None else None,
        }

    @property
    def failed(self) -> bool:
        return self.outcome in FAILING

    def to_json(self) -> dict:
        """The verdict as written: kind and case, outcome and message, the other typed fields it has (the interval as
        ``lo`` and ``hi``), then its details."""
        typed = {k: v for k, v in self._fields().items() if v is not None}
        head = {k: typed.pop(k) for k in ("kind", "case") if k in typed}
        return {**head, "outcome": self.outcome, "message": self.message, **typed, **self.details}

    @classmethod
    def from_json(cls, data: Mapping | None) -> Verdict | None:
        """The verdict of a report's ``verdict`` object; None for none (or one without an outcome). A key of
        :data:`FIELDS` written as null (or ``lo`` without ``hi``) stays in ``details``, so that :meth:`to_json` gives
        the same keys back."""
        if not isinstance(data, Mapping) or not data.get("outcome"):
            return None
        rest = {k: v for k, v in data.items() if k not in ("outcome", "message")}
        given: dict[str, Any] = {k: rest.pop(k) for k in ("ratio", "alpha", *TEXTS) if rest.get(k) is not None}
        if rest.get("lo") is not None and rest.get("hi") is not None:
            given["interval"] = (rest.pop("lo"), rest.pop("hi"))
        if isinstance(rest.get("interleaved"), Mapping) and rest["interleaved"].get("outcome"):
            given["interleaved"] = cls.from_json(rest.pop("interleaved"))
        return cls(str(data["outcome"]), str(data.get("message", "")), rest, **given)
