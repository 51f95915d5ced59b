# Issue 13 on one H200, session 13's last device minutes (the lease of queue.sh, still warm): one more 4x1 comparison with
# host work sized for +5% (k = 3, step grain, 6 pre-started launches, --warmup-steps 2, a 4.8-minute budget, CPU 2).
# usage (device, nvidia-h200, repo root, carry .whl, after queue.sh): bash docs/results/interleave-h200/session13/lease-4x1.sh
R=/tmp/s13; n=host5-4x1; export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
date -u +%FT%TZ > $R/$n.start
timeout 330 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --block-steps 3 --warmup-steps 2 \
  --pairs 400 --launches 6 --budget-minutes 4.8 --cpus 2 --prestart --seed 1305 --threshold 0.02 --inject-work-b-percent 5 \
  --results-dir $R/$n > $R/$n.log 2>&1
echo "$n rc=$?" >> $R/rc.txt
rm -f $R/$n/work/*.request.json
tar czf $OUT/s13.tgz -C /tmp s13
grep -iE "inject-work sized|injected work|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|minimum|per-pair)" $R/$n.log
