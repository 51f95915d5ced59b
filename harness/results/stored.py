"""What every result written as one JSON file shares: its file is ``to_json()``, stamped with its format's version, and
``from_json``/``read`` give the same type back, upgraded from an older version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar, Self

from harness.results import formats


class Stored:
    """A mixin for a frozen result written as one JSON file in the format :attr:`FORMAT`: the type says how its
    content is written (:meth:`content`) and read back (:meth:`of`)."""

    FORMAT: ClassVar[formats.Format]

    def content(self) -> dict:
        """The file's content, without its format version."""
        raise NotImplementedError

    @classmethod
    def of(cls, content: dict, path: Path | None = None) -> Self:
        """The result whose file holds ``content`` (of the current format version)."""
        raise NotImplementedError

    def to_json(self) -> dict:
        return self.FORMAT.stamp(self.content())

    @classmethod
    def from_json(cls, data: object, where: str = "") -> Self:
        return cls.of(cls.FORMAT.read(data, where))

    @classmethod
    def read(cls, path: str | Path) -> Self:
        """The result in the file ``path`` (a results dir: its ``report.json``)."""
        p = Path(path)
        p = p / "report.json" if p.is_dir() else p
        return cls.of(cls.FORMAT.read(json.loads(p.read_text()), str(p)), Path(path))
