"""What a bisection returns: which release, commit or package between a good and a bad end changed the work or the time
of a case, each change with its boundary and its counts, and what the search spent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.stored import Stored

OUTCOMES = ("changed", "no_change", "inconclusive", "ends_failed")


@dataclass(frozen=True)
class Bisection(Stored):
    """``data``: the result as ``report.json`` holds it (docs/bisect.md); the fields below are its parts."""

    FORMAT = formats.BISECTION
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", MappingProxyType({k: v for k, v in self.data.items() if k != formats.KEY}))
        if self.outcome not in OUTCOMES:
            raise ValueError(f"a bisection ends in one of {', '.join(OUTCOMES)}, not {self.outcome!r}")

    def content(self) -> dict:
        return dict(self.data)

    @classmethod
    def of(cls, content: dict, path: Path | None = None) -> Bisection:
        return cls(content)

    @property
    def outcome(self) -> str:
        return self.data.get("outcome", "")

    @property
    def exit_code(self) -> int:
        """3 when an end could not be measured (nothing was bisected), else 0: a change found is an answer, not a
        failure."""
        return 3 if self.outcome == "ends_failed" else 0

    @property
    def case(self) -> str:
        return self.data.get("case", "")

    @property
    def search(self) -> str | None:
        """``census`` (the counts moved: exact) or ``timing`` (interleaved comparisons) or ``none``."""
        return self.data.get("search")

    @property
    def changes(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("changes") or [])

    @property
    def inconclusive(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("inconclusive") or [])

    @property
    def uninstallable(self) -> list[Any]:
        return list(self.data.get("uninstallable") or [])

    @property
    def notes(self) -> list[str]:
        return list(self.data.get("notes") or [])

    @property
    def spent(self) -> Mapping[str, Any]:
        return self.data.get("spent") or {}
