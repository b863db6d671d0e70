#!/usr/bin/env bash
# e2e_cpu_safety: profiling must not break the host: a thread that
# dlopen/dlclose-s in a loop while profiled at 1000 Hz for 10 s (no deadlock,
# no crash), C++ exceptions thrown and caught in a loop while profiled (still
# through libgcc_s, libunwind not in the global scope), fork+exec while
# profiled, fork and fork+exec of busy children while profiled, and no
# timers left once the profile ends.
source test/e2e/lib.sh
P=$BUILD/test
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }

# ---- dlopen/dlclose churn at 1000 Hz for 10 s -----------------------------------
pe_start $P/p_cpu_dlopen 14 || exit 1
st=$(pe_get '/profile?duration=10&delay=0.001' -o $T/dl.pb.gz -w '%{http_code}' --max-time 40)
check "1000 Hz for 10 s under dlopen/dlclose churn: profile returned ($st)" [ "$st" = 200 ]
check "the profile names dl_main_work" \
    bash -c "go tool pprof -top $T/dl.pb.gz 2>/dev/null | grep -q dl_main_work"
go tool pprof -raw $T/dl.pb.gz 2>/dev/null | grep -E '^(Comment|truncated|dropped)' | sed 's/^/  /'
for _ in $(seq 80); do kill -0 $PE_PID 2>/dev/null || break; sleep 0.1; done
wait $PE_PID; rc=$?; PE_PID=
check "the dlopen program finished normally (exit $rc)" [ "$rc" = 0 ]
check "the dlopen program's output" grep -q 'cycles=many done' $PE_OUT

# ---- C++ exceptions while profiled ------------------------------------------------
pe_start $P/p_cpu_throw 6 || exit 1
st=$(pe_get '/profile?duration=4&delay=0.001' -o $T/cxx.pb.gz -w '%{http_code}')
check "C++ program profiled ($st)" [ "$st" = 200 ]
check "the profile names thrower (mangled or not)" \
    bash -c "go tool pprof -top $T/cxx.pb.gz 2>/dev/null | grep -q thrower"
wait $PE_PID; rc=$?; PE_PID=
cat $PE_OUT
check "every exception caught, through libgcc_s (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -q 'caught=ok unwinder=libgcc_s' $PE_OUT"

# ---- after the profile: no timers left, signal harmless ------------------------------
pe_start $P/p_cpu_split 8 0.1 || exit 1
pe_get '/profile?duration=1' -o /dev/null
check "no POSIX timers left once the profile ended" \
    eventually 5 bash -c "[ \"\$(grep -c '^ID:' /proc/$PE_PID/timers)\" = 0 ]"
wait $PE_PID; rc=$?; PE_PID=
check "program finished normally after being profiled (exit $rc)" [ "$rc" = 0 ]

# ---- new threads whose first samples land in malloc, at 1000 Hz ----------------------
# (libunwind state created lazily in the handler once deadlocked here)
pe_start $P/p_cpu_newthreads 6 || exit 1
st=$(pe_get '/profile?duration=4&delay=0.001' -o $T/newthreads.pb.gz -w '%{http_code}')
check "profiled while threads start in malloc ($st)" [ "$st" = 200 ]
( sleep 20; kill -9 $PE_PID 2>/dev/null ) & guard=$!
wait $PE_PID; rc=$?; PE_PID=
kill $guard 2>/dev/null; wait $guard 2>/dev/null
check "threads starting in malloc under 1000 Hz: the program finished (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -q 'threads=many' $PE_OUT"

# ---- the program resets SIGPROF through sigset/sysv_signal/bsd_signal mid-profile ----
pe_start $P/p_cpu_sigset 4 || exit 1
st=$(pe_get '/profile?duration=2.5&delay=0.001' -o $T/sigset.pb.gz -w '%{http_code}')
wait $PE_PID; rc=$?; PE_PID=
check "sigset(SIGPROF, SIG_DFL) during a profile: profile returned ($st)" [ "$st" = 200 ]
check "sigset(SIGPROF, SIG_DFL) during a profile: not killed (exit $rc)" \
    bash -c "[ $rc = 0 ] && grep -q 'sigset ok' $PE_OUT"

# ---- fork and fork+exec while profiled at 1000 Hz ------------------------------------
# (the program outlives the 4 s profile by a margin: under load, building the profile takes time)
pe_start $P/p_cpu_fork 8 || exit 1
st=$(pe_get '/profile?duration=4&delay=0.001' -o $T/fork.pb.gz -w '%{http_code}')
check "profiled while forking ($st)" [ "$st" = 200 ]
wait $PE_PID; rc=$?; PE_PID=
cat $PE_OUT
check "children (fork, fork+exec of a busy shell) all exit with their own status" \
    bash -c "[ $rc = 0 ] && grep -q 'forks=many bad=0' $PE_OUT"
pe_finish
