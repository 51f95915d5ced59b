#!/usr/bin/env bash
# A newcomer's walk-through, scripted: what the README asks of a new user, from the clone to the nightly's first night,
# on a CPU and offline, in a scratch folder (the repository it starts from is only read).
#
#   bash .ci/walkthrough.sh [WORKDIR]      # WORKDIR (default: a new temporary folder, removed at the end) is kept
#
# It starts from the last commit (HEAD), whatever the working tree holds; WALKTHROUGH_FROM=tree starts from the working
# tree instead (its tracked files and the untracked ones git does not ignore), as the self-test does.
#
# Needs the project's dependencies in the active Python (the README's install; .ci/run makes it), git and bash.
#   1. clone: the working tree (tracked files and untracked ones git does not ignore) becomes the repository on "GitHub"
#      (a bare one here), and the newcomer clones it; PYTHONPATH stands in for `pip install -e .` of the clone
#   2. the CPU quick start
#   3. a workload of one's own (a model folder saved with save_pretrained, a local JSONL chat dataset, a chat template
#      string, LoRA on the attention projections only) beside a second one with a typo: doctor names the typo and the
#      file, the typo fixed; a baseline recorded, a session that passes, an injected slowdown that is caught, then an
#      A/A comparison that passes; each message checked for the words a user needs
#   4. python -m harness doctor
#   5. the nightly's first night: my-chat named for the CPU "runner" in nightly.toml (the one settings file) and pushed
#      (its CPU baseline stays on the laptop), a runner's clone runs the
#      pinned job's `run:` steps (.ci/run-workflow.py) with a fake gh and a tox stand-in (.ci/fake-bin/): the job is
#      green, a baseline pull request is opened, the summary says why, and the branch holds the recorded baseline; the
#      night's session is on the results store's branch perf-results (the bare upstream stands for GitHub)
#   6. a normal night: the baseline pull request merged, the pinned job again: judged against the baseline, no pull
#      request, both nights in the results store
# Each step prints its wall time; any failure stops the walk-through with its reason and exit code 1.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 1 ]; then WORK=$(mkdir -p "$1" && cd "$1" && pwd); else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
PY=$(command -v python)
T0=$SECONDS
export GIT_AUTHOR_NAME=newcomer GIT_AUTHOR_EMAIL=newcomer@example.invalid GIT_COMMITTER_NAME=newcomer GIT_COMMITTER_EMAIL=newcomer@example.invalid
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # offline, as promised: nothing may need the hub

step_start=$SECONDS
step() { echo; echo "=== walkthrough: $* (at $((SECONDS - T0)) s)"; step_start=$SECONDS; }
took() { echo "=== walkthrough: done in $((SECONDS - step_start)) s"; }
fail() { echo "walkthrough FAILED: $*" >&2; exit 1; }

# the nightly's pinned job on the CPU "runner" (the current directory, a clone of "GitHub"), then its publish job (which
# writes what the perf job found: the baseline pull request, the store, the issues) in the same folder, where the perf
# job's artifact already is; their summary and gh calls shown. The exit is the perf job's, else the publish job's.
pinned_job() {
  local code=0 job
  echo '{"gpus": {"result": "success", "outputs": {"gpus": "[\"cpu\"]"}}}' > "$WORK/needs.json"
  for job in perf publish; do
    skip=(); [ $job = perf ] && skip=(--skip-step "Install tox")
    GIT_CONFIG_GLOBAL="$WORK/gitconfig" XDG_CACHE_HOME="$WORK/cache" \
    PATH="$PWD/.ci/fake-bin:$PATH" FAKE_GH_LOG="$WORK/gh.log" GH_REPO=newcomer/lora-perf-harness TOX_SHIM_PYTHON="$PY" \
      "$PY" .ci/run-workflow.py .github/workflows/nightly.yml $job --matrix gpu=cpu --matrix env=pinned \
      "${skip[@]}" --repository newcomer/lora-perf-harness --needs "$WORK/needs.json" \
      --summary "$WORK/summary.md" --outcomes "$WORK/outcomes-$job.json" || { [ "$code" != 0 ] || code=$?; }
  done
  echo "--- the job summary"; cat "$WORK/summary.md"; echo "--- gh calls"; cat "$WORK/gh.log"
  return $code
}

