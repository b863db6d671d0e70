#!/usr/bin/env bash
# e2e_fleet: the paths fleet scrapers ask for (Grafana Alloy's pyroscope.scrape
# defaults, Parca, the OpenTelemetry Collector's pprof receiver), on a busy
# service (test/progs/p_fleet.c): each answers within its seconds plus a margin, is
# read by `go tool pprof` and by Go's github.com/google/pprof/profile parser
# as Debian packages it (test/e2e/goparse), with Go's sample and period type names;
# godeltaprof's delta_heap, delta_mutex and delta_block give the change since
# the previous call of that path (allocations and contention), in-use absolute,
# checked against the service's own ground truth; fgprof's /debug/fgprof sees
# on- and off-CPU threads.
cd "$(dirname "$0")/../.." || exit 1
scripts/deps.sh fleet >/dev/null 2>&1 || echo "note: scripts/deps.sh fleet failed"
source test/e2e/lib.sh
P=$BUILD/test

GOPARSE=$T/goparse
if [ -d /usr/share/gocode/src/github.com/google/pprof/profile ]; then
    env -u GOFLAGS GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$GOPARSE" ./test/e2e/goparse \
        >$T/gobuild.log 2>&1 || { cat $T/gobuild.log; bad "build test/e2e/goparse"; }
else
    bad "golang-github-google-pprof-dev not installed (scripts/deps.sh fleet)"
fi

mkfifo $T/cmd
PE_ENV="PROFEP_MUTEX_RATE=1" pe_start $P/p_fleet $T/cmd || exit 1
exec 3>$T/cmd
for _ in $(seq 100); do grep -q ready "$PE_OUT" && break; sleep 0.05; done
cmd() { # send one command, wait for its "done"
    local before
    before=$(grep -c '^done' "$PE_OUT")
    echo "$1" >&3
    for _ in $(seq 600); do
        [ "$(grep -c '^done' "$PE_OUT")" -gt "$before" ] && return 0
        sleep 0.05
    done
    return 1
}
# fetch NAME PATH LIMIT_S: status 200 within LIMIT_S seconds, saved as $T/NAME.pb.gz
# (limits: 10 s for a quick path, the profile's seconds + 10 s for a timed one, the
# scrapers' usual timeout, which a loaded machine still meets)
fetch() {
    local t0=$SECONDS st
    st=$(curl -s -o "$T/$1.pb.gz" -w '%{http_code}' --max-time $(($3 + 30)) "http://$PE_ADDR$2")
    check "$2: 200 within $3 s ($st, $((SECONDS - t0)) s)" [ "$st" = 200 ] && [ $((SECONDS - t0)) -le "$3" ]
}
# parsed NAME TYPES [PERIOD]: Go's parser reads it, with these types (and period type)
parsed() {
    local line
    line=$("$GOPARSE" "$T/$1.pb.gz" 2>&1)
    echo "$line" >"$T/$1.go"
    check "$1: Go's profile parser reads it, types $2" grep -q " types=$2 " <<<"$line"
    [ -n "${3:-}" ] && check "$1: period type $3" grep -q " period=$3:" <<<"$line"
    check "$1: go tool pprof reads it" bash -c "go tool pprof -raw $T/$1.pb.gz >/dev/null 2>&1"
}
# value NAME FUNC SAMPLE_INDEX: that function's cum value (go tool pprof)
value() { # NAME FUNC SAMPLE_INDEX: that function's cum value, in base units
    go tool pprof -top -cum -unit=B -sample_index="$3" -show="$2" "$T/$1.pb.gz" 2>/dev/null |
        awk -v f="$2" '$NF == f && NF >= 6 { v = $4; u = v; gsub(/[^0-9.]/, "", v); gsub(/[0-9.]/, "", u)
            m = (u == "s") ? 1e9 : (u == "ms") ? 1e6 : (u == "us") ? 1e3 : 1
            printf "%.0f\n", v * m; exit }'
}
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# ---- Alloy's default paths, back to back ------------------------------------------
cmd "fight 300"
fetch profile '/debug/pprof/profile?seconds=2' 12
parsed profile 'samples/count,cpu/nanoseconds' 'cpu/nanoseconds'
check "profile: names the busy thread's function" grep -q 'fleet_busy_step' $T/profile.go
fetch allocs /debug/pprof/allocs 10
parsed allocs 'alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes' 'space/bytes'
fetch goroutine /debug/pprof/goroutine 10
parsed goroutine 'goroutine/count'
check "goroutine: every thread's stack (fleet_sleeper, fleet_churn)" \
    bash -c "grep -q fleet_sleeper $T/goroutine.go && grep -q fleet_churn $T/goroutine.go"
