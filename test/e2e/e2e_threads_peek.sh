#!/usr/bin/env bash
# e2e_threads_peek: PROFEP_PEEK_SIGNAL=USR1 on p_parked: the signal prints
# every thread's stack and then a CPU report of PROFEP_PEEK_SECONDS to stderr,
# twice, and the program carries on (its threads still work, exit status 0).
# A program that installs its own SIGUSR1 handler gets it (sigaction reports
# SIG_DFL before, as without us), the peek stops and the library says so.
# Without PROFEP_PEEK_SIGNAL, SIGUSR1 keeps its default action.
source test/e2e/lib.sh
P=$BUILD/test
wait_for() { # file pattern [tenths]
    for _ in $(seq ${3:-50}); do grep -q "$2" "$1" && return 0; sleep 0.1; done
    return 1
}

# ---- the peek, twice ----------------------------------------------------------------
# 20 s of program: both peeks (1 s of CPU profile each) and the checks between them fit
# on a loaded machine; the waits below allow 10 s each.
PE_ENV="PROFEP_PEEK_SIGNAL=USR1 PROFEP_PEEK_SECONDS=1" pe_start $P/p_parked 20 || exit 1
wait_for "$PE_OUT" ready 100
sleep 0.3
check "peek: the thread is ours (pe-peek, not among the stacks)" \
    bash -c "grep -qx pe-peek /proc/$PE_PID/task/*/comm"
kill -USR1 $PE_PID
check "peek: done within 10 s" wait_for "$PE_ERR" 'peek done' 100
sed -n '/peek (SIGUSR1/,/peek done/p' "$PE_ERR" >$T/peek1
check "peek: stacks header names the signal and pid" grep -q "peek (SIGUSR1, pid $PE_PID): every thread's stack" $T/peek1
for f in park_mutex park_sleep park_read park_busy main_wait; do
    check "peek: stacks show $f" grep -q "^$f(\.\.\.)$" $T/peek1
done
check "peek: no stack of the peek thread itself" bash -c "! grep -q '\"pe-peek\"' $T/peek1"
check "peek: CPU part announced" grep -q 'peek: CPU profile of 1 s' $T/peek1
check "peek: CPU tree report names park_busy" \
    bash -c "sed -n '/CPU profile of/,\$p' $T/peek1 | grep -q park_busy"
check "peek: CPU tree report leaves the parked threads out" \
    bash -c "! sed -n '/CPU profile of/,\$p' $T/peek1 | grep -Eq 'park_(sleep|read|mutex)'"
kill -USR1 $PE_PID
check "peek: a second signal, a second report" \
    bash -c "for _ in \$(seq 100); do [ \$(grep -c 'peek done' $PE_ERR) -ge 2 ] && exit 0; sleep 0.1; done; exit 1"
wait $PE_PID
st=$?
check "peek: the program carried on and exited 0 ($st)" [ "$st" = 0 ]
check "peek: the busy thread kept spinning" grep -Eq '^spins [1-9]' "$PE_OUT"
check "peek: nothing on stderr outside the serving line and the reports" \
    bash -c "! awk '/peek \\(SIGUSR1/ { on = 1 } !on && !/^profendpoints: serving/ { print } /peek done/ { on = 0 }' \
             $PE_ERR | grep -q ."
check "peek: the CPU report counts samples" grep -q '^samples (count), tree view' "$PE_ERR"
PE_PID=

# ---- the program installs its own SIGUSR1 handler: it wins ------------------------------
PE_ENV="PROFEP_PEEK_SIGNAL=USR1 P_PARKED_USR1=1" pe_start $P/p_parked 5 || exit 1
wait_for "$PE_OUT" ready
check "own handler: sigaction reported SIG_DFL before (ours hidden)" grep -qx 'usr1 old default' "$PE_OUT"
kill -USR1 $PE_PID
wait $PE_PID
check "own handler: the program's handler ran" grep -qx 'usr1 handled 1' "$PE_OUT"
check "own handler: the library says the peek is off" grep -q 'peek disabled' "$PE_ERR"
check "own handler: no peek" bash -c "! grep -q 'every thread' $PE_ERR"
PE_PID=

# ---- no PROFEP_PEEK_SIGNAL: SIGUSR1 keeps its default action ---------------------------
pe_start $P/p_parked || exit 1
wait_for "$PE_OUT" ready
kill -USR1 $PE_PID
{ wait $PE_PID; } 2>/dev/null
st=$?
check "no peek configured: SIGUSR1 terminates as by default (status $st = 138)" [ "$st" = 138 ]
PE_PID=

pe_finish
