#!/usr/bin/env bash
# e2e_exec_requests: requests of every kind keep coming while a program
# re-execs itself (test/progs/p_host_exec_huge, 8 images with a second
# thread each, each asking its own server for a 1000 Hz wall profile).
# Every image serves on the port its first one announced, so a client keeps
# its address: each answer is 200, 503 (with why: the program is calling
# exec, the server is starting) or no answer at all (the image went away
# under the request).  Never civetweb's own 404 (a request between the new
# image's listen and its handler), never a 500 (a profile asked for while
# the signal is handed on to the new image was "failed to start: Resource
# temporarily unavailable").
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl

mkfifo $T/in
(exec env PE_ROW_GENS=8 PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port.%p LD_PRELOAD=$LIB \
    PROFEP_HEAP_RATE=1 $P/p_host_exec_huge <$T/in >$T/out 2>$T/err) &
pid=$!
exec 3>$T/in
eventually 10 test -s $T/port.$pid || bad "no port file"
addr=$(cat $T/port.$pid)
# hammer NAME PATH: requests one after another until the program is done
hammer() {
    local st end=$((SECONDS + 20))
    while [ $SECONDS -lt $end ] && ! grep -q HOST-ROW-DONE $T/out 2>/dev/null; do
        st=$(curl -s -o $T/b.$1 -w '%{http_code}' --max-time 20 "http://$addr$2")
        echo "$st" >>$T/st
        case $st in 200 | 503 | 000) ;; *) echo "$st $2: $(head -c 200 $T/b.$1)" >>$T/why ;; esac
    done
}
hammer 1 '/debug/pprof/goroutine?debug=2' &
hammer 2 '/profile?duration=0.3&delay=0.001' &
hammer 3 '/profile_wall?duration=0.3&delay=0.001' &
hammer 4 '/allocs_profile?duration=0.3&sample_rate=1' &
hammer 5 '/heap_snapshot' &
hammer 6 '/debug/pprof/heap' &
wait $(jobs -p | grep -v "^$pid\$")
exec 3>&-
wait $pid; rc=$?
echo "  answers: $(sort $T/st | uniq -c | tr -s ' \n' ' ')"
check "the program ran its 8 images and exited 0 (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -q HOST-ROW-DONE $T/out"
check "requests were answered 200 ($(grep -c '^200$' $T/st))" grep -q '^200$' $T/st
check "every answer is 200, 503 or none ($(sort $T/why 2>/dev/null | uniq -c | head -3 | tr '\n' ';'))" \
    [ ! -s $T/why ]
pe_finish
