#!/usr/bin/env bash
# e2e_trace: /debug/pprof/trace (issue 34; owned by the trace work).
# Ground truth: p_trace's thread trace-A runs 200 ms, sleeps 300 ms and waits ~100 ms for a
# lock trace-B holds (running) for 100 ms, in a loop, logging what each phase really took
# (a busy machine stretches them); every whole phase inside the trace must be a slice of
# that state whose length is within the sampling gaps at its two edges of the truth (two
# periods when the ticks came on time; most must be within two periods; a phase spent off
# the CPU also gets the time p_trace waited runnable in it, schedstat's run_delay, which
# /proc calls R and the trace running: only a busy machine has any), in order, and
# the lock interposer's waits (PROFEP_MUTEX_RATE=1) must equal the program's.  The JSON
# passes a trace-event schema check (test/e2e/trace_check.py) and speedscope from npm,
# offline in headless Chromium, imports it without warning and lists every thread
# (test/e2e/trace_speedscope.js; the screenshot stays in $BUILD/test/trace-speedscope.png).
# Sampled allocations (p_trace_proc alloc: 1 MiB blocks from alloc_mib, each logged: the
# sampled bytes estimate what was allocated within a factor of 2, the events name alloc_mib,
# frees follow) and process events (p_trace_proc fork, with heap sampling off: fork, exec in a
# vfork child, a failed exec and a spawn, on the forking thread; otherData says the heap
# sampler is off); speedscope opens these two with the first trace, in one file.
# Then gzip, thread start/exit instants (p_trace churn), the memory budget (ends early and says so), our own requests in the trace,
# bad input (400), two at once (409), a client that goes away (the recording stops) and
# `profep trace`.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl python3
DELAY=0.01

# ---- sampled allocations, and fork/exec/spawn
pe_start $P/p_trace_proc alloc 60 || pe_finish
sleep 0.3
code=$(curl -s -m 60 -o $T/a.json -w '%{http_code}' "http://$PE_ADDR/debug/pprof/trace?seconds=2")
check "alloc: trace?seconds=2 answers 200 ($code)" [ "$code" = 200 ]
python3 test/e2e/trace_check.py allocs $T/a.json $PE_OUT >$T/allocs.out
python3 test/e2e/trace_check.py schema $T/a.json >>$T/allocs.out
pe_stop
PE_ENV="PROFEP_HEAP_RATE=0" pe_start $P/p_trace_proc fork 60 || pe_finish
sleep 0.3
code=$(curl -s -m 60 -o $T/f.json -w '%{http_code}' "http://$PE_ADDR/debug/pprof/trace?seconds=1.5")
check "fork: trace?seconds=1.5 answers 200 ($code)" [ "$code" = 200 ]
python3 test/e2e/trace_check.py procs $T/f.json >$T/procs.out
python3 test/e2e/trace_check.py schema $T/f.json >>$T/procs.out
pe_stop
cat $T/allocs.out $T/procs.out
checks_ok=$((checks_ok + $(cat $T/allocs.out $T/procs.out | grep -c '^ok ')))
checks_bad=$((checks_bad + $(cat $T/allocs.out $T/procs.out | grep -c '^FAIL ')))

PE_ENV="PROFEP_MUTEX_RATE=1" pe_start $P/p_trace 300 || pe_finish
sleep 0.7 # a whole first cycle
# a request of ours while it records: it must show up on its worker's track
(sleep 1; pe_get /debug/pprof/cmdline >/dev/null) &
rq=$!
code=$(curl -s -m 60 -o $T/t.json -w '%{http_code}' "http://$PE_ADDR/debug/pprof/trace?seconds=4&delay=$DELAY")
wait $rq
check "trace?seconds=4 answers 200 ($code)" [ "$code" = 200 ]
python3 test/e2e/trace_check.py schema $T/t.json | tee $T/schema.out
python3 test/e2e/trace_check.py truth $T/t.json $DELAY $PE_OUT | tee $T/truth.out
checks_ok=$((checks_ok + $(cat $T/schema.out $T/truth.out | grep -c '^ok ')))
checks_bad=$((checks_bad + $(cat $T/schema.out $T/truth.out | grep -c '^FAIL ')))
check "our /debug/pprof/cmdline request is in the trace" \
    grep -q '"cat":"request","name":"/debug/pprof/cmdline"' $T/t.json
