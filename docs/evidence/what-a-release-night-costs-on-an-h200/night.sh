#!/usr/bin/env bash
# A release night of the nightly on one H200: the pinned and then the latest job of .github/workflows/nightly.yml for
# qwen3-1.7b-lora, each from its own copy of the checkout, run step by step by .ci/run-workflow.py (the jobs' `run:`
# steps as GitHub runs them, with a fake gh and the tox stand-in in .ci/fake-bin/). pinned is the machine's image
# (transformers 5.17.0, the baseline's versions); latest is transformers 5.25.0 with the dependencies it needs
# (huggingface-hub 2.4.0, kernels 0.19.1, ...) in a venv on top of it. The wheels travel in .twheels/: transformers wheels
# without the model folders this workload never imports (the device's 64 MiB transfer limit; .ci/strip-wheel.py),
# installed from PERF_WHEELS by the bisect. The results store is a local bare repository. Results under /tmp/night.
# GPU, WORKLOAD, LATEST, INPUTS (more --input NAME=VALUE) and JOBS (which jobs, in order) change the night, e.g. a dry run on a CPU:
#   GPU=cpu WORKLOAD=tiny-qwen3 LATEST=5.24.0 INPUTS="--input ab_budget=1 --input bisect_budget=2" bash night.sh
set -u
SRC=$(pwd) R=${R:-/tmp/night} GPU=${GPU:-h200} WORKLOAD=${WORKLOAD:-qwen3-1.7b-lora} LATEST=${LATEST:-5.25.0} INPUTS=${INPUTS:-} JOBS=${JOBS:-pinned latest}
mkdir -p $R
cat /proc/sys/kernel/random/boot_id > $R/boot_id; nproc > $R/nproc.txt; date -u +%FT%TZ > $R/start.txt
[ "$GPU" = cpu ] || nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu --format=csv > $R/nvidia-smi.txt
command -v jq >/dev/null || { mkdir -p /tmp/jq; for f in .jqdeb/*.deb; do dpkg -x "$f" /tmp/jq; done
  export PATH=/tmp/jq/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/jq/usr/lib/x86_64-linux-gnu; echo "jq from .jqdeb" >> $R/setup.txt; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>> $R/setup.txt
# latest: the image's environment with transformers $LATEST on it, and what pip says it needs from .twheels at other
# versions (a venv that sees the image's packages: harness.bisect.envs, as the bisect builds its candidates)
LATEST_PY=$(PYTHONPATH=/tmp/site:$SRC python3 -c "
from harness.bisect.envs import EnvCache
from harness.bisect.plan import Candidate, Install
m = EnvCache('/tmp/latest-env', 'python3', wheels='.twheels', move_deps=True, out=lambda s: None).python_for(Candidate((Install('transformers', '$LATEST'),)))
print(m.value if not m.dead else 'FAILED: ' + m.reason)" 2>> $R/setup.txt)
echo "latest: $LATEST_PY" >> $R/setup.txt
case $LATEST_PY in /*) ;; *) echo "no latest environment" > $R/DONE; exit 1 ;; esac
git init -q --bare /tmp/store.git
git config -f /tmp/gitconfig url./tmp/store.git.insteadOf https://github.com/lab/lora-perf-harness.git
git config -f /tmp/gitconfig user.name night; git config -f /tmp/gitconfig user.email night@localhost
for py in python3 "$LATEST_PY"; do PYTHONPATH=/tmp/site:$SRC $py -c "import torch, transformers, trl, peft, huggingface_hub as h
print(torch.__version__, transformers.__version__, trl.__version__, peft.__version__, h.__version__)" >> $R/versions.txt 2>&1; done
date -u +%FT%TZ > $R/setup-done.txt

for env in $JOBS; do
  J=/tmp/job-$env
  rm -rf $J; mkdir -p $J; (cd $SRC && tar --exclude=./.twheels --exclude=./.whl --exclude=./.jqdeb -cf - .) | (cd $J && tar xf -)
  (cd $J && GIT_CONFIG_GLOBAL=/tmp/gitconfig PYTHONPATH=/tmp/site:$J PYTHONUNBUFFERED=1 PATH=$J/.ci/fake-bin:$PATH \
     TOX_SHIM_PYTHON=$(command -v python3) TOX_SHIM_PYTHON_latest=$LATEST_PY FAKE_GH_LOG=$R/gh-$env.log \
     GH_REPO=lab/lora-perf-harness PERF_WHEELS=$SRC/.twheels XDG_CACHE_HOME=/tmp/cache \
     python3 .ci/run-workflow.py .github/workflows/nightly.yml perf --matrix gpu=$GPU --matrix env=$env \
       --input workloads=$WORKLOAD $INPUTS --skip-step "Install tox" --repository lab/lora-perf-harness \
       --summary $R/$env-summary.md --outcomes $R/$env-outcomes.json > $R/$env.log 2>&1
   echo "$env rc=$?" >> $R/rc.txt)
  mkdir -p $R/$env-results; (cd $J/perf-results && tar --exclude='*/work/*' -cf - .) | (cd $R/$env-results && tar xf -)
done
git -C /tmp/store.git log --oneline perf-results > $R/store-log.txt 2>&1
date -u +%FT%TZ > $R/end.txt
echo done > $R/DONE
