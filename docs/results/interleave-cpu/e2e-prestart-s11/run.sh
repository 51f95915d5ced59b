# Session 11: the CI end-to-end comparison (tiny-qwen3 2x2, k = 5, 64 pairs over 8 launches, +2%, 2.6 minutes) with both
# workers on CPU 0 and the next launch pre-started on CPU 1 (--cpus 0 --prestart), injected host work sized for 5% and
# A/A, beside one CPU hog (HOG=1, default) or on a quiet machine (HOG=0). NAME prefixes the result dirs.
# usage (repo root, venv active): HOG=1 NAME=hog bash docs/results/interleave-cpu/e2e-prestart-s11/run.sh
D=docs/results/interleave-cpu/e2e-prestart-s11; N=${NAME:-hog}
[ "${HOG:-1}" = 1 ] && { python3 -c "while True: pass" & HOG_PID=$!; }
for X in "inj:101:--inject-work-b-percent 5" "aa:102:"; do
  IFS=: read -r K S EXTRA <<< "$X"
  PYTHONPATH=. python -m harness interleave --gpu cpu --workload tiny-qwen3 --decomposition 2x2 --block-steps 5 --pairs 64 --launches 8 \
    --look-every 2 --threshold 0.02 --budget-minutes 2.6 --cpus 0 --prestart --seed $S $EXTRA --results-dir $D/$N-$K > /tmp/$N-$K.log 2>&1
  echo "$N-$K rc=$?"; mv /tmp/$N-$K.log $D/$N-$K/interleave.log; rm -rf $D/$N-$K/work
done
[ -n "$HOG_PID" ] && kill $HOG_PID