check "frames carry source lines (a_run at p_trace.c, in the category)" grep -q '"cat":"stack,p_trace.c:[0-9]*","name":"a_run"}' $T/t.json
# frame names as the flame graph's: the function alone, never args, versions or addresses
for f in t a f; do python3 test/e2e/trace_check.py frames $T/$f.json; done >$T/frames.out
cat $T/frames.out
checks_ok=$((checks_ok + $(grep -c '^ok ' $T/frames.out)))
checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/frames.out)))

# ---- a real viewer: speedscope, offline, in headless Chromium
scripts/deps.sh browser >/dev/null 2>&1 || echo "note: scripts/deps.sh browser failed"
NODE_DIR=${PE_NODE_DIR:-/var/tmp/libprofendpoints-node}
SS=$BUILD/npm/node_modules/speedscope
# one npm install in each place at a time: tests run side by side
exec 8>$BUILD/npm.lock 9>$NODE_DIR.lock && flock 8 && flock 9
if command -v npm >/dev/null && [ ! -f $SS/dist/release/index.html ]; then
    mkdir -p $BUILD/npm
    timeout 240 npm install --prefix $BUILD/npm --no-audit --no-fund --ignore-scripts --loglevel=error \
        speedscope@1 >$T/npm.log 2>&1 || echo "note: npm install speedscope failed: $(tail -n 2 $T/npm.log)"
fi
if command -v npm >/dev/null && [ ! -d $NODE_DIR/node_modules/playwright-core ]; then
    mkdir -p $NODE_DIR && timeout 180 npm install --prefix $NODE_DIR --no-audit --no-fund --silent \
        playwright-core@1 >/dev/null 2>&1
fi
exec 8>&- 9>&-
CHROMIUM=$(command -v chromium)
if [ -f $SS/dist/release/index.html ] && [ -n "$CHROMIUM" ] && [ -d $NODE_DIR/node_modules/playwright-core ]; then
    # the three traces as one file (their pids differ): allocation and process instants too
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for f in sys.argv[2:-1]:
    d["traceEvents"] += json.load(open(f))["traceEvents"]
json.dump(d, open(sys.argv[-1], "w"))' $T/t.json $T/a.json $T/f.json $T/m.json
    cp $T/m.json $BUILD/test/trace-speedscope.json # (kept beside the screenshot)
    python3 test/e2e/trace_check.py names $T/m.json >$T/names
    # what speedscope's own CLI writes for a local file (speedscope/bin/cli.mjs)
    python3 -c 'import base64, json, sys
b = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
open(sys.argv[2], "w").write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps("trace.json"), json.dumps(b)))' \
        $T/m.json $T/prof.js
    NODE_PATH=$NODE_DIR/node_modules timeout 120 node test/e2e/trace_speedscope.js "$CHROMIUM" \
        $SS/dist/release/index.html $T/prof.js $T/names $BUILD/test/trace-speedscope.png >$T/ss.out 2>&1
    cat $T/ss.out
    checks_ok=$((checks_ok + $(grep -c '^ok ' $T/ss.out)))
    checks_bad=$((checks_bad + $(grep -c '^FAIL ' $T/ss.out)))
    grep -q '^ok ' $T/ss.out || bad "speedscope: no checks ran: $(tail -n 3 $T/ss.out)"
else
    echo "note: speedscope, chromium or playwright-core missing: the viewer check did not run"
fi

# ---- gzip, when asked either way
curl -s -m 30 -D $T/h1 -o $T/g1 -H 'Accept-Encoding: gzip' "http://$PE_ADDR/debug/pprof/trace?seconds=0.3"
check "Accept-Encoding: gzip -> Content-Encoding: gzip, and it unzips to the trace" \
    bash -c "grep -qi '^Content-Encoding: gzip' $T/h1 && gzip -dc $T/g1 | python3 -c 'import json,sys; json.load(sys.stdin)[\"traceEvents\"]'"
