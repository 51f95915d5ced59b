"""``store add`` and ``store alerts``: keep each session's compact record in a results store (a directory or a git
branch, ``docs/store.md``) and find the environment regressions in it (:mod:`harness.store.alerts`)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from harness.errors import UsageError
from harness.files import write_json_atomic
from harness.store import open_store
from harness.store import runs as store_runs
from harness.store.alerts import find_alerts, issues_report, lines
from harness.store.git import GitStoreError
from harness.store.session import Session
from harness.store.shifts import DEFAULT_RULE, ShiftRule
from harness.store.summary import records_of


def harness_commit() -> str:
    """The harness's commit: ``$GITHUB_SHA`` in a workflow, else ``git rev-parse`` of its checkout, else empty."""
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"][:12]
    try:
        p = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def _open(store: str, cache: str | None):
    try:
        return open_store(store, cache)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def store_add(
    results_dirs: list[str],
    *,
    store: str,
    track: str = "",
    runner: str | None = None,
    image: str | None = None,
    cache: str | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Add one record per session of each results dir to the store; a session stored already is stored once."""
    runner = os.environ.get("RUNNER_NAME", "") if runner is None else runner
    image = os.environ.get("PERF_IMAGE", "") if image is None else image
    recs = []
    for d in results_dirs:
        try:
            recs += records_of(d, track=track, runner=runner, image=image, harness=harness_commit())
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    st = _open(store, cache)
    try:
        done = st.add(recs)
    except GitStoreError as exc:
        raise UsageError(str(exc)) from None
    for a, rec in zip(done, recs):
        note = f" (trimmed: {', '.join(rec.trimmed)})" if rec.trimmed else ""
        out(f"{a.status}: {a.path}" + (f" (replaces {', '.join(a.removed)})" if a.removed else "") + note)
    out(
        f"{len(done)} session(s) in {st}: {sum(a.status == 'added' for a in done)} added, "
        f"{sum(a.status == 'updated' for a in done)} updated, "
        f"{sum(a.status == 'unchanged' for a in done)} unchanged"
    )
    return 0


def store_records(store: str, cache: str | None = None, out: Callable[[str], None] = print) -> list[Session]:
    """Every record of a store (one line per unreadable file); raises UsageError for an empty store."""
    st = _open(store, cache)
    try:
        recs = list(st.records(warn=out))
    except GitStoreError as exc:
        raise UsageError(str(exc)) from None
    if not recs:
        raise UsageError(
            f"--store {store}: no session stored there; add sessions first "
            f"(python -m harness store add RESULTS_DIR --store {store})"
        )
    return recs


def history_input(
    store: str, cache: str | None = None, out: Callable[[str], None] = print
) -> list[tuple[str, str, list[dict]]]:
    """The store's sessions as ``(track, where, runs)`` for the history page."""
    return store_runs.history_input(store_records(store, cache, out))


def store_alerts(
    *,
    store: str,
    cache: str | None = None,
    new_only: bool = False,
    gpu: str | None = None,
    track: str | None = None,
    as_json: bool = False,
    issues: str | None = None,
    alpha: float = DEFAULT_RULE.alpha,
    out: Callable[[str], None] = print,
) -> int:
    """Print the store's environment alerts and notes (as JSON with ``as_json``); ``issues``: also write the alerts of
    ``gpu`` as a report for ``.github/scripts/regression-issues.sh``. Exit 0 either way (an alert is news, not a failure
    here)."""
    recs = [
        r
        for r in store_records(store, cache, out)
        if (gpu is None or r.gpu == gpu) and (track is None or (r.track or "") == track)
    ]
    if not recs:
        raise UsageError(
            f"--store {store}: no session of gpu {gpu or 'any'} and track {track if track is not None else 'any'}; "
            "check --gpu and --track"
        )
    result = find_alerts(recs, ShiftRule(alpha=alpha), new_only=new_only)
    if issues:
        if not gpu:
            raise UsageError("--issues needs --gpu: the issue titles name one GPU")
        newest = max(recs, key=lambda r: (r.started_at or "", r.session_id)).session_id
        write_json_atomic(issues, issues_report(result, gpu, newest))
    if as_json:
        out(json.dumps(result.to_json(), indent=1))
    else:
        for ln in lines(result):
            out(ln)
    return 0
