"""The history page (:mod:`harness.reporting.history` gathers its data): a dashboard opened from disk or GitHub Pages
with no server and no network. ``index.html`` holds the compact data (:mod:`harness.reporting.dashboard_data`) as one
JSON block; the page's script and style and the charting library (uPlot, vendored in ``assets/`` with its license) are
copied beside it; ``method.html`` says how the change points are found; ``history.json`` keeps the full data.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

from harness import files
from harness.files import refuse_links, write_atomic
from harness.reporting.dashboard_data import dashboard_data
from harness.reporting.history_data import History
from harness.results.event import Event

ASSETS = Path(__file__).with_name("assets")
SCRIPTS = ("uPlot.iife.min.js", "dashboard.js")
STYLES = ("uPlot.min.css", "dashboard.css")


def slug(key: str) -> str:
    """A series key as a name in the page's address (``#series=...``)."""
    return files.slug(key, fill="-", strip="-", empty="series")


def _e(x) -> str:
    return html.escape(str(x))


_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(obj) -> str:
    """``obj`` as JSON to embed in a ``<script>`` block: every ``<``, ``>`` and ``&`` written as its ``\\u`` escape (the
    same string to the JSON parser), so that no text of a record (``</script>``, ``<!--``) ends the block or changes how
    the browser reads it; non-ASCII is escaped by ``json.dumps`` already."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).translate(_IN_SCRIPT)


def page(data: History, events: list[Event]) -> str:
    """``index.html``: what the reader sees, said first; the dashboard's parts, filled by ``dashboard.js`` from the data
    block."""
    n_sessions = len({x for s in data.series for x in s.sessions})
    blob = script_json(dashboard_data(data, events))
    head = "".join(f'<link rel="stylesheet" href="{n}">' for n in STYLES)
    scripts = "".join(f'<script src="{n}"></script>' for n in SCRIPTS)
    skipped = (
        (
            '<p class="warn">Left out, so that one bad record does not block the page: '
            f"{len(data.skipped)} record(s) or file(s); "
            "see <code>history.json</code>.</p>"
        )
        if data.skipped
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><title>Performance history</title>'
        f"{head}</head><body>\n<h1>Performance history</h1>\n"
        '<p class="intro">What changed recently comes first, newest on top: alerts of the results store, '
        "change points of the step time, census counts that moved, version changes and release nights. "
        "Below it, every series (GPU × workload × split): "
        "click one to see its nights on a time axis (drag to zoom, double-click to zoom out, "
        "hover a point for its session, "
        "versions, machine and commit; click two points to compare them). "
        'How change points are found: <a href="method.html">the method</a>.</p>\n'
        f'<p class="muted">{len(data.series)} series, {n_sessions} timing sessions; '
        f"generated {_e(data.generated_at)} by "
        f"<code>{_e(data.command)}</code>.</p>\n{skipped}"
        '<section id="changes"><h2>What changed</h2><ol id="events"></ol></section>\n'
        '<section id="index"><h2>Series</h2><div id="filters"></div><table id="series-index"></table></section>\n'
        '<section id="series" hidden><h2 id="series-title"></h2><div id="toggles"></div><div id="plots"></div>'
        '<div id="hover" class="hover"></div><div id="compare"></div></section>\n'
        f'<script type="application/json" id="dashboard-data">{blob}</script>\n{scripts}\n</body></html>\n'
    )


def method(data: History) -> str:
    """``method.html``: how the series are made and how their change points are found (the rule of the data)."""
    rule = data.rule
    excl = ", ".join(f"{k}: {v}" for k, v in data.excluded_runs.items()) or "none"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>How the history is made</title>'
        '<link rel="stylesheet" href="dashboard.css"></head><body><h1>How the history is made</h1>'
        "<p>A series is one GPU × workload × split (× track, the nightly's pinned and latest environments). "
        "Each point is a session: "
        "the median of its runs' steady-state median step time, with the runs' range. "
        "Census runs count the work per step and form "
        "their own panel; they never enter the timing series. "
        "Runs that were not plain measurements (an injected slowdown, "
        f"profiled, phases off) are left out; here: {_e(excl)}.</p>"
        f"<p>Change points: {_e(rule.method)}; penalty {_e(rule.penalty)}; "
        f"alpha {rule.alpha:g} per series; at least "
        f"{rule.min_size} sessions per segment. "
        f"Each comes with the ratio after/before and its {_e(rule.interval)}.</p>"
        "<p>Alerts come from the results store (<code>python -m harness store alerts</code>, docs/store.md): "
        "census counts that "
        "moved with the library pins unchanged, and timing shifts that held.</p>"
        '<p><a href="index.html">Back to the history</a></p></body></html>\n'
    )


def write(data: History, out_dir: str | Path, events: list[Event] = ()) -> list[Path]:
    """``index.html``, ``method.html``, ``history.json`` and the page's assets in ``out_dir`` (each written atomically);
    ``events``: the "what changed" list, newest first."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    assets = (*SCRIPTS, *STYLES, "uPlot.LICENSE")
    # every file of the page checked before the first is written: one linked out of the folder leaves all as they were
    refuse_links(*(out / name for name in ("history.json", "method.html", "index.html", *assets)))
    write_atomic(out / "history.json", json.dumps(data.to_json(), separators=(",", ":"), allow_nan=False))
    write_atomic(out / "method.html", method(data))
    write_atomic(out / "index.html", page(data, list(events)))
    paths = [out / "index.html", out / "method.html", out / "history.json"]
    for name in assets:
        paths.append(Path(shutil.copyfile(ASSETS / name, out / name)))
    for p in paths:  # a web page: readable by all (atomic writes create 0600 files)
        p.chmod(0o644)
    return paths
