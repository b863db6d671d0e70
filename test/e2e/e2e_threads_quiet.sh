#!/bin/bash
# e2e_threads_quiet: stacks of blocked threads without interrupting them.
# (a) p_quiet_park (threads in nanosleep, poll, epoll_wait, read, cond_wait,
#     mutex_lock, sem_wait, accept, waitpid), built without and with frame
#     pointers (p_quiet_park_fp): every thread comes from /proc,
#     and its stack equals the signal method's (capture=signal), frame by frame
#     (the leaf by function: a restarted syscall's signal PC is 2 bytes back);
#     every form says how (debug=0 label and comment, debug=1 labels line,
#     debug=2 note, /task_backtraces, the peek); a thread that blocks SIGPROF
#     is read from /proc all the same; so is one waiting inside our own lock
#     hook (PROFEP_MUTEX_RATE=1), a frame-pointer frame.
# (b) p_quiet_park strict (any EINTR exits 3) survives 100 dumps and a 10 s
#     wall-clock profile at delay=0.01, exit 0; the wall samples are all /proc.
# (c) perl's `sleep 4` sleeps 4 s while goroutine?debug=2 is fetched.
# (d) thread churn (threads blocking briefly and exiting) during 1000 dumps:
#     no crash, the program's own checks pass.
# (e) a wall profile too short to reach 2,000 sleeping threads (p_sleepers)
#     says in its comments how many threads there were and how many are in
#     it; one of a few threads that all are in says nothing of the kind.
source test/e2e/lib.sh
P=$BUILD/test

