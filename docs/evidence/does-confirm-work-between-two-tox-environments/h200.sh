#!/usr/bin/env bash
# On the H200, from a copy of the tree in /tmp/snap (trl and datasets unpacked in /tmp/site from .whl), in the background:
# 1. two tox-style virtualenvs of the image's one interpreter (pinned, latest), a suite session in `latest` whose runs
#    are slowed 30% (--inject-slowdown 0.3: a runtime regression against the stored H200 baseline), then the nightly's
#    confirm step, pinned (A) against latest (B), within the nightly's budget: once with B's steps slowed as the
#    session's were (it must confirm), once without (the two environments hold the same packages: it must not);
# 2. the defaults' A/A of qwen3-1.7b-lora 4x1 (docs/evidence/defaults-on-an-h200/), with the typed core's code.
set -u
R=/tmp/run; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc.txt
export PYTHONUNBUFFERED=1
cd /tmp/snap
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
# the image's python3 is itself a virtualenv (torch and the rest in its site-packages), which a virtualenv made from it
# does not see even with --system-site-packages: its site-packages goes on each one's path, as the image's packages
base_site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
for env in pinned latest; do
  python3 -m venv --system-site-packages --without-pip /tmp/venvs/$env
  site=$(/tmp/venvs/$env/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  printf '/tmp/site\n/tmp/snap\n%s\n' "$base_site" > "$site/harness-here.pth"
done
P=/tmp/venvs/pinned/bin/python; L=/tmp/venvs/latest/bin/python
$L -c "import torch, transformers, trl, peft, sys; print(sys.prefix, torch.__version__, transformers.__version__, trl.__version__, peft.__version__)" > $R/versions.txt 2>&1
$P -c "import sys; print(sys.prefix)" >> $R/versions.txt 2>&1

# On a GPU other than the H200 the confirmation's runs are filed as h200 (HARNESS_MACHINE, a runner's own name for its
# machine class), so that the stored H200 baseline judges them: the machine's own speed then adds to the regression
# the session sees, and only the slowed B may be confirmed side by side.
grep -q H200 $R/nvidia-smi.txt || export HARNESS_MACHINE=h200
date -u +%FT%TZ > $R/suite.start
timeout 600 $L -m pytest perftests --gpu=h200 --workload qwen3-1.7b-lora -k 4x1 --repeats 2 --inject-slowdown 0.3 \
  --results-dir $R/suite -p no:cacheprovider -q > $R/suite.log 2>&1
echo "suite rc=$?" >> $R/rc.txt
for kind in slowed plain; do
  extra=(); [ $kind = slowed ] && extra=(--inject-slowdown-b 0.3)
  date -u +%FT%TZ > $R/confirm-$kind.start
  timeout 420 $P -m harness confirm $R/suite/report.json --budget-minutes 4 --python-a $P --python-b $L \
    --results-dir $R/confirm-$kind "${extra[@]}" > $R/confirm-$kind.log 2>&1
  echo "confirm-$kind rc=$?" >> $R/rc.txt
  rm -f $R/confirm-$kind/*/work/*.request.json
done
unset HARNESS_MACHINE

if [ "${SKIP_AA:-0}" != 1 ]; then  # SKIP_AA=1: the confirmation alone (about 13 device-minutes instead of 22)
  date -u +%FT%TZ > $R/aa-4x1.start
  timeout 720 python3 -m harness interleave --workload qwen3-1.7b-lora --decomposition 4x1 --results-dir $R/aa-4x1 > $R/aa-4x1.log 2>&1
  echo "aa-4x1 rc=$?" >> $R/rc.txt
  rm -f $R/aa-4x1/work/*.request.json
fi
echo done > $R/DONE
