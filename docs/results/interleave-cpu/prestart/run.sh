# --prestart on the 2-core CPU runner: A/A comparisons of tiny-qwen3 2x2 (k = 5, 32 pairs over 4 launches), both workers
# on CPU 0, without and with the next launch's workers importing on CPU 1; alternated, N of each.
# usage, from the repository root: bash docs/results/interleave-cpu/prestart/run.sh OUT [N]
set -u
OUT=$1; N=${2:-2}; mkdir -p "$OUT"
for i in $(seq 1 "$N"); do
  for mode in plain prestart; do
    extra=(); [ "$mode" = prestart ] && extra=(--prestart)
    python -m harness interleave --gpu cpu --workload tiny-qwen3 --decomposition 2x2 --block-steps 5 --pairs 32 --launches 4 \
      --cpus 0 "${extra[@]}" --seed $((500 + i)) --threshold 0.02 --results-dir "$OUT/$mode-$i" > "$OUT/$mode-$i.log" 2>&1
    echo "$mode-$i rc=$?" >> "$OUT/rc.txt"
    rm -f "$OUT/$mode-$i"/work/*.request.json
  done
done
python docs/results/interleave-cpu/prestart/summary.py "$OUT"
