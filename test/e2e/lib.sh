# lib.sh: helpers for the end-to-end tests (sourced).
# pe_start PROG ARGS...   starts PROG with the library preloaded on a free port;
#                         sets PE_PID, PE_ADDR, PE_ERR (stderr file).
# pe_get PATH [curl args] fetches http://$PE_ADDR$PATH to stdout.
# pe_stop                  kills the program.
# ok / bad MESSAGE         count a check; pe_finish exits 0 or 1.
BUILD=${BUILD:-build}
case $BUILD in /*) LIB=$BUILD/libprofendpoints.so ;; *) LIB=$PWD/$BUILD/libprofendpoints.so ;; esac
T=$(mktemp -d /tmp/pe-e2e.XXXXXX)
export HOME=$T GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
checks_ok=0 checks_bad=0
trap 'pe_cleanup' EXIT
pe_cleanup() {
    [ -n "${PE_PID:-}" ] && kill -9 "$PE_PID" 2>/dev/null
    rm -rf "$T"
}
ok() { checks_ok=$((checks_ok + 1)); echo "ok   $*"; }
bad() { checks_bad=$((checks_bad + 1)); echo "FAIL $*"; }
check() { # message, command...
    local msg=$1; shift
    if "$@"; then ok "$msg"; else bad "$msg"; fi
}
pe_finish() {
    echo "$checks_ok passed, $checks_bad failed"
    [ "$checks_bad" -eq 0 ] && [ "$checks_ok" -gt 0 ]
    exit $?
}
pe_start() {
    local pf
    PE_ERR=$T/stderr.$RANDOM
    PE_OUT=$T/stdout.$RANDOM
    # %p: children that exec (and so load the library again) write their own
    # files instead of overwriting the program's.
    env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port.%p" LD_PRELOAD="$LIB" ${PE_ENV:-} "$@" \
        >"$PE_OUT" 2>"$PE_ERR" &
    PE_PID=$!
    pf=$T/port.$PE_PID
    for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.05; done
    if [ ! -s "$pf" ]; then
        echo "no port file from $*; stderr:"; cat "$PE_ERR"; return 1
    fi
    PE_ADDR=$(cat "$pf")
}
pe_get() {
    local path=$1; shift
    curl -sS --max-time 120 "$@" "http://$PE_ADDR$path"
}
pe_status() { # path [curl args] -> HTTP status
    local path=$1; shift
    curl -s -o /dev/null -w '%{http_code}' --max-time 120 "$@" "http://$PE_ADDR$path"
}
pe_stop() {
    [ -n "${PE_PID:-}" ] && kill "$PE_PID" 2>/dev/null && wait "$PE_PID" 2>/dev/null
    PE_PID=
}
# pprof_top FILE [pprof args]: go tool pprof -top output
pprof_top() { local f=$1; shift; go tool pprof -top "$@" "$f" 2>&1; }
