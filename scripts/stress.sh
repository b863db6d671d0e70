#!/usr/bin/env bash
# stress.sh: the host program under load and faults, with the figures (make stress).
#   scripts/stress.sh [BUILD]          full: 50 clients for 30 s, 100k threads, ...
#   STRESS_SHORT=1 scripts/stress.sh   a few seconds each (test/e2e/e2e_stress.sh, in make test)
#   the full run ends with the fleet soak (scripts/soak_fleet.sh, SOAK_SECONDS=3600)
# Each scenario runs a program of known output under LD_PRELOAD while clients
# hit the endpoints, and checks that the program's stdout and exit status are
# what they are without the library, that nothing crashed, and prints the
# figures: requests served, statuses, failures, the program's result and
# throughput, peak memory with and without the library.  A 503 or 409 under
# load is a correct answer; a reset or another 5xx is a failure.  Exit 0 only
# if every check passed.
set -u
if [ -z "${BUILD:-}" ]; then BUILD=${1:-build}; fi
cd "$(dirname "$0")/.." || exit 2
source test/e2e/lib.sh
trap "" PIPE
P=$BUILD/test
for prog in p_work p_hammer p_churn p_dlstorm p_forkstorm p_ownsig p_sleep; do
    [ -x $P/$prog ] || { echo "missing $P/$prog: run make tests"; exit 2; }
done
if [ "${STRESS_SHORT:-0}" = 1 ]; then
    SECS=5 CLIENTS=20 THREADS=20000 DLSECS=3 FORKS=300 SIGSECS=2 ROUNDS=2
else
    SECS=30 CLIENTS=50 THREADS=100000 DLSECS=10 FORKS=2000 SIGSECS=5 ROUNDS=3
fi
figures=()
fig() { figures+=("$*"); echo "  $*"; }

# peak_rss PID OUTFILE: sample VmRSS (kB) every 0.2 s until PID exits; the maximum.
peak_rss() {
    local max=0 v
    while v=$(awk '/^VmRSS:/ { print $2 }' /proc/$1/status 2>/dev/null) && [ -n "$v" ]; do
        [ "$v" -gt "$max" ] && max=$v
        sleep 0.2
    done
    echo $max >"$2"
}
# poke ADDR SECONDS PATH...: one client looping over PATHs with curl (quiet).
poke() {
    local addr=$1 end=$((SECONDS + $2)); shift 2
    while [ $SECONDS -lt $end ]; do
        for p in "$@"; do
            curl -s -o /dev/null --max-time 20 "http://$addr$p" || true
        done
    done
}
# same_as_without NAME EXPECTED_STATUS PROG ARGS...: with PE_PID running the
# program under the library, wait for it and compare with a run without it.
same_as_without() {
    local name=$1 want=$2 st; shift 2
    wait $PE_PID; st=$?; PE_PID=
    local base; base=$("$@" 2>/dev/null)
    check "$name: exit status $st (expected $want)" [ "$st" = "$want" ]
    check "$name: stdout as without the library: $(head -c 80 $PE_OUT | head -n 1)" \
        [ "$(cat $PE_OUT)" = "$base" ]
    check "$name: no crash report on stderr" \
        bash -c "! grep -Eqi 'segmentation|abort|assert|sanitizer|core dumped' $PE_ERR"
}

# Every route of http/routes.c, with short durations, plus formats and bad input.
paths=()
while read -r route; do
    case $route in
    /profile | /profile_wall | /allocs_profile) paths+=("$route?duration=1") ;;
    /debug/pprof/profile | /debug/fgprof) paths+=("$route?seconds=1") ;;
    /debug_engine) paths+=("POST:$route|{\"profile_type\": \"task_backtraces\"}"
                           "POST:$route|{\"profile_type\": \"cpu_profile\", \"duration\": 1}") ;;
    /debug/pprof/symbol) paths+=("$route" "POST:$route|0x1+0x401000+0xffffffffffffffff") ;;
    *) paths+=("$route") ;;
    esac
done < <(grep -o '^ *{"/[^"]*", pe_http_h_' http/routes.c | sed 's/^ *{"\([^"]*\)".*/\1/')
paths+=("/profile?duration=1&format=text" "/profile?duration=1&pprof=false&format=flat"
        "/profile?duration=1&format=folded" "/profile?duration=1&format=svg"
        "/debug/pprof/heap?debug=1" "/debug/pprof/heap?seconds=1" "/debug/pprof/allocs?seconds=1"
        "/debug/pprof/heap?format=svg" "/debug/pprof/goroutine?debug=1"
        "/debug/pprof/goroutine?debug=2" "/heap_snapshot?all_one=true"
        "/profile?duration=abc" "/no/such/thing" "/profile?delay=0.001&duration=1")
