#!/usr/bin/env bash
# e2e_attach: `profep attach PID` / `profep detach PID` on a program that
# was started without the library (docs/ATTACH.md).  p_attach_block's
# threads wait in read, accept, poll, nanosleep, clock_nanosleep, epoll_wait
# (with and without a timeout) and futexes and exit 1 on any EINTR or short
# wait: it lives through ATTACH_CYCLES (default 100; fewer with
# ATTACH_CYCLES=N) attach/detach cycles and exits 0.  Each attach prints
# the serving line and the server answers; the index and profiles say
# "since attach"; heap answers (interpose/); a second attach answers with the same
# address; after each detach the threads, the handled signals (SigCgt) and
# the descriptors are those of before the attach (but libunwind's validation
# pipe, made once, kept with the mapped library: docs/ATTACH.md); python3
# and perl sleeping through two attaches and detaches stay asleep until
# woken.
source test/e2e/lib.sh
pe_need curl
P=$BUILD/test
INJ=$BUILD/profep-inject
CYCLES=${ATTACH_CYCLES:-100}
[ -x "$INJ" ] || { echo "SKIP: $INJ not built"; exit 77; }

attach() { PROFEP_ADDR=127.0.0.1:0 "$INJ" attach "$1" --lib "$LIB"; }
detach() { "$INJ" detach "$1" --lib "$LIB"; }
addr_of() { grep -o 'http://[0-9.]*:[0-9]*' <<<"$1" | head -1; }
fds() { ls "/proc/$1/fd" | sort -n | tr '\n' ' '; }
sigcgt() { awk '/^SigCgt/ {print $2}' "/proc/$1/status"; }
ntasks() { ls "/proc/$1/task" | wc -l; }
# the descriptors now that were not there before: "N:pipe:[...]" words
new_fds() { # pid, before list
    local f
    for f in $(fds "$1"); do
        case " $2 " in *" $f "*) ;; *) echo "$f:$(readlink "/proc/$1/fd/$f")" ;; esac
    done
}

# ---- the blocking program, many cycles -------------------------------------------------
rm -f "$T/in"; mkfifo "$T/in"
"$P/p_attach_block" <"$T/in" >"$T/block.out" 2>"$T/block.err" &
PE_PID=$!
exec 3>"$T/in"
eventually 10 grep -q ready "$T/block.out" || { bad "p_attach_block did not start"; pe_finish; }
pid=$PE_PID
fd0=$(fds $pid) sig0=$(sigcgt $pid) t0=$(ntasks $pid)

out=$(attach $pid); rc=$?
a=$(addr_of "$out")
check "attach: exit 0 and the serving line ($out)" \
    bash -c "[ $rc = 0 ] && grep -Eq '^profendpoints: serving http://127.0.0.1:[0-9]+ \(pid $pid\)$' <<<'$out'"
check "attach: the library is mapped" grep -q libprofendpoints "/proc/$pid/maps"
check "attach: /debug/pprof/ answers 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/")" = 200 ]
check "attach: the index says since attach" bash -c "curl -s '$a/debug/pprof/' | grep -q 'since attach at'"
# (the interposers are redirected after an attach: interpose/, issue 41)
check "attach: the index does not say the heap needs the library at start" \
    bash -c "! curl -s '$a/debug/pprof/' | grep -q 'need the library at start'"
h=$(curl -s -o "$T/heap.txt" -w '%{http_code}' "$a/debug/pprof/heap")
check "attach: heap answers 200 ($h)" [ "$h" = 200 ]
out2=$(attach $pid); rc=$?
check "attach again: exit 0, the same address ($out2)" bash -c "[ $rc = 0 ] && [ '$(addr_of "$out2")' = '$a' ]"
out=$(detach $pid); rc=$?
check "detach: exit 0 ($out)" bash -c "[ $rc = 0 ] && grep -q '^profendpoints: detached from pid $pid' <<<'$out'"
check "detach: the port is closed" bash -c "! curl -s -o /dev/null --max-time 5 '$a/debug/pprof/'"
fd1=$(fds $pid)
extra=$(new_fds $pid "$fd0")
echo "  descriptors before: $fd0; after the first detach: $fd1 (new: ${extra:-none})"
check "detach: no new descriptor but libunwind's validation pipe (at most 2 pipes)" \
    bash -c "[ \$(wc -w <<<'$extra') -le 2 ] && ! grep -qv ':pipe:' <<<'$(tr ' ' '\n' <<<"$extra" | grep . )'"
check "detach: SigCgt as before ($sig0)" [ "$(sigcgt $pid)" = "$sig0" ]
check "detach: threads as before ($t0)" eventually 5 [ "$(ntasks $pid)" = "$t0" ]
out=$(detach $pid); rc=$?
check "detach again: exit 0, nothing to stop ($out)" bash -c "[ $rc = 0 ] && grep -q 'nothing' <<<'$out'"

# the same through scripts/profep, its flags for the settings
out=$(PROFEP_INJECT=$INJ PROFEP_LIB=$LIB scripts/profep attach $pid --port 0 --token sesame)
a=$(addr_of "$out")
check "profep attach PID --port 0 --token T: the serving line ($out)" [ -n "$a" ]
check "profep attach's --token is in force (401 without it)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/")" = 401 ]
check "... and 200 with it" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sesame' "$a/debug/pprof/")" = 200 ]
out=$(PROFEP_INJECT=$INJ PROFEP_LIB=$LIB scripts/profep detach $pid)
check "profep detach PID ($out)" grep -q "detached from pid $pid" <<<"$out"

