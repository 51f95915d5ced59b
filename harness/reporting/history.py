"""The nightly history: every session's step time per GPU x workload x decomposition, in time order, with
the library versions, the machine, the census counts and the change points; rendered as one static page.

``build`` gathers the data once (it is the page's embedded JSON); ``detect`` finds the change points of
one series; ``write`` renders ``index.html`` and one PNG per series. Opened from disk: no server, no
network, no JavaScript (the JSON block is data, ``type="application/json"``).

Series. One per GPU x workload x decomposition (x track, when the results dirs are labelled
``TRACK=DIR``, e.g. the nightly's ``pinned`` and ``latest`` environments, whose sessions alternate on one
runner). A point is a session (``session_id``, placed at its first run's ``started_at``): the median
of its runs' ``step_time_median_ms``, with the runs' min-max as its interval. Timed runs only: census
runs (:func:`harness.record.is_census`) make the census series instead, and runs that were not plain
measurements (an injected slowdown or work, profiled, phases off) or did not finish are left out and
counted. The workload spec (its hash) is tracked like a library version: a series keeps its name across
spec changes, and the change is marked.

Change points (:func:`detect`), the idea of Otava / E-Divisive with a t-test, on the log session medians:

1. candidates: PELT (``ruptures``, least-squares cost, segments of at least ``MIN_SIZE`` sessions) with the
   penalty ``PENALTY_K * sigma^2 * log(n)`` per change point; sigma is estimated robustly from successive
   differences, ``1.4826 * MAD(diff(y)) / sqrt(2)`` (a shift moves one difference only, so it barely moves
   sigma). In units of sigma^2 the least-squares cost is -2 log-likelihood of Gaussian log values, and
   ``3 log n`` per change point is the modified BIC of Zhang & Siegmund (2007), the default penalty of
   R's changepoint package: BIC's 2 log n (a location and a new mean) plus log n for the location search;
2. test: for each candidate, Welch's t between the log session medians of its two neighbouring segments
   (:func:`harness.judging.stats.log_ratio`), two-sided; the p-value is multiplied by the number of
   positions that split could have taken in those segments (Bonferroni over the scan: the candidate is the
   best split, not a pre-chosen one); Holm over the candidates at ``ALPHA``;
3. prune: while some candidate is not significant, drop the least significant one (its neighbours'
   segments merge) and test again. What remains is kept, each with its ratio after/before and the 90%
   Welch interval of that ratio, and the versions on either side.

Measured by simulation (``tests/test_history.py``, ``docs/results/history/README.md``, 1000 series a cell): of
series without a shift, 1.6-5.0% get any change point (10-60 sessions, Gaussian or t(3) noise on the log
scale; the family-wise rate per series, alpha 0.05); a 6-sigma shift at session 15 of 30 is found there in
98-99% of series.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from statistics import median

from harness.files import write_atomic
from harness.judging.census_diff import normalize
from harness.judging.stats import holm, log_ratio
from harness.record import is_census
from harness.spec import changed_fields

TRACKED = ("python", "torch", "transformers", "trl", "peft", "accelerate", "datasets")
SPEC = "workload spec"  # the workload hash, tracked like a version
PENALTY_K = 3.0
ALPHA = 0.05
MIN_SIZE = 2
INSTALL = "pip install ruptures (or pip install -e . from the repository)"


class HistoryError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# Change points
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChangePoint:
    """A kept change: sessions ``index`` onwards differ from the segment before, by ``ratio`` (after/before,
    geometric means of session medians) with a 90% Welch interval [lo, hi]."""

    index: int
    ratio: float
    lo: float
    hi: float
    p: float  # Welch two-sided p times the positions scanned, capped at 1 (what Holm sees)
    p_welch: float
    positions: int
    n_before: int
    n_after: int


@dataclass(frozen=True)
class Detection:
    n: int
    sigma: float | None  # robust sd of the log values (successive differences)
    penalty: float | None
    candidates: tuple[ChangePoint, ...]  # PELT's, as the first round of the test saw them
    kept: tuple[ChangePoint, ...]
    note: str = ""  # why nothing was searched, when nothing was


def robust_sigma(y: Sequence[float]) -> float:
    """``1.4826 * MAD(diff(y)) / sqrt(2)``: the sd of y from its successive differences, unmoved by a few shifts.
    Falls back to the plain sd of the differences when the MAD is 0 (values in steps of exactly 0)."""
    d = [b - a for a, b in zip(y, y[1:])]
    if not d:
        return 0.0
    md = median(d)
    s = 1.4826 * median(abs(x - md) for x in d) / math.sqrt(2)
    if s == 0 and len(d) > 1:
        m = sum(d) / len(d)
        s = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1) / 2)
    return s


def _test(values: Sequence[float], cps: list[int], min_size: int) -> list[ChangePoint]:
    edges = [0, *cps, len(values)]
    out = []
    for j, b in enumerate(cps):
        before, after = values[edges[j]:b], values[b:edges[j + 2]]
        e = log_ratio(before, after, 0.05)  # 90% interval
        pw = 2 * min(e.p_above(1.0), e.p_below(1.0))
        pw = 1.0 if not math.isfinite(pw) else min(pw, 1.0)
        positions = len(before) + len(after) - 2 * min_size + 1
        out.append(ChangePoint(b, e.ratio, e.lo, e.hi, min(1.0, pw * positions), pw, positions, len(before), len(after)))
    return out


def detect(values: Sequence[float], *, k: float = PENALTY_K, alpha: float = ALPHA, min_size: int = MIN_SIZE) -> Detection:
    """Change points of a series of positive values (session median step times, in time order).

    Rule (module docstring): PELT on the log values with penalty ``k * sigma^2 * log(n)``, then Welch's t between
    neighbouring segments, Bonferroni over the positions scanned, Holm over the candidates at ``alpha``, dropping
    the least significant candidate until all that remain are significant. Raises ImportError without ruptures.
    """
    import numpy as np
    import ruptures as rpt

    n = len(values)
    if any(not (v > 0) for v in values):
        raise HistoryError("change points need positive values")
    if n < 2 * min_size:
        return Detection(n, None, None, (), (), f"{n} sessions; a change point needs at least {2 * min_size}")
    y = [math.log(v) for v in values]
    sigma = robust_sigma(y)
    if sigma == 0:
        return Detection(n, 0.0, 0.0, (), (), "constant series")
    penalty = k * sigma**2 * math.log(n)
    cands = rpt.Pelt(model="l2", min_size=min_size, jump=1).fit(np.asarray(y).reshape(-1, 1)).predict(pen=penalty)[:-1]
    cps, first = list(cands), tuple(_test(values, cands, min_size))
    while cps:
        tested = _test(values, cps, min_size)
        rejected = holm([c.p for c in tested], alpha)
        if all(rejected):
            return Detection(n, sigma, penalty, first, tuple(tested))
        worst = max(range(len(tested)), key=lambda i: (tested[i].p, -abs(math.log(tested[i].ratio))))
        del cps[worst]
    return Detection(n, sigma, penalty, first, ())


def synthetic(seed: int, n: int = 30, sigma: float = 0.02, shift: float = 0.0, at: int | None = None, noise: str = "normal",
              level_ms: float = 400.0) -> list[float]:
    """A synthetic series of session medians (ms): log-normal noise of sd ``sigma`` ("normal"), or t(3) scaled to
    that sd ("t3"); from session ``at`` on, ``shift`` (0.10: 10% slower) is added."""
    import numpy as np

    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, sigma, n) if noise == "normal" else rng.standard_t(3, n) * sigma / math.sqrt(3)
    if shift and at is not None:
        e[at:] += math.log1p(shift)
    return [level_ms * math.exp(x) for x in e]


def simulate(series: int = 200, n: int = 30, sigma: float = 0.02, shift: float = 0.0, at: int | None = None, noise: str = "normal",
             first_seed: int = 0, **kw) -> dict[str, float]:
    """Detection over ``series`` synthetic series: the share with any change point (``any``; without a shift, the
    false-alarm rate), with one at ``at`` (``found``), and with exactly that one (``exact``)."""
    hits = [[c.index for c in detect(synthetic(first_seed + i, n, sigma, shift, at, noise), **kw).kept] for i in range(series)]
    return {"any": sum(bool(h) for h in hits) / series, "found": sum(at in h for h in hits) / series,
            "exact": sum(h == [at] for h in hits) / series}


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def parse_time(s: str | None) -> datetime | None:
    if not s:
        return None
    for parse in (datetime.fromisoformat, lambda t: datetime.strptime(t, "%Y-%m-%dT%H:%M:%S%z")):
        try:
            return parse(s)
        except ValueError:
            continue
    return None


def exclusion(rec: dict) -> str | None:
    """Why a run is not a point of a timing series, or None for a plain timed run."""
    if is_census(rec):
        return "census"
    if rec.get("status") != "ok":
        return f"failed ({rec.get('status')})"
    if rec.get("inject_slowdown") or rec.get("inject_work"):
        return "injected slowdown or work"
    if rec.get("profile_steps"):
        return "profiled"
    if rec.get("phases_enabled") is False:
        return "phases off"
    if not rec.get("step_time_median_ms"):
        return "no step time"
    return None


def machine(rec: dict) -> str:
    """The machine a run was made on: its boot id (first 8 characters), else the results dir (older runs)."""
    boot = (rec.get("env") or {}).get("boot_id")
    return boot[:8] if boot else rec.get("machine") or "unknown"


def _versions(recs: list[dict]) -> dict[str, str]:
    """Tracked versions of a session's runs (several values of one library joined by ' | '), and the workload hash."""
    out = {}
    for lib in TRACKED:
        vals = sorted({str(((r.get("env") or {}).get("versions") or {}).get(lib)) for r in recs} - {"None"})
        if vals:
            out[lib] = " | ".join(vals)
    out[SPEC] = " | ".join(sorted({r.get("workload_hash") or "?" for r in recs}))
    return out


