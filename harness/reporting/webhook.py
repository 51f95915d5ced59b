"""The webhook message of a job's flagged cases (``python -m harness alert``): one JSON object whose ``text`` a Slack
incoming webhook shows (Markdown) and whose other fields any receiver reads (``gpu``, ``env``, ``run_url``, ``cases``).

The flagged cases are the ones the regression-issue script (``.github/scripts/regression-issues.sh``) files, from the
reports it reads (a suite's report.json, the confirmation's, an interleaved comparison's, the store's alerts that
``store alerts --issues`` writes): every verdict whose outcome is regression or fail; with ``changes``, a work verdict
that changed too; with ``runtime`` false, no runtime regression (a stored-baseline timing that no confirmation
confirmed).
Each case carries its ``repro``: the report's, else made here (:func:`harness.results.repro.repro`).

Only the standard library: the command runs in a step that installs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from harness.results.repro import repro
from harness.results.verdict import FAILING

MAX_CASES = 50  # cases in one message; the rest are counted in ``more``
MAX_MESSAGE = 600  # characters of a case's message (the report holds it whole)
MAX_BODY = 64 * 1024  # bytes of the message as posted
TEXT_CASES = 10  # cases the text lists
TEXT_MESSAGE = 200  # characters of a case's message in the text


@dataclass(frozen=True)
class Flagged:
    """One flagged verdict of a report, as the message gives it."""

    kind: str
    case: str
    outcome: str
    message: str
    repro: str | None
    gpu: str
    report: str  # the report's path, as the command was given it


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def flagged(report: Mapping, path: str, changes: bool = False, runtime: bool = True) -> list[Flagged]:
    """The flagged verdicts of one report (the module docstring says which)."""
    gpu = str(report.get("gpu") or "")
    settings = report.get("settings") if isinstance(report.get("settings"), Mapping) else {}
    out = []
    for v in report.get("verdicts") or []:
        if not isinstance(v, Mapping):
            continue
        kind, case, outcome = (str(v.get(k) or "") for k in ("kind", "case", "outcome"))
        if not (outcome in FAILING or (changes and kind == "work" and outcome == "changed")):
            continue
        if not runtime and kind == "runtime" and outcome == "regression":
            continue
        made = v.get("repro") or repro(kind, case, gpu, settings.get("python_a"), settings.get("python_b"))
        msg = _short(str(v.get("message") or ""), MAX_MESSAGE)
        out.append(Flagged(kind, case, outcome, msg, made if isinstance(made, str) else None, gpu, path))
    return out


def _text(cases: list[Flagged], more: int, gpu: str, env: str, run_url: str) -> str:
    where = (f" on `{gpu}`" if gpu else "") + (f" ({env})" if env else "")
    lines = [f"*Performance alert*: {len(cases) + more} flagged case(s){where}"]
    for c in cases[:TEXT_CASES]:
        said = c.message.lower().startswith(c.outcome)  # "REGRESSION: ..." says its outcome itself
        lines.append(f"• {c.kind} `{c.case}`: {'' if said else c.outcome + ': '}{_short(c.message, TEXT_MESSAGE)}")
        lines += [f"    reproduce: `{c.repro}`"] if c.repro else []
    shown = min(len(cases), TEXT_CASES)
    lines += [f"… and {len(cases) + more - shown} more"] if len(cases) + more > shown else []
    return "\n".join(lines + ([f"Run: {run_url}"] if run_url else []))


def message(cases: list[Flagged], env: str = "", run_url: str = "") -> dict:
    """The message of ``cases``: ``text`` (Markdown), ``gpu`` (the reports' GPUs), ``env`` (the job's environment or
    track), ``run_url``, ``cases`` (each with kind, case, outcome, message, repro, gpu and report) and ``more`` (the
    cases left out to keep the message within :data:`MAX_CASES` and :data:`MAX_BODY`)."""
    gpu = _short(", ".join(dict.fromkeys(c.gpu for c in cases if c.gpu)), TEXT_MESSAGE)
    env, run_url = _short(env, TEXT_MESSAGE), _short(run_url, MAX_MESSAGE)
    kept, more = list(cases[:MAX_CASES]), max(0, len(cases) - MAX_CASES)
    while True:
        body = {
            "text": _text(kept, more, gpu, env, run_url),
            "gpu": gpu,
            "env": env,
            "run_url": run_url,
            "cases": [asdict(c) for c in kept],
            "more": more,
        }
        if len(encode(body)) <= MAX_BODY or not kept:
            return body
        kept, more = kept[:-1], more + 1


def encode(body: dict) -> bytes:
    """The message as posted: UTF-8 JSON."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8")
