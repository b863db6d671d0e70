#!/usr/bin/env bash
# e2e_attach_redis: redis-server attached while redis-benchmark runs (issue 41).
# Debian's redis allocates through libjemalloc (its zmalloc calls the system
# jemalloc's malloc): the attach points our interposers' real functions at
# jemalloc's, and its allocations appear in the heap profile (DEBUG POPULATE
# after the attach: its keys are in use, in the profile within 25% of what
# redis's used_memory grew by, jemalloc's size classes included).
# redis-benchmark through attach and detach: no error; a value set before
# the attach reads back after the detach; every relocation slot and
# protection as before; redis shuts down with status 0.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl go python3 readelf
command -v redis-server >/dev/null && command -v redis-cli >/dev/null &&
    command -v redis-benchmark >/dev/null || { echo "SKIP: redis not installed"; exit 77; }

rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') # free, not another test's
SHIM_SETTINGS='PROFEP_HEAP_RATE=65536'
shim_start redis LD_BIND_NOW=1 -- redis-server --port $rport --save '' --appendonly no \
    --daemonize no --enable-debug-command yes --dir "$T"
for _ in $(seq 100); do redis-cli -p $rport ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p $rport ping 2>/dev/null | grep -q PONG || { bad "redis did not start"; cat "$T/redis.out"; pe_finish; }
redis-cli -p $rport set before-attach kept >/dev/null
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
redis-benchmark -p $rport -q -n 200000 -c 8 -t set,get,lpush,lpop -d 256 >"$T/bench1" 2>&1 &
bp=$!
sleep 0.5
shim_cmd attach && ok "attached under redis-benchmark: $SHIM_LINE" || { bad "attach: $SHIM_RC $SHIM_LINE"; pe_finish; }
u0=$(redis-cli -p $rport info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
redis-cli -p $rport debug populate 200000 attached 512 >/dev/null
u1=$(redis-cli -p $rport info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
code=$(pe_fetch /debug/pprof/heap "$T/heap.pb.gz")
[ "$code" = 200 ] || bad "/debug/pprof/heap answered $code"
grew=$((u1 - u0))
got=$(bytes_total "$T/heap.pb.gz" inuse_space)
echo "  redis used_memory grew $grew bytes; in use in the profile since the attach: $got"
within "$got" "$grew" 25 && ok "its allocations since the attach in the heap profile ($(pct "$got" "$grew") of used_memory's growth)" ||
    bad "in use $got vs used_memory growth $grew ($(pct "$got" "$grew")), want within 25%"
go tool pprof -top -sample_index=inuse_space "$T/heap.pb.gz" 2>/dev/null | grep -qE 'zmalloc|dictAdd|createStringObject|sdsnewlen|populate' &&
    ok "redis's own functions name the bytes" || bad "no redis function in the heap profile"
wait $bp; st=$?
[ $st = 0 ] && ! grep -qi 'error' "$T/bench1" && ok "redis-benchmark through the attach: no error" ||
    { bad "redis-benchmark (status $st)"; tail -5 "$T/bench1"; }
redis-benchmark -p $rport -q -n 100000 -c 8 -t set,get -d 256 >"$T/bench2" 2>&1 &
bp=$!
sleep 0.3
shim_cmd detach && ok "detached under redis-benchmark: $SHIM_LINE" || bad "detach: $SHIM_RC $SHIM_LINE"
wait $bp; st=$?
[ $st = 0 ] && ! grep -qi 'error' "$T/bench2" && ok "redis-benchmark through the detach: no error" ||
    { bad "redis-benchmark (status $st)"; tail -5 "$T/bench2"; }
[ "$(redis-cli -p $rport get before-attach)" = kept ] && [ "$(redis-cli -p $rport dbsize)" -ge 200000 ] &&
    ok "its data as it should be after the detach" || bad "data after the detach"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
redis-cli -p $rport debug populate 100000 after 512 >/dev/null
redis-cli -p $rport shutdown nosave >/dev/null 2>&1
for _ in $(seq 100); do kill -0 "$PE_PID" 2>/dev/null || break; sleep 0.1; done
wait "$PE_PID"; st=$?
PE_PID=
[ $st = 0 ] && ok "redis shut down with status 0" || bad "redis exit status $st"
pe_finish
