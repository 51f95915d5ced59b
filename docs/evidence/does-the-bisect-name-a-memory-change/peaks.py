"""The peak memory of each trl release the GPU bisect measured, the boundaries its report names, and the predicted
cost of each boundary as the report recorded it and as this checkout's bisect predicts it from the same censuses.

python docs/evidence/does-the-bisect-name-a-memory-change/peaks.py [trl-1.12.0-1.15.0-h100.jsonl.gz]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent)]

import raw  # noqa: E402

from harness.bisect.report import predicted_text  # noqa: E402
from harness.bisect.search import predicted_cost  # noqa: E402
from harness.bisect.steps import CensusProbe  # noqa: E402

GIB = 2**30


def main(path: Path) -> None:
    files = raw.load(path)
    censuses = [name for name in files if name.startswith("bisect/census/") and name.endswith("runs.jsonl")]
    runs = sorted(
        (files[name][0] for name in censuses),
        key=lambda r: [int(x) for x in r["env"]["versions"]["trl"].split(".")],
    )
    print(f"{files['nvidia-smi.txt'].splitlines()[-1]}; boot id {files['boot_id'][:8]}")
    for r in runs:
        c = r["census"]
        print(
            f"  trl {r['env']['versions']['trl']:<7} peak reserved {r['peak_reserved_bytes'] / GIB:.2f} GiB, "
            f"allocated {r['peak_allocated_bytes'] / GIB:.2f} GiB; "
            f"aten ops {c['ops']:,.1f}, kernels {c['kernels']:,.1f}, "
            f"loss_type {c['config']['args']['loss_type']}"
        )
    report = files["bisect/report.json"]
    print("boundaries named:", report["attribution"]["peak reserved memory"])
    by_label = {f"trl {r['env']['versions']['trl']}": r for r in runs}
    for ch in report["changes"]:
        print(f"  {ch['last_good']} -> {ch['first_bad']}: {'; '.join(ch['memory'])}")
        print(f"    predicted as recorded: {predicted_text(ch['predicted'])}")
        a, b = by_label[ch["last_good"]], by_label[ch["first_bad"]]
        now = predicted_cost(CensusProbe(a["census"], a["step_time_median_ms"], ""), CensusProbe(b["census"], None, ""))
        print(f"    predicted now: {predicted_text(now, note=True)}")
        bare = [{k: v for k, v in r["census"].items() if k != "host_probe"} for r in (a, b)]
        unread = predicted_cost(CensusProbe(bare[0], a["step_time_median_ms"], ""), CensusProbe(bare[1], None, ""))
        print(f"    without the host probes: {predicted_text(unread)}")
    for r in runs:
        t = r["census"]["timeline"]
        host = sum(s["host_ms"] for s in t["segments"]) / t["n"]
        print(
            f"  trl {r['env']['versions']['trl']:<7} host probe {r['host_probe']['launch_us']:.2f} us per launch; "
            f"traced host time {host:.0f} ms per step; median step {r['step_time_median_ms']:.0f} ms"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "trl-1.12.0-1.15.0-h100.jsonl.gz")