step "1. clone and install"
mkdir -p "$WORK/seed"
if [ "${WALKTHROUGH_FROM:-head}" = tree ]; then
  (cd "$SRC" && git ls-files -z -co --exclude-standard) | (cd "$SRC" && while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done) \
    | (cd "$SRC" && tar --null -T - -cf -) | tar -xf - -C "$WORK/seed"
else
  git -C "$SRC" archive HEAD | tar -xf - -C "$WORK/seed"
fi
git -C "$WORK/seed" init -q -b main && git -C "$WORK/seed" add -A && git -C "$WORK/seed" commit -q -m "the project as the newcomer finds it"
git clone -q --bare "$WORK/seed" "$WORK/upstream.git"
git clone -q "$WORK/upstream.git" "$WORK/newcomer"
cd "$WORK/newcomer"
export PYTHONPATH=$PWD
[ "$("$PY" -c 'import harness, os; print(os.path.dirname(os.path.dirname(harness.__file__)))')" = "$PWD" ] || fail "the clone's harness is not the one imported"
[ ! -e baselines/cpu ] || fail "the project already has CPU baselines (baselines/cpu); the walk-through records the first one, so it needs a project without"
took

step "2. the CPU quick start"
pytest perftests --gpu=cpu --workload tiny-qwen3 --repeats 1
test -s perf-results/report.md || fail "the quick start wrote no report"
took

step "3. a workload of one's own: a model folder, a JSONL and a template; its baseline, a pass, a slowdown caught, an A/A"
mkdir -p data models
"$PY" - <<'EOF'
import json, random
from transformers import AutoConfig, AutoModelForCausalLM
from harness.measuring.build import in_memory_tokenizer
tok = in_memory_tokenizer()  # the newcomer's own tiny model, saved as a hub download would be
config = AutoConfig.for_model("qwen3", vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                              num_key_value_heads=1, head_dim=32, tie_word_embeddings=True, max_position_embeddings=256, use_cache=False)
AutoModelForCausalLM.from_config(config).save_pretrained("models/my-tiny")
tok.save_pretrained("models/my-tiny")
rng = random.Random(0)
with open("data/my-chat.jsonl", "w") as fh:
    for _ in range(48):
        words = lambda n: " ".join(f"w{rng.randrange(200)}" for _ in range(n))
        fh.write(json.dumps({"messages": [{"role": "user", "content": words(12)}, {"role": "assistant", "content": words(20)}]}) + "\n")
EOF
cat > workloads/my-chat.toml <<'EOF'
# My chat fine-tuning, scaled down for a CPU: my own tiny model (a folder saved with save_pretrained) on my own chat
# data (a local JSONL file of messages), formatted by my own chat template, with LoRA on the attention projections only.
name = "my-chat"
description = "own tiny model folder, local JSONL chat data, own chat template, LoRA on q_proj and v_proj, effective batch 4"
devices = ["cpu"]

[model]
init = "pretrained"
hub_id = "./models/my-tiny"

[data]
source = "local"
id = "data/my-chat.jsonl"
messages_column = "messages"
num_samples = 48
chat_template = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"

[train]
max_length = 64
precision = "fp32"
max_steps = 8
warmup_steps = 1
cpu_threads = 1

[lora]
r = 4
alpha = 8
target_modules = ["q_proj", "v_proj"]

[batch]
effective = 4
decompositions = ["2x2"]

[measure]
warmup_steps = 2
EOF
# a second workload with a typo (rank for r): doctor names the file and the key, and the fix; then it is fixed
sed -e 's/^name = "my-chat"/name = "my-chat-long"/' -e 's/^r = 4/rank = 4/' workloads/my-chat.toml > workloads/my-chat-long.toml
rc=0; python -m harness doctor > "$WORK/doctor-typo.txt" || rc=$?
[ "$rc" = 2 ] || fail "doctor did not refuse the workload with a typo (exit code $rc, not 2)"
grep -q "my-chat-long.toml: BROKEN, not run: .*unknown field 'rank' in \[lora\]; did you mean lora.r?" "$WORK/doctor-typo.txt" \
  || fail "doctor did not name the typo's file, key and fix: $(grep BROKEN "$WORK/doctor-typo.txt")"
