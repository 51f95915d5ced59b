"""File formats and their versions, as asv's ``api_version``: every file the suite writes carries ``format`` (an
integer), and one reader upgrades older shapes, so that the rest of the code sees the current one only.

A :class:`Format` lists its upgrades: ``upgrades[n]`` takes a version-``n`` object to version ``n + 1``. Files written
before the key existed are version 0. An object newer than this harness is refused with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.errors import BadInput

KEY = "format"


class FormatError(BadInput):
    """An object this harness cannot read: another kind of file, or a newer version of its format."""


def _same(obj: dict) -> dict:
    """An upgrade that changes nothing but the version: the shape before the key existed is the first versioned one."""
    return obj


@dataclass(frozen=True)
class Format:
    """One file format: its name (for messages), its current version and the upgrade from each older version."""

    name: str
    version: int
    upgrades: Mapping[int, Callable[[dict], dict]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [v for v in range(self.version) if v not in self.upgrades]
        if missing:
            raise BadInput(f"format {self.name}: no upgrade from version(s) {missing}")

    def stamp(self, obj: Mapping) -> dict:
        """``obj`` with this format's current version, as it is written."""
        return {KEY: self.version, **{k: v for k, v in obj.items() if k != KEY}}

    def read(self, obj: object, where: str = "") -> dict:
        """``obj`` upgraded to the current version; :class:`FormatError` for another kind of object or a newer one."""
        where = where or self.name
        if not isinstance(obj, dict):
            raise FormatError(f"{where}: not a {self.name} (a JSON object was expected)")
        version = obj.get(KEY, 0)
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise FormatError(f"{where}: format {version!r} is not a version of {self.name}")
        if version > self.version:
            raise FormatError(
                f"{where}: {self.name} format {version} is newer than this harness reads ({self.version}); "
                "update the harness"
            )
        out = dict(obj)
        for v in range(version, self.version):
            out = self.upgrades[v](out)
        out[KEY] = self.version
        return out


# The formats of the files a results dir holds. Version 1 is the shape of the files written before the key existed.
RUN = Format("run record (runs.jsonl)", 1, {0: _same})
BLOCK = Format("block record (blocks.jsonl)", 1, {0: _same})
PROGRESS = Format("comparison progress (progress.json)", 1, {0: _same})
COMPARISON = Format("interleaved comparison report (report.json)", 1, {0: _same})
SUITE_REPORT = Format("suite report (report.json)", 1, {0: _same})
BISECTION = Format("bisection report (report.json)", 1, {0: _same})
ADVICE = Format("advice report (report.json)", 1, {0: _same})
