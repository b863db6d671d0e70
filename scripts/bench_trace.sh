#!/usr/bin/env bash
# bench_trace.sh [BUILD]: the cost of /debug/pprof/trace (issue 34; owned by the trace
# work) beside /profile_wall at the same rate (delay=0.01), for BENCH_TRACE_SECONDS
# (default 10), on two programs (test/progs/p_trace): 2 CPU-bound threads, and 200
# threads sleeping in nanosleep.  Per program and request: the CPU of our own threads
# (civetweb-*, pe-*: the recorder runs in an HTTP worker), of the program's threads
# (their signal handlers, and for the busy ones the CPU they lost), and of the whole
# process, per second, from schedstat over the request; the answer's size; for the
# trace its recorder's own figures (otherData: CPU a sample, capture time, late ticks, running
# samples without a stack, memory used).
# A baseline of the same length without any request comes first.  Never pass/fail;
# not in make test.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
BIN=$BUILD/test/p_trace
SECS=${BENCH_TRACE_SECONDS:-10}
T=$(mktemp -d /tmp/pe-bench-trace.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT
[ -x "$BIN" ] && [ -f "$LIB" ] || { echo "bench_trace: build first (make tests)"; exit 0; }

snap() { # pid -> "tid class ns" per thread (ns on the CPU, from schedstat)
    ls /proc/$1/task | awk -v d=/proc/$1/task '{
        c = ""; ns = ""
        if ((getline c <(d "/" $1 "/comm")) <= 0) next
        if ((getline ns <(d "/" $1 "/schedstat")) <= 0) next
        close(d "/" $1 "/comm"); close(d "/" $1 "/schedstat")
        cl = c ~ /^(civetweb-|pe-)/ ? "ours" : "program"
        split(ns, f, " ")
        print $1, cl, f[1]
    }'
}
delta() { # before after class -> ms a second used by that class's threads alive in both
    awk -v cl=$3 -v s=$4 'NR == FNR { a[$1] = $3; next } ($1 in a) && (cl == "all" || $2 == cl) { t += $3 - a[$1] }
        END { printf "%.1f\n", t / 1e6 / s }' "$1" "$2"
}

run() { # label, program args...
    local label=$1 port; shift
    env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port LD_PRELOAD=$LIB "$BIN" "$@" >/dev/null 2>&1 &
    PID=$!
    for _ in $(seq 200); do [ -s $T/port ] && break; sleep 0.05; done
    port=$(cat $T/port 2>/dev/null); port=${port##*:} # the file holds HOST:PORT
    [ -n "$port" ] || { echo "$label: the program did not start its server"; return; }
    sleep 1
    for what in baseline trace wall; do
        local url="" t0 t1 out=$T/$what.out
        case $what in
        trace) url="http://127.0.0.1:$port/debug/pprof/trace?seconds=$SECS&delay=0.01" ;;
        wall) url="http://127.0.0.1:$port/profile_wall?duration=$SECS&delay=0.01" ;;
        esac
        snap $PID >$T/a
        t0=$(date +%s.%N)
        if [ -n "$url" ]; then curl -s -m $((SECS + 60)) -o $out "$url"; else sleep "$SECS"; : >$out; fi
        t1=$(date +%s.%N)
        snap $PID >$T/b
        local s; s=$(echo "$t1 - $t0" | bc -l)
        printf '%-22s %-8s %6.1f s  ours %7s ms/s  program %7s ms/s  process %7s ms/s  %9d bytes\n' \
            "$label" "$what" "$s" "$(delta $T/a $T/b ours $s)" "$(delta $T/a $T/b program $s)" \
            "$(delta $T/a $T/b all $s)" "$(wc -c <$out)"
        [ $what = trace ] && python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["otherData"]
print("%-22s          recorder %.0f ms CPU (%.1f ms/s, %.1f us a sample), capture %.0f ms in all (longest %.1f ms), %d ticks (%d late), %d threads, %d samples (%d running without a stack), %.1f MiB kept, ended early: %s" % (
    "", o["recorder_cpu_ms"], o["recorder_cpu_ms"] / o["seconds_recorded"], 1e3 * o["recorder_cpu_ms"] / max(o["samples"], 1),
    o["capture_ms_total"], o["capture_ms_max"], o["ticks"], o["late_ticks"], o["threads"], o["samples"],
    o.get("running_no_stack", -1), o["used_bytes"] / 1048576, o["ended_early"]))' $out
    done
    kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
    rm -f $T/port
}

echo "bench_trace: ${SECS} s each, delay=0.01, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
run "2 busy threads" busy 2 $((4 * SECS + 30))
run "200 sleeping threads" sleepers 200 $((4 * SECS + 30))
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
