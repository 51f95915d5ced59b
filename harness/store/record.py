"""The session record of the results store: its schema version, upgrades of older versions, its file name and bytes.

A record is one JSON object per session (``docs/store.md`` describes every key), read into and written from a
:class:`harness.store.session.Session`, gzipped and byte-for-byte deterministic (sorted keys, no timestamp in the gzip
header), so that adding the same session twice writes the same bytes and a git store commits nothing the second time.

Versions, as asv's ``api_version``: every record carries ``schema``. A reader calls :func:`upgrade`, which applies
the functions of :data:`UPGRADES` in turn (``UPGRADES[n]`` takes a version-``n`` record to version ``n + 1``), so that
the rest of the code sees the current version only. A record newer than this harness is refused with one line.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from collections.abc import Callable
from pathlib import PurePosixPath

from harness.errors import BadInput
from harness.files import slug
from harness.store.session import Session
from harness.values import load_json

SCHEMA = 1
SUFFIX = ".json.gz"
NO_TRACK = "default"  # the folder of sessions added without --track


class RecordError(BadInput):
    """A file that is not a session record this harness can read."""


def _from_0(rec: dict) -> dict:
    """Version 0 (drafts before the schema key existed): the environment was ``env``; ``runner`` could be missing."""
    out = {k: v for k, v in rec.items() if k != "env"}
    out.setdefault("environment", rec.get("env") or {})
    out.setdefault("runner", "")
    out.setdefault("verdicts", [])
    out["schema"] = 1
    return out


UPGRADES: dict[int, Callable[[dict], dict]] = {0: _from_0}


def upgrade(rec: dict, where: str = "record") -> dict:
    """``rec`` at the current :data:`SCHEMA`, through :data:`UPGRADES`; raises :class:`RecordError` for a newer or
    broken one."""
    if not isinstance(rec, dict) or "session_id" not in rec:
        raise RecordError(
            f"{where}: not a session record (no session_id); pass files written by python -m harness store add"
        )
    version = rec.get("schema", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise RecordError(
            f"{where}: schema {json.dumps(version)[:20]} is not a version of the session record (0 to {SCHEMA}); "
            "remove it or add the session again"
        )
    if version > SCHEMA:
        raise RecordError(f"{where}: schema {version} is newer than this harness reads ({SCHEMA}); update the harness")
    while version < SCHEMA:
        rec = UPGRADES[version](rec)
        version = rec["schema"]
    return rec


def relpath(rec: Session) -> str:
    """Where a record is filed: ``<gpu>/<track>/<YYYY-MM-DD>-<session>.json.gz`` (the date of its first run)."""
    day = (rec.started_at or "")[:10]
    day = day if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else "undated"
    return str(
        PurePosixPath(slug(rec.gpu or "unknown"), slug(rec.track or NO_TRACK), f"{day}-{slug(rec.session_id)}{SUFFIX}")
    )


def session_of(name: str) -> str | None:
    """The session slug of a store file name (``2026-11-30-<session>.json.gz``), or None for another file."""
    m = re.fullmatch(r"(?:\d{4}-\d{2}-\d{2}|undated)-(.+)" + re.escape(SUFFIX), name)
    return m.group(1) if m else None


def dumps(rec: Session) -> bytes:
    """The record's file content: its :meth:`~harness.store.session.Session.to_json` as compact sorted JSON, gzipped
    with a zero timestamp (the same record, the same bytes)."""
    return pack(rec.to_json())


def pack(obj: dict) -> bytes:
    """A JSON object as a record file's content (:func:`dumps`)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0, filename="") as fh:
        fh.write(text)
    return buf.getvalue()


MAX_RECORD_BYTES = (
    16 * 2**20
)  # a record's JSON, unpacked: far above what store add writes (it fits a session in 50 kB gzipped)


def _no_constant(name: str):
    raise BadInput(f"a non-finite number ({name}) in it")


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise BadInput(f"a number out of range ({text[:20]}) in it")
    return x


def loads(data: bytes, where: str = "record") -> Session:
    """A record from its file content, upgraded to the current schema, checked (:func:`harness.store.check.problem`):
    unpacked to at most :data:`MAX_RECORD_BYTES`, nested at most :data:`harness.values.MAX_DEPTH` deep (both found
    before parsing), no NaN or infinite number, every key its readers take of the shape the schema gives; then read
    into a :class:`Session`. Raises :class:`RecordError` with one line naming ``where`` otherwise."""
    from harness.store.check import problem

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            text = fh.read(MAX_RECORD_BYTES + 1)
        if len(text) > MAX_RECORD_BYTES:
            raise RecordError(
                f"{where}: unpacks to more than {MAX_RECORD_BYTES >> 20} MiB, not a session record of store add; "
                "remove it or add the session again"
            )
        rec = load_json(text, parse_constant=_no_constant, parse_float=_finite)
    except (OSError, EOFError, ValueError) as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError(
            f"{where}: not a gzipped JSON session record ({exc}); remove it or add the session again"
        ) from None
    rec = upgrade(rec, where)
    if (why := problem(rec, SCHEMA)) is not None:
        raise RecordError(f"{where}: {why}; the readers leave it out: remove it or add the session again")
    return Session.from_json(rec)
