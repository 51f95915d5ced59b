"""``python -m harness alert REPORT [REPORT ...]``: a job's flagged cases, posted as one message to the team's webhook
beside the issues of ``.github/scripts/regression-issues.sh``, from the same reports (:mod:`harness.reporting.webhook`
says which cases and what the message holds).

Its settings are nightly.toml's ``[alerts]`` (:class:`harness.nightly.Alerts`): whether it posts, and the name of the
environment variable that holds the webhook's URL (a secret: never printed). Only the standard library (urllib): it runs
in a step that installs nothing. Exit 0: posted, nothing flagged, alerts off, or the variable unset (alerts are
optional; one line says so); 1: the webhook refused the message or could not be reached (one line); 2: a report that is
not one, a URL that is not http(s), or a bad nightly.toml.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from harness import exits
from harness.errors import UsageError
from harness.nightly import FILE, Alerts
from harness.nightly import load as load_nightly
from harness.reporting.webhook import encode, flagged, message

TIMEOUT_S = 10  # seconds to connect and to answer: a webhook answers at once, and the job must not wait on it
MAX_ANSWER = 4096  # bytes of the webhook's answer read (and dropped)
NOT_POSTED = 1  # the exit code when the webhook refused the message or could not be reached


def settings(project: Path) -> Alerts:
    """The project's ``[alerts]``; the defaults where the project has no nightly.toml."""
    return load_nightly(project).alerts if (project / FILE).is_file() else Alerts()


def read_report(path: Path) -> Mapping | None:
    """A report's data; None when there is no file (the run stopped before it wrote one). A file that is not a report
    is refused in one line."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a JSON report ({exc}); pass a report.json or the store's alerts file") from None
    if not isinstance(data, dict) or not isinstance(data.get("verdicts"), list):
        raise UsageError(
            f"{path}: not a report (no 'verdicts' list); pass a suite's or an interleaved comparison's report.json, "
            "or the file of `store alerts --issues`"
        )
    return data


def _confirmed(reports: list[tuple[str, Mapping]], confirm: str) -> tuple[list[tuple[str, Mapping]], bool]:
    """``reports`` with the one that ``confirm`` confirms (the same session) replaced by it, and whether one was: when
    none was (the confirmation was cut short, or failed before its report), runtime regressions are unconfirmed."""
    data = read_report(Path(confirm))
    session = str((data or {}).get("session_id") or "")
    hit = [i for i, (_, r) in enumerate(reports) if session and str(r.get("session_id") or "") == session]
    return [(confirm, data) if i in hit else pr for i, pr in enumerate(reports)], bool(hit)


def run_url_here(environ: Mapping[str, str]) -> str:
    """``$RUN_URL``, else the workflow run's address from GitHub's own variables, else empty."""
    if environ.get("RUN_URL"):
        return environ["RUN_URL"]
    parts = [environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else ""


def is_http(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # a broken address, such as an unclosed [IPv6
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def post(url: str, body: bytes, timeout: float = TIMEOUT_S) -> str | None:
    """POST ``body`` (JSON) to ``url``; None when the webhook took it, else one line that says why not (without the
    URL)."""
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": "harness-alert"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            answer.read(MAX_ANSWER)
    except urllib.error.HTTPError as exc:
        return f"the webhook answered HTTP {exc.code} {exc.reason}"
    except urllib.error.URLError as exc:
        return f"the webhook could not be reached: {exc.reason}"
    except (OSError, http.client.HTTPException) as exc:  # a timeout, a connection reset, a broken answer
        return f"the webhook could not be reached: {exc or type(exc).__name__}"
    return None


def alert(
    reports: list[str],
    *,
    env: str | None = None,
    run_url: str | None = None,
    confirm: str | None = None,
    changes: bool = False,
    project: Path | str = ".",
    environ: Mapping[str, str] | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Post the flagged cases of ``reports`` as one message (none when none is flagged). ``env``: the job's environment
    or track (default ``$PERF_ENV``); ``run_url``: default :func:`run_url_here`; ``confirm``: the confirmation's report
    (runtime regressions count only where it confirms a report's session); ``changes``: work verdicts that changed
    count too (a release night's latest job)."""
    environ = os.environ if environ is None else environ
    st = settings(Path(project))
    if not st.webhook:
        out(f"alert: off in {FILE} ([alerts] webhook = false); nothing posted")
        return exits.OK
    url = environ.get(st.webhook_env, "").strip()
    if not url:
        out(
            f"alert: ${st.webhook_env} is not set; nothing posted (alerts are optional: set it to the webhook's URL, "
            "docs/nightly.md)"
        )
        return exits.OK
    if not is_http(url):
        raise UsageError(f"${st.webhook_env} is not an http(s) URL; set it to the webhook's address")
    found = []
    for p in reports:
        data = read_report(Path(p))
        if data is None:
            out(f"alert: no report at {p}; skipped")
        else:
            found.append((p, data))
    runtime = True
    if confirm is not None:
        found, runtime = _confirmed(found, confirm)
        if not runtime:
            out(f"alert: no confirmation at {confirm} of these reports; their runtime regressions are unconfirmed")
    cases = [c for p, r in found for c in flagged(r, p, changes=changes, runtime=runtime)]
    if not cases:
        out(f"alert: no flagged case in {', '.join(p for p, _ in found) or 'no report'}; nothing posted")
        return exits.OK
    env = environ.get("PERF_ENV", "") if env is None else env
    body = message(cases, env=env, run_url=run_url_here(environ) if run_url is None else run_url)
    why = post(url, encode(body))
    if why:
        print(f"error: alert: {why}; {len(cases)} flagged case(s) not posted", file=sys.stderr)
        return NOT_POSTED
    out(f"alert: posted {len(cases)} flagged case(s) to the webhook in ${st.webhook_env}")
    return exits.OK
