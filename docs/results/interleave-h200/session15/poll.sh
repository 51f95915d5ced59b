# Waits up to SECONDS for session 15's queue (queue.sh) to finish, then packs /tmp/s15 into $OUT/s15.tgz.
# usage (device): bash docs/results/interleave-h200/session15/poll.sh 560
end=$(( $(date +%s) + ${1:-560} ))
while [ ! -e /tmp/s15/DONE ] && [ $(date +%s) -lt $end ]; do sleep 5; done
tar czf $OUT/s15.tgz -C /tmp s15 2>/dev/null
cat /tmp/s15/rc.txt 2>/dev/null; ls /tmp/s15
for f in /tmp/s15/*.log; do echo "== $f"; grep -iE "pre-start|^(regression|pass|inconclusive|improvement|time:|budget|minimum|per-pair|plan)" $f | tail -9 | cut -c1-400; done
