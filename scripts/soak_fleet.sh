#!/usr/bin/env bash
# soak_fleet.sh: a fleet scraper's schedule against a busy service, for a long
# time (make stress; SOAK_SECONDS, default 3600).  As Grafana Alloy's
# pyroscope.scrape does by default: a 14 s CPU profile back to back, and every
# 15 s the allocation, goroutine, mutex and block profiles, the godeltaprof
# paths and a 14 s fgprof profile.  Checks that no request fails, that each
# answers within its seconds plus SOAK_MARGIN (default 5 s), and that the
# process's memory is flat after the first minutes; prints the figures.
#   scripts/soak_fleet.sh [BUILD]     exit 0 only if every check passed
set -u
if [ -z "${BUILD:-}" ]; then BUILD=${1:-build}; fi
cd "$(dirname "$0")/.." || exit 2
source test/e2e/lib.sh
SOAK=${SOAK_SECONDS:-3600} MARGIN=${SOAK_MARGIN:-5}
[ -x $BUILD/test/p_fleet ] || { echo "missing $BUILD/test/p_fleet: run make tests"; exit 2; }
mkfifo $T/cmd
pe_start $BUILD/test/p_fleet $T/cmd || exit 1
exec 3>$T/cmd
log=$T/requests.log # path seconds status elapsed
scrape() { # PATH SECONDS: one request, logged
    local out
    out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time $(($2 + 60)) \
        "http://$PE_ADDR$1")
    echo "$1 $2 ${out:-000 0}" >>$log
}
rss() { awk '/^VmRSS:/ { print $2 }' /proc/$PE_PID/status 2>/dev/null; }

end=$((SECONDS + SOAK))
( while [ $SECONDS -lt $end ]; do scrape '/debug/pprof/profile?seconds=14' 14; done ) &
cpu_loop=$!
rss_at=() rounds=0 pids=()
while [ $SECONDS -lt $end ]; do
    t0=$SECONDS
    for p in allocs goroutine mutex block delta_heap delta_mutex delta_block; do
        scrape /debug/pprof/$p 0 &
        pids+=($!)
    done
    scrape '/debug/fgprof?seconds=14' 14 &
    pids+=($!)
    rss_at+=("$SECONDS:$(rss)")
    rounds=$((rounds + 1))
    sleep $((15 - (SECONDS - t0) > 0 ? 15 - (SECONDS - t0) : 0))
done
wait $cpu_loop "${pids[@]}" 2>/dev/null # (not a bare wait: the service is a child too)
echo quit >&3
exec 3>&-
wait "$PE_PID"; st=$?; PE_PID=

n=$(wc -l <$log)
fails=$(awk '$3 != 200' $log | wc -l)
late=$(awk -v m="$MARGIN" '$4 > $2 + m' $log | wc -l)
echo "soak: $SOAK s, $rounds rounds of 15 s, $n requests"
awk '{ k = $1; sub(/\?.*/, "", k); n[k]++; if ($4 > max[k]) max[k] = $4; s[k] += $4 }
     END { for (k in n) printf "  %-28s %5d requests, mean %.2f s, max %.2f s\n", k, n[k], s[k] / n[k], max[k] }' \
    $log | sort
# Memory: the first minute is warm-up (tables, caches); after it, flat.
first=$(printf '%s\n' "${rss_at[@]}" | awk -F: '$1 >= 60 { print $2; exit }')
last=$(printf '%s\n' "${rss_at[@]}" | tail -n 1 | cut -d: -f2)
max=$(printf '%s\n' "${rss_at[@]}" | awk -F: '$1 >= 60 && $2 > m { m = $2 } END { print m + 0 }')
echo "  RSS after the first minute ${first:-?} kB, at the end ${last:-?} kB, max after the first minute $max kB"
check "every request answered 200 ($fails of $n did not)" [ "$fails" = 0 ]
check "every request within its seconds + $MARGIN s ($late late)" [ "$late" = 0 ]
if [ -n "$first" ] && [ -n "$last" ]; then
    check "memory flat after the first minute (${first} -> ${last} kB, within 10% + 4 MB)" \
        [ "$last" -le $((first + first / 10 + 4096)) ]
fi
check "the service exited 0 ($st)" [ "$st" = 0 ]
pe_finish
