#!/usr/bin/env bash
# e2e_startup: start-up is deferred without losing the server.  A program
# that lives on is answered soon after exec (the server binds 30 ms after
# load: typically well under 100 ms, asserted under 1 s, more on a machine
# too loaded to run /bin/true in 10 ms); 200 programs that exit at once all exit 0, none hangs, and none
# that ended before the deferred start bound a port, wrote its port file or
# printed the "serving" line; a program with 128 KiB of static TLS (glibc
# refuses civetweb's 100 KiB thread stacks there) is served all the same.
source test/e2e/lib.sh
P=$BUILD/test
pe_need timeout

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# ---- served soon after exec
# The first answer is read through bash's /dev/tcp (no client process to
# start).  The bound, 1 s, is scaled up when the machine is so loaded that a
# bare /bin/true takes over 10 ms (idle: ~1 ms), as it does when other test
# suites share its two cores.
answer() { # host:port -> the status of GET /debug/pprof/
    local st
    exec 5<>"/dev/tcp/${1%:*}/${1##*:}" || return 1
    printf 'GET /debug/pprof/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&5
    read -r -t 5 _ st _ <&5
    exec 5<&-
    echo "$st"
}
bare=()
for i in 1 2 3 4 5; do
    t0=$(now_ms); /bin/true; bare+=($(($(now_ms) - t0)))
done
firsts=() files=()
for i in 1 2 3 4 5; do
    pf=$T/first.$i
    t0=$(now_ms)
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf LD_PRELOAD=$LIB $P/p_sleep 5 0 >/dev/null 2>$T/first.err &
    pid=$!
    while [ ! -s $pf ] && [ $(($(now_ms) - t0)) -lt 10000 ]; do sleep 0.002; done
    t1=$(now_ms)
    st=000
    [ -s $pf ] && st=$(answer "$(cat $pf)")
    t2=$(now_ms)
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    if [ "$st" != 200 ]; then
        bad "run $i: no answer ($st) within 10 s of exec"; cat $T/first.err
        continue
    fi
    files+=($((t1 - t0))) firsts+=($((t2 - t0)))
done
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
if [ ${#firsts[@]} = 5 ]; then
    b=$(med "${bare[@]}")
    limit=$((b > 10 ? 100 * b : 1000))
    echo "  bare /bin/true: median $b ms; exec to port file: ${files[*]} ms (median $(med "${files[@]}")); to first answer: ${firsts[*]} ms (median $(med "${firsts[@]}"))"
    check "first answer within $limit ms of exec (median of 5; typically under 100 ms)" \
        [ "$(med "${firsts[@]}")" -lt $limit ]
fi

# ---- programs that exit at once: nothing bound, nothing written, clean exit
mkdir $T/short
fails=0 early=0 late=0
for i in $(seq 200); do
    t0=$(now_ms)
    PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/short/pf.%p LD_PRELOAD=$LIB \
        timeout -s KILL 20 /bin/true 2>$T/short/err.$i
    rc=$?
    dt=$(($(now_ms) - t0))
    [ $rc = 0 ] || fails=$((fails + 1))
    # The port file appears only once the server binds, 30 ms after load:
    # a run that ended sooner than that must have left none.
    n=$(ls $T/short | grep -c '^pf\.' || true)
    if [ "$n" != 0 ]; then
        if [ $dt -lt 30 ]; then early=$((early + 1)); else late=$((late + 1)); fi
        rm -f $T/short/pf.*
    elif grep -q serving $T/short/err.$i; then
        [ $dt -lt 30 ] && early=$((early + 1))
    fi
done
check "200 x /bin/true with the library: every exit status 0, none hung ($fails failed)" [ $fails = 0 ]
check "no port file or serving line from a run shorter than the deferred start ($early; $late longer runs on a loaded machine bound)" \
    [ $early = 0 ]
check "nothing but the short runs' empty stderr" bash -c "! grep -v serving $T/short/err.* | grep -q ."

# ---- a shell whose child exits at once while the shell's own start is pending
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/sh.%p LD_PRELOAD=$LIB timeout -s KILL 20 \
    sh -c '/bin/true; sleep 0.5' 2>$T/sh.err &
shpid=$!
wait $shpid; rc=$?
# (its serving line: its own %p port file goes at its normal exit)
check "sh running /bin/true then living 0.5 s: exit 0 ($rc), and the shell served ($(head -c 100 $T/sh.err))" \
    bash -c "[ $rc = 0 ] && grep -q \"^profendpoints: serving http://127.0.0.1:.* (pid $shpid)\" $T/sh.err"

# ---- a program with 128 KiB of static TLS: glibc refuses threads with
# civetweb's 100 KiB stacks; ours get bigger ones and it is served
# (not under timeout: as an exec'd member of timeout's tree it would start differently)
PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/tls.%p LD_PRELOAD=$LIB $BUILD/test/p_bigtls 3 2>$T/tls.err &
tlspid=$!
eventually 10 test -s $T/tls.$tlspid
check "128 KiB of static TLS: served ($(head -c 200 $T/tls.err))" grep -q '^127.0.0.1:' $T/tls.$tlspid
wait $tlspid; rc=$?
check "128 KiB of static TLS: exit 0 ($rc), no warning" bash -c "[ $rc = 0 ] && ! grep -q cannot $T/tls.err"
pe_finish
