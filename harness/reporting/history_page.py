"""The history page (:mod:`harness.reporting.history` gathers its data): one static ``index.html`` with a plot and
tables per series and the data embedded as JSON, opened from disk: no server, no network, no JavaScript (the JSON
block is data, ``type="application/json"``).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from harness import files
from harness.files import write_atomic
from harness.record import parse_time
from harness.reporting.history import SPEC, change_text


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def slug(key: str) -> str:
    """A series key as a file name of the page's folder."""
    return files.slug(key, fill="-", strip="-", empty="series")


def _machine_label(m: str) -> str:
    """A machine for a legend: a boot id as is, a results dir by its last two parts."""
    return "dir …/" + "/".join(Path(m[4:]).parts[-2:]) if m.startswith("dir:") else m


def _tick(s: dict) -> str:
    t = parse_time(s["started_at"])
    return (t.strftime("%m-%d %H:%M") if t else s["session_id"][:12]) + ("\ncensus" if s["kind"] == "census" else "")


def figure(series: dict):
    """The plot of one series: session medians with their run range, change points with their ratio, version
    changes named; below, the census counts per step when the series has census sessions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tl = series["timeline"]
    timing = [s for s in tl if s["kind"] == "timing"]
    cens = [s for s in tl if s["kind"] == "census"]
    rows = 2 if cens else 1
    fig, axes = plt.subplots(rows, 1, figsize=(max(7.0, 0.55 * len(tl) + 3), 4.4 + 2.4 * (rows - 1)), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.6][:rows]})
    ax = axes[0][0]
    machines = sorted({m for s in timing for m in s["machines"]})
    colors = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(machines)}
    for m in machines:
        pts = [s for s in timing if s["machines"][0] == m]
        if not pts:
            continue
        ax.errorbar([s["x"] for s in pts], [s["median_ms"] for s in pts],
                    yerr=[[s["median_ms"] - s["min_ms"] for s in pts], [s["max_ms"] - s["median_ms"] for s in pts]],
                    fmt="o", color=colors[m], capsize=3, ms=5, lw=1, label=_machine_label(m) if len(machines) <= 8 else None)
    idx = [0, *[c["index"] for c in series["change_points"]], len(timing)]
    for a, b in zip(idx, idx[1:]):  # segment levels (geometric means) between kept change points
        seg = timing[a:b]
        if seg:
            g = math.exp(sum(math.log(s["median_ms"]) for s in seg) / len(seg))
            ax.hlines(g, seg[0]["x"] - 0.3, seg[-1]["x"] + 0.3, color="#444444", lw=1.2, ls="-", zorder=1)
    top = max((s["max_ms"] for s in timing), default=1.0)
    low = min((s["min_ms"] for s in timing), default=0.0)
    span = max(top - low, top * 0.05)
    ax.set_ylim(max(0.0, low - 0.15 * span), top + 0.75 * span)
    for v in series["version_changes"]:
        for a in axes[:, 0]:
            a.axvline(v["x"] - 0.5, color="#888888", ls="--", lw=0.9, zorder=0)
        label = ("census: " if v["kind"] == "census" else "") + "\n".join(change_text(ch, short=True) for ch in v["changes"])
        ax.text(v["x"] - 0.45, top + 0.7 * span, label, rotation=90, va="top", ha="left", fontsize=7, color="#555555")
    for c in series["change_points"]:
        ax.axvline(c["x"] - 0.5, color="#d62728", lw=1.8, zorder=2)
        ax.text(c["x"] - 0.55, top + 0.7 * span, f"change x{c['ratio']:.3f}\n90% [{c['lo']:.3f}, {c['hi']:.3f}]\np={c['p']:.2g}",
                ha="right", va="top", fontsize=7.5, color="#d62728")
    ax.set_ylabel("median step time, ms\n(session median; bars: run min-max)", fontsize=8)
    ax.set_title(f"{series['name']}: step time per session" + (f", {len(series['change_points'])} change point(s)" if series["change_points"]
                                                               else ", no change point"), fontsize=10)
    if timing and len(machines) <= 8:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="machine", title_fontsize=7)
    if cens:
        cx = axes[1][0]
        cx.plot([s["x"] for s in cens], [s["ops"] for s in cens], "s", color="#1f77b4", label="aten ops / step")
        cx.set_ylabel("aten ops / step", fontsize=8, color="#1f77b4")
        if any(s.get("kernels") for s in cens):
            kx = cx.twinx()
            kx.plot([s["x"] for s in cens if s.get("kernels")], [s["kernels"] for s in cens if s.get("kernels")], "^", color="#ff7f0e")
            kx.set_ylabel("kernels / step", fontsize=8, color="#ff7f0e")
            for a, vals in ((cx, [s["ops"] for s in cens if s.get("ops")]), (kx, [s["kernels"] for s in cens if s.get("kernels")])):
                if vals:
                    lo, hi = min(vals), max(vals)
                    pad = max(hi - lo, hi * 0.002)
                    a.set_ylim(lo - pad, hi + pad)
        cx.set_title("census: work per optimizer step (census runs; not in the timing series)", fontsize=8)
    last = axes[-1][0]
    last.set_xticks([s["x"] for s in tl], [_tick(s) for s in tl], rotation=60, fontsize=6.5, ha="right")
    last.set_xlim(-0.7, len(tl) - 0.3)
    fig.tight_layout()
    return fig


def _e(x) -> str:
    return html.escape(str(x))


def _num(x, fmt=".1f") -> str:
    return "–" if x is None else format(x, fmt)


def _versions_text(v: dict) -> str:
    libs = ", ".join(f"{k} {val}" for k, val in v.items() if k != SPEC)
    return "; ".join(x for x in (libs, f"spec {v[SPEC][:8]}" if v.get(SPEC) else "") if x)


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd} h3{font-size:1em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.85em} th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.n{text-align:right;font-variant-numeric:tabular-nums} tr.census td{color:#555;background:#fafafa}
img{max-width:100%;border:1px solid #eee} .cp{color:#b00} .muted{color:#666;font-size:.9em} code{font-size:.9em} .warn{color:#a40}
"""


