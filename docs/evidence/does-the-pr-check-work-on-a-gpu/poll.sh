#!/usr/bin/env bash
# Usage, in each device call after the one that started gpu.sh: bash docs/evidence/does-the-pr-check-work-on-a-gpu/poll.sh SECONDS
# Waits up to SECONDS for /tmp/run/DONE, then packs /tmp/run into $OUT (split into 15 MB parts, the transfer's limit
# per file). A call that came to a fresh machine finds no /tmp/run: it says so and stops at once, exit 3, instead of
# waiting on a run that is gone.
set -u
[ -d /tmp/run ] || { echo "no /tmp/run: this is a fresh machine, the run started earlier is lost; start gpu.sh again"; exit 3; }
end=$((SECONDS + ${1:-540}))
while [ ! -f /tmp/run/DONE ] && [ $SECONDS -lt $end ]; do sleep 10; done
cat /tmp/run/rc.txt 2>/dev/null
tail -3 /tmp/run/*.log 2>/dev/null | cut -c1-300
find /tmp/run -name '*.request.json' -delete
tar czf - -C /tmp run | split -b 15M - "$OUT/run.tgz."
ls -la "$OUT"
[ -f /tmp/run/DONE ] && echo "DONE" || echo "still running: call poll.sh again within 30 s"
