#!/usr/bin/env bash
# bench_dwarf.sh: symbols/dwarf.c against `llvm-symbolizer --inlining` on the same
# addresses, as ratios (never pass/fail; not run by make test):
#   (a) the small program of test/progs/dwarf (gcc -O2 -g), every byte of .text, repeated to N;
#   (b) libc with libc6-dbg (debug file found by build id), N addresses spread over .text;
#   (c) a C++ program with >= 50 MB of DWARF, generated here (template-heavy TUs built
#       with g++ -O2 -g; BENCH_DWARF_TUS and BENCH_DWARF_TYPES change its size).
# For each: wall and CPU time and peak RSS (/usr/bin/time -v) of a tiny driver
# (test/bench/dw_resolve.c, which prints what llvm-symbolizer prints) and of
# llvm-symbolizer, the ratios llvm/ours, and how often the innermost file:line agree.
# Usage: scripts/bench_dwarf.sh [BUILD]   (N=20000 addresses by default)
set -u
BUILD=${1:-build}
N=${N:-20000}
TUS=${BENCH_DWARF_TUS:-24}
TYPES=${BENCH_DWARF_TYPES:-8}
cd "$(dirname "$0")/.." || exit 2
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
command -v llvm-symbolizer >/dev/null || { echo "bench_dwarf: needs llvm-symbolizer"; exit 1; }
[ -x /usr/bin/time ] || { echo "bench_dwarf: needs GNU time (apt-get install time)"; exit 1; }
make --no-print-directory "$BUILD/libpe_core.a" >/dev/null || exit 1
T=$(mktemp -d /tmp/pe-bench-dwarf.XXXXXX)
trap 'rm -rf $T' EXIT
${CC:-cc} -O2 -g -I. -o "$T/dw_resolve" test/bench/dw_resolve.c "$BUILD/libpe_core.a" -lz ||
    { echo "bench_dwarf: build failed"; exit 1; }

