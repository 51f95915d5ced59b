# Issue 13 on one H200: N interleaved comparisons of qwen3-1.7b-lora 4x1 (k = 3, 2 launches, both workers pinned to CPU 2)
# with side B slowed by injected work sized on this machine for +5% (--inject-work-b-percent 5), each within MINUTES.
# usage (device, nvidia-h200, from the repo root, carry .whl): N=3 MINUTES=3 bash docs/results/interleave-h200/lease-calibrated.sh
R=$OUT/calibrated; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
for i in $(seq 1 $N); do
  timeout $(( ${MINUTES%.*} * 60 + 60 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --block-steps 3 \
    --pairs ${PAIRS:-34} --launches 2 --budget-minutes $MINUTES --cpus 2 --seed $((700 + i)) --inject-work-b-percent 5 --threshold 0.02 \
    --results-dir $R/work5-$i > $R/work5-$i.log 2>&1
  echo "work5-$i rc=$?" >> $R/rc.txt
  rm -f $R/*/work/*.request.json; tar czf $OUT/calibrated.tgz -C $OUT calibrated  # after each: a killed call keeps the ones done
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $R/nvidia-smi.txt
tar czf $OUT/calibrated.tgz -C $OUT calibrated
cat $R/rc.txt; for f in $R/*.log; do echo "== $f"; grep -E "^(inject-work sized|REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|launch variance|time:)" $f; done
