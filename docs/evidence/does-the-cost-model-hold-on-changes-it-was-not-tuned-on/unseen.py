"""Two comparisons the cost model was not tuned on (an H100, trl 1.13.0 -> 1.12.0): what the censuses, the timed runs
and the side-by-side comparisons recorded, and the critical path's predictions with this checkout's model.

    python docs/evidence/does-the-cost-model-hold-on-changes-it-was-not-tuned-on/unseen.py [unseen-h100.jsonl.gz]
    python docs/evidence/does-the-cost-model-hold-on-changes-it-was-not-tuned-on/unseen.py trim OUT.json.gz

``unseen-h100.jsonl.gz`` is the results folder packed with ``docs/evidence/raw.py pack`` (its README says how each file
was made): ``gpu-bound-*`` (a Llama 1B shape at 2,048 tokens, micro-batch 16, 16x1) and ``host-bound-*``
(``qwen3-1.7b-lora`` 4x1), each with a census of either side (``*-census/a``, ``*-census/b``), a timed run of A
(``*-timed``) and the interleaved comparison (``*-side-by-side``). ``trim`` writes the few fields
``tests/test_cost_unseen.py`` reads (``tests/data/cost-unseen/pairs.json.gz``).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent)]

import raw  # noqa: E402

from harness.judging import cost_path, trace_speed  # noqa: E402
from harness.judging.critical_path import Timeline  # noqa: E402

PAIRS = ("gpu-bound", "host-bound")
# the census fields the model and the tests read
KEPT = (
    "fits",
    "device",
    "n",
    "steps",
    "ops",
    "kernels",
    "python_calls",
    "kernel_ms",
    "kernels_by_name",
    "kernel_ms_by_name",
    "tokens",
    "timeline",
    "window_probe",
    "host_probe",
    "overhead",
)


def pair(files: dict, name: str) -> dict:
    """One comparison: either side's census run, A's timed run and the side-by-side's verdict."""
    census = {s: files[f"{name}-census/{s}/runs.jsonl"][0] for s in "ab"}
    return {
        "census": census,
        "timed": files[f"{name}-timed/runs.jsonl"][0],
        "verdict": files[f"{name}-side-by-side/report.json"]["verdict"],
    }


def window_steps(run: dict) -> list[float]:
    """The census run's own step times in its traced window (``census.steps``: first and last, 1-based)."""
    first, last = run["census"]["steps"]
    return run["step_times_ms"][first - 1 : last]


def slow_phase_s(steps_ms: list[float]) -> float | None:
    """The time (s from the first step) at which the run's first steps stop running over 1.5 times its fastest step,
    or None where its second step already does not."""
    fast, t = min(steps_ms), 0.0
    for i, x in enumerate(steps_ms):
        if i and x < 1.5 * fast:
            return t if i > 1 else None
        t += x / 1000
    return None


def longest_segments(census: dict) -> list[float]:
    """The device time launched in each step's segment with the most aten ops (the forward and backward of one
    step: one per step), in window order."""
    segs = census["timeline"]["segments"]
    most = max(s["ops"] for s in segs)
    return [sum(s["device_ms"].values()) for s in segs if s["ops"] == most]