# addresses BIN COUNT EVERY_BYTE: COUNT hex addresses over BIN's .text (every byte, wrapping,
# or spread evenly)
addresses() {
    local lo size step i
    read -r lo size < <(readelf -SW "$1" 2>/dev/null |
        sed -n 's/.* \.text *PROGBITS *\([0-9a-f]*\) *[0-9a-f]* *\([0-9a-f]*\).*/\1 \2/p' | head -n 1)
    lo=$((16#$lo)) size=$((16#$size))
    step=$(($3 ? 1 : size / $2))
    ((step < 1)) && step=1
    for ((i = 0; i < $2; i++)); do printf '0x%x\n' $((lo + (i * step) % size)); done
}

# dwarf_mb FILE: megabytes of .debug_* sections as stored (compressed ones compressed)
dwarf_mb() {
    local s=0 sz
    for sz in $(readelf -SW "$1" 2>/dev/null | sed -n 's/.* \.debug_[a-z_]* *PROGBITS *[0-9a-f]* *[0-9a-f]* *\([0-9a-f]*\).*/\1/p'); do
        s=$((s + 16#$sz))
    done
    awk -v s=$s 'BEGIN { printf "%.1f", s / 1048576 }'
}

# measure NAME OUT CMD...: runs CMD < $T/addrs, sets wall, cpu and rss (kB)
measure() {
    local name=$1 out=$2
    shift 2
    /usr/bin/time -v -o "$T/$name.time" "$@" <"$T/addrs" >"$out" 2>/dev/null
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
        for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$T/$name.time")
    cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$T/$name.time")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$T/$name.time")
}

# agreement OURS LLVM: percent of addresses whose first file:line is the same (line 0 is
# "no line" either way: llvm then names the symbol table's file, we say ??)
agreement() {
    awk 'BEGIN { RS = "" } { split($0, l, "\n"); loc = l[2]; sub(/:[0-9]+$/, "", loc)
        if (loc ~ /:0$/) loc = "?:0"
        if (FILENAME == ARGV[1]) a[FNR] = loc; else { t++; if (a[FNR] == loc) s++ } }
        END { printf "%.1f", t ? 100 * s / t : 0 }' "$1" "$2"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }

# row LABEL OBJ [BUILD_ID DEBUG_DIR]
row() {
    local label=$1 obj=$2 bid=${3:-} ddir=${4:-/usr/lib/debug}
    local ow oc orss lw lc lrss
    measure ours "$T/ours.out" "$T/dw_resolve" "$obj" "$bid" "$ddir"
    ow=$wall oc=$cpu orss=$rss
    measure llvm "$T/llvm.out" llvm-symbolizer --inlining --no-demangle --obj="$obj"
    lw=$wall lc=$cpu lrss=$rss
    printf '%s, %d addresses:\n' "$label" "$(wc -l <"$T/addrs")"
    printf '    ours  wall %6.2f s  cpu %6.2f s  peak RSS %7d kB\n' "$ow" "$oc" "$orss"
    printf '    llvm  wall %6.2f s  cpu %6.2f s  peak RSS %7d kB\n' "$lw" "$lc" "$lrss"
    printf '    llvm/ours: wall %sx  cpu %sx  RSS %sx;  innermost file:line the same: %s%%\n' \
        "$(ratio "$lw" "$ow")" "$(ratio "$lc" "$oc")" "$(ratio "$lrss" "$orss")" \
        "$(agreement "$T/ours.out" "$T/llvm.out")"
}

echo "bench_dwarf: N=$N, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"

# (a) the small program
S=test/progs/dwarf
g++ -O2 -g -o "$T/small" -x c $S/dw_main.c -x c $S/dw_util.c -x c++ $S/dw_cxx.cc ||
    { echo "bench_dwarf: building the small program failed"; exit 1; }
addresses "$T/small" "$N" 1 >"$T/addrs"
row "small ($(dwarf_mb "$T/small") MB DWARF)" "$T/small"

# (b) libc with libc6-dbg
LIBC=/lib/x86_64-linux-gnu/libc.so.6
BID=$(readelf -n $LIBC 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -n 1)
DBG=/usr/lib/debug/.build-id/${BID:0:2}/${BID:2}.debug
if [ -n "$BID" ] && [ -f "$DBG" ]; then
    addresses $LIBC "$N" 0 >"$T/addrs"
    row "libc ($(dwarf_mb "$DBG") MB DWARF, zlib)" $LIBC "$BID" /usr/lib/debug
else
    echo "libc: skipped (libc6-dbg is not installed)"
fi

# (c) a big C++ program: TUS units of TYPES template-heavy functions each
mkdir -p "$T/big"
for ((u = 0; u < TUS; u++)); do
    {
        printf '#include <algorithm>\n#include <map>\n#include <memory>\n#include <string>\n'
        printf '#include <unordered_map>\n#include <vector>\n'
        printf 'template <int N> struct K { long a; double b; std::string s;\n'
        printf '  bool operator<(const K &o) const { return a < o.a || (a == o.a && s < o.s); }\n'
        printf '  bool operator==(const K &o) const { return a == o.a && s == o.s; } };\n'
        printf 'template <int N> struct KH { size_t operator()(const K<N> &k) const {\n'
        printf '  return std::hash<long>()(k.a) ^ std::hash<std::string>()(k.s); } };\n'
        printf 'template <typename T> __attribute__((always_inline)) inline long mix(const T &t, long x)\n'
        printf '{ return (x * 31 + (long)t.size()) ^ (x >> 7); }\n'
        for ((i = 0; i < TYPES; i++)); do
            n=$((u * 1000 + i))
            cat <<EOF
__attribute__((noinline)) long work_$n(int n) {
    std::map<K<$n>, std::vector<K<$n>>> m;
    std::unordered_map<K<$n>, std::shared_ptr<K<$n>>, KH<$n>> h;
    for (int i = 0; i < n; i++) {
        K<$n> k{i, i * 0.5, std::to_string(i)};
        m[k].push_back(k);
        h.emplace(k, std::make_shared<K<$n>>(k));
    }
    long r = 0;
    for (auto &kv : m) { std::sort(kv.second.begin(), kv.second.end()); r = mix(kv.second, r); }
    for (auto &kv : h) r += kv.second->a;
    return r;
}
EOF
        done
        printf 'long tu_%d(int n) { long r = 0;\n' "$u"
        for ((i = 0; i < TYPES; i++)); do printf '  r += work_%d(n);\n' $((u * 1000 + i)); done
        printf '  return r; }\n'
    } >"$T/big/t$u.cc"
done
{
    for ((u = 0; u < TUS; u++)); do printf 'long tu_%d(int);\n' "$u"; done
    printf 'int main(int argc, char **argv) { long r = 0;\n'
    for ((u = 0; u < TUS; u++)); do printf '  r += tu_%d(argc);\n' "$u"; done
    printf '  return (int)(r & 1); }\n'
} >"$T/big/main.cc"
echo "building the C++ program ($TUS units; a few minutes)..."
(cd "$T/big" && ls ./*.cc | xargs -P "$(nproc)" -I{} g++ -O2 -g -c {} -o {}.o &&
    g++ -o big ./*.o) || { echo "bench_dwarf: building the C++ program failed"; exit 1; }
addresses "$T/big/big" "$N" 0 >"$T/addrs"
row "C++ ($(dwarf_mb "$T/big/big") MB DWARF)" "$T/big/big"
