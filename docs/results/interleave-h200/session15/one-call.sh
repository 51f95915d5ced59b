# One comparison inside one device call, for the next session (session 15 lost a background run when the machine was
# released between two calls; raw/device-calls.txt). Everything measured reaches $OUT while it is measured: a background
# loop re-tars the results dir into $OUT every 30 s (at most 8 files come back; $OUT comes back on a timeout, /tmp does
# not), and progress.json lets `python -m harness recover DIR` judge a run cut short.
# usage (device, nvidia-h200, repo root, carry .whl, timeout_s 600; pick MINUTES from `status` so that MINUTES x 60 + 60
# fits in both the call's 600 s and the device time left):
#   bash docs/results/interleave-h200/session15/one-call.sh NAME DEC MINUTES SEED [extra interleave options...]
# e.g.  bash docs/results/interleave-h200/session15/one-call.sh aa-4x1 4x1 9 1601
set -u
n=$1 dec=$2 m=$3 s=$4; shift 4
R=/tmp/run; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; lscpu > $R/lscpu.txt; nproc > $R/nproc.txt; date -u +%FT%TZ > $R/$n.start
[ -d /tmp/site/trl ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi-$n.txt
( while sleep 30; do tar czf $OUT/.run.tgz -C /tmp run 2>/dev/null && mv $OUT/.run.tgz $OUT/run.tgz; done ) &
keeper=$!
timeout $(( m * 60 + 45 )) python3 -m harness interleave --gpu h200 --workload qwen3-1.7b-lora --decomposition $dec \
  --block-steps auto --grain auto --warmup-steps 2 --pairs 400 --launches 16 --budget-minutes $m \
  --cpus "$(( $(nproc) - 1 ))" --prestart --seed $s "$@" --results-dir $R/$n > $R/$n.log 2>&1
echo "$n rc=$?" >> $R/rc.txt
[ -e $R/$n/report.json ] || python3 -m harness recover $R/$n >> $R/$n.log 2>&1
kill $keeper 2>/dev/null
rm -f $R/$n/work/*.request.json
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $R/nvidia-smi-$n.txt
tar czf $OUT/.run.tgz -C /tmp run && mv $OUT/.run.tgz $OUT/run.tgz
grep -iE "pre-start|stopped before|^(regression|pass|inconclusive|improvement|time:|minimum|per-pair|plan)" $R/$n.log | cut -c1-400
