#!/usr/bin/env bash
# bench_interpose.sh [BUILD]: what redirecting the interposers after an attach costs.
#   redirect  200 objects (generated, each calling 40 libc functions through its
#             PLT, -z now -z relro: every slot on a read-only page), the table's
#             names redirected and put back by interpose/got.c: objects, slots,
#             pages made writable and protected again, median ms of each (of 11)
#   pair      one thread of malloc(64)+free, ns per pair: no library, under
#             LD_PRELOAD, and after an attach (test/progs/attach_shim.c, the
#             in-process stand-in for the injector; heap sampling on at the
#             default rate in both), BENCH_RUNS rounds (default 5) interleaved,
#             the minimum and the median in brackets
# Measured, never pass/fail.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${BENCH_RUNS:-5}
PAIRS=${BENCH_PAIRS:-20000000}
LIB=$BUILD/libprofendpoints.so
SHIM=$BUILD/test/libpe_attach_shim.so
B=$BUILD/test/bench_interpose
T=$(mktemp -d /tmp/pe_bench_interpose.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -f "$LIB" ] && [ -f "$SHIM" ] && [ -f "$BUILD/libpe_core.a" ] ||
    { echo "bench_interpose: build first (make tests)"; exit 1; }
cc -std=gnu11 -D_GNU_SOURCE -O2 -I. -o "$B" test/bench/bench_interpose.c "$BUILD/libpe_core.a" \
    -lz -l:libprotobuf-nanopb.a -lcivetweb -ldl -lpthread -lm || exit 1

# ---- 200 objects
fns="malloc calloc realloc free posix_memalign aligned_alloc memalign valloc
     pthread_mutex_lock pthread_mutex_timedlock pthread_rwlock_rdlock pthread_rwlock_wrlock
     pthread_cond_wait pthread_cond_timedwait pthread_create dlopen dlclose close dup2 socket
     accept poll read write recv send fcntl64 epoll_wait select open openat stat fork
     sigaction signal execve system popen strlen memcpy"
for k in $(seq 0 199); do
    {
        echo '#define _GNU_SOURCE'
        echo '#include <stddef.h>'
        echo 'typedef void (*fn_t)(void);'
        for f in $fns; do echo "extern void $f(void);"; done
        echo "fn_t tab_$k[] = {"
        for f in $fns; do echo "    (fn_t)$f,"; done
        echo '};'
        echo "void call_$k(int w) {"
        for f in $fns; do echo "    if (w == -1) $f();"; done
        echo '}'
    } >"$T/lib$k.c"
    cc -shared -fPIC -O1 -w -Wl,-z,now,-z,relro -o "$T/lib$k.bench.so" "$T/lib$k.c" -lpthread ||
        exit 1
done
set -- $("$B" slots "$T" 200 11)
echo "interpose: redirect ${2} objects: ${4} slots, ${6} read-only pages opened and closed;" \
    "redirect ${8} ms, put back ${10} ms (median of 11)"

# ---- malloc+free after attach
one() { # none|preload|attach -> ns per pair
    local out=$T/pair.out go=$T/go
    rm -f "$out" "$go"
    case $1 in
    none) "$B" pair "$PAIRS" >"$out" ;;
    preload) env LD_PRELOAD="$LIB" PROFEP_ADDR=127.0.0.1:0 "$B" pair "$PAIRS" >"$out" 2>/dev/null ;;
    attach)
        rm -rf "$T/shim"; mkdir -p "$T/shim"; echo 'PROFEP_ADDR=127.0.0.1:0' >"$T/shim/settings"
        env LD_PRELOAD="$SHIM" PE_SHIM_DIR="$T/shim" PE_SHIM_LIB="$LIB" "$B" pair "$PAIRS" "$go" \
            >"$out" &
        local pid=$! i
        for i in $(seq 300); do grep -q waiting "$out" 2>/dev/null && break; sleep 0.05; done
        echo attach >"$T/shim/cmd.tmp" && mv "$T/shim/cmd.tmp" "$T/shim/cmd"
        for i in $(seq 600); do [ -s "$T/shim/reply" ] && break; sleep 0.05; done
        touch "$go"
        wait "$pid"
        ;;
    esac
    sed -n 's/^ns_per_pair //p' "$out"
}
declare -A r
for i in $(seq "$RUNS"); do
    for c in none preload attach; do r[$c]="${r[$c]:-} $(one $c)"; done
done
stat() { echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f [%.2f]", v[1], v[int((NR + 1) / 2)] }'; }
echo "interpose: malloc(64)+free pair, ns (min [median] of $RUNS): none $(stat "${r[none]}")," \
    "LD_PRELOAD $(stat "${r[preload]}"), after attach $(stat "${r[attach]}")"
