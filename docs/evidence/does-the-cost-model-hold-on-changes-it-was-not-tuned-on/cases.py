"""The comparisons of ``cases.toml``, fixed before they ran: measured side by side and predicted by the critical path
from a census of each side and A's timed step, with this checkout's model.

    python docs/evidence/does-the-cost-model-hold-on-changes-it-was-not-tuned-on/cases.py [cases-h100.jsonl.gz]
    python docs/evidence/does-the-cost-model-hold-on-changes-it-was-not-tuned-on/cases.py trim OUT.json.gz

``cases-h100.jsonl.gz`` is the results folder of ``gpu.py`` packed with ``docs/evidence/raw.py pack``: per case,
``<case>/census/a``, ``<case>/census/b``, ``<case>/timed`` and ``<case>/side-by-side``, with each side's package
versions (``<case>/versions-a.txt``: torch, transformers, trl, peft). A prediction covers when the measured change is
inside its interval, and is useful when its interval is narrower than the change it predicts. ``trim`` writes the
fields ``tests/test_cost_unseen.py`` reads (``tests/data/cost-unseen/cases.json.gz``).
"""

from __future__ import annotations

import statistics
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent)]

import raw  # noqa: E402
from unseen import KEPT, write_trimmed  # noqa: E402

from harness.judging import cost_path  # noqa: E402
from harness.judging.critical_path import Timeline  # noqa: E402

CASES = tomllib.loads((HERE / "cases.toml").read_text())["case"]


def case_data(files: dict, name: str) -> dict:
    """One case's censuses (the model's fields), A's timed step, the side-by-side's verdict and the versions."""
    census = {s: files[f"{name}/census/{s}/runs.jsonl"][0] for s in "ab"}
    timed = files[f"{name}/timed/runs.jsonl"][0]
    return {
        "census": {s: {k: r["census"][k] for k in KEPT if k in r["census"]} for s, r in census.items()},
        "timed_step_ms": timed["step_time_median_ms"],
        "verdict": {k: files[f"{name}/side-by-side/report.json"]["verdict"][k] for k in ("ratio", "lo", "hi")},
        "versions": {s: files[f"{name}/versions-{s}.txt"].split() for s in "ab"},
    }


def judged(c: dict) -> dict:
    """The prediction beside the measured change: covered, points off, interval width, useful."""
    rec = cost_path.predict_pair(c["census"]["a"], c["census"]["b"], c["timed_step_ms"])
    v = c["verdict"]
    measured = 100 * (v["ratio"] - 1)
    width = rec["hi"] - rec["lo"]
    return {
        "rec": rec,
        "measured": measured,
        "measured_lo": 100 * (v["lo"] - 1),
        "measured_hi": 100 * (v["hi"] - 1),
        "covered": rec["lo"] <= measured <= rec["hi"],
        "off": abs(rec["delta_pct"] - measured),
        "width": width,
        "useful": width < abs(measured),
    }


def changed(c: dict) -> str:
    names = ("torch", "transformers", "trl", "peft")
    a, b = c["versions"]["a"], c["versions"]["b"]
    return ", ".join(f"{n} {x} -> {y}" for n, x, y in zip(names, a, b, strict=True) if x != y)


def show(files: dict) -> None:
    rows = {}
    for case in CASES:
        c = case_data(files, case["name"])
        j = rows[case["name"]] = judged(c)
        a = Timeline.of(c["census"]["a"])
        print(
            f"{case['name']} ({case['role']}): {case['workload']} {case['decomposition']}, {changed(c)}; "
            f"A's step {c['timed_step_ms']:.1f} ms, A's device path {a.device_path_ms:.1f} ms per step "
            f"({a.device_path_ms / a.window_ms:.0%} of its traced window)"
        )
        print(
            f"  measured {j['measured']:+.1f}% [{j['measured_lo']:+.1f}, {j['measured_hi']:+.1f}]; "
            f"predicted {j['rec']['delta_pct']:+.2f}% [{j['rec']['lo']:+.2f}, {j['rec']['hi']:+.2f}]: "
            f"{'inside' if j['covered'] else 'OUTSIDE'}, {j['off']:.1f} points off, interval {j['width']:.1f} points "
            f"wide ({'narrower' if j['useful'] else 'not narrower'} than the change)"
        )
        print(f"  {cost_path.pair_line(j['rec'])}")
    for role in ("reference", "held-out"):
        part = [rows[c["name"]] for c in CASES if c["role"] == role]
        width = statistics.median(j["width"] for j in part)
        print(
            f"{role}: covered {sum(j['covered'] for j in part)} of {len(part)}; points off at most "
            f"{max(j['off'] for j in part):.1f}; median interval width {width:.1f} "
            f"points; useful (narrower than the change) {sum(j['useful'] for j in part)} of {len(part)}"
        )


def main(argv: list[str]) -> int:
    if argv and argv[0] == "trim":
        files = raw.load(argv[2] if len(argv) > 2 else str(HERE / "cases-h100.jsonl.gz"))
        write_trimmed({c["name"]: {"role": c["role"], **case_data(files, c["name"])} for c in CASES}, argv[1])
        return 0
    show(raw.load(argv[0] if argv else str(HERE / "cases-h100.jsonl.gz")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
