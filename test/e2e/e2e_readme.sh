#!/usr/bin/env bash
# e2e_readme: the README's commands work as written.
#  1. The first screen: every line of the ```sh blocks before the first "## "
#     heading is run from another directory than the repository's (make demo
#     and make test skipped: they are CI's own run; make install into a
#     DESTDIR, with LD_LIBRARY_PATH standing in for the ldconfig it runs
#     without one), with ./yourprogram replaced by a workload, port 16825 by a
#     free one and 5 s profiles by 2 s ones; LD_PRELOAD is a bare name or an
#     absolute path, never one relative to the repository;
#     the flame graph must be an SVG with the workload's frames, and
#     go tool pprof -top must name its functions.
#  2. "Containers and Kubernetes": its ```sh block, with the library from
#     $BUILD, the token from a file of ours and POD_IP this machine's own
#     non-loopback address (hostname -I): with the token the profile arrives,
#     without it 401.
source test/e2e/lib.sh
P=$BUILD/test
pe_need curl go "$P/p_cpu_split"
README=$PWD/README.md
WORK="$P/p_cpu_split 60"

# The lines of the ```sh blocks of the first screen, and of "Containers".
first_screen() {
    awk '/^## / { exit } /^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$README"
}
containers() {
    awk '/^## / { sec = ($0 ~ /^## Containers/) } sec && /^```sh$/ { on = 1; next }
         /^```/ { on = 0 } sec && on' "$README"
}
wait_port() { eventually 40 test -s "$T/port"; }

# ---- 1. the first screen
mapfile -t cmds < <(first_screen | grep -vE '^make (demo|test)\b' | grep -v '^[[:space:]]*$')
check "first screen: a command starts ./yourprogram with LD_PRELOAD" \
    grep -q 'LD_PRELOAD=.*\./yourprogram' <(printf '%s\n' "${cmds[@]}")
check "first screen: make demo and make test are given" \
    grep -qx 'make demo .*' <(first_screen)
pre=$(printf '%s\n' "${cmds[@]}" | grep -o 'LD_PRELOAD=[^ ]*' | head -n 1)
check "first screen: $pre works from any directory (a bare name or an absolute path)" \
    bash -c "[[ '${pre#LD_PRELOAD=}' != */* || '${pre#LD_PRELOAD=}' == /* ]]"
check "make install runs ldconfig without DESTDIR (LD_PRELOAD=libprofendpoints.so finds it)" \
    bash -c "make -n install BUILD=$BUILD DESTDIR= | grep -q ldconfig"
ROOT=$PWD
mkdir -p "$T/run" && cd "$T/run" || exit 1
port=
for c in "${cmds[@]}"; do
    if [[ $c == 'make install'* ]]; then
        # not into this machine's /usr/local: a DESTDIR, and its lib as the loader's path
        make -s --no-print-directory -C "$ROOT" install BUILD="$BUILD" DESTDIR="$T/root" >"$T/inst.log" 2>&1
        check "make install (DESTDIR) puts the library in /usr/local/lib" test -f "$T/root/usr/local/lib/libprofendpoints.so" ||
            cat "$T/inst.log"
        export LD_LIBRARY_PATH=$T/root/usr/local/lib
        continue
    fi
    c=${c//\$PWD\/build\//$BUILD/}
    c=${c//.\/yourprogram/$WORK}
    if [[ $c == *LD_PRELOAD=* && $c == *'&' ]]; then
        # The program: on a free port (port file) instead of 16825.
        eval "PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/port $c" 2>"$T/prog.err"
        PE_PID=$!
        unset LD_LIBRARY_PATH
        if wait_port; then port=$(cat "$T/port"); port=${port##*:}; ok "started: $c"
        else bad "no port file from: $c ($(head -c 300 "$T/prog.err"))"; break; fi
        continue
    fi
    c=${c//16825/$port}
    c=${c//duration=5/duration=2} # shorter profiles: the test stays well under 40 s
    c=${c//seconds=5/seconds=2}
    echo "run: $c"
    if [[ $c == go\ tool\ pprof* ]]; then
        eval "$c" >"$T/top.txt" 2>"$T/top.err"
        check "go tool pprof -top exits 0" test $? = 0
        check "go tool pprof -top names the workload (cpu_three_quarters)" \
            grep -q 'cpu_three_quarters' "$T/top.txt"
    else
        eval "$c" 2>"$T/cmd.err" # curl's progress meter, shown on failure
        rc=$?
        [ $rc = 0 ] || cat "$T/cmd.err"
        check "exits 0: $c" test $rc = 0
    fi
done
check "flame.svg was written" test -s flame.svg
check "flame.svg is an SVG" grep -q '<svg ' flame.svg
check "flame.svg has frames (at least 4)" test "$(grep -c 'class="f' flame.svg)" -ge 4
check "flame.svg has the workload's frames" grep -q 'data-n="cpu_three_quarters' flame.svg
pe_stop

# ---- the demo (make demo) says what its output shows: every function of its top
# with a cum% of 10% or more is one it names, and their shares are as it says
cd "$ROOT" || exit 1
scripts/demo.sh "$BUILD" >"$T/demo.out" 2>&1
said=$(sed -n '/^== starting/,/^profendpoints:/p' "$T/demo.out")
top=$(awk '/flat%/ { on = 1; next } on && NF >= 6 && $5 + 0 >= 10 { print $6 }' "$T/demo.out" | grep -vE '^(clone3|start_thread|main|__libc_start)' | sort -u)
missing=$(for f in $top; do grep -qw -- "$f" <<<"$said" || echo "$f"; done)
check "the demo names every function of its top ($(echo $top)): none unnamed (${missing:-none})" \
    bash -c "[ -n '$top' ] && [ -z '$missing' ]"
cum() { awk -v f="$1" '/flat%/ { on = 1; next } on && $6 == f { print $5 + 0 }' "$T/demo.out"; }
check "the demo's shares: cpu_three_quarters $(cum cpu_three_quarters)% and late $(cum late)% above cpu_one_quarter $(cum cpu_one_quarter)%" \
    awk -v a="$(cum cpu_three_quarters)" -v b="$(cum late)" -v c="$(cum cpu_one_quarter)" 'BEGIN { exit !(a > c && b > c) }'
cd "$T/run" || exit 1

# ---- 2. Containers and Kubernetes, from this machine's own address
ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9.]+$' | grep -v '^127\.' | head -n1)
mapfile -t kcmds < <(containers | grep -v '^[[:space:]]*$')
check "containers: a command listens on 0.0.0.0:16825 with PROFEP_TOKEN" \
    grep -q 'PROFEP_ADDR=0.0.0.0:16825 PROFEP_TOKEN=' <(printf '%s\n' "${kcmds[@]}")
check "containers: a curl sends the token as a Bearer header" \
    grep -q "curl -H \"Authorization: Bearer \$PROFEP_TOKEN\"" <(printf '%s\n' "${kcmds[@]}")
if [ -z "$ip" ]; then
    echo "no non-loopback IPv4 address (hostname -I): the container example is not run"
else
    rm -f "$T/port" cpu.pb.gz
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/secret"
    export PROFEP_TOKEN
    PROFEP_TOKEN=$(cat "$T/secret")
    for c in "${kcmds[@]}"; do
        c=${c//\/opt\/profep\//$BUILD/}
        c=${c//\/run\/secrets\/profep/$T/secret}
        c=${c//POD_IP/$ip}
        if [[ $c == *LD_PRELOAD=* ]]; then
            c=${c//0.0.0.0:16825/0.0.0.0:0}
            c=${c//.\/app/$WORK}
            eval "PROFEP_PORT_FILE=$T/port $c >$T/k.out 2>$T/k.err &"
            PE_PID=$!
            if wait_port; then port=$(cat "$T/port"); port=${port##*:}; ok "listens on $(cat "$T/port")"
            else bad "no port file from: $c"; break; fi
            check "no warning about a missing token" eval "! grep -q 'without PROFEP_TOKEN' $T/k.err"
            continue
        fi
        c=${c//16825/$port}
        c=${c//seconds=5/seconds=2}
        echo "run: $c"
        eval "$c" 2>"$T/cmd.err"
        rc=$?
        [ $rc = 0 ] || cat "$T/cmd.err"
        check "exits 0: $c" test $rc = 0
        check "from $ip with the token: a CPU profile (go tool pprof reads it)" \
            eval "go tool pprof -top cpu.pb.gz 2>/dev/null | grep -q cpu_three_quarters"
        nok=${c/-H \"Authorization: Bearer \$PROFEP_TOKEN\" /}
        w='-w %{http_code}'
        nok=${nok/-o cpu.pb.gz/-o nok.txt $w}
        nok=${nok/seconds=2/seconds=1}
        code=$(eval "$nok" 2>/dev/null)
        check "from $ip without the token: 401 (got $code)" test "$code" = 401
    done
    pe_stop
fi
pe_finish
