"""What the advice returns: which micro-batch x grad-accum split of the effective batch is fastest on this machine, the
probes and the interleaved comparisons it rests on, and the TOML lines that pin it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.stored import Stored


@dataclass(frozen=True)
class Advice(Stored):
    """``data``: the advice as ``report.json`` holds it; ``exit_code`` 3 when no split fits or a comparison failed to
    measure."""

    FORMAT = formats.ADVICE
    data: Mapping[str, Any] = field(default_factory=dict)
    exit_code: int = 0

    def __post_init__(self):
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))

    @property
    def recommended(self) -> str | None:
        """The split the advice recommends, or None when none fits."""
        return (self.data.get("answer") or {}).get("recommended")

    @property
    def compared(self) -> Mapping[str, Mapping[str, Any]]:
        """Per split: its verdict against the fastest probe (outcome, ratio, interval, message)."""
        return self.data.get("compared") or {}

    @property
    def failed(self) -> list[str]:
        return list(self.data.get("failed") or [])
