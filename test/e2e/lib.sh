# lib.sh: the one harness of the end-to-end scripts (sourced, never run).
# Scripts run from the repository root (test/run.sh does that) and begin with
#     source test/e2e/lib.sh
# Environment: BUILD (default build; made absolute here), and from here LIB
# (the library), T (a temporary directory removed at exit), HOME and Go's
# caches inside T.  Exit codes follow test/run.sh: 0 pass, 1 fail, 77 skip.
#
# Checks
#   ok / bad MESSAGE          count a passed / failed check
#   check MESSAGE CMD...      ok if CMD succeeds, else bad
#   pe_finish                 print the counts; exit 0 if some passed and none failed
#   pe_need CMD...            exit 77 (skip) unless every CMD and $LIB exist
#   one_of VALUE CHOICE...    VALUE is one of the choices
#   eventually SECONDS CMD... CMD succeeds within SECONDS (polled; for state that
#                             settles asynchronously, instead of a fixed sleep)
# A program on a free port (PE_PID, PE_ADDR; stdout PE_OUT, stderr PE_ERR)
#   pe_start PROG ARGS...     preload the library (PE_ENV: extra VAR=VALUE words)
#   pe_get PATH [curl args]   GET http://$PE_ADDR$PATH to stdout
#   pe_status PATH [curl args]  its HTTP status
#   pe_stop                   kill it and reap it
#   program_unchanged PID STATUS  reap p_sleep: its own status and "slept" on stdout
# A program driven by its stdin that prints "ready" (the heap workloads)
#   pe_start_ready NAME [VAR=VALUE...] -- PROG ARGS...
#                             stdin a fifo we hold open, output $T/NAME.out/.err;
#                             waits up to 50 s for "ready"; sets PE_PID, PE_ADDR
#   pe_stop_ready NAME        close its stdin, wait 10 s, require exit status 0
#   val NAME KEY              the N of a "KEY N" line in $T/NAME.out
#   pe_fetch PATH FILE        GET into FILE, print the status code
# Profiles and numbers
#   pprof_top FILE [args]     go tool pprof -top
#   bytes_flat / bytes_cum FILE INDEX FUNC
#                             FUNC's flat / cumulative bytes for sample INDEX
#   bytes_total FILE INDEX    the profile's total for sample INDEX
#   count_cum FILE FUNC [pprof args]  FUNC's cumulative count (the first sample type:
#                             CPU and wall samples, goroutines, threads)
#   count_total FILE          the profile's total count
#   thread_block TEXT NAME    thread NAME's block of a goroutine?debug=2 text
#   proc_cpu_ticks PID        the process's utime+stime, in clock ticks
#   within A B PCT            |A-B| <= PCT% of B;  pct A B: A's difference from B
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-e2e.XXXXXX)
export HOME=$T GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
checks_ok=0 checks_bad=0 PE_PID=
# Only the script's own shell cleans up: a background subshell ( ... ) & that
# is killed before it resets the inherited EXIT trap would otherwise run it too
# and take $T from under the script (bash races so under load).
PE_MAIN_SHELL=$BASHPID
trap 'pe_cleanup' EXIT
pe_cleanup() {
    [ "$BASHPID" = "$PE_MAIN_SHELL" ] || return 1
    exec 3>&-
    [ -n "${PE_PID:-}" ] && kill -9 "$PE_PID" 2>/dev/null
    rm -rf "$T"
}

# ---- checks
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
one_of() { # VALUE CHOICE...: VALUE is one of the choices
    local v=$1; shift
    for c in "$@"; do [ "$v" = "$c" ] && return 0; done
    return 1
}
eventually() {
    local end=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -ge "$end" ] && return 1; sleep 0.1; done
}
pe_need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || { echo "SKIP: $c missing"; exit 77; }
    done
    [ -f "$LIB" ] || { echo "SKIP: $LIB not built"; exit 77; }
}

# ---- a program on a free port
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
    # 10 s: a loaded machine can take seconds to start a program and its server
    for _ in $(seq 200); do [ -s "$pf" ] && break; sleep 0.05; done
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
program_unchanged() { # PID, expected status: the program ends with its own status and output
    wait "$1"; local st=$?
    PE_PID=
    [ "$st" = "$2" ] && [ "$(cat "$PE_OUT")" = slept ] || { echo "  status $st, out '$(cat "$PE_OUT")'"; return 1; }
}

# ---- a program driven by its stdin
pe_start_ready() {
    local name=$1 envs=() i
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    rm -f "$T/port" "$T/in"
    mkfifo "$T/in"
    env LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port" "${envs[@]}" \
        "$@" <"$T/in" >"$T/$name.out" 2>"$T/$name.err" &
    PE_PID=$!
    exec 3>"$T/in"
    for i in $(seq 500); do
        grep -q '^ready' "$T/$name.out" 2>/dev/null && [ -s "$T/port" ] && break
        kill -0 "$PE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q '^ready' "$T/$name.out" 2>/dev/null || [ ! -s "$T/port" ]; then
        bad "$name: did not become ready"; cat "$T/$name.out" "$T/$name.err"; return 1
    fi
    PE_ADDR=$(cat "$T/port")
}
pe_stop_ready() {
    local i st
    exec 3>&-
    for i in $(seq 100); do kill -0 "$PE_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$PE_PID" 2>/dev/null; then
        bad "$1: did not exit"; kill -9 "$PE_PID"; PE_PID=; return 1
    fi
    wait "$PE_PID"; st=$?
    PE_PID=
    [ $st -eq 0 ] || { bad "$1: exit status $st"; cat "$T/$1.err"; return 1; }
}
val() { awk -v k="$2" '$1 == k { print $2 }' "$T/$1.out"; }
pe_fetch() { curl -s -m 40 -o "$2" -w '%{http_code}' "http://$PE_ADDR$1"; }

# ---- profiles and numbers
pprof_top() { local f=$1; shift; go tool pprof -top "$@" "$f" 2>&1; }
bytes_flat() {
    go tool pprof -top -unit=B -nodecount=100000 -nodefraction=0 -edgefraction=0 \
        -sample_index="$2" "$1" 2>/dev/null |
        awk -v f="$3" '$NF == f { v = $1; sub(/B$/, "", v); print v; found = 1 }
                       END { if (!found) print 0 }'
}
bytes_cum() {
    go tool pprof -top -unit=B -nodecount=100000 -nodefraction=0 -edgefraction=0 \
        -sample_index="$2" "$1" 2>/dev/null |
        awk -v f="$3" '$NF == f { v = $4; sub(/B$/, "", v); print v; found = 1 }
                       END { if (!found) print 0 }'
}
bytes_total() {
    go tool pprof -top -unit=B -sample_index="$2" "$1" 2>/dev/null |
        sed -n 's/.* of \([0-9.]*\)B\{0,1\} total.*/\1/p' | head -1
}
count_cum() {
    local f=$1 fn=$2; shift 2
    go tool pprof -top -sample_index=0 "$@" "$f" 2>/dev/null |
        awk -v fn="$fn" '$6 == fn { print $4; found = 1 } END { if (!found) print 0 }'
}
count_total() {
    go tool pprof -top -sample_index=0 "$1" 2>/dev/null |
        sed -n 's/.*% of \([0-9]*\) total.*/\1/p' | head -1
}
thread_block() { awk -v n="thread \"$2\"]:" '/^goroutine / { on = (index($0, n) > 0) } on' <<<"$1"; }
proc_cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b * p / 100) }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%+.2f%%", (a - b) * 100 / b; else print "n/a" }'; }
