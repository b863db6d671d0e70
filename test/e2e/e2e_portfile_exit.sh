#!/usr/bin/env bash
# e2e_portfile_exit: a process's own %p port file goes at its normal exit
# (preload/tree_portfile.c tree_exit), the root's as well as a member's:
#  - p_portfile exit: serves, exits 0: its file is gone;
#  - p_portfile hang, killed with SIGKILL: its file stays (nothing runs);
#  - p_portfile fork: a fork child serves as a member and exits, the parent
#    reaps it and exits 0: both files are gone;
#  - p_portfile leave: the root exits 0 while its fork child lives on (an heir,
#    which reads the root's port there): the root's file stays;
#  - a fixed PROFEP_PORT_FILE (no %p) stays.
source test/e2e/lib.sh
P=$BUILD/test/p_portfile
D=$T/pf
mkdir -p $D
run() { # mode [env...]: runs p_portfile MODE with the port file template, waits
    local mode=$1; shift
    timeout 30 env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$D/pe.%p" LD_PRELOAD="$LIB" "$@" \
        $P "$mode" $D >$T/$mode.out 2>$T/$mode.err
}

run exit
st=$?
pid=$(awk '$1 == "served" { print $2 }' $T/exit.out)
check "exit: the program ($pid) ends 0 after it served ($st)" [ "$st" = 0 -a -n "$pid" ]
check "exit: its port file is gone ($(cat $D/pe.$pid 2>/dev/null))" [ -n "$pid" -a ! -e "$D/pe.$pid" ]

env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$D/pe.%p" LD_PRELOAD="$LIB" \
    $P hang $D >$T/hang.out 2>$T/hang.err &
pid=$!
eventually 15 grep -q served $T/hang.out
kill -KILL $pid
wait $pid 2>/dev/null
check "SIGKILL: its port file stays" [ -s $D/pe.$pid ]

run fork
st=$?
pid=$(awk '$1 == "served" { print $2 }' $T/fork.out)
child=$(awk '$1 == "child" { print $2 }' $T/fork.out)
check "fork: the program and its member ($child) served and ended 0 ($st)" [ "$st" = 0 -a -n "$child" ]
check "fork: the member's port file is gone" [ -n "$child" -a ! -e "$D/pe.$child" ]
check "fork: the root's port file is gone" [ -n "$pid" -a ! -e "$D/pe.$pid" ]

run leave
st=$?
pid=$(awk '$1 == "served" { print $2 }' $T/leave.out)
check "leave: the root ($pid) served and ended 0 ($st)" [ "$st" = 0 -a -n "$pid" ]
check "leave: its file stays while its child may take the tree over" [ -n "$pid" -a -s "$D/pe.$pid" ]
eventually 15 grep -q child $T/leave.out
child=$(awk '$1 == "child" { print $2 }' $T/leave.out)
[ -n "$child" ] && kill -KILL "$child" 2>/dev/null

# a fixed path names no process: it stays after a normal exit
timeout 30 env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$D/fixed" LD_PRELOAD="$LIB" \
    sh -c "i=0; while [ ! -s $D/fixed ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done" >/dev/null 2>&1
check "a fixed PROFEP_PORT_FILE stays after a normal exit" [ -s $D/fixed ]
pe_finish
