"""What every result written as one JSON file shares: its file is ``to_json()``, stamped with its format's version, and
``from_json``/``read`` give the same type back, upgraded from an older version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from harness.results import formats


class Stored:
    """A mixin for a frozen result whose file content is its ``data`` mapping, in the format :attr:`FORMAT`."""

    FORMAT: ClassVar[formats.Format]

    def to_json(self) -> dict:
        return self.FORMAT.stamp(self.data)

    @classmethod
    def from_json(cls, data: object, where: str = ""):
        return cls(cls.FORMAT.read(data, where))

    @classmethod
    def read(cls, path: str | Path):
        """The result in the file ``path`` (a results dir: its ``report.json``)."""
        p = Path(path)
        p = p / "report.json" if p.is_dir() else p
        return cls.from_json(json.loads(p.read_text()), str(p))
