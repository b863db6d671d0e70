#!/usr/bin/env bash
# e2e_cli_pid: `profep CMD --pid PID` reaches the server of process PID from
# the host: one in the host's network namespace is simply found (its port
# was picked at random); one started with LD_PRELOAD inside `unshare -n`, and
# one attached inside `unshare -n` whose program listens on a port of its own
# too, are reached inside their namespace, where 127.0.0.1 is not ours.  And
# the one-line errors: a process without the library, a process gone, a user
# not permitted; and a user's own rootless container (user namespace too).
source test/e2e/lib.sh
pe_need curl go nsenter unshare ip
unshare -n true 2>/dev/null || { echo "SKIP: unshare -n not permitted here"; exit 77; }
P=$BUILD/test
PF=$PWD/scripts/profep
# valid PROFILE: go tool pprof reads it
valid() { pprof_top "$1" >"$1.top" 2>&1 && grep -q '^Showing nodes' "$1.top"; }
# one_line FILE PATTERN: FILE is one profep: line matching PATTERN
one_line() { [ "$(wc -l <"$1")" = 1 ] && grep -Eq "^profep: $2" "$1"; }

# ---- the host's namespace: --pid finds the address
pe_start $P/p_sleep 60 0 || exit 1
"$PF" cpu 0.5 --pid $PE_PID -o $T/host.pb.gz 2>$T/host.err
check "host namespace: --pid finds the random port ($PE_ADDR)" grep -q "fetching http://$PE_ADDR/profile" $T/host.err
check "host namespace: a valid CPU profile" valid $T/host.pb.gz
check "the hint names --pid, not an address" grep -q "profep cpu --pid $PE_PID " $T/host.err

# ---- errors, one line each
sleep 60 &
plain=$!
"$PF" heap --pid $plain -o $T/x.pb.gz 2>$T/e1; rc=$?
check "a process without the library: exit 1, one line ($(cat $T/e1))" \
    bash -c "[ $rc = 1 ] && $(declare -f one_line); one_line $T/e1 'pid $plain: no profendpoints server found'"
kill $plain; wait $plain 2>/dev/null
"$PF" heap --pid $plain -o $T/x.pb.gz 2>$T/e2; rc=$?
check "a process gone: exit 1, one line ($(cat $T/e2))" \
    bash -c "[ $rc = 1 ] && $(declare -f one_line); one_line $T/e2 'pid $plain: .*gone'"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$PF" heap --pid $PE_PID -o - >/dev/null 2>$T/e3); rc=$?
    check "another user's process: not permitted, exit 1, one line ($(cat $T/e3))" \
        bash -c "[ $rc = 1 ] && $(declare -f one_line); one_line $T/e3 'pid $PE_PID: not permitted'"
    # a rootless container of that user: its network namespace belongs to its own user
    # namespace, which profep enters too (where unprivileged user namespaces are allowed)
    setpriv --reuid=65534 --regid=65534 --clear-groups unshare -U -r -n \
        sh -c "ip link set lo up && exec env LD_PRELOAD='$LIB' '$P/p_sleep' 30 0" >/dev/null 2>$T/rl.err &
    r=$!
    if eventually 10 grep -q 'profendpoints: serving' $T/rl.err; then
        (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$PF" heap --pid $r -o - >$T/rl.pb.gz 2>$T/rl.out)
        check "the user's own rootless container: reached as that user ($(tail -n 1 $T/rl.out))" valid $T/rl.pb.gz
    else
        echo "(no rootless container here: $(head -n 1 $T/rl.err))"
    fi
    kill $r 2>/dev/null; wait $r 2>/dev/null
fi
"$PF" heap --pid abc 2>$T/e4; rc=$?
check "--pid abc: a usage error, exit 2" bash -c "[ $rc = 2 ] && grep -q 'expected a process id' $T/e4"
pe_stop

# ---- LD_PRELOAD inside its own network namespace, on the default port
unshare -n sh -c "ip link set lo up && exec env LD_PRELOAD='$LIB' '$P/p_work' 40" >$T/nw.out 2>$T/nw.err &
s=$!
if eventually 20 grep -q 'profendpoints: serving' $T/nw.err; then
    "$PF" cpu 1 --pid $s -o $T/ns.pb.gz 2>$T/ns.err
    check "own namespace (LD_PRELOAD): reached inside it ($(head -n 1 $T/ns.err))" \
        grep -q "in pid $s's network namespace" $T/ns.err
    check "own namespace (LD_PRELOAD): a valid CPU profile" valid $T/ns.pb.gz
    check "own namespace (LD_PRELOAD): of that program (its work function)" grep -qw work $T/ns.pb.gz.top
    "$PF" heap --pid $s :16825 -o $T/nsh.pb.gz 2>/dev/null
    check "own namespace: an ADDR with --pid is taken inside it" valid $T/nsh.pb.gz
else
    bad "the preloaded program in its own network namespace did not start: $(cat $T/nw.err)"
fi
kill $s 2>/dev/null; wait $s 2>/dev/null

# ---- attached inside its own network namespace; the program listens too
rm -f "$T/in"; mkfifo "$T/in"
unshare -n sh -c "ip link set lo up && exec '$P/p_attach_block'" <"$T/in" >"$T/ab.out" 2>"$T/ab.err" &
s=$!
exec 3>"$T/in"
if [ -x "$BUILD/profep-inject" ] && eventually 10 grep -q ready "$T/ab.out"; then
    out=$(PROFEP_ADDR=127.0.0.1:0 "$PF" attach $s 2>&1)
    check "attach: the line says its own namespace and --pid ($out)" \
        bash -c "grep -q 'own network namespace' <<<'$out' && grep -q -- '--pid $s' <<<'$out' && ! grep -q nsenter <<<'$out'"
    "$PF" cpu 1 --pid $s -o $T/at.pb.gz 2>$T/at.err
    check "attached in its own namespace: a valid CPU profile ($(tail -n 1 $T/at.err))" valid $T/at.pb.gz
    "$PF" heap --pid $s -o $T/ath.pb.gz 2>$T/ath.err
    check "attached in its own namespace: a valid heap profile" valid $T/ath.pb.gz
    check "detach" bash -c "'$PF' detach $s | grep -q detached"
    "$PF" heap --pid $s -o $T/x.pb.gz 2>$T/e5; rc=$?
    check "after detach: no server found, exit 1, one line ($(cat $T/e5))" \
        bash -c "[ $rc = 1 ] && $(declare -f one_line); one_line $T/e5 'pid $s: no profendpoints server found'"
else
    bad "the program in its own network namespace did not start: $(cat $T/ab.err)"
fi
exec 3>&-
wait $s; check "the attached program exits 0 (no call of its interrupted)" [ $? = 0 ]
pe_finish
