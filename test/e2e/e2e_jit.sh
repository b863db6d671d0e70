#!/usr/bin/env bash
# e2e_jit: JIT-like code (test/progs/p_jit.c: hand-assembled functions in anonymous
# executable pages, named only by the /tmp/perf-PID.map it writes).  Names
# come from the map (the newest line for a range, malformed lines skipped, a
# line appended mid-profile in two writes); stacks go through the JIT frames
# (a 128 KiB frame included) down to the thread's start; stacks through code
# without a frame pointer are counted as cut; a map of 1e6 entries stays
# bounded in memory and still names the code.
source test/e2e/lib.sh
# the programs' perf maps stay in /tmp after they die: remove them on any exit
MAPS=
trap 'pe_cleanup && rm -f $MAPS' EXIT
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }

rss_kb() { awk '/^VmRSS/ { print $2 }' /proc/$1/status; }

# ---- names and stacks --------------------------------------------------------------
pe_start $P/p_jit 1 || exit 1
MAPS="$MAPS /tmp/perf-$PE_PID.map"
pid=$PE_PID
pe_get '/profile?duration=3' -o $T/j.pb.gz
go tool pprof -raw $T/j.pb.gz >$T/j.raw 2>&1
check "/profile parses" grep -q '^Samples:' $T/j.raw
for fn in jit_leaf_loop jit_call_fp jit_big_frame jit_no_frame_pointer; do
    check "$fn named from the perf map ($(count_cum $T/j.pb.gz $fn))" [ "$(count_cum $T/j.pb.gz $fn)" -gt 0 ]
done
check "a later line for the same range wins (no stale_leaf_name)" \
    bash -c "! grep -q stale_leaf_name $T/j.raw"
check "malformed lines named nothing" bash -c "! grep -Eq 'bad_hex_start|not a map' $T/j.raw"
check "the line appended mid-profile (in two writes) names its code" \
    [ "$(count_cum $T/j.pb.gz jit_late_appended)" -gt 0 ]
check "JIT code has a [jit] mapping" grep -q '\[jit\]' $T/j.raw
for leaf in burn_a burn_big; do
    n=$(count_cum $T/j.pb.gz $leaf); r=$(count_cum $T/j.pb.gz worker_main -focus="^$leaf\$")
    if [ $leaf = burn_big ] && grep -q 'engine: perf' $T/j.raw; then
        # perf events copy 8 KiB of stack: a 128 KiB frame is past it, and counted so
        deep=$(sed -n 's/.* \([0-9]*\) stacks deeper than the copy.*/\1/p' $T/j.raw | head -1)
        check "$leaf (perf engine): stacks past the 8 KiB copy counted ($deep of $n)" \
            bash -c "[ ${n:-0} -gt 3 ] && [ ${deep:-0} -ge $((n - r - 2)) ]"
        continue
    fi
    check "$leaf: stacks go through the JIT frame to worker_main ($r of $n)" \
        bash -c "[ ${n:-0} -gt 3 ] && [ $((r * 100)) -ge $((n * 95)) ]"
done
n=$(count_cum $T/j.pb.gz jit_leaf_loop); r=$(count_cum $T/j.pb.gz worker_main -focus='^jit_leaf_loop$')
check "leaf in JIT code: stacks reach worker_main ($r of $n)" \
    bash -c "[ ${n:-0} -gt 3 ] && [ $((r * 100)) -ge $((n * 95)) ]"
ncut=$(sed -n 's/.*cut: \([0-9]*\) samples.*/\1/p' $T/j.raw | head -1)
nb=$(count_cum $T/j.pb.gz burn_cut)
check "stacks through code without a frame pointer counted as cut ($ncut, burn_cut $nb)" \
    bash -c "[ ${ncut:-0} -gt 0 ] && [ ${ncut:-0} -le $((nb + 2)) ]"
