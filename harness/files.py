"""Files the harness writes: atomically, so that a failure never leaves a half-written file or loses
a measurement; and the one id maker for runs and sessions.

Nothing here imports torch: the worker, the runner and the reports share it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def new_id(prefix: str = "") -> str:
    """``[prefix-]YYYYmmddTHHMMSS-xxxxxx``: sortable by time, unique by its random tail."""
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return f"{prefix}-{stamp}" if prefix else stamp


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename, on failure it is removed.

    The temporary name keeps ``path``'s suffix, so writers that pick a format by suffix (matplotlib) still work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a report is as readable as any file its user writes
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (fsynced before the rename)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())


def write_json_atomic(path: str | Path, obj, indent: int | None = 1) -> None:
    write_atomic(path, json.dumps(obj, indent=indent))


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one line: a single write on an O_APPEND descriptor, then fsync. A short write (a full disk) is undone and
    raised as OSError naming the file, so that no torn line is left for the next record to be glued onto."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        written = os.write(fd, line)
        if written != len(line):
            os.ftruncate(fd, start)
            raise OSError(errno.ENOSPC, f"wrote {written} of {len(line)} bytes of a record (disk full?); the record is not kept", str(path))
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def results_lock(root: str | Path) -> Iterator[None]:
    """Hold ``root/.lock`` while a command writes into ``root``; a second command on the same folder is refused at once."""
    fd = os.open(Path(root) / ".lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{root} is in use by another run; give this one its own --results-dir") from None
        yield
    finally:
        os.close(fd)


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a runs.jsonl; a torn last line (a killed writer) is skipped, not fatal."""
    out = []
    if not Path(path).exists():
        return out
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"warning: {path}:{n} is not valid JSON; skipped", file=sys.stderr)
    return out


def ensure_dir(path: str | Path, what: str = "--results-dir") -> Path:
    """Create ``path`` (and parents) or raise ValueError with one line saying why not and what to do."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{uuid.uuid4().hex[:6]}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot write there ({type(exc).__name__}: {exc.strerror or exc}); pass a writable directory") from None
    return path
