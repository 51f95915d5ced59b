# Waits up to SECONDS for session 12's queue (queue.sh) to finish, then packs /tmp/s12 into $OUT/s12.tgz.
# usage (device): bash docs/results/interleave-h200/session12/poll.sh 560
end=$(( $(date +%s) + ${1:-560} ))
while [ ! -e /tmp/s12/DONE ] && [ $(date +%s) -lt $end ]; do sleep 5; done
tar czf $OUT/s12.tgz -C /tmp s12 2>/dev/null
cat /tmp/s12/perf_probe.txt 2>/dev/null; cat /tmp/s12/rc.txt 2>/dev/null; ls /tmp/s12
for f in /tmp/s12/*.log; do echo "== $f"; grep -iE "inject-work sized|ready in|^(REGRESSION|PASS|INCONCLUSIVE|IMPROVEMENT|time:|budget|minimum)" $f | tail -8; done
