#!/usr/bin/env bash
# e2e_attach_refuse: what `profep attach` refuses, in one line each, leaving
# the target running and unchanged (its state, threads and maps; the library
# never mapped): a PID that is not a number or does not exist, profep's own
# process, a zombie, a stopped process, one already traced (strace), a
# kernel thread, a statically linked program, one under a seccomp filter, and
# another user's process for a user who may not trace it.  And the places
# attach must work: a target running as an unprivileged user, and one in
# its own mount namespace whose /tmp and whose view of the build directory
# are private (the library reaches it through a memfd, no path needed), and
# one in its own network namespace (the line says how to reach it).
source test/e2e/lib.sh
pe_need curl
P=$BUILD/test
INJ=$BUILD/profep-inject
[ -x "$INJ" ] || { echo "SKIP: $INJ not built"; exit 77; }
attach() { PROFEP_ADDR=127.0.0.1:0 "$INJ" attach "$1" --lib "$LIB"; }
detach() { "$INJ" detach "$1" --lib "$LIB"; }
addr_of() { grep -o 'http://[0-9.]*:[0-9]*' <<<"$1" | head -1; }
state() { # what must not change: state, threads, our library mapped or not
    echo "$(awk '{print $3}' /proc/$1/stat 2>/dev/null) $(ls /proc/$1/task 2>/dev/null | wc -l) $(grep -c libprofendpoints /proc/$1/maps 2>/dev/null)"
}
# refused PID WHAT PATTERN: one line matching PATTERN, exit 1, the target as before
refused() {
    local pid=$1 what=$2 pat=$3 before out rc
    before=$(state "$pid")
    out=$(attach "$pid" 2>&1); rc=$?
    check "$what: refused in one line, exit 1 ($out)" \
        bash -c "[ $rc = 1 ] && [ \$(wc -l <<<'$out') = 1 ] && grep -Eq '$pat' <<<'$out'"
    [ -z "$pid" ] || [ ! -d "/proc/$pid" ] || check "$what: the target is unchanged ($before)" [ "$(state "$pid")" = "$before" ]
}

refused abc "a PID that is not a number" "not a process id"
refused 4194304000 "a PID out of range" "not a process id"
refused 4194303 "a PID that does not exist" "no process"
out=$(sh -c "exec env PROFEP_ADDR=127.0.0.1:0 '$INJ' attach \$\$ --lib '$LIB'" 2>&1); rc=$?
check "profep's own process: refused ($out)" bash -c "[ $rc = 1 ] && grep -q 'profep itself' <<<'$out'"

# a zombie: the child of a process that never reaps it
(sleep 0.2 & exec sleep 30) &
outer=$!
eventually 5 bash -c "[ \"\$(awk '{print \$3}' /proc/\$(pgrep -P $outer | head -1)/stat 2>/dev/null)\" = Z ]"
z=$(pgrep -P $outer | head -1)
refused "$z" "a zombie" "zombie"
kill $outer 2>/dev/null; wait $outer 2>/dev/null

# a stopped process stays stopped
sleep 30 &
s=$!
kill -STOP $s
eventually 5 bash -c "[ \"\$(awk '{print \$3}' /proc/$s/stat)\" = T ]"
refused $s "a stopped process" "stopped"
kill -CONT $s; kill $s; wait $s 2>/dev/null

# already traced
if command -v strace >/dev/null; then
    sleep 30 &
    s=$!
    strace -p $s -o /dev/null 2>/dev/null &
    tr=$!
    eventually 5 bash -c "[ \"\$(awk '/^TracerPid/ {print \$2}' /proc/$s/status)\" != 0 ]"
    refused $s "a process already traced (strace)" "already traced"
    kill $tr; wait $tr 2>/dev/null; kill $s; wait $s 2>/dev/null
fi

# a kernel thread (kthreadd, where this namespace shows it)
kt=""
for k in 2 3; do
    f=$(awk '{print $9}' /proc/$k/stat 2>/dev/null)
    [ -n "$f" ] && [ $((f & 0x200000)) != 0 ] && { kt=$k; break; }
done
[ -n "$kt" ] && refused $kt "a kernel thread" "kernel thread"

# statically linked
if printf '#include <unistd.h>\nint main(void){sleep(30);return 0;}\n' >"$T/st.c" &&
    cc -static -o "$T/static_sleep" "$T/st.c" 2>/dev/null; then
    "$T/static_sleep" &
    s=$!
    sleep 0.3
    refused $s "a statically linked program" "statically linked"
    kill $s; wait $s 2>/dev/null