fetch mutex /debug/pprof/mutex 10
parsed mutex 'contentions/count,delay/nanoseconds' 'contentions/count'
fetch block /debug/pprof/block 10
parsed block 'contentions/count,delay/nanoseconds' 'contentions/count'
fetch fgprof '/debug/fgprof?seconds=2' 12
parsed fgprof 'samples/count,time/nanoseconds' 'wallclock/nanoseconds'
busy=$(value fgprof fleet_busy 0)
sleepy=$(value fgprof fleet_sleeper 0)
echo "  fgprof samples: fleet_busy=$busy fleet_sleeper=$sleepy (2 s at 100 Hz: ~200 each)"
check "fgprof: on-CPU and off-CPU threads alike (~200 samples each)" \
    eval "between ${busy:-0} 120 260 && between ${sleepy:-0} 120 260"
check "fgprof: folded view works too" \
    bash -c "curl -s --max-time 30 'http://$PE_ADDR/debug/fgprof?seconds=1&format=folded' | grep -q 'fleet_sleeper.* [0-9]'"

# ---- godeltaprof: delta_heap --------------------------------------------------------
fetch dh0 /debug/pprof/delta_heap 10 # the first call: since start; sets the baseline
parsed dh0 'alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes'
cmd "alloc 2147483648"
cmd "hold 104857600"
fetch dh1 /debug/pprof/delta_heap 10
a1=$(value dh1 fleet_alloc_site alloc_space)
h1=$(value dh1 fleet_hold_site inuse_space)
echo "  delta_heap after 2 GiB allocated, 100 MiB held: alloc_space=$a1 inuse(hold)=$h1"
check "delta_heap: the change since the previous call (2 GiB within 10%: $a1)" \
    between "${a1:-0}" 1932735283 2362232012
check "delta_heap: in-use is absolute (100 MiB within 15%: $h1)" between "${h1:-0}" 89128960 120586240
fetch dh2 /debug/pprof/delta_heap 10
a2=$(value dh2 fleet_alloc_site alloc_space)
h2=$(value dh2 fleet_hold_site inuse_space)
echo "  delta_heap again at once: alloc_space=${a2:-0} inuse(hold)=$h2"
check "delta_heap: nothing allocated since, nothing shown (${a2:-0} < 1% of 2 GiB)" \
    between "${a2:-0}" 0 21474836
check "delta_heap: in-use still absolute ($h2 = $h1)" [ "${h2:-x}" = "${h1:-y}" ]
fetch cum /debug/pprof/allocs 10
ac=$(value cum fleet_alloc_site alloc_space)
check "the cumulative path is not affected by delta calls ($ac >= 2 GiB - 10%)" \
    between "${ac:-0}" 1932735283 99999999999

# ---- godeltaprof: delta_mutex, delta_block ---------------------------------------------
fetch dm0 /debug/pprof/delta_mutex 10
parsed dm0 'contentions/count,delay/nanoseconds' 'contentions/count'
fetch db0 /debug/pprof/delta_block 10
parsed db0 'contentions/count,delay/nanoseconds'
c0=$(value dm0 fleet_fight_lock contentions)
check "delta_mutex: the first call holds what came since start (${c0:-0} > 0)" between "${c0:-0}" 1 1e12
fetch dm1 /debug/pprof/delta_mutex 10
c1=$(value dm1 fleet_fight_lock contentions)
check "delta_mutex: nothing fought since, nothing shown (${c1:-0})" between "${c1:-0}" 0 0
cmd "fight 300"
fetch dm2 /debug/pprof/delta_mutex 10
fetch db2 /debug/pprof/delta_block 10
c2=$(value dm2 fleet_fight_lock contentions)
b2=$(value db2 fleet_fight_lock contentions)
check "delta_mutex: a new fight shows (${c2:-0} > 0)" between "${c2:-0}" 1 1e12
check "delta_block: each path keeps its own baseline (${b2:-0} > 0)" between "${b2:-0}" 1 1e12
fetch mc /debug/pprof/mutex 10
mc=$(value mc fleet_fight_lock contentions)
check "cumulative mutex = both fights (${mc:-0} >= ${c0:-0} + ${c2:-0})" \
    [ "${mc:-0}" -ge $((${c0:-0} + ${c2:-0})) ]

echo quit >&3
exec 3>&-
wait "$PE_PID"; st=$?; PE_PID=
check "the service exits 0 after all this ($st)" [ "$st" = 0 ]
pe_finish
