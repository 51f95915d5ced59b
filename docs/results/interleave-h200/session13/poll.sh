# Waits up to SECONDS for session 13's queue (queue.sh) to finish, then packs /tmp/s13 into $OUT/s13.tgz.
# usage (device): bash docs/results/interleave-h200/session13/poll.sh 560
end=$(( $(date +%s) + ${1:-560} ))
while [ ! -e /tmp/s13/DONE ] && [ $(date +%s) -lt $end ]; do sleep 5; done
tar czf $OUT/s13.tgz -C /tmp s13 2>/dev/null
cat /tmp/s13/rc.txt 2>/dev/null; ls /tmp/s13
for f in /tmp/s13/*.log; do echo "== $f"; grep -iE "inject-work sized|injected work|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|minimum|per-pair)" $f | tail -8; done
