#!/usr/bin/env bash
# Faults on the H200, from a copy of the tree in /tmp/snap (trl and datasets in /tmp/site):
#  kill:    a nightly-style A/A of qwen3-1.7b-lora 4x1 (defaults, a 4-minute budget) whose pre-started side-B worker of
#           launch 3 is SIGKILLed from outside 5 s after it starts; then `recover` on a copy without the run's report.
#  sigterm: `confirm` of a planted stored-baseline regression (A this python, B a wrapper of it), SIGTERMed 10 s after
#           its interleaved comparison wrote its first block; the time to exit and the processes left are recorded.
set -u
R=/tmp/run; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc.txt
export PYTHONPATH=/tmp/site:/tmp/snap PYTHONUNBUFFERED=1
cd /tmp/snap
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
python3 -c "import torch, transformers, trl, peft; print(torch.__version__, transformers.__version__, trl.__version__, peft.__version__)" > $R/versions.txt 2>&1
ms() { echo $(( $(date +%s%N) / 1000000 )); }

python3 -m harness interleave --workload qwen3-1.7b-lora --decomposition 4x1 --budget-minutes 4 --results-dir $R/kill > $R/kill.log 2>&1 &
P=$!
pid=""; for i in $(seq 1 1200); do pid=$(pgrep -f "work/b3-" | head -1); [ -n "$pid" ] && break; sleep 0.25; done
sleep 5
ps -o pid,etimes,args -p "$pid" > $R/kill-target.txt 2>&1
kill -9 "$pid"; echo "killed $pid at $(date -u +%FT%TZ)" >> $R/kill-target.txt
wait $P; echo "kill: interleave rc=$?" >> $R/rc.txt
cp -r $R/kill $R/kill-copy; rm -f $R/kill-copy/report.json
python3 -m harness recover $R/kill-copy > $R/kill-recover.log 2>&1; echo "kill: recover rc=$?" >> $R/rc.txt
pgrep -af "harness.measuring" > $R/kill-left.txt; echo "kill: processes left $(wc -l < $R/kill-left.txt)" >> $R/rc.txt

cat > $R/suite-report.json <<'J'
{"gpu": "h200", "rows": [{"workload": "qwen3-1.7b-lora", "decomposition": "4x1"}],
 "verdicts": [{"kind": "runtime", "outcome": "regression", "case": "qwen3-1.7b-lora-4x1", "message": "planted: x1.25 against the stored baseline"}]}
J
printf '#!/bin/sh\nexec python3 "$@"\n' > /tmp/py-b; chmod +x /tmp/py-b
python3 -m harness confirm $R/suite-report.json --python-b /tmp/py-b --results-dir $R/confirm > $R/confirm.log 2>&1 &
P=$!
for i in $(seq 1 2400); do [ -s $R/confirm/qwen3-1.7b-lora-4x1/blocks.jsonl ] && break; sleep 0.25; done
sleep 10
pgrep -af "harness" > $R/confirm-before.txt
t0=$(ms); kill -TERM $P; wait $P; rc=$?; t1=$(ms)
echo "sigterm: confirm rc=$rc, exited $((t1 - t0)) ms after SIGTERM" >> $R/rc.txt
sleep 1; pgrep -af "harness" > $R/confirm-left.txt; echo "sigterm: processes left $(wc -l < $R/confirm-left.txt)" >> $R/rc.txt
rm -f $R/*/work/*.request.json $R/*/*/work/*.request.json
echo done > $R/DONE
