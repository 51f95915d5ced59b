#!/bin/bash
# usage: bash docs/results/interleave-cpu/e2e-repeat/run.sh OUT N [hog]   (from the repository root)
# The CPU end-to-end interleaved comparisons of tests/test_interleave.py, exactly as the tests run them (2x2, k = 5,
# 64 pairs, 8 launches, looks every 2 launches, threshold +2%, budget 2.6 min), repeated N times each, alternating:
# injected work ($INJECT, default --inject-work-b-percent 5 as the test now runs it; session 7 ran --inject-work-b 6;
# seed 200+i) and A/A (seed 300+i); with "hog", beside `python3 -c "while True: pass"`.
# One directory per comparison (report.json, blocks.jsonl, its output as log); summarise with summarise.py.
set -u
OUT=$1; N=$2; HOG=${3:-}
mkdir -p "$OUT"
[ -n "$HOG" ] && { python3 -c "while True: pass" & HP=$!; }
E2E="--gpu cpu --workload tiny-qwen3 --workloads-dir workloads --decomposition 2x2 --block-steps 5 --pairs 64 --launches 8 --look-every 2 --threshold 0.02 --budget-minutes 2.6"
for i in $(seq 1 "$N"); do
  for kind in injected aa; do
    if [ $kind = injected ]; then extra="${INJECT:---inject-work-b-percent 5} --seed $((200+i))"; else extra="--seed $((300+i))"; fi
    d=$OUT/$kind-$i; t0=$(date +%s.%N)
    PYTHONPATH=. python -m harness interleave $E2E --results-dir "$d" $extra > "$OUT/$kind-$i.log" 2>&1
    echo "rc $? wall $(python3 -c "print(round($(date +%s.%N)-$t0,1))")" >> "$OUT/$kind-$i.log"
  done
done
[ -n "$HOG" ] && kill $HP
exit 0