sed -i 's/^rank = 4/r = 4/' workloads/my-chat-long.toml
pytest perftests --gpu=cpu --workload my-chat --repeats 5 --update-baselines --results-dir perf-results/my-chat
test -s baselines/cpu/my-chat.json || fail "no baseline recorded at baselines/cpu/my-chat.json"
# against its own fresh baseline a session finds a slowdown only at its false-alarm rate (α 0.05), more often beside a
# busy neighbour (the report then names the host probe's change); a user reruns it: two in a row are not chance
again() {
  pytest perftests --gpu=cpu --workload my-chat --repeats 2 --results-dir "perf-results/my-chat-pass$1"
}
PASS=perf-results/my-chat-pass
again "" || { echo "the session found a slowdown (exit code $?); rerun, as a user would"; PASS=$PASS-again
  again -again; } || fail "the session against my-chat's own fresh baseline is not a pass, twice (exit code $?)"
verdict() { grep -v -e '^#' -e '^$' "$1" | head -1; }  # a report's first line under its title
# two runs against five on a shared CPU may not decide: pass, or inconclusive with the interval that says why
verdict "$PASS/report.md" | grep -q -E "^\*\*(pass|inconclusive): .*my-chat-2x2 [+-][0-9.]+% \(interval " \
  || fail "the report does not open with its verdict, the change and its interval: $(verdict "$PASS/report.md")"
rc=0; pytest perftests --gpu=cpu --workload my-chat --repeats 2 --max-repeats 4 --inject-slowdown 3.0 --results-dir perf-results/my-chat-slow || rc=$?
[ "$rc" = 1 ] || fail "a step time four times as long was not a regression (exit code $rc, not 1)"
verdict perf-results/my-chat-slow/report.md | grep -q "^\*\*REGRESSION: .*my-chat" \
  || fail "the report does not open with the regression and its case: $(verdict perf-results/my-chat-slow/report.md)"
# an A/A on a shared CPU finds a difference at its false-alarm rate (α 0.05), more often beside a busy neighbour; its
# message then says to rerun it, as a user would: two in a row are not chance
aa() {
  python -m harness interleave --gpu cpu --workload my-chat --decomposition 2x2 --python-b "$PY" \
    --set launches=3 --set pairs=6 --set block_steps=2 --results-dir "perf-results/my-chat-aa$1"
}
AA=perf-results/my-chat-aa
aa "" || { echo "the A/A found a difference (exit code $?); rerun, as its message says"; AA=$AA-again; aa -again; } \
  || fail "the A/A comparison of my-chat found a difference between one environment and itself, twice (exit code $?)"
"$PY" -c 'import json, sys; v = json.load(open(sys.argv[1]))["verdict"]; print("A/A verdict:", v["outcome"]); sys.exit(v["outcome"] not in ("pass", "inconclusive"))' "$AA/report.json" \
  || fail "the A/A verdict is neither pass nor inconclusive"
took

step "4. python -m harness doctor"
if python -m harness doctor --help >/dev/null 2>&1; then
  python -m harness doctor || fail "python -m harness doctor failed (exit code $?)"
else
  echo "python -m harness doctor: not in this version; skipped"
fi
took