nroutes=$(grep -c '^ *{"/[^"]*", pe_http_h_' http/routes.c)

echo "== 1. $CLIENTS clients hammer every endpoint ($nroutes routes, ${#paths[@]} paths) for $SECS s"
base_err=$T/base.err
base=$($P/p_work $SECS 0 2>$base_err)
base_rounds=$(sed -n 's/.*rounds=\([0-9]*\).*/\1/p' $base_err)
base_hwm=$(sed -n 's/.*VmHWM=\([0-9]*\).*/\1/p' $base_err)
mkdir -p $T/stage
PE_ENV="PROFEP_STAGE_DIR=$T/stage" pe_start $P/p_work $((SECS + 2)) 7 || exit 1
peak_rss $PE_PID $T/peak &
$P/p_hammer "$PE_ADDR" $SECS $CLIENTS -a "${paths[@]}" >$T/hammer.out 2>$T/hammer.err
hrc=$?
wait $PE_PID; st=$?; PE_PID=
wait
sed 's/^/  /' $T/hammer.out
head -n 5 $T/hammer.err | sed 's/^/  /'
check "hammer: no failed request (5xx other than 503, reset, stall)" [ $hrc = 0 ]
check "hammer: requests were served" grep -q 'statuses:.* 200=' $T/hammer.out
check "hammer: program exit status $st (expected 7)" [ "$st" = 7 ]
check "hammer: program output as without the library" [ "$(cat $PE_OUT)" = "$base" ]
rounds=$(sed -n 's/.*rounds=\([0-9]*\).*/\1/p' $PE_ERR)
hwm=$(sed -n 's/.*VmHWM=\([0-9]*\).*/\1/p' $PE_ERR)
peak=$(cat $T/peak)
fig "hammer: $(head -n 1 $T/hammer.out)"
fig "hammer: $(sed -n 2p $T/hammer.out)"
fig "hammer: $(sed -n 4p $T/hammer.out)"
fig "hammer: program '$(cat $PE_OUT)', exit $st; work rounds $rounds with the library under load, $base_rounds without (same machine, same time)"
fig "hammer: peak RSS $((hwm / 1024)) MB (VmHWM; sampled VmRSS max $((peak / 1024)) MB) with the library, $((base_hwm / 1024)) MB without: library +$(((hwm - base_hwm) / 1024)) MB"
check "hammer: library memory bounded (+$(((hwm - base_hwm) / 1024)) MB < 256 MB)" \
    [ $((hwm - base_hwm)) -lt 262144 ]
rm -rf $T/stage

echo "== 2. thread churn: $THREADS threads created and joined during CPU, heap and thread-stack requests"
pe_start $P/p_churn $THREADS || exit 1
start=$SECONDS
poke $PE_ADDR 600 "/profile?duration=1&delay=0.001" /debug/pprof/heap "/debug/pprof/goroutine?debug=2" \
    /debug/pprof/threadcreate "/allocs_profile?duration=1&sample_rate=0.01" /task_backtraces &
pk=$!
# Short recordings, each of whose starts stores into every live thread's TLS
# while threads exit (the registry must not let one go mid-store).
poke $PE_ADDR 600 "/allocs_profile?duration=0.02&sample_rate=0.5" &
pk="$pk $!"
same_as_without churn 0 $P/p_churn $THREADS
kill $pk 2>/dev/null; wait $pk 2>/dev/null
fig "churn: $THREADS threads in $((SECONDS - start)) s under requests: '$(cat $PE_OUT)'"

echo "== 3. dlopen/dlclose storm for $DLSECS s during profiles"
pe_start $P/p_dlstorm $DLSECS || exit 1
poke $PE_ADDR 600 "/profile?duration=1&delay=0.001" "/debug/pprof/heap" "/debug/pprof/heap?debug=1" \
    "/allocs_profile?duration=1&sample_rate=0.01" &
pk=$!
same_as_without dlstorm 0 $P/p_dlstorm 1
kill $pk 2>/dev/null; wait $pk 2>/dev/null
fig "dlstorm: $(grep -o '[0-9]* cycles' $PE_ERR) of dlopen+call+dlclose in $DLSECS s: '$(cat $PE_OUT)'"

echo "== 4. fork+exec storm: $FORKS children during profiles"
pe_start $P/p_forkstorm $FORKS || exit 1
start=$SECONDS
poke $PE_ADDR 600 "/profile?duration=1&delay=0.001" /debug/pprof/heap "/allocs_profile?duration=1" &
pk=$!
same_as_without forkstorm 0 $P/p_forkstorm $FORKS
kill $pk 2>/dev/null; wait $pk 2>/dev/null
fig "forkstorm: $FORKS forks (half exec /bin/true, which loads the library too) in $((SECONDS - start)) s: '$(cat $PE_OUT)'"