def _series_html(s: dict, img: str) -> str:
    out = [f'<h2 id="{_e(slug(s["key"]))}">{_e(s["name"])}</h2>', f'<img src="{_e(img)}" alt="{_e(s["name"])}: step time per session">']
    d = s["detector"]
    sig = f"sigma (log) {d['sigma']:.4f}, penalty {d['penalty']:.3g}" if d["sigma"] else d["note"] or "nothing to search"
    cands = ", ".join(f'{c["session_id"]} x{c["ratio"]:.3f} p={c["p"]:.2g}' for c in d["candidates"])
    out.append(f'<p class="muted">{len(s["sessions"])} timing sessions, {len(s["census_sessions"])} census sessions; {_e(sig)}; '
               f'PELT candidates (first test round): {_e(cands or "none")}</p>')
    if s["change_points"]:
        rows = [[_e(c["started_at"]), f"<code>{_e(c['session_id'])}</code>", f'<span class="cp">x{c["ratio"]:.3f}</span> [{c["lo"]:.3f}, {c["hi"]:.3f}]',
                 f"{c['p']:.2g}", f"{c['n_before']} / {c['n_after']}",
                 _e("; ".join(change_text(ch) for ch in c["version_changes"]) or "none"),
                 _e(_versions_text(c["versions_before"])), _e(_versions_text(c["versions_after"])),
                 _e(", ".join(c["machines_before"])) + " → " + _e(", ".join(c["machines_after"]))] for c in s["change_points"]]
        out.append("<h3>Change points</h3>" + _table(["first session after", "session", "ratio after/before [90%]", "p (Holm input)",
                                                        "sessions before / after", "versions changed there", "versions before", "versions after",
                                                        "machine"], rows))
    else:
        out.append("<p>No change point.</p>")
    if s["version_changes"]:
        rows = [[str(v["x"]), _e(v["kind"]), _e(v["started_at"]), f"<code>{_e(v['session_id'])}</code>",
                 _e("; ".join(change_text(ch) for ch in v["changes"]))] for v in s["version_changes"]]
        out.append("<h3>Version changes</h3>" + _table(["#", "sessions", "first session with it", "session", "change"], rows))
    rows, prev = [], None
    for t in s["timeline"]:
        # versions in full on the first row, then only what differs from the row above
        if prev is None:
            vtext = _versions_text(t["versions"])
        else:
            diff = {k: v for k, v in t["versions"].items() if prev.get(k) != v}
            vtext = _versions_text(diff) if diff else "as above"
        prev = t["versions"]
        if t["kind"] == "timing":
            vals = [f'<td class="n">{_num(t["median_ms"])}</td>', f'<td class="n">{_num(t["min_ms"])}–{_num(t["max_ms"])}</td>',
                    f'<td class="n">{t["runs"]}' + (f' (+{t["failed"]} failed)' if t["failed"] else "") + "</td>", "<td></td>"]
        else:
            counts = f"ops {_num(t['ops'], ',.1f')}" + (f", kernels {_num(t['kernels'], ',.1f')}" if t.get("kernels") else "")
            vals = ["<td></td>", "<td></td>", f'<td class="n">{t["runs"]}</td>', f"<td>{_e(counts)}</td>"]
        rows.append(f'<tr class="{t["kind"]}"><td>{t["x"]}</td><td>{_e(t["kind"])}</td><td>{_e(t["started_at"])}</td>'
                    f'<td><code>{_e(t["session_id"])}</code></td>' + "".join(vals) +
                    f'<td>{_e(", ".join(t["machines"]))}</td><td>{_e(", ".join(t["dirs"]))}</td><td>{_e(vtext)}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ["#", "kind", "started", "session", "median step ms", "run range ms", "runs",
                                             "census per step", "machine", "results dir", "versions"])
    out.append(f"<h3>Sessions</h3><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return "\n".join(out)


def page(data: dict, images: dict[str, str]) -> str:
    """``index.html``: summary, change points of every series, then per series its plot and tables; the data as JSON."""
    ss = data["series"]
    n_sessions = len({x for s in ss for x in s["sessions"]})
    rule = data["rule"]
    summary = [[f'<a href="#{_e(slug(s["key"]))}">{_e(s["name"])}</a>', str(len(s["sessions"])), str(len(s["census_sessions"])),
                str(len(s["version_changes"])),
                "<br>".join(f'<span class="cp">{_e(c["started_at"])}: x{c["ratio"]:.3f} [{c["lo"]:.3f}, {c["hi"]:.3f}]</span>'
                            + _e(f' ({"; ".join(change_text(ch, short=True) for ch in c["version_changes"]) or "no version change"})')
                            for c in s["change_points"]) or "none"] for s in ss]
    excl = ", ".join(f"{k}: {v}" for k, v in data["excluded_runs"].items()) or "none"
    body = ["<h1>Performance history</h1>",
            f'<p class="muted">Generated {_e(data["generated_at"])} by <code>{_e(data["command"])}</code> from '
            f'{len(data["results_dirs"])} results dir(s); {len(ss)} series, {n_sessions} timing sessions. '
            f"Runs left out of the timing series: {_e(excl)}.</p>",
            "<p>Each point is a session: the median of its runs' steady-state median step time, with the runs' range. "
            "Grey dashed lines: a library version (or the workload spec) changes there. Red lines: change points, "
            f"found by {_e(rule['method'])}, penalty {_e(rule['penalty'])}, alpha {rule['alpha']:g} per series; "
            f"each with the ratio after/before and its {_e(rule['interval'])}. Census runs count the work per step and "
            "form the lower panel; they never enter the timing series.</p>",
            *([f'<p class="warn">Left out, so that one bad record does not block the page: {len(data["skipped"])} record(s) or file(s)</p>'
               "<ul>" + "".join(f'<li class="warn"><code>{_e(x)}</code></li>' for x in data["skipped"]) + "</ul>"] if data.get("skipped") else []),
            _table(["series", "timing sessions", "census sessions", "version changes", "change points"], summary),
            *(_series_html(s, images[s["key"]]) for s in ss)]
    blob = json.dumps(data, indent=1, allow_nan=False).replace("</", "<\\/")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Performance history</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) +
            f'\n<script type="application/json" id="history-data">\n{blob}\n</script>\n</body></html>\n')


def write(data: dict, out_dir: str | Path) -> list[Path]:
    """``index.html``, ``history.json`` and one PNG per series in ``out_dir`` (each written atomically)."""
    from harness.reporting import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    images, paths = {}, []
    for s in data["series"]:
        name = f"{slug(s['key'])}.png"
        paths.append(plots.save(figure(s), out / name))
        images[s["key"]] = name
    write_atomic(out / "history.json", json.dumps(data, indent=1, allow_nan=False))
    write_atomic(out / "index.html", page(data, images))
    paths = [out / "index.html", out / "history.json", *paths]
    for p in paths:  # a web page: readable by all (atomic writes create 0600 files)
        p.chmod(0o644)
    return paths
