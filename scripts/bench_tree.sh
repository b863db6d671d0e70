#!/usr/bin/env bash
# bench_tree.sh: process trees (issue 18), called by scripts/bench.sh.
#  - fork+exec cost: test/progs/p_tree storm (fork+exec /bin/true, and fork+_exit)
#    without the library, with the library before process trees (BEFORE_LIB,
#    default /work/main's build when present) and with this one;
#  - memory of 64 idle fork children: their mean VmRSS and Pss without and
#    with the library (each with its own server then).
set -u
BUILD=${1:-build}
LIB=$PWD/$BUILD/libprofendpoints.so
P=$PWD/$BUILD/test/p_tree
BEFORE_LIB=${BEFORE_LIB:-/work/main/build/libprofendpoints.so}
[ -x "$P" ] || { echo "  (no $P: make tests first)"; exit 0; }
now_ns() { date +%s%N; }
n=400
storm() { # [env...]: microseconds per fork (mean)
    local t0 t1
    t0=$(now_ns)
    env PROFEP_ADDR=127.0.0.1:0 "$@" $P storm $n >/dev/null 2>&1
    t1=$(now_ns)
    echo $(((t1 - t0) / n / 1000))
}
echo "== fork+exec and fork+_exit, x$n (p_tree storm)"
b=$(storm)
o=$(storm LD_PRELOAD=$LIB)
if [ -f "$BEFORE_LIB" ]; then
    w=$(storm LD_PRELOAD=$BEFORE_LIB)
    awk -v b=$b -v w=$w -v o=$o 'BEGIN { printf "  per fork: %d us without, %d us before process trees, %d us now; now/before %.2f\n", b, w, o, o / w }'
else
    awk -v b=$b -v o=$o 'BEGIN { printf "  per fork: %d us without, %d us with (no BEFORE_LIB to compare)\n", b, o }'
fi

echo "== 64 idle fork children: mean memory per child after 3 s"
idle() { # [env...]: "rss_kib pss_kib" means over the children
    local out=$(mktemp) root k=0 rss=0 pss=0
    env PROFEP_ADDR=127.0.0.1:0 "$@" $P idle 64 >"$out" 2>/dev/null &
    root=$!
    sleep 3
    for c in $(awk '/^idle/{print $2}' "$out"); do
        rss=$((rss + $(awk '/^VmRSS/{print $2}' /proc/$c/status)))
        pss=$((pss + $(awk '/^Pss:/{print $2}' /proc/$c/smaps_rollup)))
        k=$((k + 1))
    done
    kill -- -$root 2>/dev/null
    wait $root 2>/dev/null
    rm -f "$out"
    [ $k -gt 0 ] && echo "$((rss / k)) $((pss / k))" || echo "0 0"
}
read -r r0 p0 < <(idle)
read -r r1 p1 < <(idle LD_PRELOAD=$LIB)
echo "  VmRSS: $r0 KiB without, $r1 KiB with (+$((r1 - r0)) KiB); Pss: $p0 KiB without, $p1 KiB with (+$((p1 - p0)) KiB)"