step "5. the nightly's first night on a runner without a baseline"
# the nightly's one settings file: my-chat on the CPU "runner" of this dry run (nightly.toml's [gpu.cpu])
"$PY" - <<'EOF'
import re, pathlib
p = pathlib.Path("nightly.toml")
p.write_text(re.sub(r'(\[gpu\.cpu\]\nworkloads = )\[[^\]]*\]', r'\1["my-chat"]', p.read_text()))
EOF
grep -q 'workloads = \["my-chat"\]' nightly.toml || fail "nightly.toml has no [gpu.cpu] table to name my-chat in"
git add nightly.toml workloads/my-chat.toml workloads/my-chat-long.toml data/my-chat.jsonl models/my-tiny  # the CPU baseline stays here: a runner records its own
git commit -q -m "Add my-chat, my own workload" && git push -q origin main
git clone -q "$WORK/upstream.git" "$WORK/runner"
cd "$WORK/runner"
export PYTHONPATH=$PWD
: > "$WORK/gh.log"
# the job keeps its session on the results store's branch of "GitHub" ($PERF_STORE): git maps that URL onto the bare upstream
git config -f "$WORK/gitconfig" url."$WORK/upstream.git".insteadOf https://github.com/newcomer/lora-perf-harness.git
rc=0; pinned_job || rc=$?
[ "$rc" = 0 ] || fail "the nightly's pinned job is red on its first night (exit code $rc)"
grep -q '^\["pr", "create"' "$WORK/gh.log" || fail "no baseline pull request was opened (no gh pr create)"
grep -q 'No baseline yet for `my-chat` on `cpu`: recorded one' "$WORK/summary.md" || fail "the summary does not say that a first baseline was recorded"
grep -q 'https://github.com/newcomer/lora-perf-harness/pull/1' "$WORK/summary.md" || fail "the summary does not link the pull request"
! grep -q 'no census' "$WORK/summary.md" || fail "the night counted no work of my-chat (its census did not run or did not fit)"
git -C "$WORK/upstream.git" show baselines/first-cpu:baselines/cpu/my-chat.json > "$WORK/proposed.json" \
  || fail "the branch baselines/first-cpu does not hold baselines/cpu/my-chat.json"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["gpu"] == "cpu" and d["workload"]["name"] == "my-chat", d["gpu"]' "$WORK/proposed.json"
[ ! -e baselines/cpu ] || fail "the first night wrote into the runner's baselines/ (it must only propose)"
git -C "$WORK/upstream.git" ls-tree -r --name-only perf-results | grep -q '^cpu/pinned/.*\.json\.gz$' \
  || fail "the results store's branch perf-results holds no session of the night"
took

step "6. a normal night: the baseline pull request merged, the next night judges against it"
git -C "$WORK/upstream.git" merge-base --is-ancestor main baselines/first-cpu || fail "the baseline pull request does not start from main"
git -C "$WORK/upstream.git" update-ref refs/heads/main refs/heads/baselines/first-cpu  # the maintainer merges it
git clone -q "$WORK/upstream.git" "$WORK/runner-2" && cd "$WORK/runner-2"  # the runner's next checkout
export PYTHONPATH=$PWD
: > "$WORK/gh.log"; : > "$WORK/summary.md"
rc=0; pinned_job || rc=$?
# a single timed run per split on a shared CPU may read as slower than the baseline: the job is then red for its
# runtime check alone, which a night on a real runner would confirm side by side before any issue
runtime_only() { "$PY" -c 'import json, sys; v = json.load(open("perf-results/report.json"))["verdicts"]
sys.exit(not all(x["kind"] == "runtime" for x in v if x["outcome"] in ("regression", "fail")))'; }
[ "$rc" = 0 ] || runtime_only || fail "the normal night's pinned job is red (exit code $rc) for more than a runtime check"
! grep -q '"create"' "$WORK/gh.log" || fail "a normal night opened a pull request or an issue: $(cat "$WORK/gh.log")"
! grep -q 'No baseline yet' "$WORK/summary.md" || fail "the normal night did not find the merged baseline"
grep -q -E '\*\*(pass|inconclusive|REGRESSION): .*my-chat|\*\*pass: ' "$WORK/summary.md" \
  || fail "the normal night's summary gives no verdict of my-chat against its baseline"
"$PY" -c 'import json; b = json.load(open("perf-results/benchmark.json"))["benchmarks"]
assert [x["name"] for x in b] == ["test_runtime[my-chat-2x2]"] and b[0]["options"]["timer"] == "replay_clock", b' \
  || fail "the night's step times are not in pytest-benchmark's JSON (perf-results/benchmark.json)"
[ "$(git -C "$WORK/upstream.git" ls-tree -r --name-only perf-results | grep -c '^cpu/pinned/.*\.json\.gz$')" -ge 2 ] \
  || fail "the results store's branch perf-results does not hold both nights"
took

echo
echo "walkthrough: all steps passed in $((SECONDS - T0)) s"