fi

# a seccomp filter
rm -f "$T/in"; mkfifo "$T/in"
"$P/p_attach_seccomp" <"$T/in" >"$T/sc.out" 2>"$T/sc.err" &
s=$!
exec 3>"$T/in"
eventually 5 grep -q ready "$T/sc.out"
refused $s "a seccomp filter" "seccomp filter"
exec 3>&-
wait $s; check "the seccomp program exits 0 after the refusal" [ $? = 0 ]

# not permitted: a user who may not trace another user's process
if command -v setpriv >/dev/null; then
    sleep 30 &
    s=$!
    sleep 0.3 # exec'd
    before=$(state $s)
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env PROFEP_ADDR=127.0.0.1:0 "$INJ" attach $s --lib "$LIB" 2>&1); rc=$?
    check "another user's process: not permitted, one line ($out)" \
        bash -c "[ $rc = 1 ] && [ \$(wc -l <<<'$out') = 1 ] && grep -q 'not permitted' <<<'$out'"
    check "another user's process: unchanged" [ "$(state $s)" = "$before" ]
    kill $s; wait $s 2>/dev/null
fi

# ---- where attach works ---------------------------------------------------------------------
# cycle NAME PID: attach, an answer, detach, the program still there
cycle() {
    local out a
    out=$(attach "$2")
    a=$(addr_of "$out")
    check "$1: attach ($out)" [ -n "$a" ]
    check "$1: /debug/pprof/ answers" [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/")" = 200 ]
    check "$1: a CPU profile answers" [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/profile?seconds=1")" = 200 ]
    out=$(detach "$2")
    check "$1: detach ($out)" grep -q detached <<<"$out"
}
if command -v setpriv >/dev/null; then
    rm -f "$T/in"; mkfifo "$T/in"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$P/p_attach_block" <"$T/in" >"$T/u.out" 2>"$T/u.err" &
    s=$!
    exec 3>"$T/in"
    eventually 5 grep -q ready "$T/u.out"
    cycle "a program running as nobody" $s
    exec 3>&-
    wait $s; check "the program running as nobody exits 0" [ $? = 0 ]
fi
if unshare -m --propagation private true 2>/dev/null; then
    rm -f "$T/in"; mkfifo "$T/in"
    # its own /tmp, and the build directory hidden: the library has no path there
    unshare -m --propagation private sh -c "mount -t tmpfs none /tmp && cp '$P/p_attach_block' /tmp/ &&
        mount -t tmpfs none '$BUILD' && exec /tmp/p_attach_block" <"$T/in" >"$T/ns.out" 2>"$T/ns.err" &
    s=$!
    exec 3>"$T/in"
    if eventually 5 grep -q ready "$T/ns.out"; then
        check "in its own mount namespace the library file is not there" \
            bash -c "! [ -e /proc/$s/root$LIB ]"
        cycle "a program in its own mount namespace (private /tmp)" $s
        exec 3>&-
        wait $s; check "the program in its own mount namespace exits 0" [ $? = 0 ]
    else
        bad "the program in its own mount namespace did not start: $(cat "$T/ns.err")"
        exec 3>&-
    fi
fi
if command -v nsenter >/dev/null && unshare -n true 2>/dev/null; then
    rm -f "$T/in"; mkfifo "$T/in"
    unshare -n sh -c "ip link set lo up 2>/dev/null; exec '$P/p_attach_block'" <"$T/in" >"$T/nn.out" 2>"$T/nn.err" &
    s=$!
    exec 3>"$T/in"
    if eventually 5 grep -q ready "$T/nn.out"; then
        s=$(pgrep -n -P $s -f "$P/p_attach_block" || echo $s) # ours: s or its child, not another test's
        out=$(attach $s)
        a=$(addr_of "$out")
        check "its own network namespace: the line says so ($out)" grep -q 'own network namespace' <<<"$out"
        check "its own network namespace: nsenter -n reaches the address" \
            [ "$(nsenter -t $s -n curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/")" = 200 ]
        check "its own network namespace: detach" bash -c "\"$INJ\" detach $s --lib '$LIB' | grep -q detached"
    fi
    exec 3>&-
    wait
fi
pe_finish
