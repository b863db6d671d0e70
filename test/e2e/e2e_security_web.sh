#!/usr/bin/env bash
# e2e_security_web: web pages cannot drive the profiler, and what it writes
# nobody else can touch.  A Host that is not ours (DNS rebinding) gets 421
# naming PROFEP_ALLOWED_HOSTS; loopback names and the listen address with our
# port are served, as are names in PROFEP_ALLOWED_HOSTS; a browser's
# cross-site or same-site request (Sec-Fetch-Site) or a foreign Origin gets
# 403 and starts nothing, and a cross-origin text/plain POST to /debug_engine
# writes nothing; `Sec-Fetch-Site: none` (a URL opened directly) is served.
# Every answer carries nosniff and no-store, HTML and SVG a restrictive CSP
# under which the flame graph's own script still runs in Chromium (and a
# script the CSP does not name does not).  /debug_engine runs 2 jobs at once
# (503 beyond) and its files are 0600.
source test/e2e/lib.sh
P=$BUILD/test
trap "" PIPE

mkdir -p $T/stage
# p_parked: its sleeps resume after EINTR (wall-clock and stack requests signal every thread).
PE_ENV="PROFEP_STAGE_DIR=$T/stage" pe_start $P/p_parked 100 || exit 1
PORT=${PE_ADDR#*:}
st_of() { curl -s -o $T/body -w '%{http_code}' --max-time 60 "$@"; }
stage_files() { find $T/stage -type f | wc -l; }

# ---- Host: only names of ours ------------------------------------------------------
for h in evil.example "evil.example:$PORT" localhost 127.0.0.1 "127.0.0.1:1" "[::1]" \
    "localhost.evil.example:$PORT" "127.0.0.1.evil.example:$PORT"; do
    st=$(st_of -H "Host: $h" "http://$PE_ADDR/debug/pprof/cmdline")
    check "Host: $h -> 421 naming PROFEP_ALLOWED_HOSTS, nothing else ($st)" \
        bash -c "[ $st = 421 ] && grep -q 'PROFEP_ALLOWED_HOSTS=' $T/body && \
                 [ \$(wc -l <$T/body) = 1 ] && ! grep -qa p_parked $T/body"
done
for h in "127.0.0.1:$PORT" "localhost:$PORT" "LOCALHOST:$PORT" "[::1]:$PORT"; do
    st=$(st_of -H "Host: $h" "http://$PE_ADDR/debug/pprof/cmdline")
    check "Host: $h -> 200 ($st)" [ "$st" = 200 ]
done
st=$(curl -s -o /dev/null -w '%{http_code}' --http1.0 -H 'Host:' "http://$PE_ADDR/debug/pprof/")
check "no Host at all (HTTP/1.0 client) -> 200 ($st)" [ "$st" = 200 ]
check "421 before any work: a profile for a foreign Host" \
    [ "$(st_of -H 'Host: evil.example' "http://$PE_ADDR/profile?duration=30")" = 421 ]

# ---- Sec-Fetch-Site and Origin ----------------------------------------------------
for site in cross-site same-site; do
    st=$(st_of -H "Sec-Fetch-Site: $site" "http://$PE_ADDR/allocs_profile_start?sample_rate=1")
    check "Sec-Fetch-Site: $site GET /allocs_profile_start -> 403 ($st)" \
        bash -c "[ $st = 403 ] && [ \$(wc -l <$T/body) = 1 ]"
    st=$(st_of -H "Sec-Fetch-Site: $site" "http://$PE_ADDR/profile_wall_start?delay=0.001")
    check "Sec-Fetch-Site: $site GET /profile_wall_start -> 403 ($st)" [ "$st" = 403 ]
    st=$(st_of -H "Sec-Fetch-Site: $site" "http://$PE_ADDR/debug/pprof/cmdline")
    check "Sec-Fetch-Site: $site GET /debug/pprof/cmdline -> 403, no arguments ($st)" \
        bash -c "[ $st = 403 ] && ! grep -qa p_parked $T/body"
done
st=$(st_of "http://$PE_ADDR/allocs_profile_stop")
check "no allocation recording was started ($st)" [ "$st" = 409 ]
st=$(st_of "http://$PE_ADDR/profile_wall_stop")
check "no wall-clock session was started ($st)" [ "$st" = 409 ]
st=$(st_of -H 'Sec-Fetch-Site: none' "http://$PE_ADDR/allocs_profile_start?sample_rate=0.01")
check "Sec-Fetch-Site: none (a URL opened directly) is served ($st)" [ "$st" = 200 ]
check "...and stops" [ "$(st_of -H 'Sec-Fetch-Site: same-origin' "http://$PE_ADDR/allocs_profile_stop")" = 200 ]
for o in http://evil.example "http://evil.example:$PORT" null "https://127.0.0.1:$PORT" \
    "http://127.0.0.1:1"; do
    st=$(st_of -H "Origin: $o" "http://$PE_ADDR/debug/pprof/")
    check "Origin: $o -> 403 ($st)" [ "$st" = 403 ]
done
for o in "http://127.0.0.1:$PORT" "http://localhost:$PORT"; do
    st=$(st_of -H "Origin: $o" "http://$PE_ADDR/debug/pprof/")
    check "Origin: $o (ours) -> 200 ($st)" [ "$st" = 200 ]
done
# A page's cross-origin text/plain POST needs no preflight: it must write nothing.
body='{"profile_type": "task_backtraces"}'
st=$(st_of -X POST -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' \
    -H 'Sec-Fetch-Site: cross-site' --data "$body" "http://$PE_ADDR/debug_engine")
check "cross-origin text/plain POST /debug_engine -> 403, no file ($st)" \
    bash -c "[ $st = 403 ] && [ $(stage_files) = 0 ]"
st=$(st_of -X POST -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' \
    --data "$body" "http://$PE_ADDR/debug_engine")
check "...also from a browser without Sec-Fetch-Site (Origin only) -> 403, no file ($st)" \
    bash -c "[ $st = 403 ] && [ $(stage_files) = 0 ]"

# ---- headers on every answer ---------------------------------------------------------
headers() { # expected-status, curl args...: the answer carries nosniff and no-store
    local want=$1; shift
    curl -s -D $T/h -o /dev/null --max-time 60 "$@"
    tr -d '\r' <$T/h >$T/hh
    grep -q "^HTTP/1.1 $want " $T/hh && grep -qi '^X-Content-Type-Options: nosniff$' $T/hh &&
        grep -qi '^Cache-Control: no-store$' $T/hh
}
U=http://$PE_ADDR
check "headers: 200 index" headers 200 $U/debug/pprof/
check "headers: 200 heap profile" headers 200 $U/debug/pprof/heap
check "headers: 200 HEAD" headers 200 -I $U/debug/pprof/cmdline
check "headers: 200 debug_engine reply" headers 200 -X POST --data "$body" $U/debug_engine
check "headers: 400" headers 400 "$U/profile?duration=x"
check "headers: 404" headers 404 $U/nope
check "headers: 405" headers 405 -X PUT $U/debug/pprof/
check "headers: 421" headers 421 -H 'Host: evil.example' $U/debug/pprof/
check "headers: 403" headers 403 -H 'Origin: null' $U/debug/pprof/
curl -s -D $T/h -o /dev/null $U/debug/pprof/
csp=$(tr -d '\r' <$T/h | sed -n 's/^Content-Security-Policy: //Ip')
check "HTML: CSP allows nothing to load or run ($csp)" \
    bash -c "[[ \"$csp\" == *\"default-src 'none'\"* && \"$csp\" != *script-src* && \
               \"$csp\" == *\"frame-ancestors 'none'\"* ]]"
curl -s -D $T/h -o $T/cpu.svg "$U/profile?duration=1&format=svg"
csp=$(tr -d '\r' <$T/h | sed -n 's/^Content-Security-Policy: //Ip')
check "SVG: CSP names one script by hash, nothing inline or loaded ($csp)" \
    bash -c "[[ \"$csp\" == *\"default-src 'none'\"* && \"$csp\" == *\"script-src 'sha256-\"* && \
               \"\${csp#*script-src}\" != *unsafe-inline* ]]"

# ---- the flame graph's script runs under that CSP in Chromium ---------------------------
if command -v chromium >/dev/null; then
    chrome() {
        timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" "$@" 2>/dev/null
    }
    chrome --dump-dom "$U/profile?duration=1&format=svg" >$T/dom.xml
    check "Chromium, SVG over http with our CSP: the script ran (data-ready)" \
        grep -q 'data-ready="[1-9]' $T/dom.xml
    # The same document with a policy that does not name its script: it must not run,
    # or the check above proves nothing.
    cat >$T/serve.py <<'EOF'
import http.server, sys
body = open(sys.argv[1], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'image/svg+xml')
        self.send_header('Content-Security-Policy', sys.argv[2])
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
open(sys.argv[3], 'w').write(str(s.server_address[1]))
s.serve_forever()
EOF
    wrong=${csp/sha256-/sha256-AAAA}
    python3 $T/serve.py $T/cpu.svg "$wrong" $T/pyport &
    py=$!
    for _ in $(seq 50); do [ -s $T/pyport ] && break; sleep 0.1; done
    chrome --dump-dom "http://127.0.0.1:$(cat $T/pyport)/cpu.svg" >$T/dom-wrong.xml
    kill $py 2>/dev/null
    check "Chromium: with a hash that does not match, the script does not run" \
        bash -c "grep -q '<svg' $T/dom-wrong.xml && ! grep -q 'data-ready=' $T/dom-wrong.xml"
else
    echo "note: no chromium (scripts/deps.sh browser); the CSP is not tried in a browser"
fi

# ---- /debug_engine: two jobs at once, files 0600 ----------------------------------------
job='{"profile_type": "wall_profile", "duration": 4}'
jobs=()
for i in 1 2; do
    curl -s -o $T/job$i -w '%{http_code}' --max-time 60 -X POST --data "$job" $U/debug_engine \
        >$T/job$i.st &
    jobs+=($!)
done
sleep 1
st=$(st_of -X POST --data "$job" $U/debug_engine)
check "a third concurrent debug_engine job -> 503 at once ($st: $(cat $T/body))" \
    bash -c "[ $st = 503 ] && grep -q 'jobs are running' $T/body"
wait "${jobs[@]}"
check "the two jobs finished (200, 200)" \
    bash -c "[ \"\$(cat $T/job1.st $T/job2.st)\" = 200200 ]"
check "every file written is 0600 and ours by name" \
    bash -c "[ \$(find $T/stage -type f | wc -l) -ge 3 ] && \
             [ -z \"\$(find $T/stage -type f ! -perm 600)\" ] && \
             [ -z \"\$(find $T/stage -type f ! -name 'profep-*-$PE_PID-*')\" ]"
check "the port file is 0600" [ "$(stat -c %a $T/port.$PE_PID)" = 600 ]
pe_stop

# ---- PROFEP_ALLOWED_HOSTS -------------------------------------------------------------
PE_ENV="PROFEP_ALLOWED_HOSTS=prof.example,tunnel.example:9999,bad/name" pe_start $P/p_sleep 30 0 ||
    exit 1
U=http://$PE_ADDR
check "a bad entry: one line naming it" \
    bash -c "grep -q \"PROFEP_ALLOWED_HOSTS: 'bad/name'\" $PE_ERR && [ \$(wc -l <$PE_ERR) = 2 ]"
for h in prof.example prof.example:1234 tunnel.example:9999 "127.0.0.1:${PE_ADDR#*:}"; do
    check "allowed Host: $h -> 200" [ "$(st_of -H "Host: $h" $U/debug/pprof/)" = 200 ]
done
for h in tunnel.example:9998 evil.example bad/name; do
    check "not allowed Host: $h -> 421" [ "$(st_of -H "Host: $h" $U/debug/pprof/)" = 421 ]
done
check "the index lists PROFEP_ALLOWED_HOSTS" \
    bash -c "curl -s $U/debug/pprof/ | grep -q 'PROFEP_ALLOWED_HOSTS</td><td>prof.example'"
pe_stop

# ---- bound to every address: the machine's own IPv4 literals with our port --------------
PE_ENV="PROFEP_ADDR=0.0.0.0:0 PROFEP_TOKEN=t" pe_start $P/p_sleep 30 0 || exit 1
check "0.0.0.0: Host 192.0.2.7:PORT (an address literal) -> 200" \
    [ "$(st_of -H "Authorization: Bearer t" -H "Host: 192.0.2.7:${PE_ADDR#*:}" \
        http://127.0.0.1:${PE_ADDR#*:}/debug/pprof/)" = 200 ]
check "0.0.0.0: Host evil.example:PORT -> 421" \
    [ "$(st_of -H "Authorization: Bearer t" -H "Host: evil.example:${PE_ADDR#*:}" \
        http://127.0.0.1:${PE_ADDR#*:}/debug/pprof/)" = 421 ]
pe_stop
pe_finish