nr=$(count_cum $T/j.pb.gz worker_main -focus='^burn_cut$')
check "  and those stacks stop there (burn_cut reaches worker_main $nr times)" [ "$nr" -eq 0 ]
# allocation stacks (unwound from malloc, not from a signal) through the big frame
pe_get '/allocs_profile?sample_rate=1&duration=2' -o $T/a.pb.gz
n=$(count_cum $T/a.pb.gz burn_big); r=$(count_cum $T/a.pb.gz worker_main -focus='^burn_big$')
check "allocations in burn_big: stacks go through the 128 KiB JIT frame to worker_main ($r of $n)" \
    bash -c "[ ${n:-0} -gt 3 ] && [ $((r * 100)) -ge $((n * 95)) ]"
# the thread dump too: the worker's whole block, up to 3 dumps (it is under a
# JIT frame nearly always, not in the instants between calls, and a loaded
# machine may leave it unscheduled past the capture's 200 ms)
jit_frame() { grep -A1 -E '^jit_[a-z_]+\(\.\.\.\)$' | grep -Eq $'^\t\\[jit\\] \\+0x[0-9a-f]+$'; }
for _ in 1 2 3; do
    g=$(pe_get '/debug/pprof/goroutine?debug=2' | awk '/"jit-worker"/ { on = 1 } on && /^$/ { exit } on')
    jit_frame <<<"$g" && break
done
check "goroutine debug=2: the worker's stack names a JIT frame on [jit]" jit_frame <<<"$g"
[ "$checks_bad" = 0 ] || sed 's/^/  | /' <<<"$g"
# text views resolve through the same symbolizer
txt=$(pe_get '/profile?duration=1&pprof=false')
check "pprof=false text names JIT code" grep -q jit_ <<<"$txt"
pe_stop
rm -f /tmp/perf-$pid.map

# ---- a map of 1e6 entries -----------------------------------------------------------
# (names only: the RSS measured is the map's index, not libc's debug info when
# libc6-dbg is installed, which PROFEP_DEBUG_MEM bounds)
PE_ENV="PROFEP_DEBUG_MEM=0" pe_start $P/p_jit 0 1000000 || exit 1
PE_ENV=
MAPS="$MAPS /tmp/perf-$PE_PID.map"
pid=$PE_PID
for _ in $(seq 100); do grep -q late "$PE_OUT" && break; sleep 0.1; done
r0=$(rss_kb $pid)
t0=$(date +%s%N)
pe_get '/profile?duration=1' -o $T/h1.pb.gz
t1=$(date +%s%N)
r1=$(rss_kb $pid)
pe_get '/profile?duration=1' -o $T/h2.pb.gz
r2=$(rss_kb $pid)
ms=$(( (t1 - t0) / 1000000 - 1000 ))
echo "  1e6-entry map: first profile +${ms} ms over its 1 s; VmRSS $r0 -> $r1 -> $r2 KiB"
check "1e6-entry map: JIT code still named" [ "$(count_cum $T/h1.pb.gz jit_leaf_loop)" -gt 0 ]
check "1e6-entry map: index costs under 48 MiB of RSS ($(( (r1 - r0) / 1024 )) MiB)" \
    [ $((r1 - r0)) -lt $((48 * 1024)) ]
check "1e6-entry map: a second profile reads nothing again (RSS +$(( (r2 - r1) / 1024 )) MiB)" \
    [ $((r2 - r1)) -lt $((8 * 1024)) ]
pe_stop
rm -f /tmp/perf-$pid.map

# ---- a frame pointer leading astray, at 1000 Hz: nothing faults ---------------------------
pe_start $P/p_jit 0 0 garbage || exit 1
MAPS="$MAPS /tmp/perf-$PE_PID.map"
st=$(pe_get '/profile?duration=3&delay=0.001' -o $T/g.pb.gz -w '%{http_code}')
check "garbage frame pointer at 1000 Hz: profile returned ($st)" [ "$st" = 200 ]
check "  the program is still running" kill -0 $PE_PID
check "  and named (burn_garbage $(count_cum $T/g.pb.gz burn_garbage))" [ "$(count_cum $T/g.pb.gz burn_garbage)" -gt 0 ]
pe_stop
pe_finish