def show(p: dict, name: str) -> None:
    ca, cb = (p["census"][s]["census"] for s in "ab")
    timed, v = p["timed"], p["verdict"]
    step = timed["step_time_median_ms"]
    print(f"{name}: {timed['workload']} {timed['decomposition_id']}")
    print(
        f"  measured side by side: B/A x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}] "
        f"({100 * (v['ratio'] - 1):+.1f}% [{100 * (v['lo'] - 1):+.1f}, {100 * (v['hi'] - 1):+.1f}])"
    )
    steps = timed["step_times_ms"][timed["warmup_steps"] :]
    print(
        f"  A's timed run: median {step:.1f} ms over steps {timed['warmup_steps'] + 1}-{len(timed['step_times_ms'])}; "
        f"its steps {min(steps):.0f} to {max(steps):.0f} ms, in order: {', '.join(f'{x:.0f}' for x in steps)}"
    )
    gpu = timed.get("gpu_samples") or []
    if gpu:
        capped = [g for g in gpu if g["throttle_reasons"]]
        print(
            f"  its GPU readings ({len(gpu)}, every 0.5 s): SM clock {min(g['sm_clock_mhz'] for g in gpu)}-"
            f"{max(g['sm_clock_mhz'] for g in gpu)} MHz; a clock-event reason in {len(capped)} "
            f"({sorted({g['throttle_reasons'] for g in capped})}, at {[g['sm_clock_mhz'] for g in capped]} MHz)"
        )
        slow = slow_phase_s(timed["step_times_ms"])
        if slow:
            for what, part in (
                ("before", [g for g in gpu if g["t_s"] < slow]),
                ("after", [g for g in gpu if g["t_s"] > slow]),
            ):
                print(
                    f"    {what} {slow:.1f} s (the first steps' slow run ends): power median "
                    f"{statistics.median(g['power_w'] for g in part):.0f} W, memory utilisation median "
                    f"{statistics.median(g['mem_util_pct'] for g in part):.0f}%, utilisation median "
                    f"{statistics.median(g['util_pct'] for g in part):.0f}%"
                )
    for s, c in (("A", ca), ("B", cb)):
        run = p["census"][s.lower()]
        t = Timeline.of(c)
        streams = sorted({k for seg in t.segments for k in seg.device_ms})
        print(
            f"  census {s}: window steps {c['steps'][0]}-{c['steps'][1]} ran "
            f"{', '.join(f'{x:.0f}' for x in window_steps(run))} ms (the run's own clock; all its steps: "
            f"{', '.join(f'{x:.0f}' for x in run['step_times_ms'])}); traced window {t.window_ms:.1f} ms per step; "
            f"kernel time {c['kernel_ms']:.1f} ms, device path {t.device_path_ms:.1f} ms per step on stream(s) "
            f"{', '.join(streams)} ({t.device_path_ms / t.window_ms:.0%} of the window); device time of each step's "
            f"longest segment: {', '.join(f'{x:.0f}' for x in longest_segments(c))} ms"
        )
    dev = trace_speed.device_speed(ca, cb)
    if dev is not None:
        print(
            f"  kernels both censuses run equally often ({dev.kernels}, {dev.cover:.0%} of A's kernel time): B's time "
            f"x{dev.ratio:.3f} of A's, scattered by {dev.scatter:.1%}"
        )
    rec = cost_path.predict_pair(ca, cb, step)
    m = 100 * (v["ratio"] - 1)
    inside = rec["lo"] <= m <= rec["hi"]
    print(f"  {cost_path.pair_line(rec)}")
    print(
        f"  predicted {rec['delta_pct']:+.1f}% [{rec['lo']:+.1f}, {rec['hi']:+.1f}] against {m:+.1f}% measured: "
        f"{'inside' if inside else 'OUTSIDE'} the interval, {abs(m - rec['delta_pct']):.1f} points off"
        + ("; the prediction says why its interval is wide" if rec.get("reason") else "")
    )


def trim(files: dict, out: str) -> None:
    """The fields the tests read, of both comparisons, as one gzipped JSON."""
    data = {}
    for name in PAIRS:
        p = pair(files, name)
        data[name] = {
            "census": {s: {k: r["census"][k] for k in KEPT if k in r["census"]} for s, r in p["census"].items()},
            "census_step_times_ms": {s: r["step_times_ms"] for s, r in p["census"].items()},
            "timed_step_ms": p["timed"]["step_time_median_ms"],
            "verdict": {k: p["verdict"][k] for k in ("ratio", "lo", "hi")},
        }
    write_trimmed(data, out)


def write_trimmed(data: dict, out: str) -> None:
    """``data`` as one gzipped JSON, byte for byte the same for the same data."""
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    print(f"wrote {out}")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "trim":
        trim(raw.load(argv[2] if len(argv) > 2 else str(HERE / "unseen-h100.jsonl.gz")), argv[1])
        return 0
    files = raw.load(argv[0] if argv else str(HERE / "unseen-h100.jsonl.gz"))
    for name in PAIRS:
        show(pair(files, name), name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
