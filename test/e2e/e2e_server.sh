#!/usr/bin/env bash
# e2e_server: the library inside a real server nobody here wrote (Debian's
# redis-server) under load from redis-benchmark: every request the clients
# make still succeeds, the data is intact, and CPU, heap and thread-stack
# views name redis's own functions.
source test/e2e/lib.sh
scripts/deps.sh server >/dev/null 2>&1 || true
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
    { echo "redis not installable here"; exit 77; }
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') # free, not another test's
pe_start redis-server --port $rport --save '' --appendonly no --daemonize no --dir $T || exit 1
for _ in $(seq 50); do redis-cli -p $rport ping >/dev/null 2>&1 && break; sleep 0.1; done

redis-benchmark -p $rport -n 400000 -c 20 -P 4 -t set,get,lpush,incr -q >$T/bench.out 2>&1 &
bpid=$!
st=$(pe_get '/profile?duration=2' -o $T/cpu.pb.gz -w '%{http_code}')
check "CPU profile under load ($st)" [ "$st" = 200 ]
top=$(pprof_top $T/cpu.pb.gz)
check "CPU profile names redis's functions (processCommand, call, aeProcessEvents)" \
    grep -Eq 'processCommand|aeProcessEvents|readQueryFromClient' <<<"$top"
st=$(pe_get '/debug/pprof/heap' -o $T/heap.pb.gz -w '%{http_code}')
check "heap profile under load ($st)" [ "$st" = 200 ]
check "heap profile names redis's allocator wrappers (zmalloc...)" \
    bash -c "go tool pprof -top -sample_index=alloc_space $T/heap.pb.gz 2>/dev/null | grep -Eq 'zmalloc|ztrymalloc|createObject|sdsnewlen'"
st=$(pe_get '/debug/pprof/goroutine?debug=2' -o $T/threads.txt -w '%{http_code}')
check "every thread's stack ($st)" bash -c "[ $st = 200 ] && grep -q 'aeMain\|aeProcessEvents\|epoll_wait' $T/threads.txt"
wait $bpid; brc=$?
check "redis-benchmark completed (exit $brc)" bash -c "[ $brc = 0 ] && grep -q 'SET:' $T/bench.out"
cat $T/bench.out | tr '\r' '\n' | grep -E 'requests per second' | head -4

# The data is intact and the server answers as usual.
redis-cli -p $rport set pe:key "value with spaces" >/dev/null
check "redis GET returns what SET stored" [ "$(redis-cli -p $rport get pe:key)" = "value with spaces" ]
check "redis INCR counts" [ "$(redis-cli -p $rport incr pe:n)" = 1 ]
redis-cli -p $rport shutdown nosave >/dev/null 2>&1
for _ in $(seq 50); do kill -0 $PE_PID 2>/dev/null || break; sleep 0.1; done
wait $PE_PID; rc=$?; PE_PID=
check "redis shut down cleanly with the library loaded (exit $rc)" [ "$rc" = 0 ]
pe_finish
