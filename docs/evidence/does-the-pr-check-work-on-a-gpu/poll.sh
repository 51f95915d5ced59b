#!/usr/bin/env bash
# Usage, in each device call after the one that started gpu.sh: bash docs/evidence/does-the-pr-check-work-on-a-gpu/poll.sh SECONDS
# Waits up to SECONDS for /tmp/run/DONE, then packs /tmp/run into $OUT (split into 15 MB parts, the transfer's limit
# per file). A call that came to a fresh machine finds no /tmp/run: it says so and stops at once, exit 3, instead of
# waiting on a run that is gone. R=DIR polls a run written elsewhere (critical_path_gpu.sh's R), packed as DIR's name.
set -u
R=${R:-/tmp/run}
[ -d "$R" ] || { echo "no $R: this is a fresh machine, the run started earlier is lost; start it again"; exit 3; }
end=$((SECONDS + ${1:-540}))
while [ ! -f "$R/DONE" ] && [ $SECONDS -lt $end ]; do sleep 10; done
cat "$R/rc.txt" 2>/dev/null
tail -3 "$R"/*.log 2>/dev/null | cut -c1-300
find "$R" -name '*.request.json' -delete
tar czf - -C "$(dirname "$R")" "$(basename "$R")" | split -b 15M - "$OUT/$(basename "$R").tgz."
ls -la "$OUT"
[ -f "$R/DONE" ] && echo "DONE" || echo "still running: call poll.sh again within 30 s"
