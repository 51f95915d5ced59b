"""The figures of "Rerun with the typed core's code, on an H100" from an expanded results dir of an interleaved run:
the median pair log ratio by which side ran first, the machine's other load and the median step.

    python docs/evidence/raw.py expand docs/evidence/defaults-on-an-h200/aa-4x1-typed-core-h100.jsonl.gz /tmp/h100
    python docs/evidence/defaults-on-an-h200/pairs_by_order.py /tmp/h100/aa-4x1
"""

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def main(folder: Path) -> None:
    rows = [json.loads(line) for line in (folder / "blocks.jsonl").read_text().splitlines()]
    timed = [r for r in rows if not r["warmup"]]
    pairs: dict = defaultdict(dict)
    for r in timed:
        pairs[(r["launch"], r["pair"])][r["side"]] = r
    by_order = defaultdict(list)
    for p in pairs.values():
        if "a" in p and "b" in p:
            ratio = statistics.median(p["b"]["step_times_ms"]) / statistics.median(p["a"]["step_times_ms"])
            by_order["A first" if p["a"]["position"] == 1 else "B first"].append(math.log(ratio))
    for order, logs in sorted(by_order.items()):
        print(
            f"{order}: {len(logs)} pairs, median log ratio {100 * statistics.median(logs):+.2f}%, "
            f"mean {100 * statistics.mean(logs):+.2f}%"
        )
    other = [r["other_cpus"] for r in timed if r.get("other_cpus") is not None]
    print(f"other CPUs busy, median over blocks: {statistics.median(other):.2f}")
    print(f"median step: {statistics.median(statistics.median(r['step_times_ms']) for r in timed):.0f} ms")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
