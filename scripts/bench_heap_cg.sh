#!/usr/bin/env bash
# bench_heap_cg.sh [BUILD] [OPS]: what heap sampling costs per sample, in
# instructions and simulated cache misses (valgrind --tool=callgrind
# --cache-sim=yes): repeatable when the machine is loaded, unlike timings.
# Runs `bench_heap mt OPS` (2 threads x OPS free+malloc pairs) under
# LD_PRELOAD of BUILD/libprofendpoints.so with PROFEP_HEAP_RATE=0 (off) and
# at the default rate (on), and prints
#   - the whole run's events, on minus off, per sample (alloc and free sides
#     together, everything sampling changes) and as a share of the run off;
#   - the inclusive events per sample of the sampled path's parts;
#   - the floor, the same for shim_unwind over shim_checks (bench_heap.sh:
#     the draw and one unw_backtrace per sample point, nothing recorded).
# Cache model: D1 48 KiB 12-way, "LL" 1 MiB 16-way (this VM's per-core L2),
# so LL misses are what leaves the core.  Never pass/fail.
set -u
BUILD=${1:-build}
OPS=${2:-500000}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=${BENCH_LIB:-$BUILD/libprofendpoints.so}
B=$BUILD/test/bench_heap
T=$(mktemp -d /tmp/pe_bench_heap_cg.XXXXXX)
trap 'rm -rf "$T"' EXIT
# BENCH_CG_KEEP=DIR keeps the callgrind outputs (on, off) there
command -v valgrind >/dev/null || { echo "bench_heap_cg: valgrind not installed"; exit 0; }
mkdir -p "$BUILD/test"
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$B" test/bench/bench_heap.c || exit 1

cc -O2 -shared -fPIC -DSHIM_CHECKS -o "$T/shimc.so" test/bench/bench_heap_shim.c || exit 1
cc -O2 -shared -fPIC -DSHIM_UNWIND -o "$T/shimu.so" test/bench/bench_heap_shim.c -ldl -lm || exit 1

cg() { # RATE OUT [PRELOAD]
    LD_PRELOAD=${3:-$LIB} PROFEP_ADDR=off PROFEP_LOG=warn PROFEP_HEAP_RATE=$1 \
        valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
        --LL=1048576,16,64 --callgrind-out-file="$2" "$B" mt "$OPS" >/dev/null 2>&1
}
cg 0 "$T/off" &
cg 524288 "$T/on"
wait
cg 0 "$T/shimc" "$T/shimc.so" &
cg 0 "$T/shimu" "$T/shimu.so"
wait
[ -n "${BENCH_CG_KEEP:-}" ] && mkdir -p "$BENCH_CG_KEEP" && cp "$T/on" "$T/off" "$BENCH_CG_KEEP/"

# totals line: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
tot() { grep '^summary:' "$1" | cut -d' ' -f2-; }
ann() { callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null; }
ann "$T/on" >"$T/on.txt"
ann "$T/off" >"$T/off.txt"
callgrind_annotate --tree=caller --threshold=100 "$T/on" 2>/dev/null >"$T/on.tree"
NS=$(grep -m1 -E '=> .*:pe_heap_live_insert \(' "$T/on.tree" | sed -E 's/.*\(([0-9,]+)x\).*/\1/' | tr -d ,)
[ -n "$NS" ] && [ "$NS" -gt 0 ] || { echo "bench_heap_cg: no samples found"; exit 1; }
read -r -a on <<<"$(tot "$T/on")"
read -r -a off <<<"$(tot "$T/off")"
echo "bench_heap_cg: mt 2 x $OPS pairs, $NS samples; per sample (on - off, / samples):"
awk -v ns="$NS" -v on="${on[*]}" -v off="${off[*]}" 'BEGIN {
    split(on, a, " "); split(off, b, " ")
    dm = (a[5] + a[6]) - (b[5] + b[6]); lm = (a[8] + a[9]) - (b[8] + b[9])
    printf "  Ir %.0f  D1 misses %.1f  LL(L2) misses %.1f  I1 misses %.1f\n", (a[1] - b[1]) / ns, dm / ns, lm / ns, (a[4] - b[4]) / ns
    printf "  share of the run off: Ir %+.2f%%  D1 misses %+.2f%%  L2 misses %+.2f%%\n", (a[1] / b[1] - 1) * 100,
        dm / (b[5] + b[6]) * 100, lm / (b[8] + b[9]) * 100
}'
echo "  parts, inclusive per sample: Ir, D1 misses (rd+wr), L2 misses (rd+wr)"
echo "  (pe_unwind_here: the two threads' creation stacks for threadcreate, present with sampling off"
echo "   too; free_unusual: also frees of unsampled blocks at a page start; neither is sampling's)"
for f in pe_heap_alloc_slow pe_unwind_here pe_heap_unwind backtrace pe_heap_stacks_intern \
    pe_heap_live_insert pe_heap_stacks_account pe_heap_tag_alloc pe_heap_weight_fx \
    pe_heap_interval_step pe_heap_free_slow free_unusual; do
    grep -m1 -E "[:]$f \[" "$T/on.txt" | sed -e 's/([^)]*)//g' -e 's/ \. / 0 /g' | tr -d , |
        awk -v ns="$NS" -v f="$f" '{ printf "    %-24s %7.0f %6.1f %6.1f\n", f, $1 / ns, ($5 + $6) / ns, ($8 + $9) / ns }'
done
callgrind_annotate --tree=calling --threshold=100 "$T/shimu" 2>/dev/null >"$T/shimu.tree"
NU=$(grep -m1 -E '> .*:backtrace \(' "$T/shimu.tree" | sed -E 's/.*\(([0-9,]+)x\).*/\1/' | tr -d ,)
read -r -a su <<<"$(tot "$T/shimu")"
read -r -a sc <<<"$(tot "$T/shimc")"
[ -n "$NU" ] && awk -v ns="$NU" -v on="${su[*]}" -v off="${sc[*]}" 'BEGIN {
    split(on, a, " "); split(off, b, " ")
    dm = (a[5] + a[6]) - (b[5] + b[6]); lm = (a[8] + a[9]) - (b[8] + b[9])
    printf "floor, shim_unwind - shim_checks, %d samples: per sample Ir %.0f  D1 misses %.1f  L2 misses %.1f;", ns, (a[1] - b[1]) / ns, dm / ns, lm / ns
    printf " share: Ir %+.2f%%  D1 misses %+.2f%%\n", (a[1] / b[1] - 1) * 100, dm / (b[5] + b[6]) * 100
}'
