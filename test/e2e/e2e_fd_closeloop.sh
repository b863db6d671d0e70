#!/usr/bin/env bash
# e2e_fd_closeloop: a program that keeps closing every descriptor (a close
# loop, close_range, closefrom) and at once makes and checks a pipe and a
# listening socket of its own (test/progs/p_fd_closeloop.c), while the
# library makes descriptors as fast as we can make it: a 1000 Hz wall
# profile (our /proc reads of its sleeping threads), goroutine dumps, CPU
# profiles (perf events opened), a stream of requests (accepted
# connections).  Every round of the program's stays right: its pipe and
# listener are never closed, read or replaced by us (preload/fd.h, "Born
# low"; e2e_host_matrix's close_all row once saw its listener refuse a
# connection).  Every request answers 200 (or 503 where an engine is refused).
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl

SECS=8
pe_start $P/p_fd_closeloop $T/stop $SECS || exit 1
end=$((SECONDS + SECS - 1))
(
    while [ $SECONDS -lt $end ]; do
        echo "$(pe_status '/profile_wall?duration=2&delay=0.001')" >>$T/st.wall
    done
) &
(
    while [ $SECONDS -lt $end ]; do
        echo "$(pe_status '/profile?duration=1&delay=0.001')" >>$T/st.cpu
    done
) &
(
    while [ $SECONDS -lt $end ]; do
        echo "$(pe_status '/debug/pprof/goroutine?debug=2')" >>$T/st.dump
        echo "$(pe_status '/debug/pprof/cmdline')" >>$T/st.dump
    done
) &
wait $(jobs -p | grep -v "^$PE_PID\$")
wait $PE_PID; rc=$?; PE_PID=
cat $T/st.* >$T/st
sed 's/^/  /' $PE_OUT; grep -v '^profendpoints: serving' $PE_ERR | head -5 | sed 's/^/  /'
check "the program ran rounds ($(cat $PE_OUT))" grep -Eq '^rounds=[1-9][0-9]* ' $PE_OUT
check "every round's pipe and listener stayed its own (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -Eq ' bad=0$' $PE_OUT"
check "requests were answered ($(sort $T/st | uniq -c | tr -s ' \n' ' '))" \
    bash -c "[ \$(grep -c '^200$' $T/st) -ge 5 ] && ! grep -vqE '^(200|503)$' $T/st"
pe_finish
