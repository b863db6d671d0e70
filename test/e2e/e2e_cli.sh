#!/usr/bin/env bash
# e2e_cli: scripts/profep as people type it: --help names every command the
# dispatch takes, argument errors say what was expected (exit 2), saved files
# never collide nor overwrite, the countdown shows on a terminal only, and
# make install puts profep next to the library.
source test/e2e/lib.sh
pe_need curl
P=$BUILD/test
PF=$PWD/scripts/profep

# ---- usage ------------------------------------------------------------------------------
# The commands of the dispatch (the case at the end of the script) against --help.
cmds=$(sed -n '/^case \${1:-} in/,/^esac/p' "$PF" | grep -o '^[a-z][a-z |]*)' | tr -d ')|' | xargs -n1)
help=$("$PF" --help)
check "the dispatch takes commands ($(echo $cmds))" [ "$(echo "$cmds" | wc -l)" -ge 10 ]
for c in $cmds; do
    check "--help describes '$c'" grep -q "^$c  " <<<"$help"
done
check "COMMANDS (named in errors) is the dispatch's list" \
    [ "$(grep -o '^COMMANDS="[^"]*"' "$PF" | cut -d'"' -f2 | xargs -n1 | sort)" = "$(echo "$cmds" | sort)" ]

# expect_usage WHAT STATUS PATTERN ARGS...: profep ARGS exits STATUS, stderr matches PATTERN.
expect_usage() {
    local what=$1 want=$2 pat=$3 st
    shift 3
    "$PF" "$@" >/dev/null 2>$T/u.err </dev/null
    st=$?
    if [ "$st" = "$want" ] && grep -qE -- "$pat" $T/u.err; then
        ok "$what"
    else
        bad "$what (exit $st)"
        cat $T/u.err
    fi
}
expect_usage "heap 9999: a number that looks like a port is refused, naming both readings" 2 \
    'heap 9999: expected SECONDS \(above 0, at most 600: the server.s PROFEP_MAX_SECONDS\) or ADDR \(HOST:PORT or :PORT; a port alone is :9999\)' heap 9999
expect_usage "cpu 999999: no port is suggested where none could be" 2 \
    'cpu 999999: expected SECONDS \(above 0, at most 600: the server.s PROFEP_MAX_SECONDS\) or ADDR \(HOST:PORT or :PORT\)$' cpu 999999
# profep and the server share one limit: PROFEP_MAX_SECONDS, with the same default
def=$(grep -A1 '"PROFEP_MAX_SECONDS"' preload/config.c | sed -n 's/.*\.def = "\([0-9]*\)".*/\1/p')
check "profep's default limit is the server's ($def)" grep -q "MAX_SECONDS=\${PROFEP_MAX_SECONDS:-$def}" "$PF"
expect_usage "trace 700: beyond the server's limit, refused before any wait" 2 'trace 700: expected SECONDS \(above 0, at most 600' trace 700
PROFEP_MAX_SECONDS=1000 expect_usage "PROFEP_MAX_SECONDS=1000: profep's limit follows" 2 'cpu 1001: expected SECONDS \(above 0, at most 1000:' cpu 1001
# Every error is a profep: line, never bash's own (exec of a missing program)
for args in "run -- ./nonexistent" "run -- nonexistent_cmd_x" "run -- /" "cpu 999999" "heap -x" "cpu :1"; do
    # shellcheck disable=SC2086
    (cd $T && "$PF" $args >/dev/null 2>$T/err.out </dev/null)
    check "profep $args: every stderr line is a profep: line ($(head -n 1 $T/err.out))" \
        bash -c "[ -s $T/err.out ] && ! grep -v '^profep: ' $T/err.out"
done
expect_usage "peak 5: a command without SECONDS refuses a number" 2 \
    'peak takes no SECONDS; expected ADDR \(HOST:PORT or :PORT\)' peak 5
expect_usage "heap myhost: ADDR needs a colon" 2 'expected SECONDS \(a number\) or ADDR' heap myhost
expect_usage "cpu 5 6: one SECONDS" 2 'two numbers' cpu 5 6
expect_usage "unknown command: the commands named, exit 2" 2 \
    "unknown command 'profil'; expected one of: run cpu heap" profil
expect_usage "unknown option of a fetch: -o, -f and --pid named, exit 2" 2 \
    'unknown option -x; expected -o FILE, -f FORMAT or --pid PID' heap -x
expect_usage "unknown option of run: its options named, exit 2" 2 \
    'expected --port N, --addr HOST:PORT, --lib PATH' run --bogus
expect_usage "unknown top-level option, exit 2" 2 'expected a command' --verbose

# ---- files ------------------------------------------------------------------------------
pe_start $P/p_sleep 60 0 || exit 1
mkdir $T/out
# Two at once (one second, most likely), then one more: three files.
(cd $T/out && { "$PF" heap "$PE_ADDR" 2>e1 & "$PF" heap "$PE_ADDR" 2>e2 & wait; })
(cd $T/out && "$PF" heap "$PE_ADDR" 2>e3)
check "three profep heap runs, three files" \
    [ "$(ls $T/out/heap-*.pb.gz | wc -l)" = 3 ]
# Names taken already for the next seconds are skipped, never overwritten.
now=$(date +%s)
for s in 0 1 2 3 4 5; do echo old >"$T/out/heap-$(date -d @$((now + s)) +%Y%m%d-%H%M%S).pb.gz"; done
(cd $T/out && "$PF" heap "$PE_ADDR" 2>e4)
new=$(sed -n 's/^profep: saved the heap profile to \([^ ]*\) .*/\1/p' $T/out/e4)
# (-2, or higher when the three runs above took this second's -2 and -3 already)
check "a taken name gets -N ($new)" bash -c "[[ '$new' =~ ^heap-[0-9]{8}-[0-9]{6}-[0-9]+\.pb\.gz\$ ]] && gzip -t '$T/out/$new'"
check "the files already there are unchanged" \
    [ "$(grep -lx old $T/out/heap-*.pb.gz | wc -l)" = 6 ]
echo mine >$T/out/keep.pb.gz
"$PF" heap "$PE_ADDR" -o $T/out/keep.pb.gz 2>$T/out/e5
st=$?
check "-o FILE that exists: refused (exit $st), FILE unchanged" \
    bash -c "[ $st = 1 ] && grep -q 'exists; not overwritten' $T/out/e5 && [ \"\$(cat $T/out/keep.pb.gz)\" = mine ]"

# -o /dev/null (a device, not a file that exists) is written to
"$PF" heap "$PE_ADDR" -o /dev/null 2>$T/out/e6
st=$?
check "-o /dev/null is allowed (exit $st)" bash -c "[ $st = 0 ] && grep -q 'wrote the heap profile to /dev/null' $T/out/e6 && [ -c /dev/null ]"
# An empty profile says why: leaks of a program younger than AGE
"$PF" leaks "$PE_ADDR" -o $T/out/leaks.pb.gz 2>$T/out/e7
check "leaks of a young program: the empty profile says why ($(head -n 1 $T/out/e7))" \
    grep -q 'is empty: nothing can be older than min_age=300 s: the program has run for [0-9]* s' $T/out/e7

# ---- the countdown ----------------------------------------------------------------------
if [ "$(pe_status '/profile?duration=0.1' -o /dev/null)" = 200 ]; then
    "$PF" cpu "$PE_ADDR" 2 -o $T/out/nopty.pb.gz 2>$T/out/nopty.err
    check "no terminal: no countdown on stderr" \
        bash -c "gzip -t $T/out/nopty.pb.gz && ! grep -q 's left' $T/out/nopty.err"
    script -qec "$PF cpu $PE_ADDR 2 -o $T/out/pty.pb.gz" /dev/null >$T/out/pty.out 2>&1 </dev/null
    check "on a terminal: a countdown bar, then the saved line" \
        bash -c "grep -q 's left' $T/out/pty.out && grep -q 'saved the CPU profile' $T/out/pty.out && gzip -t $T/out/pty.pb.gz"
else
    ok "CPU profiling unavailable here: countdown not checked"
fi
pe_stop

# ---- make install -----------------------------------------------------------------------
make -s --no-print-directory install BUILD="$BUILD" DESTDIR=$T/inst PREFIX=/usr/local >$T/inst.log 2>&1
check "make install DESTDIR=... puts an executable profep in PREFIX/bin" \
    bash -c "[ -x $T/inst/usr/local/bin/profep ] && cmp -s $PF $T/inst/usr/local/bin/profep" ||
    cat $T/inst.log
# The installed profep finds the library installed with it (../lib).
out=$(env -u PROFEP_LIB PROFEP_ADDR=off $T/inst/usr/local/bin/profep run -- sh -c 'echo "$LD_PRELOAD"')
check "installed profep run preloads PREFIX/lib's library ($out)" \
    [ "$out" = "$T/inst/usr/local/lib/libprofendpoints.so" ]

pe_finish
