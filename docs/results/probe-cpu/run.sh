#!/usr/bin/env bash
# Does the host probe see a slower host? tiny-qwen3 4x1 on this 2-core CPU machine, 3 plain runs and 3 runs
# with two busy-loop processes competing for the cores, interleaved (plain, loaded, plain, ...).
# Usage: bash docs/results/probe-cpu/run.sh OUT_DIR
set -euo pipefail
out=${1:?results dir}
for i in 1 2 3; do
  python -m pytest perftests --gpu=cpu --repeats 1 -k "test_run and not runtime and 4x1" --results-dir "$out/plain" -p no:cacheprovider -q > /dev/null
  python -c "while True: pass" & h1=$!
  python -c "while True: pass" & h2=$!
  python -m pytest perftests --gpu=cpu --repeats 1 -k "test_run and not runtime and 4x1" --results-dir "$out/loaded" -p no:cacheprovider -q > /dev/null || true
  kill $h1 $h2
done
python - "$out" <<'PY'
import json, sys
from pathlib import Path
from statistics import median
rows = {k: [json.loads(x) for x in (Path(sys.argv[1]) / k / "runs.jsonl").read_text().splitlines() if x.strip()] for k in ("plain", "loaded")}
for k, rs in rows.items():
    step = ", ".join("%.1f" % r["step_time_median_ms"] for r in rs)
    launch = ", ".join("%.2f" % r["host_probe"]["launch_us"] for r in rs)
    loop = ", ".join("%.1f" % r["host_probe"]["python_ns"] for r in rs)
    print(f"{k:7s} median step ms: {step}; launch_us: {launch}; python_ns: {loop}")
m = {k: {q: median(f(r) for r in rs) for q, f in (("step", lambda r: r["step_time_median_ms"]), ("launch", lambda r: r["host_probe"]["launch_us"]),
                                                    ("python", lambda r: r["host_probe"]["python_ns"]))} for k, rs in rows.items()}
print("loaded / plain (medians): " + ", ".join("%s x%.2f" % (q, m["loaded"][q] / m["plain"][q]) for q in ("step", "launch", "python")))
PY
