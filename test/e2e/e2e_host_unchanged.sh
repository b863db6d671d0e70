#!/usr/bin/env bash
# e2e_host_unchanged: a program under the library behaves as without it:
# the same stdout and exit status (C, C++, threads, fork+exec, exit(), SIGPIPE),
# SIGPIPE still kills it, it exits promptly with its own status while a profile
# is being served, and PROFEP_ADDR=off leaves it silent.
source test/e2e/lib.sh
P=$BUILD/test

same_behaviour() { # program args...: stdout and status equal with and without us
    local a b sa sb
    a=$("$@" 2>/dev/null); sa=$?
    b=$(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB "$@" 2>/dev/null); sb=$?
    [ "$a" = "$b" ] && [ "$sa" = "$sb" ] || { echo "  differs: '$a'($sa) vs '$b'($sb)"; return 1; }
}
for prog in "p_hello world" p_threads "p_cxx 3000" p_forkexec p_exit_now p_sigpipe "p_sleep 0.2 9"; do
    check "same stdout and exit status: $prog" same_behaviour $P/$prog
done
check "SIGPIPE still kills the program (not ignored)" \
    bash -c "PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $P/p_sigpipe 2>/dev/null | grep -q 'disposition default'; [ \${PIPESTATUS[0]} -eq 141 ]"

# Exit with a request in flight: prompt, own status.
pe_start $P/p_sleep 1.5 7 || exit 1
curl -s -o /dev/null --max-time 20 "http://$PE_ADDR/profile?duration=30" &
cpid=$!
start=$SECONDS
wait $PE_PID; st=$?; PE_PID=
check "exit with a profile in flight keeps status 7" [ "$st" = 7 ]
# (prompt: well before the 30 s the profile asked for, with room for a loaded machine)
check "exit with a profile in flight is prompt" [ $((SECONDS - start)) -le 10 ]
kill $cpid 2>/dev/null; wait $cpid 2>/dev/null

# PROFEP_ADDR=off: no server, program unchanged.
out=$(PROFEP_ADDR=off LD_PRELOAD=$LIB $P/p_hello 2>$T/off.err); st=$?
check "PROFEP_ADDR=off: no line, same status" [ "$st" = 3 ] && [ ! -s $T/off.err ]

pe_finish