def _session(sid: str, recs: list[dict], start: str, kind: str) -> dict:
    return {"session_id": sid, "kind": kind, "started_at": start,
            "dirs": sorted({r["_dir"] for r in recs}), "machines": sorted({machine(r) for r in recs}),
            "versions": _versions(recs), "spec": next((r.get("workload_spec") for r in recs if r.get("workload_spec")), None)}


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def version_changes(prev: dict, cur: dict) -> list[dict]:
    """What differs between two sessions' versions: ``{"name", "old", "new"}`` per tracked library (and the spec)."""
    out = []
    for lib in (*TRACKED, SPEC):
        a, b = prev["versions"].get(lib), cur["versions"].get(lib)
        if a != b and a is not None and b is not None:
            ch = {"name": lib, "old": a, "new": b}
            if lib == SPEC and prev.get("spec") and cur.get("spec"):
                ch["fields"] = changed_fields(prev["spec"], cur["spec"])
            out.append(ch)
    return out


def change_text(ch: dict, short: bool = False) -> str:
    if ch["name"] == SPEC:
        what = "; ".join(ch.get("fields") or [])
        return f"spec {ch['old'][:8]}→{ch['new'][:8]}" + (f" ({what})" if what and not short else "")
    return f"{ch['name']} {ch['old']}→{ch['new']}"


