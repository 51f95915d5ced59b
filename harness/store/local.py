"""A results store in a local directory: one file per session, ``<gpu>/<track>/<date>-<session>.json.gz`` under the
root.

Adding is idempotent: a session already stored with the same content is left alone (``unchanged``); with other content
(its results dir gained a report since) it is replaced (``updated``), also when it was filed under another track or
date before (the old file goes), so that a session is stored once whatever is added twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.files import atomic_path, ensure_dir, results_lock
from harness.store.record import MAX_RECORD_BYTES, SUFFIX, RecordError, loads, relpath, session_of, slug
from harness.store.record import dumps as record_bytes
from harness.store.session import Session


@dataclass(frozen=True)
class Added:
    """What :meth:`DirStore.write` did with one record: ``added``, ``updated`` or ``unchanged``, at ``path``
    (relative)."""

    session_id: str
    path: str
    status: str
    removed: tuple[str, ...] = ()


class DirStore:
    """Session records under ``root`` (created on the first add)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise BadInput(
                f"--store {self.root}: a file, not a directory; pass a directory (or a git URL) for the store"
            )

    def __str__(self) -> str:
        return str(self.root)

    def files(self) -> list[Path]:
        """Every record file, sorted by path."""
        if not self.root.is_dir():
            return []
        return sorted(
            p for p in self.root.rglob(f"*{SUFFIX}") if p.is_file() and session_of(p.name) and ".git" not in p.parts
        )

    def _by_session(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p in self.files():
            out.setdefault(session_of(p.name) or "", []).append(p.relative_to(self.root).as_posix())
        return out

    def write(self, records: list[Session]) -> list[Added]:
        """Write the records' files (atomically), each session once; returns what happened to each."""
        known = self._by_session()
        out = []
        for rec in records:
            rel, data = relpath(rec), record_bytes(rec)
            path = self.root / rel
            old = [p for p in known.get(slug(rec.session_id), []) if p != rel]
            for p in old:
                (self.root / p).unlink(missing_ok=True)
            if path.is_file() and path.read_bytes() == data:
                out.append(Added(rec.session_id, rel, "unchanged", tuple(old)))
                continue
            status = "updated" if path.is_file() or old else "added"
            with atomic_path(path) as tmp:
                tmp.write_bytes(data)
            path.chmod(0o644)
            out.append(Added(rec.session_id, rel, status, tuple(old)))
        return out

    def add(self, records: list[Session]) -> list[Added]:
        """:meth:`write` under the store's lock: a second ``store add`` into this directory is refused at once, naming
        this one."""
        with results_lock(ensure_dir(self.root, "--store"), "rerun this one when it has ended"):
            return self.write(records)

    def records(self, warn=print) -> Iterator[Session]:
        """Every stored record, upgraded to the current schema and checked; a file that cannot be read or used (too big,
        of the wrong shape, a NaN in it: :func:`harness.store.record.loads`) is skipped with one warning line naming
        it."""
        for p in self.files():
            try:
                if p.stat().st_size > MAX_RECORD_BYTES:  # never read whole: it is no record of store add
                    raise RecordError(
                        f"{p}: {p.stat().st_size >> 20} MiB, not a session record of store add; "
                        "remove it or add the session again"
                    )
                yield loads(p.read_bytes(), str(p))
            except (OSError, RecordError) as exc:
                warn(f"warning: {exc}")
