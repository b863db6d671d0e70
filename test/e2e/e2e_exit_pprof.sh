#!/usr/bin/env bash
# e2e_exit_pprof: what was recorded is answered, and nobody comes back for it
# (issue 38, item 3).  (1) go tool pprof -top, through a proxy that logs each
# request, against a stripped program that exits during the profile, and one
# that exits right after it: one request each (the mappings say names are
# filled in, so no POST /debug/pprof/symbol), no error, samples shown.
# (2) Node with 8 worker_threads exiting (process.exit) mid-profile, 20 runs,
# a CPU, a wall and a heap seconds=N request in flight each time: every
# answer a 200 that go tool pprof parses, saying the program exited.
# run.sh: alone (curls must reach node within its 1.5 s life, 20 rounds; missed beside others at load 19)
source test/e2e/lib.sh
pe_need curl go python3 strip
P=$BUILD/test

# ---- a logging proxy: one line per connection (our server closes each after one answer)
cat >$T/proxy.py <<'PYEOF'
import socket, sys, threading
backfile, log = sys.argv[1], open(sys.argv[2], 'a', buffering=1)
ls = socket.socket(); ls.bind(('127.0.0.1', 0)); ls.listen(16)
open(sys.argv[3], 'w').write('127.0.0.1:%d' % ls.getsockname()[1])
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def serve(c):
    first = c.recv(65536)
    log.write(first.split(b'\r\n', 1)[0].decode(errors='replace') + '\n')
    back = open(backfile).read().strip().rsplit(':', 1)  # the program's, started after us
    try: s = socket.create_connection((back[0], int(back[1])))
    except OSError: c.close(); return
    s.sendall(first)
    threading.Thread(target=pump, args=(s, c), daemon=True).start()
    pump(c, s)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PYEOF

strip -o $T/work_stripped $P/p_work || exit 1
# run NAME PROGRAM_SECONDS PROFILE_SECONDS: the stripped program under go tool pprof
run() {
    local name=$1 prog=$2 prof=$3 pp
    # the proxy first: Python may take a second or more to start (a pyenv shim, a busy
    # machine), which the program's 1.5 s would not wait for; it reads the program's
    # address when the request comes
    python3 $T/proxy.py $T/$name.back $T/$name.log $T/$name.pport &
    pp=$!
    eventually 20 test -s $T/$name.pport || { bad "$name: no proxy"; kill $pp; return 1; }
    # the proxy's port is another of this machine's: allowed by name
    PE_ENV=PROFEP_ALLOWED_HOSTS=127.0.0.1 pe_start $T/work_stripped "$prog" || { kill $pp; return 1; }
    echo "$PE_ADDR" >$T/$name.back
    timeout 60 go tool pprof -top "http://$(cat $T/$name.pport)/debug/pprof/profile?seconds=$prof" \
        >$T/$name.top 2>$T/$name.err
    wait $PE_PID
    PE_PID=
    kill $pp 2>/dev/null
    wait $pp 2>/dev/null
    check "$name: one request ($(tr '\n' ';' <$T/$name.log))" [ "$(wc -l <$T/$name.log)" = 1 ]
    check "$name: it was the profile" grep -q '^GET /debug/pprof/profile' $T/$name.log
    check "$name: no POST /debug/pprof/symbol" bash -c "! grep -q symbol $T/$name.log"
    check "$name: pprof reports no error ($(grep -iv '^fetching\|^saved' $T/$name.err | head -2))" \
        bash -c "! grep -Eiq 'symbol|EOF|reset|error|fail' $T/$name.err"
    check "$name: pprof shows samples" grep -q 'Total samples' $T/$name.top
}
run during 1.5 4 # exits during the profile
run after 2.5 1  # exits right after it, while pprof would symbolize

# ---- Node worker_threads exiting mid-profile
if command -v node >/dev/null; then
    JS=$(cd test/e2e/js && pwd)/workers_exit.js
    for round in $(seq 1 20); do
        pe_start node "$JS" 1500 || { bad "node round $round: no server"; continue; }
        for k in cpu wall heap; do
            case $k in
            cpu) path='/debug/pprof/profile?seconds=6' ;;
            wall) path='/debug/fgprof?seconds=6&format=pprof' ;;
            heap) path='/debug/pprof/heap?seconds=6' ;;
            esac
            curl -s -m 40 -o $T/n$k.$round.pb.gz -w '%{http_code}' "http://$PE_ADDR$path" \
                >$T/n$k.$round.st &
        done
        wait $PE_PID
        st=$?
        PE_PID=
        wait
        check "node round $round: its own exit status ($st)" [ "$st" = 0 ]
        for k in cpu wall heap; do
            check "node round $round: $k answered 200 ($(cat $T/n$k.$round.st))" \
                [ "$(cat $T/n$k.$round.st)" = 200 ]
            # pprof itself reads the first rounds; the rest by their bytes (a gzip
            # Profile that starts with its sample types and says the program exited)
            if [ "$round" -le 3 ]; then
                check "node round $round: $k is a valid profile" \
                    sh -c "go tool pprof -raw $T/n$k.$round.pb.gz 2>/dev/null | grep -q '^PeriodType:'"
                check "node round $round: $k says the program exited" \
                    sh -c "go tool pprof -comments $T/n$k.$round.pb.gz 2>/dev/null | grep -q 'the program exited'"
            else
                check "node round $round: $k is a whole profile saying the program exited" \
                    python3 -c "import gzip,sys; b=gzip.open(sys.argv[1]).read(); sys.exit(not (b[:1]==b'\\x0a' and b'the program exited' in b))" $T/n$k.$round.pb.gz
            fi
        done
    done
else
    echo "note: node not installed (scripts/deps.sh node): the worker_threads rounds are skipped"
fi
pe_finish
