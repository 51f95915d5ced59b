"""Files the harness writes: atomically, so that a failure never leaves a half-written file or loses
a measurement; and the one id maker for runs and sessions.

Nothing here imports torch: the worker, the runner and the reports share it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import BadInput
from harness.values import load_json

# A folder of a results dir holding this file keeps runs that are not the session's own: other environments (a bisect's
# candidates) or copies (an A/B's censuses). `store add` leaves such a folder out, so that a night stays one session.
NOT_STORED = ".not-stored"


def mark_not_stored(folder: str | Path) -> Path:
    """Make ``folder`` and mark it as not stored (``NOT_STORED``); returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NOT_STORED).write_text(
        "runs of other environments, or copies: the results store leaves this folder out\n"
    )
    return folder


def new_id(prefix: str = "") -> str:
    """``[prefix-]YYYYmmddTHHMMSS-xxxxxx``: sortable by time, unique by its random tail."""
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return f"{prefix}-{stamp}" if prefix else stamp


class InUse(BadInput):
    """A results dir that another command holds (:func:`results_lock`): this one is refused before it writes
    anything."""


class OutsideResults(BadInput):
    """A path in a results dir that is a symbolic link out of it: results are written only inside their results dir."""


def refuse_link(path: str | Path) -> None:
    """Raise :class:`OutsideResults` (one line) when ``path`` is a symbolic link whose target lies outside the directory
    that holds it (``runs.jsonl`` -> ``~/.bashrc``, ``work/`` -> ``/elsewhere``); a link within that directory is
    followed."""
    path = Path(path)
    if not path.is_symlink():
        return
    target, home = path.resolve(), path.parent.resolve()
    if not target.is_relative_to(home):
        raise OutsideResults(
            f"{path} is a symbolic link to {target}, outside {home}: "
            "results are written only inside their results dir; "
            "remove the link, or pass another --results-dir"
        )


def refuse_links(*paths: str | Path) -> None:
    """:func:`refuse_link` of every file a writer is about to write, before it writes the first: one linked out of the
    results dir leaves the others as they were, not half of a report rewritten."""
    for path in paths:
        refuse_link(path)


