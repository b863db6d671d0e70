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
# Every value is checked before anything is collected: while a 30 s profile
# runs, a wrong output parameter of another is answered 400 at once (well
# under the 30 s it would otherwise wait), naming parameter and value.
curl -s -o /dev/null --max-time 40 "http://$PE_ADDR/profile?duration=30" &
slow=$!
for q in '/profile?duration=30&format=svgx' '/profile?duration=30&granularity=bogus' \
    '/profile?duration=30&names=' '/profile?duration=30&sample_index=bogus' \
    '/profile?duration=30&mincount=' '/profile?duration=30&maxdepth=-1' \
    '/profile?duration=30&pprof=maybe' '/debug/pprof/heap?seconds=3&sample_index=bogus' \
    '/debug/pprof/profile?seconds=30&sample_index=inuse_space' '/debug/fgprof?seconds=30&groupby=x'; do
    got=$(curl -s -m 40 -o $T/bad.out -w '%{http_code} %{time_total}' "http://$PE_ADDR$q")
    v=${q##*&}
    check "$q: 400 before collecting ($got s), naming $v" \
        bash -c "[ '${got% *}' = 400 ] && awk 'BEGIN { exit !(${got#* } < 2) }' && grep -qF -- '$v' $T/bad.out && grep -q 'must be' $T/bad.out"
done
kill $slow 2>/dev/null; wait $slow 2>/dev/null
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

# A near miss of an endpoint's parameter is named (400); other unknown ones are ignored.
pe_start $P/p_sleep 30 0 || exit 1
typo() { # path expected-name
    local st body
    st=$(pe_get "$1" -o $T/typo.out -w '%{http_code}')
    body=$(cat $T/typo.out)
    check "$1: 400 did you mean \"$2\"" \
        bash -c "[ $st = 400 ] && [[ '$body' == *'unknown parameter'*'did you mean \"$2\"?' ]]"
}
typo '/profile?duraton=1' duration
typo '/debug/pprof/heap?debg=1' debug
typo '/debug/pprof/goroutine?dbug=1' debug
typo '/debug/pprof/trace?secnods=1' seconds
typo '/heap_snapshot?min_aeg=5' min_age
typo '/debug/pprof/cmdline?tokne=x' token
typo '/profile_wall?duration=1&captrue=auto' capture
st=$(pe_get /profile?duraton=1 -o /dev/null -w '%{http_code}' -D - | tr -d '\r' | grep -ci '^X-Go-Pprof: 1')
check "the typo's 400 carries X-Go-Pprof: 1" [ "$st" = 1 ]
check "exact body: unknown parameter \"duraton\": did you mean \"duration\"?" \
    [ "$(pe_get '/profile?duraton=1')" = 'unknown parameter "duraton": did you mean "duration"?' ]
check "debug_engine: a typo of a JSON key is named as well" \
    bash -c "curl -s -d '{\"profile_type\":\"cpu_profile\",\"duraton\":\"1\"}' http://$PE_ADDR/debug_engine | grep -q 'did you mean \"duration\"'"
check "an unrelated extra parameter is still ignored (200)" \
    [ "$(pe_status '/debug/pprof/heap?scraper_job=node1&ts=1&gc=1')" = 200 ]
check "another endpoint's parameter is still ignored (200)" \
    [ "$(pe_status '/debug/pprof/cmdline?seconds=5&sample_rate=1')" = 200 ]
check "the symbol protocol's GET list is not read as parameters" \
    [ "$(pe_status '/debug/pprof/symbol?0x1+0x2')" = 200 ]

# The index lists each endpoint's parameters, has no markdown backticks and
# names the address it was reached at.
pe_get /debug/pprof/ >$T/idx2.html
check "index: /profile's row lists n, delay, duration, format" \
    bash -c "grep -F '>/profile<' $T/idx2.html | grep -F '<code>duration</code>' | grep -F '<code>delay</code>' | grep -qF '<code>format</code>'"
check "index: /debug/pprof/trace's row lists mem and gzip" \
    bash -c "grep -F '>/debug/pprof/trace<' $T/idx2.html | grep -F '<code>mem</code>' | grep -qF '<code>gzip</code>'"
check "index: token and pid are named once for all" grep -qF 'Every endpoint also takes <code>token</code>, <code>pid</code>' $T/idx2.html
check "index: no backtick" bash -c "! grep -q '\`' $T/idx2.html"
check "index: no HOST:PORT placeholder" bash -c "! grep -q 'HOST:PORT' $T/idx2.html"
check "index: go tool pprof http://$PE_ADDR/..." grep -qF "go tool pprof http://$PE_ADDR/debug/pprof/profile?seconds=5" $T/idx2.html
check "index: the Host header is the address shown (localhost)" \
    bash -c "curl -s -H 'Host: localhost:${PE_ADDR##*:}' http://$PE_ADDR/debug/pprof/ | grep -qF 'go tool pprof http://localhost:${PE_ADDR##*:}/'"
pe_stop

# PROFEP_ADDR=:PORT (Go's and Docker's habit) is every interface, as 0.0.0.0: the same
# one-line warning, and with PROFEP_TOKEN the same refusals.  :0 picks a port.
PE_ENV="PROFEP_ADDR=:0" pe_start $P/p_sleep 30 0 || exit 1
port=${PE_ADDR##*:}
check "PROFEP_ADDR=:0: the port file says 0.0.0.0:PORT ($PE_ADDR)" [ "$PE_ADDR" = "0.0.0.0:$port" ]
hex=$(printf '%04X' "$port")
check "PROFEP_ADDR=:0 listens on 0.0.0.0 (/proc/net/tcp)" \
    bash -c "awk '\$2 == \"00000000:$hex\" && \$4 == \"0A\"' /proc/$PE_PID/net/tcp | grep -q ."
check "PROFEP_ADDR=:0: the non-loopback warning, once, on one line" \
    bash -c "[ \$(grep -c 'listening on non-loopback 0.0.0.0 without PROFEP_TOKEN' $PE_ERR) = 1 ]"
check "PROFEP_ADDR=:0: answers on 127.0.0.1" [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/debug/pprof/cmdline)" = 200 ]
ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | grep -v '^127\.')
if [ -n "$ip" ]; then
    check "PROFEP_ADDR=:0: answers on this machine's address $ip" \
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://$ip:$port/debug/pprof/cmdline)" = 200 ]
fi
pe_stop; PE_ENV=
PE_ENV="PROFEP_ADDR=:0 PROFEP_TOKEN=s3cret" pe_start $P/p_sleep 30 0 || exit 1
port=${PE_ADDR##*:}
check "PROFEP_ADDR=:0 with PROFEP_TOKEN: no warning" bash -c "! grep -q non-loopback $PE_ERR"
check "PROFEP_ADDR=:0 with PROFEP_TOKEN: 401 without it" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/debug/pprof/cmdline)" = 401 ]
check "PROFEP_ADDR=:0 with PROFEP_TOKEN: 200 with it" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' http://127.0.0.1:$port/debug/pprof/cmdline)" = 200 ]
pe_stop; PE_ENV=

pe_finish
