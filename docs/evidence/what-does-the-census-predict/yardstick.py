"""Which yardstick of the host's speed reads B's trace at A's host speed best (section 10 of this page), on the CPU.

    python docs/evidence/what-does-the-census-predict/yardstick.py [cpu-aten-yardstick.jsonl.gz [MORE.jsonl.gz ...]]

The file holds CPU censuses of tiny-qwen3 4x1 (``censuses/NAME/runs.jsonl``): ``idle-*`` alone on the machine,
``busy-*`` beside a Python loop that keeps one of the two cores busy, ``host-*`` with 10 units of host work per LoRA
layer (``HARNESS_INJECT_KIND=host``), ``hostbusy-*`` both; and two interleaved comparisons, each with a census of each
side (``host-4x1``: the host work on B; ``casts-4x1``: 2 casts per LoRA forward on B). It prints each census's traced
host time beside each yardstick, the spread each leaves over the censuses of equal work, and each comparison's
prediction with B's trace read at A's host speed by each yardstick in turn. Each further file is read as a packed
``critical_path_gpu.sh`` results dir: its comparisons are predicted the same way.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent), str(HERE)]

import gpu_check  # noqa: E402
import raw  # noqa: E402

from harness.judging import cost_path, trace_speed  # noqa: E402


def censuses(files: dict) -> None:
    rows = []
    for k in sorted(files):
        if k.startswith("censuses/") and k.endswith("/runs.jsonl"):
            c = files[k][0]["census"]
            per_op = trace_speed._aten_us_per_op(c)
            rows.append((k.split("/")[1], c["timeline"]["host_ms"], per_op, c["window_probe"]["launch_us"]))
            print(
                f"  {rows[-1][0]}: traced host {rows[-1][1]:.1f} ms per step; {per_op:.2f} us per aten op; "
                f"window probe {rows[-1][3]:.2f} us per launch; host time per aten op's us {rows[-1][1] / per_op:.2f}"
            )
    alike = [r for r in rows if not r[0].startswith("host")]
    for i, what in ((None, "as traced"), (2, "per us of an aten op"), (3, "per us of the window probe's launch")):
        v = [r[1] / (r[i] if i else 1.0) for r in alike]
        print(f"  spread over the {len(v)} censuses without host work, {what}: {cv(v):.1f}%")
    base = statistics.mean(r[1] / r[2] for r in alike)
    for r in rows:
        if r[0].startswith("host"):
            print(f"  {r[0]}: host time per aten op's us {100 * (r[1] / r[2] / base - 1):+.1f}% against the mean above")


def cv(v: list[float]) -> float:
    return 100 * statistics.stdev(v) / statistics.mean(v)


def main(path: str = str(HERE / "cpu-aten-yardstick.jsonl.gz"), *more: str) -> int:
    covered = []  # per comparison: does the interval of B's trace read by the time per aten op cover the verdict
    for i, name in enumerate((path, *more)):
        files = raw.load(name)
        if i == 0:
            print("tiny-qwen3 4x1 on the CPU: traced host time and the yardsticks of the host's speed")
            censuses(files)
        for case in gpu_check.comparisons(files):
            covered.append(comparison(files, case, f"{Path(name).name}: {case}" if i else case))
    print(f"read by the time per aten op, the interval covers the verdict's change in {sum(covered)} of {len(covered)}")
    return 0


def comparison(files: dict, case: str, title: str) -> bool:
    """One comparison's prediction with B's trace read by each yardstick in turn; whether the first covers the
    verdict's change."""
    gpu_check.qwen(files, case, title)
    v = files[f"{case}/report.json"]["verdict"]
    measured = 100 * (v["ratio"] - 1)
    print(f"  verdict: {v['outcome']}, {measured:+.1f}% [{100 * (v['lo'] - 1):+.1f}, {100 * (v['hi'] - 1):+.1f}]")
    step_a = gpu_check.measured_pairs(files[f"{case}/blocks.jsonl"])[0]
    ca, cb = (files[f"{case}/census-{s}/runs.jsonl"][0]["census"] for s in "ab")
    first = None
    for name, drop in YARDSTICKS:
        p = cost_path.predict_pair(without(ca, drop), without(cb, drop), step_a)
        first = first or p
        speed = f"x{p['host_speed']:.3f}" if "host_speed" in p else "none"
        print(
            f"  B's trace read by {name} ({speed}): {p['traced_pct']:+.1f}%"
            + (f" ({p['traced_per_op_pct']:+.1f}% per aten op)" if "traced_per_op_pct" in p else "")
            + "; interval "
            f"[{p['lo']:+.1f}, {p['hi']:+.1f}] around {p['delta_pct']:+.1f}%"
        )
    return first["lo"] <= measured <= first["hi"]


# each yardstick of the host's speed, by what a census would lack for the prediction to fall back to the next
YARDSTICKS = (
    ("the time per aten op", ()),
    ("the window probe", ("aten_ms",)),
    ("the probe before training", ("aten_ms", "window_probe")),
    ("no yardstick", ("aten_ms", "window_probe", "host_probe")),
)


def without(census: dict, keys: tuple) -> dict:
    """``census`` without ``keys`` (``aten_ms`` is the timeline's)."""
    out = {k: v for k, v in census.items() if k not in keys}
    if "aten_ms" in keys:
        out["timeline"] = {k: v for k, v in census["timeline"].items() if k != "aten_ms"}
    return out


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
