#!/usr/bin/env bash
# bench_fleet.sh: the cost of staying scraped (make bench; ratios, never
# pass/fail).  A scraper follows Grafana Alloy's default schedule: a 14 s CPU
# profile back to back (/debug/pprof/profile?seconds=14), and every 15 s
# allocs, goroutine, mutex, block and the godeltaprof paths (delta_heap,
# delta_mutex, delta_block).  Configurations alternate round by round (the
# order rotates), figures are medians with min-max, and "none2" (no library
# again) is the A/A noise floor:
#   1. a fixed 2-thread CPU-bound workload (test/bench/bench_cpu.c work):
#      process CPU (ours included) with no library, the library idle, scraped,
#      and, to attribute the cost, scraped by the CPU profile alone
#      ("cpu_only") and by the 15 s paths alone ("paths_only"); the CPU of our
#      own threads (civetweb-* serving, pe-cpu-collect, other pe-*) is read
#      from /proc, the rest is the program's threads (signal handlers there);
#   2. redis-server under redis-benchmark (SET/GET, 50 clients; server and
#      client on different cores): requests/s and the server's CPU per
#      request, with no library, idle and scraped;
#   3. the cost of one request of each 15 s path (CPU of our threads, against
#      the busy workload), and of one second of CPU profiling: the parts.
# Usage: scripts/bench_fleet.sh BUILD   (BENCH_FLEET_ROUNDS, default 3;
# BENCH_FLEET_ITERS, the workload's size; BENCH_FLEET_REDIS_N; BENCH_FLEET_ONLY=workload|redis|parts)
set -u
source "${BASH_SOURCE%/*}/bench_lib.sh"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-bench-fleet.XXXXXX)
SCRAPER='' PID='' WATCH=''
cleanup() {
    [ -n "$SCRAPER" ] && kill -- -"$SCRAPER" 2>/dev/null
    [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
B=$T/bench_cpu
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -I. -I$BUILD/gen -o $B \
    test/bench/bench_cpu.c $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm ||
    { echo "bench_fleet: build failed"; exit 1; }
ITERS=${BENCH_FLEET_ITERS:-5000000000}
ROUNDS=${BENCH_FLEET_ROUNDS:-3}
NCPU=$(nproc)
CORE_S=0 CORE_C=$((NCPU > 1 ? 1 : 0))
HZ=$(getconf CLK_TCK)
PATHS="allocs goroutine mutex block delta_heap delta_mutex delta_block"

scraper() { # ADDR WHAT(all|cpu|paths): Alloy's default schedule until killed
    local addr=$1 what=$2 p t0
    if [ "$what" != paths ]; then
        (while :; do curl -s -o /dev/null --max-time 60 "http://$addr/debug/pprof/profile?seconds=14"; done) &
    fi
    [ "$what" = cpu ] && { wait; return; }
    while :; do
        t0=$SECONDS
        for p in $PATHS; do curl -s -o /dev/null --max-time 30 "http://$addr/debug/pprof/$p"; done
        sleep $((15 - (SECONDS - t0) > 0 ? 15 - (SECONDS - t0) : 0))
    done
}
start() { # CONFIG CMD...: start CMD as CONFIG asks; sets PID, ADDR, SCRAPER
    local c=$1 pf=$T/port.$RANDOM
    shift
    ADDR='' SCRAPER=''
    case $c in
    none | none2) taskset -c $CORE_S "$@" >$T/out 2>/dev/null & PID=$! ; return ;;
    esac
    taskset -c $CORE_S env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf PROFEP_LOG=warn LD_PRELOAD=$LIB \
        "$@" >$T/out 2>/dev/null &
    PID=$!
    for _ in $(seq 250); do [ -s $pf ] && break; sleep 0.02; done
    ADDR=$(cat $pf 2>/dev/null)
    local what=
    case $c in scraped) what=all ;; cpu_only) what=cpu ;; paths_only) what=paths ;; esac
    if [ -n "$what" ] && [ -n "$ADDR" ]; then
        # The scraper sits off the program's core (a real one is on another host).
        setsid taskset -c $CORE_C bash -c "PATHS='$PATHS'; $(declare -f scraper); scraper $ADDR $what" \
            >/dev/null 2>&1 &
        SCRAPER=$!
    fi
}
stop_scraper() { [ -n "$SCRAPER" ] && kill -- -"$SCRAPER" 2>/dev/null; SCRAPER=''; }
threads() { # PID: "serving collector other total" ns on CPU of the live threads (schedstat)
    local t c ns rest sv=0 k=0 o=0 all=0
    for t in /proc/$1/task/*; do
        { read -r c <$t/comm && read -r ns rest <$t/schedstat; } 2>/dev/null || continue
        all=$((all + ns))
        case $c in
        civetweb-*) sv=$((sv + ns)) ;;
        pe-cpu-collect) k=$((k + ns)) ;;
        pe-*) o=$((o + ns)) ;;
        esac
    done
    echo "$sv $k $o $all"
}
watch_threads() { # PID FILE: FILE holds the last threads() line while PID lives
    local l
    while kill -0 "$1" 2>/dev/null; do
        l=$(threads "$1")
        [ "${l##* }" != 0 ] && echo "$l" >"$2"
        sleep 0.5
    done
}
stat3() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
med() { stat3 "$1" | cut -d' ' -f1; }
# BENCH_FLEET_ONLY=workload|redis|parts runs that part alone
want() { [ -z "${BENCH_FLEET_ONLY:-}" ] || [ "$BENCH_FLEET_ONLY" = "$1" ]; }

# ---- 1. the busy workload ---------------------------------------------------
if want workload; then
CFGS="none idle scraped cpu_only paths_only none2"
echo "== always-on: 2-thread CPU-bound workload (bench_cpu work, $ITERS iterations a thread), process CPU s," \
    "$ROUNDS alternating rounds; $(load)"
for r in $(seq "$ROUNDS"); do
    for c in $(rotate "$r" $CFGS); do
        rm -f $T/thr
        start $c $B work 0.3 $ITERS
        [ -n "$ADDR" ] && { watch_threads $PID $T/thr & WATCH=$!; }
        wait $PID
        PID=''
        stop_scraper
        [ -n "$WATCH" ] && { wait $WATCH; WATCH=''; }
        read -r w cpu <$T/out
        echo "$cpu" >>$T/w.$c
        echo "$w" >>$T/w.$c.wall
        # Our threads' CPU as a share of the run's process CPU.
        [ -s $T/thr ] && read -r s k o _ <$T/thr &&
            awk -v s=$s -v k=$k -v o=$o -v w=$w 'BEGIN { printf "%.4f %.4f %.4f %.4f\n", s / 1e9, k / 1e9, o / 1e9, w }' >>$T/w.$c.ours
    done
done
for c in $CFGS; do
    read -r m lo hi <<<"$(stat3 $T/w.$c)"
    printf '  %-10s cpu %.3f s [%.3f-%.3f]' $c $m $lo $hi
    case $c in
    none) echo ;;
    none2) echo "   A/A floor $(ratios $T/w.none2 $T/w.none)" ;;
    *)
        printf '   vs none %s' "$(ratios $T/w.$c $T/w.none)"
        [ $c != idle ] && printf ', vs idle %s' "$(ratios $T/w.$c $T/w.idle)"
        echo
        if [ -s $T/w.$c.ours ]; then
            # Our threads' cost is per second of wall time (requests, timers), the
            # program's per second of its CPU: on a loaded machine the run's wall
            # stretches and the first share grows, so both are printed.
            awk -v m=$m '{ s[NR] = $1; k[NR] = $2; o[NR] = $3; r[NR] = ($1 + $2 + $3) / $4 * 1000 }
                function md(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                    if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
                END { printf "             our threads (medians): serving %.3f s, collector %.3f s, other pe-* %.3f s = %.2f%% of the run; %.2f ms per wall second (%.3f%% of a core)\n",
                    md(s, NR), md(k, NR), md(o, NR), 100 * (md(s, NR) + md(k, NR) + md(o, NR)) / m, md(r, NR), md(r, NR) / 10 }' $T/w.$c.ours
        fi
        ;;
    esac
done
echo "  ($(load))"
fi

# ---- 2. redis ---------------------------------------------------------------
echo
if ! want redis; then
    :
elif ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "== always-on, redis: redis-server/redis-benchmark not installed (scripts/deps.sh server)"
else
    # Requests for ~12 s a run at the speed of this machine now (load varies).
    RN=${BENCH_FLEET_REDIS_N:-$(redis_calibrate 12)}
    echo "== always-on: redis-server (core $CORE_S) under redis-benchmark (core $CORE_C; SET,GET x$RN, 50 clients)," \
        "$ROUNDS alternating rounds; $(load)"
    redis_round() { # CONFIG -> "requests/s server-cpu-us-per-request"
        local c=$1 port=$((20000 + RANDOM % 20000)) c0 c1
        start $c redis-server --port $port --save "" --appendonly no --daemonize no
        for _ in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.05; done
        c0=$(awk '{ print $14 + $15 }' /proc/$PID/stat)
        taskset -c $CORE_C redis-benchmark -p $port -t set,get -n "$RN" -c 50 -q 2>/dev/null | tr '\r' '\n' |
            awk 'match($0, /[0-9.]+ requests per second/) { s += substr($0, RSTART, RLENGTH) + 0; n++ }
                 END { printf "%.0f ", n ? s / n : 0 }'
        c1=$(awk '{ print $14 + $15 }' /proc/$PID/stat)
        awk -v d=$((c1 - c0)) -v hz=$HZ -v n=$((2 * RN)) 'BEGIN { printf "%.3f\n", d / hz / n * 1e6 }'
        stop_scraper
        kill $PID 2>/dev/null
        wait $PID 2>/dev/null
        PID=''
    }
    for r in $(seq "$ROUNDS"); do
        for c in $(rotate "$r" none idle scraped none2); do
            read -r rps us <<<"$(redis_round $c)"
            echo "$rps" >>$T/r.$c
            echo "$us" >>$T/rc.$c
        done
    done
    for c in none idle scraped none2; do
        read -r m lo hi <<<"$(stat3 $T/r.$c)"
        read -r cm clo chi <<<"$(stat3 $T/rc.$c)"
        printf '  %-8s %6.0f req/s [%.0f-%.0f]  server CPU %.2f us/request [%.2f-%.2f]' $c $m $lo $hi $cm $clo $chi
        case $c in
        none) echo ;;
        none2) echo "   A/A floor: throughput $(ratios $T/r.none2 $T/r.none), CPU $(ratios $T/rc.none2 $T/rc.none)" ;;
        idle) echo "   vs none: throughput $(ratios $T/r.$c $T/r.none), CPU $(ratios $T/rc.$c $T/rc.none)" ;;
        scraped) echo "   vs none: throughput $(ratios $T/r.$c $T/r.none), CPU $(ratios $T/rc.$c $T/rc.none);" \
            "vs idle: throughput $(ratios $T/r.$c $T/r.idle), CPU $(ratios $T/rc.$c $T/rc.idle)" ;;
        esac
    done
    echo "  ($(load))"
fi

# ---- 3. the parts -----------------------------------------------------------
if want parts; then
echo
echo "== where the always-on cost goes: CPU of our threads per request (busy workload, medians of 3 x 5 requests, 3 x 1 profile); $(load)"
start idle $B work 0 $((ITERS * 100))
if [ -z "$ADDR" ]; then
    echo "  library did not start"
else
    for p in $PATHS; do curl -s -o /dev/null "http://$ADDR/debug/pprof/$p"; done # warm (first-call tables)
    ours() { threads $PID | awk '{ print $1 + $2 + $3 }'; }
    sum15=0
    for p in $PATHS "profile?seconds=2"; do
        : >$T/per
        k=5
        case $p in profile*) k=1 ;; esac
        for _ in 1 2 3; do
            c_a=$(ours); t0=$(date +%s%N)
            for _ in $(seq $k); do curl -s -o /dev/null --max-time 30 "http://$ADDR/debug/pprof/$p"; done
            c_b=$(ours); t1=$(date +%s%N)
            awk -v d=$((c_b - c_a)) -v k=$k -v w=$(((t1 - t0) / 1000)) 'BEGIN { printf "%.3f %.1f\n", d / 1e6 / k, w / k / 1000 }' >>$T/per
        done
        ms=$(cut -d' ' -f1 $T/per | sort -g | sed -n 2p)
        wall=$(cut -d' ' -f2 $T/per | sort -g | sed -n 2p)
        case $p in
        profile*)
            awk -v ms=$ms -v w=$wall 'BEGIN { printf "  %-22s %7.2f ms CPU (%.0f ms wall) per 2 s profile: %.3f%% of a core while profiling (collector + encoding; the handlers run in the program'"'"'s threads, see cpu_only above)\n", "profile?seconds=2", ms, w, ms / 2000 * 100 }' ;;
        *)
            sum15=$(awk -v a=$sum15 -v b=$ms 'BEGIN { print a + b }')
            awk -v p=$p -v ms=$ms -v w=$wall 'BEGIN { printf "  %-22s %7.2f ms CPU (%.0f ms wall) per request: %.4f%% of a core once per 15 s\n", p, ms, w, ms / 15000 * 100 }' ;;
        esac
    done
    awk -v s=$sum15 'BEGIN { printf "  all 15 s paths together: %.2f ms per round, %.4f%% of a core\n", s, s / 15000 * 100 }'
    echo "  (CPU of our threads from /proc/PID/task/*/schedstat; the median of three groups)"
    kill $PID 2>/dev/null
    wait $PID 2>/dev/null
    PID=''
fi
echo "  ($(load))"
fi