compare() { # proc.txt signal.txt: same frames per thread
    python3 - "$1" "$2" <<'EOF'
import re, sys
def blocks(path):
    out, cur = {}, None
    for line in open(path):
        m = re.match(r'^goroutine (\d+) \[[^\]]*, thread "([^"]*)"\]:', line)
        if m:
            cur = m.group(2); out[cur] = []
            continue
        m = re.match(r'^(.*)\(\.\.\.\)$', line)
        if m:
            name = m.group(1)
            continue
        # physical frames only: an inlined call's place has no +offset, and a
        # leaf read at pc or pc - 1 may be in an inlined call or just past it
        m = re.match(r'^\t.* \+(0x[0-9a-f]+|0)$', line.rstrip('\n'))
        if cur and m:
            out[cur].append((name, int(m.group(1), 16)))
    return out
a, b = blocks(sys.argv[1]), blocks(sys.argv[2])
bad = 0
for name in sorted(a):
    fa, fb = a[name], b.get(name, [])
    # the leaf by its function, the callers by their call sites (function+offset)
    same = (len(fa) == len(fb) and len(fa) > 1 and fa[0][0] == fb[0][0]
            and all(x == y for x, y in zip(fa[1:], fb[1:])))
    if not same:
        bad += 1
        print('  %s differs:' % name)
        for x in fa: print('    proc   %s +%#x' % x)
        for x in fb: print('    signal %s +%#x' % x)
print('  compared %d threads, %d differ' % (len(a), bad))
sys.exit(1 if bad or len(a) < 10 else 0)
EOF
}
many() { # N path...: fetch the paths in turn N times over one connection; prints non-200 count
    local n=$1 args=() i=0
    shift
    while [ $i -lt "$n" ]; do
        args+=(-o /dev/null "http://$PE_ADDR${@:$((i % $# + 1)):1}")
        i=$((i + 1))
    done
    curl -s --max-time 200 -w '%{http_code}\n' "${args[@]}" | grep -vc '^200$'
}
signalled() { # raw: the samples taken by signal, by thread and state (a failure's clue)
    awk '/^ *[0-9]+ [0-9]+: / { n = $1; next }
         n && /capture:\[signal\]/ { k = $0 }
         n && /thread:\[/ { if (k != "") c[k " " $0] += n; k = ""; n = 0 }
         END { for (x in c) printf "  signalled %d: %s\n", c[x], x }' "$1" | sed 's/  */ /g' | head -20
}
wait_ready() { for _ in $(seq 100); do grep -q ready "$PE_OUT" && return 0; sleep 0.05; done; return 1; }

# ---- (a) the same stacks as the signal's ----------------------------------------------
for prog in p_quiet_park p_quiet_park_fp; do
echo "-- $prog"
pe_start $P/$prog || exit 1
check "$prog ready" wait_ready
pe_get '/debug/pprof/goroutine?debug=2' >$T/auto.txt
check "debug=2: all 10 threads from /proc, none signalled" \
    grep -q '^threads: 10 (pid [0-9]*), 0 without answer; .* 10 from /proc without a signal ([0-9]* unchanged), 0 by signal$' $T/auto.txt
check "debug=2: a '# capture: proc' note per thread" [ "$(grep -c '^# capture: proc' $T/auto.txt)" = 10 ] ||
    { head -1 $T/auto.txt; grep -B1 -A4 '^# capture: signal' $T/auto.txt | head -20; }
for f in park_sleep park_poll park_epoll park_read park_cond park_mutex park_sem park_accept park_wait; do
    grep -q "^$f(\.\.\.)$" $T/auto.txt || bad "debug=2: $f missing"
done
pe_get '/debug/pprof/goroutine?debug=2' >$T/auto2.txt
check "debug=2 again: all 10 reused unchanged" grep -q '10 from /proc without a signal (10 unchanged)' $T/auto2.txt
pe_get '/debug/pprof/goroutine?debug=2&capture=signal' >$T/sig.txt
check "capture=signal: all 10 by signal" grep -q ' 0 from /proc without a signal (0 unchanged), 10 by signal$' $T/sig.txt
check "capture=signal: the note says so" [ "$(grep -c '^# capture: signal (asked for)' $T/sig.txt)" = 10 ]
sleep 0.2 # threads back in their calls after the signal
pe_get '/debug/pprof/goroutine?debug=2' >$T/auto3.txt
check "the /proc stacks equal the signal's, frame by frame" compare $T/auto3.txt $T/sig.txt
txt=$(pe_get '/debug/pprof/goroutine?debug=1')
check "debug=1: labels line" grep -q '^# labels: {"capture":"proc"}$' <<<"$txt"
pe_get '/debug/pprof/goroutine' -o $T/g.pb.gz
go tool pprof -raw $T/g.pb.gz >$T/g.raw 2>&1
check "debug=0: capture label" grep -q 'capture:\[proc\]' $T/g.raw
check "debug=0: comment counts by method" grep -q 'capture: 10 from /proc without a signal' $T/g.raw
check "/task_backtraces: the note" grep -q '^# capture: proc' <<<"$(pe_get /task_backtraces)"
check "capture=proc: no signal at all" grep -q ', 0 by signal$' <<<"$(pe_get '/debug/pprof/goroutine?debug=2&capture=proc')"
check "capture=bogus: 400" [ "$(pe_status '/debug/pprof/goroutine?capture=bogus')" = 400 ]
pe_get '/profile_wall?duration=1&delay=0.01&capture=signal' -o $T/ws.pb.gz
go tool pprof -raw $T/ws.pb.gz >$T/ws.raw 2>&1
check "wall capture=signal: signals only" bash -c "grep -q 'capture:\[signal\]' $T/ws.raw && ! grep -q 'capture:\[proc\]' $T/ws.raw"
check "wall capture=signal: the comment counts every signal as asked for" \
    grep -Eq 'capture: 0 samples from /proc without a signal, ([1-9][0-9]*) signals sent \(\1 asked for, 0 to running threads, 0 woke during the walk, 0 stacks /proc cannot give\)' $T/ws.raw
pe_stop
done

# ---- a thread that blocks SIGPROF (p_parked, frame pointers) is read all the same --------------
PE_ENV="P_PARKED_BLOCK=1" pe_start $P/p_parked || exit 1
PE_ENV=
for _ in $(seq 50); do grep -q ready "$PE_OUT" && break; sleep 0.1; done
got=
for _ in 1 2 3; do # it wakes every 100 ms: a capture may find it running
    txt=$(pe_get /task_backtraces)
    grep -q '^park_blocked(\.\.\.)$' <<<"$(thread_block "$txt" p-blocked)" && { got=1; break; }
    sleep 0.2
done
check "SIGPROF blocked: its stack from /proc (park_blocked)" [ -n "$got" ]
check "SIGPROF blocked: the note says proc" grep -q '^# capture: proc' <<<"$(thread_block "$txt" p-blocked)"
pe_stop

# ---- a frame of ours on the stack: every lock sampled, q-mutex waits inside pe_mutex_sampled,
#      whose frame-pointer prologue mixes pushes with moves (its %rbp found all the same) ----------
PE_ENV="PROFEP_MUTEX_RATE=1" pe_start $P/p_quiet_park || exit 1
PE_ENV=
check "our hook: ready" wait_ready
txt=$(pe_get '/debug/pprof/goroutine?debug=2')
check "our hook: q-mutex waits in pe_mutex_sampled" grep -q '^pe_mutex_sampled(\.\.\.)$' <<<"$(thread_block "$txt" q-mutex)"
check "our hook: all 10 threads from /proc" grep -q ' 10 from /proc without a signal ([0-9]* unchanged), 0 by signal$' <<<"$txt" ||
    thread_block "$txt" q-mutex
pe_stop

# ---- the peek prints the same capture ------------------------------------------------------
PE_ENV="PROFEP_PEEK_SIGNAL=USR1 PROFEP_PEEK_SECONDS=0.2" pe_start $P/p_quiet_park || exit 1
PE_ENV=
check "peek: ready" wait_ready
kill -USR1 $PE_PID
for _ in $(seq 100); do grep -q 'peek done' $PE_ERR && break; sleep 0.05; done
# the thread that took SIGUSR1 may still be on its way back into its call
check "peek: blocked threads from /proc ($(grep -c '^# capture: proc' $PE_ERR) of 10)" \
    [ "$(grep -c '^# capture: proc' $PE_ERR)" -ge 9 ]
pe_stop

# ---- (b) a program for which EINTR is fatal -----------------------------------------------
pe_start $P/p_quiet_park strict || exit 1
check "strict: ready" wait_ready
fails=$(many 100 /debug/pprof/goroutine '/debug/pprof/goroutine?debug=1' \
    '/debug/pprof/goroutine?debug=2' /task_backtraces)
check "strict: 100 dumps answered" [ "$fails" = 0 ]
pe_get '/profile_wall?duration=10&delay=0.01' -o $T/w.pb.gz
go tool pprof -raw $T/w.pb.gz >$T/w.raw 2>&1
grep '^Comment: capture' $T/w.raw | sed 's/^/  /'
check "strict: wall samples from /proc, no signal" \
    bash -c "grep -q 'capture:\[proc\]' $T/w.raw && grep -q 'capture: [0-9]* samples from /proc without a signal, 0 signals sent' $T/w.raw" ||
    signalled $T/w.raw
check "strict: each parked thread in the wall profile" \
    bash -c "for f in park_sleep park_poll park_epoll park_read park_cond park_mutex park_sem park_accept park_wait; do go tool pprof -top $T/w.pb.gz 2>/dev/null | grep -q \$f || exit 1; done"
kill -TERM $PE_PID
wait $PE_PID
rc=$?
PE_PID=
check "strict: exit status 0 (got $rc), no EINTR" bash -c "[ $rc = 0 ] && ! grep -q EINTR $PE_ERR"
grep -v '^profendpoints: serving' $PE_ERR | head -5

# ---- (c) perl's sleep --------------------------------------------------------------------------
if command -v perl >/dev/null; then
    pe_start perl -e 'use Time::HiRes qw(time); my $t = time; sleep 4; printf "slept %.2f s\n", time - $t' || exit 1
    sleep 1
    pe_get '/debug/pprof/goroutine?debug=2' >$T/perl.txt
    check "perl: its thread from /proc" grep -q '1 from /proc without a signal' $T/perl.txt
    wait $PE_PID
    PE_PID=
    slept=$(sed -n 's/^slept \([0-9.]*\) s$/\1/p' $PE_OUT)
    check "perl: sleep 4 slept 4 s ($slept)" python3 -c "import sys; sys.exit(not 3.95 <= float('${slept:-0}') < 6)"
fi

# ---- (d) churn ----------------------------------------------------------------------------------
pe_start $P/p_quiet_churn || exit 1
check "churn: ready" wait_ready
fails=$(many 1000 '/debug/pprof/goroutine?debug=2' /debug/pprof/goroutine)
check "churn: 1000 dumps answered" [ "$fails" = 0 ]
kill -TERM $PE_PID
wait $PE_PID
rc=$?
PE_PID=
check "churn: exit 0 and its checks passed (rc $rc: $(tail -1 $PE_OUT))" \
    bash -c "[ $rc = 0 ] && grep -q '^threads [0-9]*$' $PE_OUT"

# ---- (e) wall coverage: 2,000 threads, a 0.5 s wall profile (a few threads a tick)
if command -v go >/dev/null; then
    pe_start $P/p_sleepers 2000 60 || pe_finish
    eventually 60 grep -q '^ready 2000' $PE_OUT
    pe_get '/profile_wall?duration=0.5' -o $T/w2k.pb.gz
    go tool pprof -comments $T/w2k.pb.gz >$T/w2k.txt 2>&1
    line=$(grep 'threads are in this profile' $T/w2k.txt)
    read -r inp all other < <(sed -n 's/.*wall: \([0-9]*\) of the program.s \([0-9]*\) threads are in this profile; the other \([0-9]*\) were never sampled.*/\1 \2 \3/p' <<<"$line")
    check "2,000 threads, 0.5 s wall: the comments say how many threads and how many sampled ($line)" \
        bash -c "[ -n '$other' ] && [ '$all' -ge 2001 ] && [ \$(($inp + $other)) = '$all' ] && [ '$inp' -lt 2000 ]"
    pe_stop
    pe_start $P/p_sleepers 4 60 || pe_finish
    eventually 60 grep -q '^ready 4' $PE_OUT
    pe_get '/profile_wall?duration=1' -o $T/w4.pb.gz
    check "4 threads, 1 s wall: every thread is in, no such comment" \
        bash -c "go tool pprof -comments $T/w4.pb.gz | grep -q '^wall: ' && ! go tool pprof -comments $T/w4.pb.gz | grep -q 'never sampled'"
    pe_stop
else
    echo "skip (e): go not installed"
fi

pe_finish
