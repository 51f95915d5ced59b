# The advisor on one H200 (issue 14): python -m harness advise for qwen3-1.7b-lora at one effective batch, within
# --budget-minutes (probes, start-up and comparisons included), resident workers pinned to CPUs 2 and 3.
# usage (device, nvidia-h200, from the repo root, carry .whl): EFF=16 BUDGET=9 bash docs/results/advise-h200/run.sh
R=$OUT/eff$EFF; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version --format=csv > $R/nvidia-smi.txt
start=$(date +%s)
timeout $(( ${BUDGET%.*} * 60 + 60 )) python3 -m harness advise --gpu h200 --workload qwen3-1.7b-lora --effective $EFF \
  --budget-minutes $BUDGET --cpus ${CPUS:-2,3} --results-dir $R/out > $R/advise.log 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - start ))" > $R/rc.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv >> $R/nvidia-smi.txt
rm -rf $R/out/*/work/*.request.json
tar czf $OUT/eff$EFF.tgz -C $OUT eff$EFF
cat $R/rc.txt; tail -25 $R/advise.log
