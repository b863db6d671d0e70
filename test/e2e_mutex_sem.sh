#!/usr/bin/env bash
# e2e_mutex_sem: the interposed lock and wait calls answer exactly as glibc's
# (p_mutex_sem prints every answer): error-checking, recursive, robust,
# priority-inheritance and -protect mutexes, timed locks, rwlocks, condition
# waits and cancellation inside them; without the library, with it at the
# default rate, at PROFEP_MUTEX_RATE=1 (every contended call timed and
# recorded) and =0, and for a program linked without -lpthread.
source test/lib.sh
P=$BUILD/test

want=$($P/p_mutex_sem 2>&1); st=$?
check "p_mutex_sem runs alone (exit 0, ends with done)" bash -c "[ $st = 0 ] && [ \"\$(tail -n 1 <<<\"\$0\")\" = done ]" "$want"
for rate in '' 1 0; do
    got=$(env PROFEP_MUTEX_RATE=$rate PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $P/p_mutex_sem 2>/dev/null); gst=$?
    check "same answers and status with the library, PROFEP_MUTEX_RATE=${rate:-default}" \
        bash -c "[ \"\$0\" = \"\$1\" ] && [ $gst = 0 ] || diff <(echo \"\$0\") <(echo \"\$1\")" "$want" "$got"
done

# A program that never names libpthread (glibc >= 2.34 has it in libc).
if cc -std=gnu11 -O1 -g -o $T/p_mutex_sem_nolink test/p_mutex_sem.c 2>$T/cc.err; then
    check "built without -lpthread: no libpthread in its NEEDED" \
        bash -c "! readelf -d $T/p_mutex_sem_nolink | grep -q 'libpthread'"
    got=$(PROFEP_MUTEX_RATE=1 PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB $T/p_mutex_sem_nolink 2>/dev/null)
    check "built without -lpthread: same answers at PROFEP_MUTEX_RATE=1" [ "$got" = "$want" ]
else
    bad "could not build p_mutex_sem without -lpthread: $(head -n 3 $T/cc.err)"
fi

pe_finish
