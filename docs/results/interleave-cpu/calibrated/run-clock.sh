# Session 11: the CI test's comparison with the injection sized by its own clock (calibrate_injection; side A
# carries the same hook at 0 casts). Three seeds, sequentially. DIR names the variant (hooked: session 11's first try,
# A hooked but still sized by wall-time ratios; castclock-s201: casts sized by their clock; clock: host work by its clock).
# usage (repo root, venv active): V=clock bash docs/results/interleave-cpu/calibrated/run-clock.sh
D=docs/results/interleave-cpu/calibrated; V=${V:-clock}
for S in 201 202 203; do
  PYTHONPATH=. python -m harness interleave --gpu cpu --workload tiny-qwen3 --decomposition 2x2 --block-steps 5 --pairs 64 --launches 8 \
    --look-every 2 --threshold 0.02 --budget-minutes 2.6 --inject-work-b-percent 5 --seed $S --results-dir $D/$V-s$S > /tmp/$V-s$S.log 2>&1
  echo "seed $S rc=$?"
  mv /tmp/$V-s$S.log $D/$V-s$S/interleave.log
  rm -rf $D/$V-s$S/work
done
