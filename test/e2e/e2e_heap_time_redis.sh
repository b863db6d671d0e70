#!/usr/bin/env bash
# e2e_heap_time_redis.sh: /heap_timeline on a real program.  redis-server grows
# in three DEBUG POPULATE steps; after each, the timeline's last point must
# follow redis's own used_memory (its allocator's count of what it holds,
# jemalloc's size-class rounding included: 8-15% above our estimate of the bytes asked
# for, so within 25%) and RSS must be what /proc says.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
pe_need curl go
# A fresh machine has no redis: install it here, as e2e_server.sh does.
scripts/deps.sh server >/dev/null 2>&1 || echo "note: scripts/deps.sh server failed"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    { echo "SKIP: redis not installed"; exit 77; }

rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') # free, not another test's
# 64 KiB: ~700 samples in the first step, so the estimate is within a few percent of the truth
# (at the default 512 KiB, ~90 samples: +-10% at one sigma).
env LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port" PROFEP_HEAP_CHECKPOINT=1 PROFEP_HEAP_RATE=65536 \
    redis-server --port $rport --save '' --appendonly no --daemonize no --enable-debug-command yes --dir "$T" >"$T/redis.out" 2>&1 &
PE_PID=$!
for _ in $(seq 100); do redis-cli -p $rport ping >/dev/null 2>&1 && [ -s "$T/port" ] && break; sleep 0.1; done
PE_ADDR=$(cat "$T/port" 2>/dev/null)
[ -n "$PE_ADDR" ] || { bad "redis did not start"; cat "$T/redis.out"; pe_finish; }

last_point() { # -> heap rss
    pe_fetch '/heap_timeline?format=json' "$T/tl.json" >/dev/null
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][-1]; print(p["heap"], p["rss"])' "$T/tl.json"
}
prev_h=0 prev_u=0
for step in 1 2 3; do
    t_step=$(date +%s)
    r=$(redis-cli -p $rport debug populate 150000 "s$step" 200); [ "$r" = OK ] || bad "DEBUG POPULATE: $r"
    sleep 2.5
    used=$(redis-cli -p $rport info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }')
    read -r heap rss <<<"$(last_point)"
    prss=$(awk -v pg="$(getconf PAGESIZE)" '{ print $2 * pg }' "/proc/$PE_PID/statm")
    within "$heap" "$used" 25 && ok "step $step: timeline heap $heap vs redis used_memory $used ($(pct "$heap" "$used"))" ||
        bad "step $step: timeline heap $heap vs redis used_memory $used ($(pct "$heap" "$used")), want within 25%"
    within "$rss" "$prss" 10 && ok "step $step: timeline RSS $rss vs /proc $prss ($(pct "$rss" "$prss"))" ||
        bad "step $step: timeline RSS $rss vs /proc $prss"
    dh=$((heap - prev_h)) du=$((used - prev_u))
    within "$dh" "$du" 25 && ok "step $step: growth $dh vs redis's $du ($(pct "$dh" "$du"))" ||
        bad "step $step: growth $dh vs redis's $du ($(pct "$dh" "$du"))"
    prev_h=$heap prev_u=$used
done
# The window reaches back to step 3's start however long the steps took on a loaded machine.
since=$(($(date +%s) - t_step + 1))
code=$(pe_fetch "/debug/pprof/heap?since=$since" "$T/since.pb.gz")
[ "$code" = 200 ] && go tool pprof -top "$T/since.pb.gz" 2>/dev/null | grep -q 'zmalloc\|dictAdd\|sdsnew\|createStringObject' &&
    ok "since=$since (step 3) names redis's allocation paths" || bad "since=$since ($code)"
redis-cli -p $rport shutdown nosave >/dev/null 2>&1
wait "$PE_PID"; rc=$?; PE_PID=
[ "$rc" = 0 ] && ok "redis exited cleanly" || bad "redis exit $rc"
pe_finish