def build(dirs: Sequence[tuple[str, str, list[dict]]], *, k: float = PENALTY_K, alpha: float = ALPHA, command: str = "") -> dict:
    """The history data (the page's embedded JSON) from ``(track, results dir, records)`` triples."""
    recs = [dict(r, _dir=d, _track=t) for t, d, rs in dirs for r in rs]
    starts: dict[str, datetime | None] = {}
    start_text: dict[str, str] = {}
    for r in recs:
        sid, t = r.get("session_id") or f"dir:{r['_dir']}", parse_time(r.get("started_at"))
        r["_sid"] = sid
        if sid not in start_text or (t and (starts[sid] is None or t < starts[sid])):
            starts[sid], start_text[sid] = t, r.get("started_at") or ""
    excluded = Counter(x for r in recs if (x := exclusion(r)) and x != "census")
    keys = sorted({(r["gpu"], r["workload"], r["decomposition_id"], r["_track"]) for r in recs
                   if exclusion(r) is None or (is_census(r) and (r["census"] or {}).get("fits", True))},
                  key=lambda k: (k[0] == "cpu", *k))  # GPUs first

    def order(sid: str):
        t = starts[sid]
        return (t.timestamp() if t else float("-inf"), sid)

    series = []
    for gpu, wl, dec, track in keys:
        mine = [r for r in recs if (r["gpu"], r["workload"], r["decomposition_id"], r["_track"]) == (gpu, wl, dec, track)]
        by_sid: dict[str, list[dict]] = {}
        for r in mine:
            by_sid.setdefault(r["_sid"], []).append(r)
        timeline = []
        for sid in sorted(by_sid, key=order):
            rs = by_sid[sid]
            timed = [r for r in rs if exclusion(r) is None]
            cens = [r for r in rs if is_census(r) and (r["census"] or {}).get("fits", True)]
            if timed:
                v = [r["step_time_median_ms"] for r in timed]
                s = _session(sid, timed, start_text[sid], "timing")
                s.update(median_ms=median(v), min_ms=min(v), max_ms=max(v), runs=len(v),
                         failed=sum(1 for r in rs if not is_census(r) and r.get("status") != "ok"))
                timeline.append(s)
            if cens:
                cs = [normalize(r["census"]) for r in cens]
                s = _session(sid, cens, start_text[sid], "census")
                s.update(runs=len(cs), ops=_med([c.get("ops") for c in cs]), kernels=_med([c.get("kernels") for c in cs]),
                         python_calls=_med([c.get("python_calls") for c in cs]))
                timeline.append(s)
        if not timeline:
            continue
        for x, s in enumerate(timeline):
            s["x"] = x
        vchanges = []
        for kind in ("timing", "census"):  # versions change along each kind's own sessions (a census may run other versions)
            seq = [s for s in timeline if s["kind"] == kind]
            for a, b in zip(seq, seq[1:]):
                if chs := version_changes(a, b):
                    vchanges.append({"kind": kind, "x": b["x"], "session_id": b["session_id"], "started_at": b["started_at"],
                                     "after_session_id": a["session_id"], "changes": chs})
        timing = [s for s in timeline if s["kind"] == "timing"]
        det = detect([s["median_ms"] for s in timing], k=k, alpha=alpha)
        cps = []
        for c in det.kept:
            a, b = timing[c.index - 1], timing[c.index]
            between = [ch for v in vchanges if v["kind"] == "timing" and v["x"] == b["x"] for ch in v["changes"]]
            cps.append({**{f: _finite(v) for f, v in asdict(c).items()}, "x": b["x"], "session_id": b["session_id"],
                        "started_at": b["started_at"], "after_session_id": a["session_id"],
                        "versions_before": a["versions"], "versions_after": b["versions"], "version_changes": between,
                        "machines_before": a["machines"], "machines_after": b["machines"]})
        for s in timeline:
            s.pop("spec", None)
        name = f"{gpu} · {wl} · {dec}" + (f" · {track}" if track else "")
        series.append({"key": "/".join(p for p in (gpu, wl, dec, track) if p), "name": name, "gpu": gpu, "workload": wl,
                       "decomposition": dec, "track": track, "timeline": timeline,
                       "sessions": [s["session_id"] for s in timing],
                       "census_sessions": [s["session_id"] for s in timeline if s["kind"] == "census"],
                       "version_changes": vchanges, "change_points": cps,
                       "detector": {"n": det.n, "sigma": _finite(det.sigma), "penalty": _finite(det.penalty),
                                    "candidates": [{"session_id": timing[c.index]["session_id"], "x": timing[c.index]["x"],
                                                    **{f: _finite(v) for f, v in asdict(c).items()}} for c in det.candidates],
                                    "note": det.note}})
    return {"command": command, "generated_at": datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S%z"),
            "results_dirs": [{"track": t, "dir": d, "runs": len(rs)} for t, d, rs in dirs],
            "rule": {"method": "PELT (ruptures, l2) on log session medians; Welch t between neighbouring segments, "
                               "Bonferroni over the positions scanned, Holm over the candidates; prune the least significant",
                     "penalty": f"{k:g} * sigma^2 * log(n), sigma = 1.4826 * MAD(diff(log y)) / sqrt(2)",
                     "k": k, "alpha": alpha, "min_size": MIN_SIZE, "interval": "90% Welch interval of the ratio after/before"},
            "excluded_runs": dict(sorted(excluded.items())), "series": series}


def _med(v: list) -> float | None:
    v = [x for x in v if x is not None]
    return median(v) if v else None


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-") or "series"


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
img{max-width:100%;border:1px solid #eee} .cp{color:#b00} .muted{color:#666;font-size:.9em} code{font-size:.9em}
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
