#!/usr/bin/env bash
# e2e_attach_servers: real servers started without the library, attached and
# detached while they serve.
#  - redis-server: a client checks every reply (SET then GET of its own
#    values) while redis-benchmark runs and attach/detach cycles go on; every
#    reply correct, the benchmark completes, no thread of ours after (jemalloc
#    may keep a background thread per arena our threads used).
#  - nginx, a master and 2 workers: `profep attach MASTER --children` lists
#    the three in /debug/pprof/processes; every request during the attach and
#    the detach is answered 200; after the detach no process has a thread of ours.
source test/e2e/lib.sh
pe_need curl python3
INJ=$BUILD/profep-inject
[ -x "$INJ" ] || { echo "SKIP: $INJ not built"; exit 77; }
export PROFEP_INJECT=$INJ PROFEP_LIB=$LIB
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ran=

# ---- redis ------------------------------------------------------------------------------
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
    ran=1
    RPORT=$(free_port)
    redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$T" \
        >"$T/redis.log" 2>&1 &
    PE_PID=$!
    eventually 10 bash -c "redis-cli -p $RPORT ping 2>/dev/null | grep -q PONG"
    # threads by name: ours (civetweb-*, pe-*, profep-*) and redis's own but
    # jemalloc's background threads, one per arena that was used (our
    # threads' allocations went to redis's jemalloc: docs/ATTACH.md)
    names() { for t in /proc/$1/task/*; do cat $t/comm; done 2>/dev/null; }
    ours() { names $1 | grep -cE '^(civetweb-|pe-|profep-)'; }
    own() { names $1 | grep -vE '^(civetweb-|pe-|profep-|jemalloc_bg_thd)' | sort | tr '\n' ' '; }
    t0=$(own $PE_PID)
    # the checking client: SET k v, GET k must give v back
    (for i in $(seq 400); do
        v="v$i-$RANDOM"
        [ "$(redis-cli -p $RPORT set "k$i" "$v")" = OK ] || echo "SET k$i failed"
        [ "$(redis-cli -p $RPORT get "k$i")" = "$v" ] || echo "GET k$i wrong"
    done >"$T/redis.check"; echo done >>"$T/redis.check") &
    checker=$!
    if command -v redis-benchmark >/dev/null; then
        redis-benchmark -p "$RPORT" -q -n 20000 -c 10 -t set,get,lpush >"$T/bench.out" 2>&1 &
        bench=$!
    fi
    fails=0
    for i in $(seq 10); do
        out=$(scripts/profep attach $PE_PID --port 0) || { fails=$((fails + 1)); echo "  $out"; }
        out=$(scripts/profep detach $PE_PID) || { fails=$((fails + 1)); echo "  $out"; }
    done
    check "redis: 10 attach/detach cycles while it serves" [ $fails = 0 ]
    wait $checker
    check "redis: every reply correct ($(grep -vc done "$T/redis.check") wrong)" \
        bash -c "[ \"\$(cat '$T/redis.check')\" = done ]"
    if [ -n "${bench:-}" ]; then
        wait $bench; st=$?
        check "redis-benchmark completed (exit $st): $(tr '\r\n' '  ' <"$T/bench.out" | tail -c 200)" \
            bash -c "[ $st = 0 ] && grep -q 'requests per second' '$T/bench.out'"
    fi
    check "redis: no thread of ours after the detaches" eventually 10 [ "$(ours $PE_PID)" = 0 ]
    check "redis: its own threads as before ($t0)" [ "$(own $PE_PID)" = "$t0" ]
    check "redis still answers" bash -c "redis-cli -p $RPORT ping | grep -q PONG"
    redis-cli -p $RPORT shutdown nosave >/dev/null 2>&1
    wait $PE_PID
    PE_PID=
else
    echo "skip redis: not installed"
fi

# ---- nginx ------------------------------------------------------------------------------
if command -v nginx >/dev/null; then
    ran=1
    NPORT=$(free_port)
    mkdir -p "$T/nginx"
    cat >"$T/nginx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 2;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $T/nginx/cb;
    proxy_temp_path $T/nginx/px;
    fastcgi_temp_path $T/nginx/fc;
    uwsgi_temp_path $T/nginx/uw;
    scgi_temp_path $T/nginx/sc;
    server {
        listen 127.0.0.1:$NPORT;
        location / { return 200 "hello\n"; }
    }
}
CONF
    nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" >"$T/nginx/out" 2>&1 &
    PE_PID=$!
    ngx=$PE_PID
    eventually 10 bash -c "[ \$(pgrep -P $ngx | wc -l) = 2 ]"
    declare -A before
    for p in $ngx $(pgrep -P $ngx); do before[$p]=$(ls /proc/$p/task | wc -l); done
    (while [ ! -e "$T/nginx/stop" ]; do
        curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 "http://127.0.0.1:$NPORT/"
    done >"$T/nginx/codes") &
    load=$!
    out=$(scripts/profep attach $ngx --port 0 --children)
    a=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$out")
    check "nginx: attach --children, 2 of 2 workers joined ($out)" grep -q '2 of 2 descendants joined' <<<"$out"
    check "nginx: /debug/pprof/processes lists master and workers" \
        eventually 10 [ "$(curl -s "$a/debug/pprof/processes" | grep -c '"pid"')" = 3 ]
    w=$(pgrep -P $ngx | head -1)
    check "nginx: a worker's CPU profile through the master's address" \
        [ "$(curl -s -m 30 -o /dev/null -w '%{http_code}' "$a/debug/pprof/profile?seconds=1&pid=$w")" = 200 ]
    out=$(scripts/profep detach $ngx --children)
    check "nginx: detach --children ($out)" grep -q '2 of 2 descendants detached' <<<"$out"
    sleep 0.5
    touch "$T/nginx/stop"
    wait $load
    n=$(wc -l <"$T/nginx/codes")
    check "nginx: every request answered 200 ($n)" \
        bash -c "[ $n -gt 0 ] && [ \$(grep -c '^200$' '$T/nginx/codes') = $n ]"
    for p in "${!before[@]}"; do
        check "nginx: pid $p has its own ${before[$p]} threads after the detach" \
            eventually 10 [ "$(ls /proc/$p/task | wc -l)" = "${before[$p]}" ]
    done
    kill -QUIT $ngx
    wait $ngx; st=$?
    PE_PID=
    check "nginx: quits cleanly on SIGQUIT (status $st)" [ "$st" = 0 ]
else
    echo "skip nginx: not installed"
fi
[ -n "$ran" ] || { echo "SKIP: neither redis nor nginx installed"; exit 77; }
pe_finish
