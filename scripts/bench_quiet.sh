#!/usr/bin/env bash
# bench_quiet.sh [BUILD]: wall-clock sampling of a program with 50 sleeping and
# 2 busy threads (test/bench/bench_quiet.c) at delay=0.01 for BENCH_QUIET_SECONDS
# (default 6, at least 4), with stacks taken from /proc where a thread is off the CPU
# (capture=auto, the default) beside signalling every sampled thread
# (capture=signal, the method before /proc captures).  Per method: signals
# sent per second, the share of samples taken without a signal, the CPU per
# second of our threads (civetweb-*, pe-*), of the sleeping threads (their
# signal handlers) and of the whole process (from schedstat, over the middle
# of the profile), and the sleepers' nanosleep
# calls cut short (EINTR) per second.  Never pass/fail.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
BIN=$BUILD/test/bench_quiet
SECS=${BENCH_QUIET_SECONDS:-6}
[ "$SECS" -ge 4 ] || SECS=4
T=$(mktemp -d /tmp/pe-bench-quiet.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$BUILD/test"
cc -std=gnu11 -D_GNU_SOURCE -O2 -g -o "$BIN" test/bench/bench_quiet.c -lpthread || exit 0
[ -f "$LIB" ] || { echo "bench_quiet: $LIB not built"; exit 0; }
command -v go >/dev/null || { echo "bench_quiet: no go tool pprof to read the profiles"; exit 0; }

snap() { # pid -> "tid class ns" per thread (ns on the CPU, from schedstat), in one awk
    ls /proc/$1/task | awk -v d=/proc/$1/task '{
        c = ""; ns = ""
        if ((getline c <(d "/" $1 "/comm")) <= 0) next
        if ((getline ns <(d "/" $1 "/schedstat")) <= 0) next
        close(d "/" $1 "/comm"); close(d "/" $1 "/schedstat")
        cl = c ~ /^(civetweb-|pe-)/ ? "ours" : c == "sleeper" ? "sleepers" : "other"
        split(ns, f, " ")
        print $1, cl, f[1]
    }'
}
delta() { # before after class: ns used by that class's threads alive in both
    awk -v cl=$3 'NR == FNR { a[$1] = $3; next } ($1 in a) && (cl == "all" || $2 == cl) { s += $3 - a[$1] }
        END { printf "%d\n", s }' "$1" "$2"
}

printf '  %-7s %12s %14s %14s %16s %14s %12s\n' method "signals/s" "no-signal %" "ours CPU ms/s" \
    "sleepers ms/s" "process ms/s" "EINTR/s"
for method in auto signal; do
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port LD_PRELOAD=$LIB "$BIN" >$T/out 2>$T/err &
    pid=$!
    for _ in $(seq 100); do [ -s $T/port ] && grep -q ready $T/out && break; sleep 0.05; done
    addr=$(cat $T/port)
    sleep 0.5
    curl -s --max-time $((SECS + 60)) -o $T/w.pb.gz \
        "http://$addr/profile_wall?duration=$SECS&delay=0.01&capture=$method" &
    cpid=$!
    sleep 1 # CPU is measured over the middle of the profile, the collector thread alive
    t0=$(date +%s%N)
    snap $pid >$T/s0
    sleep $((SECS - 2))
    t1=$(date +%s%N)
    snap $pid >$T/s1
    wait $cpid
    kill -TERM $pid
    wait $pid
    line=$(go tool pprof -raw $T/w.pb.gz 2>/dev/null | grep '^Comment: capture:')
    quiet=$(sed -n 's/.*capture: \([0-9]*\) samples from .proc.*/\1/p' <<<"$line")
    sigs=$(sed -n 's/.* \([0-9]*\) signals sent.*/\1/p' <<<"$line")
    eintr=$(sed -n 's/^eintr //p' $T/out)
    awk -v m=$method -v q=${quiet:-0} -v s=${sigs:-0} -v d=$SECS -v w=$(((t1 - t0) / 1000)) \
        -v o=$(delta $T/s0 $T/s1 ours) -v sl=$(delta $T/s0 $T/s1 sleepers) \
        -v a=$(delta $T/s0 $T/s1 all) -v e=${eintr:-0} 'BEGIN {
        printf "  %-7s %12.0f %13.1f%% %14.2f %16.2f %14.1f %12.0f\n", m, s / d,
            q + s ? 100 * q / (q + s) : 0, o / w, sl / w, a / w, e / d }'
    rm -f $T/port
done
echo "  (process CPU includes the 2 spinners, ~2000 ms/s when they get both cores)"

# ---- the share of blocked threads captured without a signal, per program ----------------
# Three goroutine?debug=2 dumps of each program (0.3 s apart); a thread is blocked when
# its state is not "running".  Programs missing here are skipped.
share() { # label cmd...
    local label=$1 pid addr i
    shift
    command -v "$1" >/dev/null || { printf '  %-26s (not installed)\n' "$label"; return; }
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port LD_PRELOAD=$LIB "$@" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do [ -s $T/port ] && break; sleep 0.05; done
    addr=$(cat $T/port 2>/dev/null)
    sleep 1
    : >$T/dumps
    for i in 1 2 3; do
        curl -s --max-time 30 "http://$addr/debug/pprof/goroutine?debug=2" >>$T/dumps
        sleep 0.3
    done
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    rm -f $T/port
    awk -v l="$label" '/^thread / { blocked = $0 !~ /\[running\]:$/; next }
        /^# capture: / && blocked { n++; if ($3 == "proc") q++ }
        END { printf "  %-26s %3d of %3d blocked threads from /proc (%.0f%%)\n", l, q, n, n ? 100 * q / n : 0 }' $T/dumps
}
echo
echo "  blocked threads captured without a signal (3 dumps each):"
PY='import threading, time, queue, socket, select
q = queue.Queue(); s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
for f, a in ((time.sleep, (60,)), (q.get, ()), (s.accept, ()), (select.select, ([s], [], [], 60))):
    threading.Thread(target=f, args=a, daemon=True).start()
threading.Event().wait(60)'
share "python3 (5 threads)" /usr/bin/python3 -c "$PY"
share "perl sleep" perl -e 'sleep 60'
share "perl select" perl -e 'select(undef, undef, undef, 60)'
share "redis-server" redis-server --port 0 --unixsocket $T/redis.sock --save ''
share "p_quiet_park" $BUILD/test/p_quiet_park
share "p_quiet_park_fp" $BUILD/test/p_quiet_park_fp
share "p_parked" $BUILD/test/p_parked
