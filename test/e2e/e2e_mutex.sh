#!/usr/bin/env bash
# e2e_mutex: /debug/pprof/mutex and /debug/pprof/block against a program that
# knows its own truth (p_mutex_fight): the fight's delay within 25% of the
# program's own measurement at PROFEP_MUTEX_RATE=1, and within 60% at the
# default rate (a statistical check of the scaling); rwlock and condition waits
# in the right profiles; debug=1 text that go tool pprof reads back; seconds=N
# deltas; 503 when off.
source test/e2e/lib.sh
P=$BUILD/test

# cum delay (ns) of function $2 in profile file $1, by go tool pprof -top
cum_ns() {
    go tool pprof -top -unit=ns -nodefraction=0 -nodecount=200 -sample_index=delay "$1" 2>/dev/null |
        awk -v fn="$2" '$NF == fn { v = $4; sub(/ns$/, "", v); printf "%.0f\n", v + 0; found = 1 }
                        END { if (!found) print 0 }'
}
cum_count() {
    go tool pprof -top -nodefraction=0 -nodecount=200 -sample_index=contentions "$1" 2>/dev/null |
        awk -v fn="$2" '$NF == fn { print $4 + 0; found = 1 } END { if (!found) print 0 }'
}
wait_file() { for _ in $(seq 400); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

run_fight() { # rate seconds tag
    local out=$T/truth.$3
    PE_ENV="PROFEP_MUTEX_RATE=$1" pe_start $P/p_mutex_fight "$2" "$out" 60 || return 1
    if ! wait_file "$out"; then echo "p_mutex_fight wrote no $out"; return 1; fi
    truth=$(sed -n 's/^fight_ns=//p' "$out")
    pe_get /debug/pprof/mutex -o $T/mutex.$3.pb.gz
    pe_get /debug/pprof/block -o $T/block.$3.pb.gz
}

# ---- every contention recorded: the ground truth -------------------------------------
run_fight 1 2 r1 || exit 1
m=$T/mutex.r1.pb.gz b=$T/block.r1.pb.gz
got=$(cum_ns $m fight_lock)
echo "  rate 1: fight_lock delay $got ns in the profile, $truth ns measured by the program"
check "rate 1: fight_lock's delay within 25% of the program's own measurement" within "$got" "$truth" 25
check "mutex profile: sample types contentions/count, delay/nanoseconds" \
    bash -c "go tool pprof -raw $m 2>/dev/null | grep -q 'contentions/count delay/nanoseconds'"
check "mutex profile: period type contentions/count, period 1" \
    bash -c "go tool pprof -raw $m 2>/dev/null | grep -q 'PeriodType: contentions count' &&
             go tool pprof -raw $m 2>/dev/null | grep -q '^Period: 1$'"
check "mutex profile: the interposer is the leaf (pthread_mutex_lock)" \
    [ "$(cum_ns $m pthread_mutex_lock)" -gt 0 ]
check "mutex profile: the rwlock waits (rw_read or rw_write)" \
    [ $(( $(cum_ns $m rw_read) + $(cum_ns $m rw_write) )) -gt 0 ]
check "mutex profile: no condition waits" [ "$(cum_ns $m wait_for_item)" = 0 ]
check "block profile: the condition waits (wait_for_item)" [ "$(cum_ns $b wait_for_item)" -gt 0 ]
check "block profile: pthread_cond_wait is their leaf" [ "$(cum_ns $b pthread_cond_wait)" -gt 0 ]
check "block profile: the mutex waits too (fight_lock)" [ "$(cum_ns $b fight_lock)" -gt 0 ]
check "mappings: main binary and the library named" \
    bash -c "go tool pprof -raw $m 2>/dev/null | grep -q 'p_mutex_fight' &&
             go tool pprof -raw $m 2>/dev/null | grep -q 'libprofendpoints.so'"

# debug=1: Go's legacy text, which pprof reads back with the period applied.
pe_get '/debug/pprof/mutex?debug=1' >$T/mutex.txt
check "debug=1: '--- mutex:' header, cycles/second, sampling period" \
    bash -c "head -3 $T/mutex.txt | tr '\n' '|' | grep -q '^--- mutex:|cycles/second=1000000000|sampling period=1|'"
check "debug=1: a record line and fight_lock among the symbolized frames" \
    bash -c "grep -Eq '^[0-9]+ [0-9]+ @( 0x[0-9a-f]+)+$' $T/mutex.txt && grep -q $'^#\t0x[0-9a-f]*\tfight_lock' $T/mutex.txt"
check "debug=1: go tool pprof parses it as a delay profile" \
    bash -c "go tool pprof -top $T/mutex.txt 2>/dev/null | grep -q '^Type: delay'"
pe_get '/debug/pprof/block?debug=1' >$T/block.txt
check "debug=1 block: '--- contention:' header, wait_for_item in it" \
    bash -c "head -1 $T/block.txt | grep -q '^--- contention:' && grep -q wait_for_item $T/block.txt"

# seconds=N: the fight is over, so a delta over 1 s holds no fight_lock.
pe_get '/debug/pprof/mutex?seconds=1' -o $T/delta.pb.gz
check "seconds=1 after the fight: fight_lock absent from the delta" [ "$(cum_ns $T/delta.pb.gz fight_lock)" = 0 ]
check "seconds=1 is a valid profile with duration" \
    bash -c "go tool pprof -raw $T/delta.pb.gz 2>/dev/null | grep -q 'Duration: 1'"
check "seconds with debug: 400" [ "$(pe_status '/debug/pprof/mutex?seconds=1&debug=1')" = 400 ]
check "format=text works on the mutex profile" \
    bash -c "curl -s 'http://$PE_ADDR/debug/pprof/mutex?format=text' | grep -q fight_lock"
pe_stop

# ---- the default rate (1 in 100), scaled back up -----------------------------------
# A check of the scaling (x100), not of precision: ~20k contentions, ~200 sampled, and
# waits are heavy-tailed on a loaded machine (measured spread: about 20% standard error).
run_fight '' 4 r100 || exit 1
m=$T/mutex.r100.pb.gz
got=$(cum_ns $m fight_lock)
echo "  default rate: fight_lock delay $got ns in the profile (scaled x100), $truth ns measured"
check "default rate: period 100" bash -c "go tool pprof -raw $m 2>/dev/null | grep -q '^Period: 100$'"
check "default rate: counts are multiples of 100 (scaled)" \
    bash -c "c=\$(go tool pprof -top -nodefraction=0 -sample_index=contentions $m 2>/dev/null | awk '\$NF == \"fight_lock\" {print \$4}'); [ -n \"\$c\" ] && [ \$((c % 100)) = 0 ]"
check "default rate: fight_lock's scaled delay within 60% of the truth" within "$got" "$truth" 60
pe_stop

# ---- off -----------------------------------------------------------------------------
PE_ENV="PROFEP_MUTEX_RATE=0" pe_start $P/p_sleep 30 0 || exit 1
check "PROFEP_MUTEX_RATE=0: /debug/pprof/mutex answers 503" [ "$(pe_status /debug/pprof/mutex)" = 503 ]
check "PROFEP_MUTEX_RATE=0: /debug/pprof/block answers 503" [ "$(pe_status /debug/pprof/block)" = 503 ]
check "503 says how to turn it on" bash -c "curl -s http://$PE_ADDR/debug/pprof/block | grep -q PROFEP_MUTEX_RATE"
pe_stop
PE_ENV=
pe_finish
