#!/usr/bin/env bash
# e2e_fd_ceiling: with RLIMIT_NOFILE above 1024 (ulimit -n 20000) our
# descriptors stay below 1024, at its top, as the README says (issue 38,
# item 5): p_sleep under the library while a CPU profile and a few quick
# requests are in flight; every descriptor of the process is below 1024 and
# ours (the listening socket, the requests' connections, the unwinder's
# pipes) are in its top 64.  The perf engine's events are the exception the
# README names: one per thread and CPU and the collector's eventfd, numbered
# from 1024 up where the limit leaves room (so they never take a number below
# 1024 from the program; p_sleep has no eventfd of its own).
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl

PE_ERR=$T/err PE_OUT=$T/out
bash -c "ulimit -n 20000 && exec env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port.%p \
    LD_PRELOAD=$LIB $P/p_sleep 30" >$PE_OUT 2>$PE_ERR &
PE_PID=$!
eventually 10 test -s $T/port.$PE_PID || { bad "no port file"; cat $PE_ERR; pe_finish; }
PE_ADDR=$(cat $T/port.$PE_PID)
check "the limit is 20000" grep -q '^Max open files *20000' /proc/$PE_PID/limits
cpids=
for i in 1 2 3; do
    curl -s -m 30 -o /dev/null "http://$PE_ADDR/debug/pprof/profile?seconds=2" &
    cpids="$cpids $!"
done
sleep 1
fds= perf_fds=
for f in /proc/$PE_PID/fd/*; do
    case $(readlink "$f" 2>/dev/null) in
    'anon_inode:[perf_event]' | 'anon_inode:[eventfd]') perf_fds="$perf_fds ${f##*/}" ;;
    *) fds="$fds ${f##*/}" ;;
    esac
done
fds=$(tr ' ' '\n' <<<"$fds" | grep . | sort -n)
perf_low=$(tr ' ' '\n' <<<"$perf_fds" | grep . | awk '$1 < 1024' | wc -l)
pe_get /debug/pprof/cmdline >/dev/null
wait $cpids
max=$(tail -1 <<<"$fds")
high=$(awk '$1 >= 960' <<<"$fds" | wc -l)
check "every descriptor but the perf events is below 1024 (highest $max)" [ "$max" -lt 1024 ]
check "perf events, if any, from 1024 up ($(wc -w <<<"$perf_fds") of them, $perf_low below)" [ "$perf_low" = 0 ]
check "ours are at the top of the first 1024 ($high of them from 960 up)" [ "$high" -ge 4 ]
check "the program still runs" kill -0 $PE_PID
pe_stop
pe_finish
