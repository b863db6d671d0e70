#!/usr/bin/env bash
# bench_fleet.sh: the cost of staying scraped (make bench; ratios, never
# pass/fail).  A scraper follows Grafana Alloy's default schedule: a 14 s CPU
# profile back to back, and every 15 s allocs, goroutine, mutex, block, the
# godeltaprof paths and a 14 s fgprof profile.
#   1. a fixed 2-thread CPU-bound workload (test/bench/bench_cpu.c work): process CPU
#      (ours included) and wall time, with no library, the library idle, and
#      the library scraped; medians of BENCH_FLEET_RUNS interleaved runs;
#   2. redis-server under redis-benchmark (SET/GET, 50 clients), the same
#      three ways, BENCH_FLEET_ROUNDS alternating rounds: requests per second.
# Usage: scripts/bench_fleet.sh BUILD
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
T=$(mktemp -d /tmp/pe-bench-fleet.XXXXXX)
trap 'rm -rf $T; kill $SCRAPER $PID 2>/dev/null' EXIT
SCRAPER= PID=
B=$T/bench_cpu
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -I. -I$BUILD/gen -o $B \
    test/bench/bench_cpu.c $BUILD/libpe_core.a -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm ||
    { echo "bench_fleet: build failed"; exit 1; }
ITERS=${BENCH_FLEET_ITERS:-3000000000}
RUNS=${BENCH_FLEET_RUNS:-5}

scraper() { # ADDR: Alloy's default schedule until killed
    local addr=$1
    (while :; do curl -s -o /dev/null --max-time 60 "http://$addr/debug/pprof/profile?seconds=14"; done) &
    while :; do
        for p in allocs goroutine mutex block delta_heap delta_mutex delta_block; do
            curl -s -o /dev/null --max-time 30 "http://$addr/debug/pprof/$p"
        done
        curl -s -o /dev/null --max-time 60 "http://$addr/debug/fgprof?seconds=14" &
        sleep 15
    done
}
start_ours() { # scraped(0|1) args...: start with the library; sets PID, SCRAPER
    local pf=$T/port.$RANDOM scraped=$1; shift
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB "$@" >$T/out 2>/dev/null &
    PID=$!
    for _ in $(seq 100); do [ -s $pf ] && break; sleep 0.02; done
    SCRAPER=
    if [ "$scraped" = 1 ]; then
        setsid bash -c "$(declare -f scraper); scraper $(cat $pf)" >/dev/null 2>&1 &
        SCRAPER=$!
    fi
}
stop_scraper() { [ -n "$SCRAPER" ] && kill -- -"$SCRAPER" 2>/dev/null; SCRAPER=; }
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END { print a[int((NR + 1) / 2)] }'; }

echo "== always-on: 2-thread CPU-bound workload, process CPU and wall (median of $RUNS interleaved runs)"
nc=() nw=() ic=() iw=() sc=() sw=()
for _ in $(seq $RUNS); do
    read -r w c < <($B work 0.5 $ITERS); nw+=($w); nc+=($c)
    start_ours 0 $B work 0.5 $ITERS; wait $PID; PID=; read -r w c <$T/out; iw+=($w); ic+=($c)
    start_ours 1 $B work 0.5 $ITERS; wait $PID; PID=; stop_scraper; read -r w c <$T/out
    sw+=($w); sc+=($c)
done
awk -v n=$(med "${nc[@]}") -v i=$(med "${ic[@]}") -v s=$(med "${sc[@]}") \
    -v nw=$(med "${nw[@]}") -v iw=$(med "${iw[@]}") -v sw=$(med "${sw[@]}") 'BEGIN {
    printf "  none     cpu %.3f s  wall %.3f s\n", n, nw
    printf "  idle     cpu %.3f s  wall %.3f s   cpu ratio %.4f (%+.2f%%)\n", i, iw, i / n, 100 * (i / n - 1)
    printf "  scraped  cpu %.3f s  wall %.3f s   cpu ratio %.4f (%+.2f%%) vs none, %.4f vs idle; wall ratio %.4f\n",
        s, sw, s / n, 100 * (s / n - 1), s / i, sw / nw }'
echo "  (spread: none cpu $(printf '%s ' $(printf '%s\n' "${nc[@]}" | sort -g)); scraped $(printf '%s ' $(printf '%s\n' "${sc[@]}" | sort -g)))"

echo "== always-on: redis-server under redis-benchmark (SET,GET; 50 clients), requests/s"
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "  redis-server/redis-benchmark not installed (scripts/deps.sh server)"
    exit 0
fi
ROUNDS=${BENCH_FLEET_ROUNDS:-5}
port=$((20000 + RANDOM % 20000))
bench_redis() { # mode: none|idle|scraped -> requests/s (mean of SET and GET)
    local args=(--port $port --save "" --appendonly no --daemonize no)
    case $1 in
    none) redis-server "${args[@]}" >/dev/null 2>&1 & PID=$! ;;
    idle) start_ours 0 redis-server "${args[@]}" ;;
    scraped) start_ours 1 redis-server "${args[@]}" ;;
    esac
    for _ in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-benchmark -p $port -t set,get -n 400000 -c 50 -q 2>/dev/null |
        awk '/requests per second/ { gsub(/.*: /, ""); s += $1; n++ } END { printf "%.0f\n", n ? s / n : 0 }'
    stop_scraper
    kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
}
rn=() ri=() rs=()
for _ in $(seq $ROUNDS); do
    rn+=($(bench_redis none)); ri+=($(bench_redis idle)); rs+=($(bench_redis scraped))
done
awk -v n=$(med "${rn[@]}") -v i=$(med "${ri[@]}") -v s=$(med "${rs[@]}") 'BEGIN {
    printf "  none %.0f/s   idle %.0f/s (ratio %.4f)   scraped %.0f/s (ratio %.4f vs none, %.4f vs idle)\n",
        n, i, i / n, s, s / n, s / i }'
