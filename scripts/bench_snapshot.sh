#!/usr/bin/env bash
# bench_snapshot.sh [BUILD]: how long /heap_snapshot takes with tens of
# thousands of live samples, next to /debug/pprof/heap on the same live heap
# (the same stacks, aggregated instead of one node per sample).
# p_heap_three keeps 100+50+50 MiB in blocks of 16 B .. 2 KiB (about 480,000
# blocks) under PROFEP_HEAP_RATE=4096, which leaves about 50,000 of them
# sampled in the live table.  Each request runs BENCH_RUNS times (default 7),
# interleaved; the minimum is reported with the median in brackets, plus the
# document's size, the objects in it, and the workload's peak RSS growth across
# all the requests (the library's temporary memory).  Never pass/fail.
set -u
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${BENCH_RUNS:-7}
LIB=$BUILD/libprofendpoints.so
P=$BUILD/test/p_heap_three
T=$(mktemp -d /tmp/pe_bench_snap.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$T"' EXIT
[ -f "$LIB" ] && [ -x "$P" ] || { echo "bench_snapshot: build $LIB and $P first (make tests)"; exit 1; }

mkfifo "$T/in"
PROFEP_HEAP_RATE=4096 PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$T/port" PROFEP_LOG=warn \
    LD_PRELOAD=$LIB "$P" 100 50 50 10 0 600 <"$T/in" >"$T/out" 2>&1 &
PID=$!
exec 3>"$T/in"
for _ in $(seq 600); do grep -q '^ready' "$T/out" 2>/dev/null && [ -s "$T/port" ] && break; sleep 0.1; done
grep -q '^ready' "$T/out" || { echo "bench_snapshot: workload did not start"; cat "$T/out"; exit 1; }
ADDR=$(cat "$T/port")
hwm() { awk '/^VmHWM/ { print $2 }' /proc/$PID/status; }
rss0=$(hwm)

# seconds for one GET, body kept in $2
get() { curl -s -m 120 -o "$2" -w '%{time_total}\n' "http://$ADDR$1"; }
get /heap_snapshot "$T/warm.json" >/dev/null # symbol tables loaded once, as for any profile
for _ in $(seq "$RUNS"); do
    get /heap_snapshot "$T/snap.json" >>"$T/t.snap"
    get /debug/pprof/heap "$T/heap.pb.gz" >>"$T/t.heap"
done
rss1=$(hwm)
exec 3>&-
wait $PID 2>/dev/null
PID=

mstat() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%.1f %.1f", v[1] * 1000, v[int((NR + 1) / 2)] * 1000 }'; }
read -r smin smed <<<"$(mstat "$T/t.snap")"
read -r hmin hmed <<<"$(mstat "$T/t.heap")"
objs=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["snapshot"]; print(s["node_count"], s["edge_count"])' \
    "$T/snap.json" 2>/dev/null)
read -r nodes edges <<<"${objs:-? ?}"
bytes=$(stat -c %s "$T/snap.json" 2>/dev/null || echo 0)
echo "bench_snapshot: p_heap_three 100+50+50 MiB in 16 B..2 KiB blocks, PROFEP_HEAP_RATE=4096, $RUNS runs each"
printf '%-22s %12s %14s\n' request "ms (min)" "[median]"
printf '%-22s %12s %14s   %s nodes, %s edges, %.1f MB\n' /heap_snapshot "$smin" "[$smed]" "$nodes" "$edges" \
    "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')"
printf '%-22s %12s %14s\n' /debug/pprof/heap "$hmin" "[$hmed]"
awk -v a="$smin" -v b="$hmin" 'BEGIN { if (b > 0) printf "snapshot / pprof heap: %.2f\n", a / b }'
echo "workload peak RSS growth over all requests: $(((rss1 - rss0) / 1024)) MiB (VmHWM $((rss0 / 1024)) -> $((rss1 / 1024)) MiB)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
