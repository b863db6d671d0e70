#!/usr/bin/env bash
# e2e_http: the HTTP surface of a running program: the one stderr line, the
# index (every endpoint listed, and which cannot work now and why), cmdline,
# errors (404, 405, 400 with the parameter named, all with X-Go-Pprof), HEAD,
# symbol, a profile longer than civetweb's I/O timeout, and slots freed at once
# when clients hang up.
source test/e2e/lib.sh
P=$BUILD/test

# One line on stderr, naming the address and pid.
pe_start $P/p_sleep 30 0 || exit 1
sleep 0.3
check "one stderr line: serving http://$PE_ADDR (pid $PE_PID)" \
    bash -c "[ \"\$(cat $PE_ERR)\" = 'profendpoints: serving http://$PE_ADDR (pid $PE_PID)' ]"
idx=$(pe_get /debug/pprof/)
for ep in /profile /profile_start /profile_stop /allocs_profile /allocs_profile_start \
    /allocs_profile_stop /heap_snapshot /debug/pprof/profile /debug/pprof/heap \
    /debug/pprof/allocs /debug/pprof/goroutine /debug/pprof/threadcreate /debug/pprof/mutex \
    /debug/pprof/block /debug/pprof/cmdline /debug/pprof/symbol /task_backtraces /debug_engine \
    /profile_wall; do
    check "index lists $ep" grep -q "$ep" <<<"$idx"
done
check "index is HTML" grep -q '<html>' <<<"$idx"
check "cmdline is NUL-separated argv" \
    bash -c "[ \"\$(curl -s http://$PE_ADDR/debug/pprof/cmdline | tr '\0' ' ')\" = '$P/p_sleep 30 0 ' ]"
hdr=$(curl -s -D - -o /dev/null "http://$PE_ADDR/no/such/thing")
check "404 for unknown path" grep -q '^HTTP/1.1 404' <<<"$hdr"
check "404 carries X-Go-Pprof: 1" grep -qi '^X-Go-Pprof: 1' <<<"$hdr"
check "404 body points at /debug/pprof/" bash -c "curl -s http://$PE_ADDR/nope | grep -q /debug/pprof/"
hdr=$(curl -s -D - -o /dev/null -X POST "http://$PE_ADDR/debug/pprof/cmdline")
check "405 for POST on a GET endpoint" grep -q '^HTTP/1.1 405' <<<"$hdr"
check "405 carries X-Go-Pprof: 1" grep -qi '^X-Go-Pprof: 1' <<<"$hdr"
check "405 for GET on /debug_engine" [ "$(pe_status /debug_engine)" = 405 ]
hdr=$(curl -s -D - -o /dev/null "http://$PE_ADDR/profile?duration=abc")
check "400 for a bad number" grep -q '^HTTP/1.1 400' <<<"$hdr"
check "400 carries X-Go-Pprof: 1" grep -qi '^X-Go-Pprof: 1' <<<"$hdr"
check "400 names parameter and range" bash -c "curl -s 'http://$PE_ADDR/profile?duration=abc' | grep -q 'duration=abc'"
check "400 beyond PROFEP_MAX_SECONDS" [ "$(pe_status '/profile?duration=1e9')" = 400 ]
check "HEAD answers 200 without a body" \
    bash -c "[ -z \"\$(curl -s -I http://$PE_ADDR/debug/pprof/ | sed -n '/^\r\$/,\$p' | tail -n +2)\" ]"
check "symbol GET says num_symbols: 1" bash -c "curl -s http://$PE_ADDR/debug/pprof/symbol | grep -q 'num_symbols: 1'"
pe_stop

# A profile far longer than civetweb's per-operation I/O timeout completes.
PE_ENV="PROFEP_MAX_SECONDS=15" pe_start $P/p_cpu_split 30 || exit 1
st=$(pe_get '/profile?duration=12' -o $T/long.pb.gz -w '%{http_code}')
check "a 12 s profile is not cut short by a server timeout ($st)" \
    bash -c "[ $st = 200 ] && gzip -t $T/long.pb.gz"
pe_stop; PE_ENV=

# Clients that hang up free their slots at once: six abandoned 20 s profiles
# (more than the long-request slots) do not block the next request.
pe_start $P/p_cpu_split 30 || exit 1
for _ in 1 2 3 4 5 6 7; do curl -s -o /dev/null --max-time 0.5 "http://$PE_ADDR/profile?duration=20"; done
sleep 0.5
st=$(pe_get '/profile?duration=1' -o /dev/null -w '%{http_code}')
check "abandoned profiles free their slots ($st)" [ "$st" = 200 ]
pe_stop

# The index says which capabilities cannot work right now, and why.
PE_ENV="PROFEP_HEAP_RATE=0 PROFEP_MUTEX_RATE=0" pe_start $P/p_sleep 30 0 || exit 1
pe_get /debug/pprof/ >$T/idx.html
check "index marks heap endpoints unavailable with the reason" \
    bash -c "grep -F '/debug/pprof/heap' $T/idx.html | grep -q 'unavailable: heap sampling is off'"
check "index marks mutex/block unavailable with the reason" \
    bash -c "grep -F '/debug/pprof/block' $T/idx.html | grep -q 'unavailable: lock contention profiling is off'"
check "index does not mark what works (CPU)" \
    bash -c "! grep -F '>/profile<' $T/idx.html | grep -q unavailable"
check "unavailable heap answers 503" [ "$(pe_status /debug/pprof/heap)" = 503 ]
pe_stop; PE_ENV=

pe_finish
