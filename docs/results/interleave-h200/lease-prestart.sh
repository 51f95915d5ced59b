# Issue 13 on one H200, session 9: does --prestart take the imports out of a launch there too, and does a forked-off
# import on the other CPUs leave CUDA and the blocks alone? One A/A comparison of qwen3-1.7b-lora 4x1 (k = 3), both
# workers on CPU 2, the next launch's workers importing on the other CPUs, 4 launches, the launch as the unit.
# usage (device, nvidia-h200, from the repo root, carry .whl): bash docs/results/interleave-h200/lease-prestart.sh
R=$OUT/prestart; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
timeout ${LIMIT:-150} python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition 4x1 --block-steps 3 \
  --pairs ${PAIRS:-40} --launches 4 --budget-minutes ${MINUTES:-2.1} --cpus 2 --prestart --seed 901 --threshold 0.02 \
  --results-dir $R/aa-4x1-prestart > $R/aa-4x1-prestart.log 2>&1
echo "aa-4x1-prestart rc=$?" >> $R/rc.txt
rm -f $R/*/work/*.request.json
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $R/nvidia-smi.txt
tar czf $OUT/prestart.tgz -C $OUT prestart
cat $R/rc.txt; grep -iE "ready in|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|launch variance|time:|budget|interval|minimum)" $R/aa-4x1-prestart.log