anon() { awk '/^RssAnon/ {print $2}' "/proc/$1/status"; }
anon0=$(anon $pid)
fails=0 slow=0 stopped=
for i in $(seq "$CYCLES"); do
    # each cycle stops another of its waiting threads (read, accept, epoll...)
    out=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_INJECT_THREAD=$i "$INJ" --stats attach $pid --lib "$LIB" 2>"$T/sa") ||
        { fails=$((fails + 1)); echo "  cycle $i attach: $out"; }
    stopped="$stopped $(sed -n 's/.*thread \([0-9]*\) of pid.*/\1/p' "$T/sa")"
    a=$(addr_of "$out")
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$a/debug/pprof/")" = 200 ] ||
        { fails=$((fails + 1)); echo "  cycle $i: no answer from $a"; }
    out=$(PROFEP_INJECT_THREAD=$((i + 5)) "$INJ" --stats detach $pid --lib "$LIB" 2>"$T/st") ||
        { fails=$((fails + 1)); echo "  cycle $i detach: $out"; }
    stopped="$stopped $(sed -n 's/.*thread \([0-9]*\) of pid.*/\1/p' "$T/st")"
    kill -0 $pid 2>/dev/null || { echo "  cycle $i: the program is gone"; cat "$T/block.err"; break; }
    [ "$(sigcgt $pid)" = "$sig0" ] || { fails=$((fails + 1)); echo "  cycle $i: SigCgt $(sigcgt $pid)"; }
    [ "$(fds $pid)" = "$fd1" ] || { fails=$((fails + 1)); echo "  cycle $i: descriptors $(fds $pid)"; }
    eventually 5 [ "$(ntasks $pid)" = "$t0" ] || { slow=$((slow + 1)); echo "  cycle $i: $(ntasks $pid) threads"; }
done
check "$CYCLES attach/detach cycles: each answered, each left the process as before" [ $fails = 0 ]
kinds=$(for t in $stopped; do cat /proc/$pid/task/$t/syscall 2>/dev/null | cut -d' ' -f1; done | sort -u | tr '\n' ' ')
echo "  threads stopped: $(tr ' ' '\n' <<<"$stopped" | sort -u | grep -c .), the program's waiting in system calls $kinds"
check "the cycles stopped the program's threads in at least 6 kinds of system call" \
    [ "$(wc -w <<<"$kinds")" -ge 6 ]
check "after each detach our threads were gone within 5 s" [ $slow = 0 ]
anon1=$(anon $pid)
check "the cycles' anonymous memory: $anon0 KiB before, $anon1 KiB after (at most +1024: no leak per cycle)" \
    [ $((anon1 - anon0)) -le 1024 ]
check "no EINTR, no short sleep in the program ($(cat "$T/block.err"))" kill -0 $pid
exec 3>&-
eventually 10 bash -c "! kill -0 $pid 2>/dev/null"
wait $pid; st=$?
PE_PID=
check "the program exits 0 (its own status) after the cycles" [ $st = 0 ]
check "the program printed what it prints" bash -c "[ \"\$(cat $T/block.out)\" = \"\$(printf 'ready\ndone')\" ]"
check "nothing of ours on the program's stderr" [ ! -s "$T/block.err" ]

# ---- interpreters sleep as long as they asked -----------------------------------------------
# Each sleeps 120 s in one call, attached to and detached from twice, then
# SIGUSR1's handler (installed before "ready") ends the sleep: it must have
# been asleep until then ("woken"), not cut short by an attach ("slept").
# No race with the machine's load: the sleep outlasts the attaches however
# long they take (a 10 s sleep once ended before CI's fourth operation).
sleeper() { # name, command...
    local name=$1 pid i
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err" &
    pid=$!
    PE_PID=$pid
    eventually 20 grep -q ready "$T/$name.out" || bad "$name did not start: $(head -c 200 "$T/$name.err")"
    # a single thread: the second attach finds it in restart_syscall (the
    # rest of the sleep the kernel resumed after the first stop)
    n=0 said=
    for i in 1 2; do
        out=$(attach $pid); said+="$out; "
        grep -q serving <<<"$out" && n=$((n + 1))
        out=$(detach $pid); said+="$out; "
        grep -q detached <<<"$out" && n=$((n + 1))
    done
    check "$name: two attaches and two detaches while it sleeps ($n of 4: $said)" [ $n = 4 ]
    kill -USR1 $pid 2>/dev/null
    wait $pid
    PE_PID=
    check "$name's one sleep lasted until SIGUSR1 ended it, through two attaches and detaches ($(tail -n 1 $T/$name.out))" \
        grep -q '^woken ' "$T/$name.out"
}
if command -v perl >/dev/null; then
    sleeper perl perl -MTime::HiRes=time -e '$| = 1; $SIG{USR1} = sub { die "woken\n" };
        print "ready\n"; $t = time; eval { sleep 120 };
        printf "%s %.2f\n", ($@ eq "woken\n" ? "woken" : "slept"), time - $t'
fi
if command -v python3 >/dev/null; then
    sleeper python python3 -c 'import signal, time
class Woken(Exception): pass
def woken(*_): raise Woken()
signal.signal(signal.SIGUSR1, woken)
print("ready", flush=True)
t = time.monotonic()
try:
    time.sleep(120); print("slept %.2f" % (time.monotonic() - t))
except Woken:
    print("woken %.2f" % (time.monotonic() - t))'
fi
pe_finish
