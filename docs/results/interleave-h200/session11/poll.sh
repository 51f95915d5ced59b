# Waits up to SECONDS for session 11's queue (queue.sh) to finish, then packs /tmp/s11 into $OUT/s11.tgz.
# usage (device): bash docs/results/interleave-h200/session11/poll.sh 560
end=$(( $(date +%s) + ${1:-560} ))
while [ ! -e /tmp/s11/DONE ] && [ $(date +%s) -lt $end ]; do sleep 5; done
tar czf $OUT/s11.tgz -C /tmp s11 2>/dev/null
cat /tmp/s11/rc.txt 2>/dev/null; ls /tmp/s11
for f in /tmp/s11/*.log; do echo "== $f"; grep -iE "inject-work sized|ready in|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|minimum)" $f | tail -8; done
