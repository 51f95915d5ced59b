# Session 13: does the plan line's --launches do what it says? The CI end-to-end configuration (tiny-qwen3 2x2, micro grain,
# k = 5, threshold 2%, a 2.6-minute budget), A/A, twice: first with the CI's 8 launches, then with the launch count that
# first run's plan line proposed; each run's own MDS (alpha 0.01, power 0.9, t over its launch HL estimates) against the
# plan's figure. Rounds 1-2 ran with the plan made for the launch sd's point estimate (code of commit
# 94be471); rounds 3-4 with the plan made for its 90% upper bound (code of 8923873); rounds 5-6 (session 14) with the
# least-regret plan between the estimate and that bound, the launch sd from rescaled residuals, the pre-start at the ready.
# usage (repo root): ROUNDS="5 6" bash docs/results/interleave-cpu/plan-s13/run.sh
D=docs/results/interleave-cpu/plan-s13
export PYTHONPATH=$PWD
run() {  # NAME LAUNCHES SEED
  .venv/bin/python -m harness interleave --gpu cpu --workload tiny-qwen3 --decomposition 2x2 --block-steps 5 --grain micro --pairs 400 \
    --launches $2 --threshold 0.02 --budget-minutes 2.6 --seed $3 --results-dir $D/$1 > $D/$1.log 2>&1
  echo "$1 rc=$?" >> $D/rc.txt
}
{ echo "rounds ${ROUNDS:-1 2}: $(nproc) CPUs"; } >> $D/nproc.txt; { echo "rounds ${ROUNDS:-1 2}:"; uptime; } >> $D/uptime.txt
for r in ${ROUNDS:-1 2}; do
  run round$r-l8 8 130$r
  L=$(python3 -c "import json,sys; print(json.load(open('$D/round$r-l8/report.json'))['plan']['launches'])")
  run round$r-planned $L 131$r
done
rm -f $D/*/work/*.request.json
echo done > $D/DONE
