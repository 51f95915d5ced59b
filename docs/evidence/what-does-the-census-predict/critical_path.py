"""The critical-path model against interleaved measurements (section 5 of this page).

    # which committed censuses carry a timeline
    python docs/evidence/what-does-the-census-predict/critical_path.py
    # predicted beside measured
    python docs/evidence/what-does-the-census-predict/critical_path.py DIR...

A DIR is the results dir of an interleaved comparison with the censuses of its sides in ``DIR/census-a`` and
``DIR/census-b`` (``python -m harness census --results-dir DIR/census-a ...`` before the comparison; its
``report.json`` gives A's median step and the measured B/A). For each, both models' predictions from A's step (the
two-path model uncalibrated, as the interleaved report makes it) and whether the measured change is in the interval.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(HERE.parent)]

import raw  # noqa: E402

from harness.judging import cost_model as cm  # noqa: E402
from harness.judging import cost_path  # noqa: E402
from harness.suite.runs import side_census  # noqa: E402


def censuses(rec) -> list[dict]:
    """The census dicts in one raw-data record (a run's, a baseline's census entries)."""
    body = rec.get("record") or rec.get("json")
    if not isinstance(body, dict):
        return []
    out = [body["census"]] if isinstance(body.get("census"), dict) else []
    for dec in (body.get("decompositions") or {}).values():
        out += [c for c in (dec.get("census") or []) if isinstance(c, dict)]
    return out


def committed() -> None:
    files = sorted(ROOT.glob("docs/evidence/*/*.jsonl.gz"))
    found = [(f, c) for f in files for r in raw.records(f) for c in censuses(r) if c.get("fits")]
    baselines = [
        c for f in sorted(ROOT.glob("baselines/**/*.json")) for c in censuses({"json": json.loads(f.read_text())})
    ]
    with_t = [f for f, c in found if c.get("timeline")] + [None for c in baselines if c.get("timeline")]
    print(
        f"committed censuses: {len(found)} in {len(files)} raw-data files and {len(baselines)} in the baselines; with "
        f"a timeline: {len(with_t)}"
    )
    for f in sorted({str(f.relative_to(ROOT)) for f in with_t if f is not None}):
        print(f"  {f}")


def compare(d: Path) -> None:
    report = json.loads((d / "report.json").read_text())
    s = report["settings"] if "settings" in report else report
    dec = s.get("decomposition")
    a, b = (side_census(d / f"census-{x}", s["workload"], dec) for x in "ab")
    step_a, v = (report.get("step_ms_median") or {}).get("a"), report.get("verdict") or {}
    measured = 100 * (v["ratio"] - 1), 100 * (v["lo"] - 1), 100 * (v["hi"] - 1)
    print(
        f"{d.name}: {s['workload']} {dec}, measured {measured[0]:+.2f}% [{measured[1]:+.2f}, {measured[2]:+.2f}], A's "
        f"step {step_a:.1f} ms"
    )
    for name, rec in (
        ("two-path", cm.beside_measured(a, b, step_a, None) | {"model": "two-path"}),
        ("critical path", cost_path.beside_measured(a, b, step_a, None)),
    ):
        if "delta_pct" not in rec:
            print(f"  {name}: {rec.get('reason')}")
            continue
        inside = rec["lo"] <= measured[0] <= rec["hi"]
        print(
            f"  {rec['model']}: {rec['delta_pct']:+.2f}% [{rec['lo']:+.2f}, {rec['hi']:+.2f}] "
            f"(host {rec['host_part']:+.2f}, GPU {rec['gpu_part']:+.2f}); "
            f"measured {'inside' if inside else 'OUTSIDE'} the interval, off by "
            f"{rec['delta_pct'] - measured[0]:+.2f} points" + (f"; note: {rec['note']}" if rec.get("note") else "")
        )


def main(argv: list[str]) -> int:
    if not argv:
        committed()
    for d in argv:
        compare(Path(d))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
