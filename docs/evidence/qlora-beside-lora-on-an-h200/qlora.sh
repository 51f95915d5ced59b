#!/usr/bin/env bash
# QLoRA on one H200, from the repository root on the device, with trl, datasets and bitsandbytes wheels in .whl/ and
# .whlbnb/ (../shared/tools/offline-wheelhouse.sh .whl; bitsandbytes downloaded the same way): doctor, then
# qwen3-1.7b-qlora, every split, one timed run of 20 steps and one census run each.
set -u
export R=/tmp/run; mkdir -p $R; cat /proc/sys/kernel/random/boot_id > $R/boot_id
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl .whlbnb/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv > $R/nvidia-smi.txt
python3 -m harness doctor > $R/doctor.txt 2>&1
python3 -m harness doctor --json > $R/doctor.json 2>/dev/null
timeout 420 python3 -m pytest perftests --gpu=auto --workload qwen3-1.7b-qlora --repeats 1 --steps 20 --census \
  --results-dir $R/qlora -p no:cacheprovider > $R/qlora.log 2>&1
echo "qlora rc=$?" >> $R/rc.txt
