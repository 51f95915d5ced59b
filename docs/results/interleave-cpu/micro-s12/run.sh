# Session 12: the CI end-to-end configuration (tiny-qwen3 2x2, k = 5, 64 pairs over 8 launches, threshold 2%, 2.6-minute
# budget, +5% host work sized by its own clock) at the step grain against the micro grain (--grain micro: 10 single
# micro-batches per side and pair), alternating, twice each, on the quiet 2-core machine and then beside one CPU hog.
# usage (repo root): bash docs/results/interleave-cpu/micro-s12/run.sh
D=docs/results/interleave-cpu/micro-s12
export PYTHONPATH=$PWD
run() {  # NAME GRAIN SEED
  .venv/bin/python -m harness interleave --gpu cpu --workload tiny-qwen3 --decomposition 2x2 --block-steps 5 --pairs 64 --launches 8 \
    --look-every 2 --threshold 0.02 --budget-minutes 2.6 --inject-work-b-percent 5 --grain $2 --seed $3 --results-dir $D/$1 > $D/$1.log 2>&1
  echo "$1 rc=$?" >> $D/rc.txt
}
nproc > $D/nproc.txt; uptime > $D/uptime.txt
run quiet-step-1 step 1201; run quiet-micro-1 micro 1202; run quiet-step-2 step 1203; run quiet-micro-2 micro 1204
python3 -c "while True: pass" & HOG=$!
run hog-step-1 step 1205; run hog-micro-1 micro 1206; run hog-step-2 step 1207; run hog-micro-2 micro 1208
kill $HOG
rm -f $D/*/work/*.request.json
echo done > $D/DONE
