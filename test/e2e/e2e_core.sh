#!/usr/bin/env bash
# e2e_core: the loadable core in real processes: output and exit status
# unchanged, one stderr line, index, errors, token, port taken, bad settings,
# exit with a request in flight, SIGPIPE untouched, MATCH and CHILDREN.
source test/e2e/lib.sh
P=$BUILD/test

same_behaviour() { # program args...: stdout and status equal with and without us
    local a b sa sb
    a=$("$@" 2>/dev/null); sa=$?
    b=$(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB "$@" 2>/dev/null); sb=$?
    [ "$a" = "$b" ] && [ "$sa" = "$sb" ] || { echo "  differs: '$a'($sa) vs '$b'($sb)"; return 1; }
}
for prog in "p_hello world" p_threads "p_cxx 3000" p_forkexec p_exit_now p_sigpipe "p_sleep 0.2 9"; do
    check "same stdout and exit status: $prog" same_behaviour $P/$prog
done
check "SIGPIPE still kills the program (not ignored)" \
    bash -c "PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $P/p_sigpipe 2>/dev/null | grep -q 'disposition default'; [ \${PIPESTATUS[0]} -eq 141 ]"

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

# Port taken: a second process on the same port warns once and runs on.
out=$(PROFEP_ADDR=$PE_ADDR LD_PRELOAD=$LIB $P/p_sleep 0.5 4 2>$T/second.err); st=$?
check "port taken: program runs on with its own status" [ "$st" = 4 ] && [ "$out" = slept ]
check "port taken: exactly one stderr line" [ "$(wc -l <$T/second.err)" = 1 ]
check "port taken: the line names pid, program and PROFEP_MATCH" \
    grep -q 'cannot listen.*pid [0-9]* (p_sleep).*PROFEP_MATCH' $T/second.err
pe_stop

# Exit with a request in flight: prompt, own status.
pe_start $P/p_sleep 1.5 7 || exit 1
curl -s -o /dev/null --max-time 20 "http://$PE_ADDR/profile?duration=30" &
cpid=$!
start=$SECONDS
wait $PE_PID; st=$?; PE_PID=
check "exit with a profile in flight keeps status 7" [ "$st" = 7 ]
check "exit with a profile in flight is prompt" [ $((SECONDS - start)) -le 4 ]
kill $cpid 2>/dev/null; wait $cpid 2>/dev/null

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

# Token.
PE_ENV="PROFEP_TOKEN=s3cret" pe_start $P/p_sleep 30 0 || exit 1
check "token: 401 without it" [ "$(pe_status /debug/pprof/)" = 401 ]
check "token: 401 with a wrong one" [ "$(pe_status /debug/pprof/ -H 'Authorization: Bearer nope')" = 401 ]
check "token: 200 with Bearer" [ "$(pe_status /debug/pprof/ -H 'Authorization: Bearer s3cret')" = 200 ]
check "token: 200 with token=" [ "$(pe_status '/debug/pprof/?token=s3cret')" = 200 ]
check "token: 401 carries X-Go-Pprof" bash -c "curl -s -D - -o /dev/null http://$PE_ADDR/ | grep -qi 'X-Go-Pprof: 1'"
pe_stop
PE_ENV=

# Bad settings: one line each, defaults kept, program unchanged.
out=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=lots PROFEP_MAX_SECONDS=-3 PROFEP_CHILDREN=maybe \
      PROFEP_LOG=loud LD_PRELOAD=$LIB $P/p_hello x 2>$T/bad.err); st=$?
check "bad settings: program unchanged" [ "$st" = 3 ] && [ "$(echo "$out" | wc -l)" = 5 ]
for v in PROFEP_HEAP_RATE=lots PROFEP_MAX_SECONDS=-3 PROFEP_CHILDREN=maybe PROFEP_LOG=loud; do
    check "bad settings: one line for $v" [ "$(grep -c "$v" $T/bad.err)" = 1 ]
done
out=$(PROFEP_ADDR=nonsense:99999 LD_PRELOAD=$LIB $P/p_sleep 0.3 0 2>$T/addr.err)
check "bad PROFEP_ADDR: one line, default used" grep -q 'PROFEP_ADDR=nonsense:99999' $T/addr.err

# PROFEP_MATCH: a non-matching program stays dormant and silent.
out=$(PROFEP_MATCH='nomatch*' PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/m.port LD_PRELOAD=$LIB $P/p_sleep 0.5 0 2>$T/match.err)
check "PROFEP_MATCH: non-matching process prints nothing" [ ! -s $T/match.err ]
check "PROFEP_MATCH: non-matching process binds nothing" [ ! -e $T/m.port ]
PE_ENV="PROFEP_MATCH=p_sl*" pe_start $P/p_sleep 2 0 || exit 1
check "PROFEP_MATCH: matching process serves" [ "$(pe_status /debug/pprof/)" = 200 ]
pe_stop; PE_ENV=

# Port file with %p.
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/pe.%p" LD_PRELOAD=$LIB $P/p_sleep 1 0 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 60); do [ -s "$T/pe.$pid" ] && break; sleep 0.05; done
check "PROFEP_PORT_FILE expands %p" grep -q '^127.0.0.1:[0-9]*$' "$T/pe.$pid"
wait $pid

# A daemon's fork child (dormant) does not keep the parent's port bound.
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/d.port LD_PRELOAD=$LIB $P/p_daemon 4 2>/dev/null
sleep 0.2
PE_ENV="PROFEP_ADDR=$(cat $T/d.port)" pe_start $P/p_sleep 2 0 2>/dev/null
check "fork child released the listening port" [ "$(pe_status /debug/pprof/ 2>/dev/null)" = 200 ]
pe_stop; PE_ENV=

# PROFEP_ADDR=off: no server, program unchanged.
out=$(PROFEP_ADDR=off LD_PRELOAD=$LIB $P/p_hello 2>$T/off.err); st=$?
check "PROFEP_ADDR=off: no line, same status" [ "$st" = 3 ] && [ ! -s $T/off.err ]

# Children: inherited by default, removed (only us) with PROFEP_CHILDREN=off.
got=$(PROFEP_ADDR=off PROFEP_CHILDREN=off LD_PRELOAD="/lib/x86_64-linux-gnu/libm.so.6 $LIB" \
      sh -c 'echo "[$LD_PRELOAD]"' 2>/dev/null)
check "PROFEP_CHILDREN=off removes only us from LD_PRELOAD" [ "$got" = "[/lib/x86_64-linux-gnu/libm.so.6]" ]
got=$(PROFEP_ADDR=off LD_PRELOAD="$LIB" sh -c 'echo "[$LD_PRELOAD]"' 2>/dev/null)
check "children inherit LD_PRELOAD by default" [ "$got" = "[$LIB]" ]
pe_finish
