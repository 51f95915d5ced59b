# Issue 13 on one H200, session 14's second lease (the last 7.9 device-minutes): a 4.5-minute 1x4 A/A at the micro grain
# (k = 1) with 10 pre-started launches of about 4 pairs each, with the next launch now pre-started at the ready (beside the
# warm-up): do launches this short still wait for the next one's imports (session 14's first lease: 10-15 s per start at
# 2-3 pairs, against 4-5 s)? And a second lease's 1x4 noise. --warmup-steps 2, CPU 2, threshold +2%, alpha 0.05.
# usage (device, nvidia-h200, repo root, carry .whl): bash docs/results/interleave-h200/session14/lease2.sh
R=/tmp/s14b; mkdir -p $R; n=aa45-micro-1x4-L10
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
date -u +%FT%TZ > $R/$n.start
timeout 300 python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 1x4 --grain micro --block-steps 1 \
  --warmup-steps 2 --pairs 400 --launches 10 --budget-minutes 4.5 --cpus 2 --prestart --seed 1403 --threshold 0.02 \
  --results-dir $R/$n > $R/$n.log 2>&1
echo "$n rc=$?" >> $R/rc.txt
rm -f $R/$n/work/*.request.json
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
tar czf $OUT/s14b.tgz -C /tmp s14b
grep -E "ready in|fit in|^(regression|pass|inconclusive|REGRESSION|time:|minimum|per-pair|plan)" $R/$n.log | cut -c1-300
