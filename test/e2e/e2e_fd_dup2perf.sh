#!/usr/bin/env bash
# e2e_fd_dup2perf: a program dup2s (and dup3s) onto every descriptor it has
# while a perf-engine CPU profile holds its events, rings and eventfd
# (test/progs/p_fd_dup2all.c): it gets each dup2, and after the profile
# stops every number is still its own file and works (a byte through each
# pipe copy, 1 through each eventfd copy, all read back: none closed, read or
# written by us); the profile answers 200, counting the descriptors taken;
# the server still answers.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

comments() { go tool pprof -raw "$1" 2>/dev/null | grep '^Comment:'; }

pe_start $P/p_fd_dup2all $T/stop 30 || exit 1
st=$(pe_fetch '/profile?duration=3' $T/a.pb.gz)
comments $T/a.pb.gz | sed 's/^/  /'
if comments $T/a.pb.gz | grep -q 'engine: timer'; then
    touch $T/stop; pe_stop
    echo "skip: perf events are refused here"
    exit 77
fi
check "the profile answers 200 ($st)" [ "$st" = 200 ]
check "its comments count our descriptors the program's dup2 took" \
    grep -Eq '[1-9][0-9]* of our descriptors taken by the program.s dup2/dup3' <(comments $T/a.pb.gz)
check "the server still answers" [ "$(pe_status /debug/pprof/cmdline)" = 200 ]
st=$(pe_fetch '/profile?duration=1' $T/b.pb.gz)
check "a second profile answers 200 ($st)" [ "$st" = 200 ]
touch $T/stop
wait $PE_PID; rc=$?; PE_PID=
sed 's/^/  /' $PE_OUT; grep -v '^profep' $PE_ERR | head -5 | sed 's/^/  /'
check "the program replaced its descriptors, perf events among them" \
    grep -Eq '^replaced=[1-9][0-9]* perf=[1-9]' $PE_OUT
check "every number is still its own and works (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -Eq '^ok=[1-9][0-9]* bad=0 ' $PE_OUT"
pe_finish