curl -s -m 30 -o $T/g2 "http://$PE_ADDR/debug/pprof/trace?seconds=0.3&gzip=1"
check "gzip=1 -> a gzip body" bash -c "gzip -dc $T/g2 | grep -q traceEvents"
curl -s -m 30 -o $T/g3 -H 'Accept-Encoding: gzip' "http://$PE_ADDR/debug/pprof/trace?seconds=0.3&gzip=0"
check "gzip=0 wins over Accept-Encoding" grep -q traceEvents $T/g3

# ---- bad input, two at once, a client that goes away
for q in 'seconds=abc' 'seconds=1e9' 'seconds=-1' 'delay=0' 'delay=abc' 'mem=0' 'gzip=maybe'; do
    check "?$q -> 400" [ "$(pe_status "/debug/pprof/trace?$q")" = 400 ]
done
curl -s -m 30 -o $T/long.json "http://$PE_ADDR/debug/pprof/trace?seconds=3" &
lp=$!
sleep 1
check "a second trace while one records -> 409" [ "$(pe_status '/debug/pprof/trace?seconds=1')" = 409 ]
wait $lp
check "the first one still answers" grep -q traceEvents $T/long.json
(cd $T && bash "$OLDPWD/scripts/profep" trace "$PE_ADDR" 0.5 -o p.json 2>$T/profep.err)
check "profep trace 0.5 writes the file and says how to open it" \
    bash -c "grep -q traceEvents $T/p.json && grep -q 'ui.perfetto.dev' $T/profep.err && grep -q 'Not go tool trace' $T/profep.err"
curl -s -m 1 -o /dev/null "http://$PE_ADDR/debug/pprof/trace?seconds=60"
# the recording stops within ~100 ms of the hang-up: the next trace is not refused for 60 s
check "a client that went away stopped its recording (a new one within 5 s)" \
    eventually 5 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -m 10 'http://$PE_ADDR/debug/pprof/trace?seconds=0.1')\" = 200 ]"
pe_stop

# ---- thread start and exit, as the pthread_create trampoline and the exit hook see them
pe_start $P/p_trace churn 100 60 || pe_finish
sleep 0.3
code=$(curl -s -m 60 -o $T/c.json -w '%{http_code}' "http://$PE_ADDR/debug/pprof/trace?seconds=1.5")
check "churn: a trace of threads coming and going answers 200 ($code)" [ "$code" = 200 ]
python3 - $T/c.json >$T/churn.out <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
starts = [e for e in ev if e.get("ph") == "i" and e["name"] == "thread start"]
exits = [e for e in ev if e.get("ph") == "i" and e["name"] == "thread exit"]
named = {e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"]["name"] == "short-lived"}
# ~11 threads in 1.5 s (one every 130 ms or so): each starts, exits, and most are sampled
ok = len(starts) >= 5 and len(exits) >= 5 and len(named) >= 3
print("%s thread start/exit instants: %d starts, %d exits; %d short-lived threads sampled and named" % (
    "ok  " if ok else "FAIL", len(starts), len(exits), len(named)))
PY
cat $T/churn.out
check "$(cut -c6- $T/churn.out)" grep -q '^ok' $T/churn.out
pe_stop

# ---- the memory budget: 100 sleeping threads, 1 MiB (the event buffer is a quarter of it)
pe_start $P/p_trace sleepers 100 120 || pe_finish
sleep 0.5
t0=$SECONDS
code=$(curl -s -m 60 -o $T/b.json -w '%{http_code}' "http://$PE_ADDR/debug/pprof/trace?seconds=30&mem=1")
check "a trace over its budget answers 200 ($code) and ends early ($((SECONDS - t0)) s of 30)" \
    bash -c "[ $code = 200 ] && [ $((SECONDS - t0)) -lt 25 ]"
check "... and says so in otherData.ended_early" \
    python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); e = d["otherData"]["ended_early"]; print(e); assert "budget" in e' $T/b.json
python3 test/e2e/trace_check.py schema $T/b.json >$T/bs.out
check "... and is still a well-formed trace: $(head -n 1 $T/bs.out)" grep -q '^ok   trace-event schema' $T/bs.out
pe_stop
pe_finish