def make_dir(path: str | Path) -> Path:
    """Create the folder ``path`` inside a results dir (``work/``), refusing a symbolic link out of it
    (:func:`refuse_link`)."""
    path = Path(path)
    refuse_link(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _open_inside(path: str | Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT)``, not following a symbolic link out of ``path``'s folder
    (:func:`refuse_link`)."""
    try:
        return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    refuse_link(path)  # a link: refused when it points outside
    return os.open(path, flags | os.O_CREAT, 0o644)


def report_session(data: dict) -> str | None:
    """The id of the run that wrote a report: its ``session_id`` (a fallback report keeps it in its ``settings``)."""
    return data.get("session_id") or (data.get("settings") or {}).get("session_id")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename, on failure it is removed.

    The temporary name keeps ``path``'s suffix, so writers that pick a format by suffix (matplotlib) still work.
    An OSError of the temporary file (a full disk) names ``path``: the file the caller writes, not one it never saw.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a report is as readable as any file its user writes
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (fsynced before the rename). An OSError (a full disk) names ``path``, not
    the temporary file or nothing (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())


def write_json_atomic(path: str | Path, obj, indent: int | None = 1) -> None:
    """``obj`` as standard JSON: a value that is not a finite number (an interval of one launch, say) is written as
    null, never as the NaN or Infinity that JSON has no word for and other readers (a browser, jq) refuse."""
    write_atomic(path, json.dumps(finite(obj), indent=indent, allow_nan=False))


def finite(obj):
    """``obj`` with every float that is not finite replaced by None, in nested dicts, lists and tuples."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one line: a single write on an O_APPEND descriptor, then fsync. A short write (a full disk) is undone and
    raised as OSError naming the file, so that no torn line is left for the next record to be glued onto; after a torn
    last line left by a killed writer, the record starts on a line of its own. Any OSError names the file."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    try:
        _append(path, line)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def _append(path: str | Path, line: bytes) -> None:
    """:func:`append_jsonl` of one encoded line."""
    fd = _open_inside(path, os.O_RDWR | os.O_APPEND)
    try:
        start = os.fstat(fd).st_size
        if start and os.pread(fd, 1, start - 1) != b"\n":
            line = (
                b"\n" + line
            )  # a torn last line (a killed writer) stays a line of its own: the record is never glued onto it
        written = os.write(fd, line)
        if written != len(line):
            os.ftruncate(fd, start)
            raise OSError(
                errno.ENOSPC,
                f"wrote {written} of {len(line)} bytes of a record (disk full?); the record is not kept",
                str(path),
            )
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def results_lock(root: str | Path, fix: str = "give this one its own --results-dir") -> Iterator[None]:
    """Hold ``root/.lock`` while a command writes into ``root``; a second command on the same folder is refused at once,
    with one line naming the holder (its pid and command line, which the holder writes into the lock file) and
    ``fix``."""
    path = Path(root) / ".lock"
    fd = _open_inside(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InUse(f"{root} is in use by another run ({_holder(fd)}); wait for it, or {fix}") from None
        try:
            _claim(fd)
        except OSError as exc:  # a full disk: the first file a command writes is this one
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        yield
    finally:
        os.close(fd)


def _claim(fd: int) -> None:
    """Write who holds the lock into its file (one line), for the message of a command refused beside it."""
    argv = " ".join(sys.argv)[:300].replace("\n", " ")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}: {argv}\n".encode(), 0)


def _holder(fd: int) -> str:
    """The holder as its lock file names it (:func:`_claim`); 'holder unknown' when it wrote nothing yet."""
    text = os.pread(fd, 400, 0).decode("utf-8", errors="replace").strip().splitlines()
    return f"held by {text[0]}" if text else "holder unknown"


def read_records(path: str | Path, upgrade: Callable[[dict, str], dict] | None = None) -> tuple[list[dict], list[str]]:
    """The records of a JSON-lines file (runs.jsonl, blocks.jsonl) and one line per line skipped, naming the file and
    line: a torn last line (a writer killed mid-record), a line that is not JSON, or JSON that is not an object. A
    missing file has none. Readers put the skipped lines in their report, so that a record lost on disk is said where
    the numbers are read. ``upgrade(record, where)``: the record at its format's current version
    (``harness.results.formats``); a record it refuses with a ValueError (a newer format) is skipped and named too."""
    out: list[dict] = []
    skipped: list[str] = []
    if not Path(path).exists():
        return out, skipped
    with open(path, "rb") as fh:
        raw = fh.read().decode("utf-8", errors="replace")
    lines = raw.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = load_json(line)
        except json.JSONDecodeError:
            torn = n == len(lines)  # the last line, with no newline after it: the writer stopped mid-record
            skipped.append(
                f"{path}:{n}: "
                + ("a torn last line (a writer stopped mid-record); skipped" if torn else "not valid JSON; skipped")
            )
            continue
        except ValueError as exc:  # nested too deep, a number of too many digits
            skipped.append(f"{path}:{n}: not a record ({exc}); skipped")
            continue
        if not isinstance(rec, dict):
            skipped.append(f"{path}:{n}: a JSON {type(rec).__name__}, not a record; skipped")
            continue
        if upgrade is not None:
            try:
                rec = upgrade(rec, f"{path}:{n}")
            except ValueError as exc:
                skipped.append(f"{exc}; skipped")
                continue
        out.append(rec)
    return out, skipped


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a JSON-lines file; a torn or malformed line is skipped with a warning on stderr
    (:func:`read_records`)."""
    out, skipped = read_records(path)
    for line in skipped:
        print(f"warning: {line}", file=sys.stderr)
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
        raise BadInput(
            f"{what} {path}: cannot write there ({type(exc).__name__}: {exc.strerror or exc}); "
            "pass a writable directory"
        ) from None
    return path


def slug(
    text: str, *, keep: str = "._-", fill: str = "_", strip: str = "._", width: int | None = None, empty: str = "_"
) -> str:
    """A file-name-safe form of ``text``: letters, digits and the characters of ``keep``; each run of anything else
    becomes ``fill``; ``strip`` is trimmed off both ends, then the rest cut to ``width``; ``empty`` when nothing is
    left."""
    out = re.sub(f"[^A-Za-z0-9{re.escape(keep)}]+", fill, text).strip(strip)
    return (out[:width] if width else out) or empty


def cache_dir(name: str) -> Path:
    """The folder ``name`` in the user's cache (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / name
