#!/usr/bin/env bash
# bench_mutex.sh [BUILD]: the cost of the lock interposers on the uncontended
# path, in ns per lock+unlock pair of one thread (test/bench/bench_mutex.c), for
#   none   no library
#   shim   a bare forwarding interposer (test/bench/bench_mutex_shim.c): the floor
#          of any interposer
#   ours   libprofendpoints.so at the default PROFEP_MUTEX_RATE
#   off    libprofendpoints.so with PROFEP_MUTEX_RATE=0 (pass-through)
# Two figures per configuration:
#   call   the program's own pthread_*lock call, across processes: the minimum
#          and the median over every run of every process, and the ratio of
#          those to none's
#   in-process  the interposer against glibc's own function, called alternately
#          in one process (each through a pointer), as the median over the
#          processes of each one's run-by-run median ratio, and the smallest
#          per-process median; none's is the A/A check (1 within the noise)
# The in-process ratio is the one to trust on a shared machine; the call ratio
# adds what differs between processes.  Configurations alternate process by
# process (BENCH_MUTEX_ROUNDS rounds, each process BENCH_MUTEX_REPS runs of
# BENCH_MUTEX_ITER pairs per way), pinned to one CPU (BENCH_MUTEX_CPU, default
# the last) when taskset exists.  Where the CPU's counters are readable,
# `perf stat` adds instructions per pair (BENCH_PERF_EVENT).  Never pass/fail.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
BIN=$BUILD/test/bench_mutex
SHIM=$BUILD/test/libbench_mutex_shim.so
ITER=${BENCH_MUTEX_ITER:-1000000}
REPS=${BENCH_MUTEX_REPS:-15}
ROUNDS=${BENCH_MUTEX_ROUNDS:-5}
CPU=${BENCH_MUTEX_CPU:-$(($(nproc) - 1))}
EVENT=${BENCH_PERF_EVENT:-instructions:u}
mkdir -p "$BUILD/test"
cc -std=gnu11 -D_GNU_SOURCE -O2 -g -o "$BIN" test/bench/bench_mutex.c -ldl -lpthread || exit 0
cc -std=gnu11 -O2 -shared -fPIC -o "$SHIM" test/bench/bench_mutex_shim.c -ldl || exit 0
[ -f "$LIB" ] || { echo "bench_mutex: $LIB not built"; exit 0; }

PIN=()
if command -v taskset >/dev/null && taskset -c "$CPU" true 2>/dev/null; then
    PIN=(taskset -c "$CPU")
else
    CPU=none
fi

run() { # config args...  (under perf stat when PERF_OUT names its output file)
    local c=$1 pre=("${PIN[@]}")
    shift
    [ -n "${PERF_OUT:-}" ] && pre=(perf stat -x, -o "$PERF_OUT" -e "$EVENT" "${pre[@]}")
    case $c in
    none) "${pre[@]}" "$BIN" "$@" ;;
    shim) "${pre[@]}" env LD_PRELOAD="$SHIM" "$BIN" "$@" ;;
    ours) "${pre[@]}" env PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD="$LIB" "$BIN" "$@" 2>/dev/null ;;
    off) "${pre[@]}" env PROFEP_MUTEX_RATE=0 PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD="$LIB" "$BIN" "$@" 2>/dev/null ;;
    esac
}

CONFIGS="none shim ours off"
measure() { # idle(0|1) rounds label
    local res=$T/res.$1 c
    : >"$res"
    for _ in $(seq "$2"); do
        for c in $CONFIGS; do
            run $c "$ITER" "$REPS" "$1" | sed "s/^/$c /" >>"$res"
        done
    done
    echo "uncontended lock+unlock, $3: $2 processes per configuration x $REPS runs x $ITER pairs, CPU $CPU"
    # lines: config family plt MIN MED libc MIN MED hook MIN MED ratio MED MIN
    awk -v configs="$CONFIGS" '
        function median(s,   v, n, i, j, x) {
            n = split(s, v, " ")
            for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        function minof(s,   v, n, i, m) { n = split(s, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] < m) m = v[i]; return m }
        { k = $1 " " $2; pmin[k] = pmin[k] " " $4; pmed[k] = pmed[k] " " $5; rat[k] = rat[k] " " $13
          if (!($2 in seen)) { seen[$2] = 1; fams[++nf] = $2 } }
        END {
            nc = split(configs, cs, " ")
            printf "  %-6s %-5s %8s %8s %15s   %s\n", "lock", "", "call min", "median", "vs none: min med", "in-process interposer/glibc: median [smallest]"
            for (f = 1; f <= nf; f++) {
                b = fams[f]; n0 = minof(pmin["none " b]); m0 = median(pmed["none " b])
                for (i = 1; i <= nc; i++) {
                    k = cs[i] " " b
                    if (!(k in pmin)) continue
                    mn = minof(pmin[k]); md = median(pmed[k])
                    printf "  %-6s %-5s %8.2f %8.2f %7.3f %7.3f   %.3f [%.3f]\n", (i == 1 ? b : ""), cs[i], mn, md,
                           mn / n0, md / m0, median(rat[k]), minof(rat[k])
                }
            }
        }' "$res"
}

# Instructions per pair, where perf can count them: the difference between two
# run lengths removes start-up and exit.
perf_ipp() {
    command -v perf >/dev/null || return 0
    if ! perf stat -x, -e "$EVENT" true 2>&1 >/dev/null | grep -q '^[0-9]'; then
        echo "perf stat -e $EVENT: not available here (no readable counters): not measured"
        return 0
    fi
    local c a b n1=$((ITER / 2)) n2=$((ITER * 2))
    echo "perf stat -e $EVENT per mutex lock+unlock pair (the program's call; difference of two run lengths):"
    for c in $CONFIGS; do
        a=$(run_perf $c "$n1")
        b=$(run_perf $c "$n2")
        awk -v c=$c -v a="$a" -v b="$b" -v d=$((n2 - n1)) \
            'BEGIN { if (a == "" || b == "") printf "  %-5s ?\n", c; else printf "  %-5s %.4g\n", c, (b - a) / d }'
    done
}
run_perf() { # config iterations -> the event's count over the whole process (one mutex loop)
    local f=$T/perf.out
    rm -f "$f"
    PERF_OUT=$f run "$1" "$2" 1 1 mutex_plt >/dev/null 2>&1
    awk -F, '/^[0-9]/ { print $1; exit }' "$f" 2>/dev/null
}

T=$(mktemp -d /tmp/pe-bench-mutex.XXXXXX)
trap 'rm -rf "$T"' EXIT
# A multi-threaded program: every run takes glibc's atomic path, so the ratio
# is the interposer's own cost.
measure 1 "$ROUNDS" "program with a second (idle) thread"
# A single-threaded program: alone, glibc locks a mutex without atomics; the
# library's own server threads end that, whatever the interposer does.
measure 0 2 "single-threaded program"
perf_ipp