echo "== 5. the program's own SIGPROF and SIGUSR1 handlers, for $SIGSECS s of CPU"
pe_start $P/p_ownsig $SIGSECS || exit 1
sleep 0.2
st=$(pe_status "/profile?duration=1&engine=timer")
check "ownsig: a CPU profile by the timers answers 503 (SIGPROF is the program's; perf events serve it otherwise): $st" [ "$st" = 503 ]
poke $PE_ADDR 600 "/profile?duration=1" /debug/pprof/heap "/debug/pprof/goroutine?debug=2" &
pk=$!
same_as_without ownsig 0 $P/p_ownsig 0.5
kill $pk 2>/dev/null; wait $pk 2>/dev/null
fig "ownsig: '$(cat $PE_OUT)' ($(grep -o 'usr1=[0-9]* prof=[0-9]*' $PE_ERR))"

echo "== 6. exit in the middle of a profile and of heap snapshots"
for round in $(seq $ROUNDS); do
    pe_start $P/p_sleep 1.5 7 || exit 1
    for p in "/profile?duration=30" "/debug/pprof/heap?seconds=30" "/allocs_profile?duration=30" \
        "/profile_wall?duration=30"; do
        curl -s -o /dev/null --max-time 20 "http://$PE_ADDR$p" &
    done
    start=$SECONDS
    wait $PE_PID; st=$?; PE_PID=
    # prompt: far from the 30 s asked for, with room for a loaded machine (1.5 s idle)
    check "exit mid-profile ($round): status $st (7), within $((SECONDS - start)) s" \
        bash -c "[ $st = 7 ] && [ $((SECONDS - start)) -le 10 ]"
    wait
done
for round in $(seq $ROUNDS); do
    pe_start $P/p_work 1.5 5 || exit 1
    for c in 1 2 3; do
        poke $PE_ADDR 4 /debug/pprof/heap /heap_snapshot "/debug/pprof/heap?debug=1" \
            /debug/pprof/allocs &
    done
    same_as_without "exit mid-snapshot ($round)" 5 $P/p_work 0.3 5
    wait
done
fig "exit: $ROUNDS exits with 4 long requests in flight, $ROUNDS with heap snapshots back to back: statuses kept"

echo "== 7. clients that disconnect mid-request free their slot"
pe_start $P/p_sleep 30 0 || exit 1
pids=()
for _ in $(seq 8); do
    curl -s -o /dev/null --max-time 0.3 "http://$PE_ADDR/profile?duration=2" & pids+=($!)
done
wait "${pids[@]}"
sleep 3
pids=()
for i in $(seq 6); do pe_status "/profile?duration=0.5" >$T/slot.$i & pids+=($!); done
wait "${pids[@]}"
ok_slots=$(cat $T/slot.* | grep -o 200 | wc -l)
check "disconnect: 6 profiles admitted after 8 clients left mid-profile ($ok_slots of 6 got 200)" \
    [ "$ok_slots" = 6 ]
check "disconnect: the server still answers" [ "$(pe_status /debug/pprof/)" = 200 ]
pe_stop

if [ "${STRESS_SHORT:-0}" != 1 ]; then
    echo "== 8. host matrix: every p_host_* row ${PE_HOST_RUNS:-20} times, the long variants (10,000 threads)"
    PE_HOST_RUNS=${PE_HOST_RUNS:-20} PE_HOST_LONG=1 bash test/e2e/e2e_host_matrix.sh >$T/matrix.out 2>&1
    mrc=$?
    grep -E '^(row|[a-z_0-9]+ +[0-9]+ +[0-9]+$|    )|^matrix:' $T/matrix.out | sed 's/^/  /'
    check "host matrix: every run of every row passed" [ $mrc = 0 ]
    fig "host matrix: $(grep '^matrix:' $T/matrix.out)"
fi

# The fleet soak: a scraper's default schedule for SOAK_SECONDS (an hour unless
# set; skipped in the short run, whose budget is make test's).
if [ "${STRESS_SHORT:-0}" != 1 ]; then
    echo "== fleet soak (scripts/soak_fleet.sh, ${SOAK_SECONDS:-3600} s)"
    if BUILD=$BUILD scripts/soak_fleet.sh >$T/soak.out 2>&1; then
        ok "fleet soak: $(grep -m1 '^soak:' $T/soak.out)"
    else
        bad "fleet soak: $(grep -m1 '^soak:' $T/soak.out)"
    fi
    sed -n '/^soak:/,$p' $T/soak.out
    fig "fleet soak: $(grep -m1 'RSS after' $T/soak.out | sed 's/^ *//')"
fi

echo "== figures"
for f in "${figures[@]}"; do echo "  $f"; done
pe_finish
