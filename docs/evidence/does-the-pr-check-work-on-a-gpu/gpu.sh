#!/usr/bin/env bash
# On the GPU machine, from a copy of the tree in /tmp/snap (trl and datasets unpacked in /tmp/site from .whl, the
# stripped transformers wheels in .twheels), in the background:
# 1. the defaults' A/A of qwen3-1.7b-lora 4x1 (docs/evidence/defaults-on-an-h200/), with the typed core's code;
# 2. the pull-request check's measuring step (.github/scripts/pr-measure.py) on a real pin bump, transformers
#    5.17.0 (the base's pins, the image's) -> 5.19.0 (the pull request's): the base checkout in head/base, each side's
#    pinned environment where tox would build it (.tox/pinned), the bisect's releases from .twheels.
# SKIP_AA=1 leaves out 1 (about 11 device-minutes), SKIP_PR=1 leaves out 2 (about 13: two censuses of three splits, the
# 4-minute A/B, the bisect of one release between). Started with setsid from /tmp/snap; each later call runs poll.sh
# beside this file, which stops at once on a fresh machine (the run is lost there) rather than wait on nothing (the first
# try, 2026-12-06, spent 9 minutes so), and packs /tmp/run into $OUT.
# .twheels: `python .ci/strip-wheel.py` of transformers 5.17.0, 5.18.0 and 5.19.0 (docs/evidence/
# what-a-release-night-costs-on-an-h200/ "To run it again").
set -u
R=/tmp/run; mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc.txt
export PYTHONUNBUFFERED=1
cd /tmp/snap
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
# On a GPU other than the H200, runs are filed as h200 (a runner's own name for its machine class): the workload's
# H200 settings and baselines apply.
grep -q H200 $R/nvidia-smi.txt || export HARNESS_MACHINE=h200

if [ "${SKIP_AA:-0}" != 1 ]; then
  date -u +%FT%TZ > $R/aa-4x1.start
  PYTHONPATH=/tmp/site timeout 720 python3 -m harness interleave --workload qwen3-1.7b-lora --decomposition 4x1 \
    --results-dir $R/aa-4x1 > $R/aa-4x1.log 2>&1
  echo "aa-4x1 rc=$?" >> $R/rc.txt
  date -u +%FT%TZ > $R/aa-4x1.end
  rm -f $R/aa-4x1/work/*.request.json
fi

[ "${SKIP_PR:-0}" = 1 ] && { echo done > $R/DONE; exit 0; }
# the pull request's checkout (head) and the base branch's (head/base), as the workflow checks them out
P=/tmp/pr/head; mkdir -p /tmp/pr
cp -a /tmp/snap $P; rm -rf $P/.whl; mkdir -p $P/base; (cd /tmp/snap && tar cf - --exclude=./.twheels --exclude=./.whl .) | (cd $P/base && tar xf -)
sed -i 's/^transformers==5.17.0$/transformers==5.19.0/' $P/constraints/pinned.txt
(cd $P && diff base/constraints/pinned.txt constraints/pinned.txt) > $R/pin-bump.diff
# each side's pinned environment where tox builds it: a venv of the image's interpreter with the image's packages and
# trl/datasets behind its own site-packages; the head's holds transformers 5.19.0 (its pins) in front of them
base_site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tf-head $P/.twheels/transformers-5.19.0-*.whl
for side in base head; do
  env=$P/.tox/pinned; [ $side = base ] && env=$P/base/.tox/pinned
  python3 -m venv --system-site-packages --without-pip $env
  site=$($env/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  front=""; [ $side = head ] && front="/tmp/tf-head"$'\n'
  printf '%s/tmp/site\n%s\n' "$front" "$base_site" > "$site/pinned-env.pth"
  $env/bin/python -c "import sys, torch, transformers, trl, peft; print('$side', sys.prefix, torch.__version__, transformers.__version__, trl.__version__, peft.__version__)" >> $R/versions.txt 2>&1
done
cd $P
date -u +%FT%TZ > $R/pr-measure.start
PERF_GPU=h200 PR_PINS=true PR_WORKLOADS='{"h200":["qwen3-1.7b-lora"]}' PERF_WHEELS=$P/.twheels \
  timeout 1500 .tox/pinned/bin/python .github/scripts/pr-measure.py > $R/pr-measure.log 2>&1
echo "pr-measure rc=$?" >> $R/rc.txt
date -u +%FT%TZ > $R/pr-measure.end
find perf-results -name '*.request.json' -delete
cp -a perf-results $R/perf-results
echo done > $R/DONE
