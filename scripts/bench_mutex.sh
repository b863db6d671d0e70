#!/usr/bin/env bash
# bench_mutex.sh: the cost of the lock interposers on the uncontended path
# (one try-lock, no clock), in ns per lock+unlock pair of one thread, without
# the library, with it at the default PROFEP_MUTEX_RATE, and with
# PROFEP_MUTEX_RATE=0 (pure pass-through).  The three alternate run by run so
# that drift on a shared machine hits them alike; each figure is the best of
# its runs.  Reports ratios; never passes or fails.
set -u
BUILD=${1:-build}
LIB=$PWD/$BUILD/libprofendpoints.so
BIN=$BUILD/test/bench_mutex
ITER=${BENCH_MUTEX_ITER:-10000000}
ROUNDS=${BENCH_MUTEX_ROUNDS:-7}
mkdir -p "$BUILD/test"
cc -std=gnu11 -D_GNU_SOURCE -O2 -g -o "$BIN" test/bench_mutex.c -lpthread || exit 0

run() { # mode idle -> "mutex NS\nrwlock NS"
    case $1 in
    none) "$BIN" "$ITER" 1 "$2" ;;
    default) PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB "$BIN" "$ITER" 1 "$2" 2>/dev/null ;;
    off) PROFEP_MUTEX_RATE=0 PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB "$BIN" "$ITER" 1 "$2" 2>/dev/null ;;
    esac
}

measure() { # idle(0|1) label
    local res=$T/res.$1 mode
    : >"$res"
    for _ in $(seq "$ROUNDS"); do
        for mode in none default off; do
            run $mode "$1" | sed "s/^/$mode /" >>"$res"
        done
    done
    echo "uncontended lock+unlock, $2 (best of $ROUNDS runs of $ITER pairs):"
    awk '{ k = $1 " " $2; if (!(k in b) || $3 < b[k]) b[k] = $3 }
         END { split("mutex rwlock", kinds, " ")
               for (i = 1; i <= 2; i++) { x = kinds[i]; n = b["none " x]; d = b["default " x]; o = b["off " x]
                   printf "  %-6s %6.2f ns without | %6.2f ns default rate, ratio %.3f | %6.2f ns rate 0, ratio %.3f\n",
                          x, n, d, d / n, o, o / n } }' "$res"
}

T=$(mktemp -d /tmp/pe-bench-mutex.XXXXXX)
trap 'rm -rf "$T"' EXIT
# A multi-threaded program: every run takes glibc's atomic path, so the ratio
# is the interposer's own cost.
measure 1 "program with a second (idle) thread"
# A single-threaded program: alone, glibc locks a mutex without atomics; the
# library's own server threads end that, whatever the interposer does.
measure 0 "single-threaded program"
