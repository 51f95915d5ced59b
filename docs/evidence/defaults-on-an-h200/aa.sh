#!/usr/bin/env bash
# Two A/As of qwen3-1.7b-lora with the defaults only (4x1 then 1x4), in the background from /tmp/snap.
set -u
R=/tmp/run; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc.txt; lscpu > $R/lscpu.txt
export PYTHONPATH=/tmp/site:/tmp/snap PYTHONUNBUFFERED=1
cd /tmp/snap
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
python3 -c "import torch, transformers, trl, peft; print(torch.__version__, transformers.__version__, trl.__version__, peft.__version__)" > $R/versions.txt 2>&1
for dec in 4x1 1x4; do
  date -u +%FT%TZ > $R/aa-$dec.start
  timeout 720 python3 -m harness interleave --workload qwen3-1.7b-lora --decomposition $dec --results-dir $R/aa-$dec > $R/aa-$dec.log 2>&1
  echo "aa-$dec rc=$?" >> $R/rc.txt
  [ -e $R/aa-$dec/report.json ] || python3 -m harness recover $R/aa-$dec >> $R/aa-$dec.log 2>&1
  rm -f $R/aa-$dec/work/*.request.json
done
echo done > $R/DONE
