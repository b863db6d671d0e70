#!/usr/bin/env bash
# e2e_host_matrix: every built $BUILD/test/p_host_<row> program (a behaviour
# real programs have; the row contract is below and in test/progs/p_host.h)
# runs with the library preloaded under every kind of profiling
# at once: CPU /profile at 1000 Hz, /profile_wall at 1000 Hz, /allocs_profile
# recording every call, repeated /debug/pprof/goroutine?debug=2 captures and
# heap fetches, with heap sampling at PROFEP_HEAP_RATE=1 and at the default
# (runs alternate).  Each run checks: the row prints HOST-ROW-DONE (its own
# checks passed) within the limit, every request answers 200 or 503, no POSIX
# timer is left once the profiles end (/proc/PID/timers), our threads
# (civetweb-*, pe-*) use ~0 CPU over 1 s of idle (2 quiet seconds of 3: the
# heap history's mallinfo2 may take tens of ms every 15 s or so at 30,000
# threads, which is not a thread that spins), the program exits 0 after
# stdin EOF, and stderr holds only our "serving" line and the row's allowed
# lines (test/progs/p_host_<row>.allow: grep -E patterns, one a line; a line
# "status NNN why" lets requests end with that status too, e.g. 000 for a row
# that execs: its server goes away under the requests in flight).  A row may
# have test/progs/p_host_<row>.env (KEY=VALUE lines) for its environment,
# test/progs/p_host_<row>.settle (seconds to wait before the idle check),
# test/progs/p_host_<row>.alone (run after the others, by itself) and
# test/progs/p_host_<row>.ulimit (arguments of `ulimit` applied before it
# starts: the program runs within that limit from its first instruction).
#   PE_HOST_RUNS=N    runs per row (default 1; make stress: 20)
#   PE_HOST_ROWS=RE   only rows whose name matches RE
#   PE_HOST_JOBS=N    runs at once (default 3)
#   PE_HOST_LONG=1    passed to the rows: the long variants (10,000 threads ...)
# Prints a table: row, runs, failures.
source test/e2e/lib.sh
P=$BUILD/test
RUNS=${PE_HOST_RUNS:-1}
JOBS=${PE_HOST_JOBS:-3}
SECS=${PE_HOST_SECS:-2.5}
export PE_HOST_LONG=${PE_HOST_LONG:-0}
SECS_NS=$(awk "BEGIN { printf \"%d\", $SECS * 1e9 }")
rows=()
for prog in "$P"/p_host_*; do
    [ -x "$prog" ] || continue
    case $prog in *.d | *.o) continue ;; esac
    row=${prog##*/p_host_}
    [ -n "${PE_HOST_ROWS:-}" ] && ! [[ $row =~ $PE_HOST_ROWS ]] && continue
    rows+=("$row")
done
[ ${#rows[@]} -gt 0 ] || { echo "skip: no p_host_* programs built${PE_HOST_ROWS:+ matching PE_HOST_ROWS=$PE_HOST_ROWS}"; exit 77; }

# thread_ticks PID: utime+stime (clock ticks) summed over our threads.  Read
# with builtins: a fork per file over 30,000 threads took tens of seconds at
# load, and the "1 s" window around it grew as long.
# With FILE, also "TID COMM TICKS" a thread into FILE (who used them).
thread_ticks() {
    local sum=0 t c st out=${2:-/dev/null}
    for t in /proc/$1/task/*; do
        read -r c 2>/dev/null <"$t/comm" || continue
        case $c in civetweb-* | pe-*) ;; *) continue ;; esac
        read -r st 2>/dev/null <"$t/stat" || continue
        st=${st##*) }
        set -- $st
        sum=$((sum + ${12} + ${13}))
        echo "${t##*/} $c $((${12} + ${13}))"
    done >"$out"
    echo $sum
}

# idle_second PID DIR: the ticks our threads used over one second, and into
# DIR/idle.who the threads that used any ("comm +ticks").
idle_second() {
    local t0 t1
    t0=$(thread_ticks $1 "$2/idle.0")
    sleep 1
    t1=$(thread_ticks $1 "$2/idle.1")
    awk 'NR == FNR { was[$1] = $3; next }
         ($1 in was) && $3 != was[$1] { printf "%s +%d; ", $2, $3 - was[$1] }' \
        "$2/idle.0" "$2/idle.1" >"$2/idle.who"
    echo $((t1 - t0))
}

# get OUTFILE PATH: the status of one request (000 when none) into OUTFILE;
# the body is kept (OUTFILE.why: status, path, its first line) only when the
# status is neither 200 nor 503, so that a failure says which request and why.
get() {
    local b st
    b=$(mktemp "$1.body.XXXXXX")
    st=$(curl -s -o "$b" -w '%{http_code}' --max-time 60 "http://$addr$2" 2>/dev/null)
    echo "${st:-000}" >>"$1"
    case $st in
    200 | 503) ;;
    *) echo "$st $2: $(head -c 200 "$b" | head -n 1)" >>"$1.why" ;;
    esac
    rm -f "$b"
}

# one_run ROW RUN: writes $T/res.ROW.RUN ("ok" or the reasons) and a log.
one_run() {
    local row=$1 run=$2 d=$T/$1.$2 prog=$P/p_host_$1 fails=() heapenv=() pid wfd st
    mkdir -p "$d"
    # alternate the heap rate: even runs (counting rows too) at 1, odd ones default
    if [ $(((run + ${3:-0}) % 2)) = 0 ]; then heapenv=(PROFEP_HEAP_RATE=1) rate=1; else rate=default; fi
    local rowenv=()
    [ -f test/progs/p_host_$row.env ] && mapfile -t rowenv < <(grep -v '^#' test/progs/p_host_$row.env)
    mkfifo "$d/in"
    local lim=
    [ -f test/progs/p_host_$row.ulimit ] && lim=$(cat test/progs/p_host_$row.ulimit)
    (
        [ -z "$lim" ] || ulimit $lim
        exec env TMPDIR="$d" PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE="$d/port.%p" \
            LD_PRELOAD="$LIB" "${heapenv[@]}" "${rowenv[@]}" "$prog"
    ) <"$d/in" >"$d/out" 2>"$d/err" &
    pid=$!
    exec {wfd}>"$d/in"
    for _ in $(seq 200); do [ -s "$d/port.$pid" ] && break; sleep 0.05; done
    addr=$(cat "$d/port.$pid" 2>/dev/null)
    if [ -z "$addr" ]; then
        fails+=("no port file")
    else
        local sr=1; [ $rate = default ] && sr=0.01
        get "$d/st" "/profile?duration=$SECS&delay=0.001" &
        get "$d/st" "/profile_wall?duration=$SECS&delay=0.001" &
        get "$d/st" "/allocs_profile?duration=$SECS&sample_rate=$sr" &
        (
            end=$(($(date +%s%N) + SECS_NS))
            get "$d/st" /debug/pprof/heap
            while [ "$(date +%s%N)" -lt $end ]; do
                get "$d/st" "/debug/pprof/goroutine?debug=2"
                sleep 0.1
            done
            get "$d/st" /heap_snapshot
        ) &
    fi
    # the row's work: DONE within 90 s (10,000 threads on a busy machine), or it died
    local done=0
    for _ in $(seq 900); do
        grep -q HOST-ROW-DONE "$d/out" 2>/dev/null && { done=1; break; }
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    local others
    others=$(jobs -p | grep -v "^$pid\$")
    [ -z "$others" ] || wait $others 2>/dev/null
    [ $done = 1 ] || fails+=("no HOST-ROW-DONE")
    if [ -n "$addr" ]; then
        local bad_st
        local ok_st='200|503'
        [ -f test/progs/p_host_$row.allow ] &&
            ok_st="$ok_st$(sed -n 's/^status \([0-9]*\).*/|\1/p' test/progs/p_host_$row.allow | tr -d '\n')"
        bad_st=$(grep -v -E "^($ok_st)\$" "$d/st" | sort | uniq -c | tr -s ' \n' ' ')
        [ -z "$bad_st" ] ||
            fails+=("statuses:$bad_st($(grep -v -E "^($ok_st) " "$d/st.why" 2>/dev/null | head -3 | tr '\n' ';'))")
    fi
    if kill -0 $pid 2>/dev/null; then
        sleep 0.3
        # a row whose captures outlive their clients (30,000 threads: a
        # dump takes 25-70 s, and one whose client gave up runs to its end)
        # names the seconds they may still take: wait, at most that long, for
        # a quiet second of our threads (how long depends on the machine's load)
        if [ -f test/progs/p_host_$row.settle ]; then
            local settle_end=$((SECONDS + $(cat test/progs/p_host_$row.settle)))
            while [ $SECONDS -lt $settle_end ]; do
                [ "$(idle_second $pid "$d")" -le 2 ] && break
            done
            echo "settled after $((SECONDS - settle_end + $(cat test/progs/p_host_$row.settle))) s" >>"$d/log"
        fi
        local nt
        nt=$(grep -c '^ID:' /proc/$pid/timers 2>/dev/null)
        [ "${nt:-0}" = 0 ] || fails+=("$nt POSIX timers left")
        # ~0: at most 2 ticks (20 ms) of our threads over 1 s of idle, in
        # 2 seconds of 3 (one periodic burst is not a spinning thread)
        local quiet=0 secs=() who=
        for _ in 1 2 3; do
            local used
            used=$(idle_second $pid "$d")
            secs+=("$used")
            if [ "$used" -le 2 ]; then
                quiet=$((quiet + 1))
                [ $quiet = 2 ] && break
            else
                who="$who$(cat "$d/idle.who")"
            fi
        done
        [ $quiet -ge 2 ] ||
            fails+=("our threads used ${secs[*]} ticks in 1 s idle seconds (${who% })")
        echo "idle ticks ${secs[*]}${who:+ ($who)}" >>"$d/log"
    fi
    exec {wfd}>&-
    local rc=
    for _ in $(seq 100); do
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 $pid 2>/dev/null; then
        fails+=("no exit within 10 s of stdin EOF")
        kill -9 $pid 2>/dev/null
    fi
    wait $pid; rc=$?
    [ "$rc" = 0 ] || fails+=("exit status $rc")
    local allow='^profendpoints: serving http'
    [ -f test/progs/p_host_$row.allow ] &&
        allow="$allow|$(grep -v -e '^#' -e '^status ' test/progs/p_host_$row.allow | paste -sd'|')"
    if grep -v -E "$allow" "$d/err" >"$d/unexpected"; then
        fails+=("stderr: $(head -c 300 "$d/unexpected" | tr '\n' '|')")
    fi
    {
        echo "$row run $run (heap rate $rate): statuses $(sort "$d/st" 2>/dev/null | uniq -c | tr -s ' \n' ' ')"
        cat "$d/log" 2>/dev/null
        grep '^figure:' "$d/out" 2>/dev/null
    } >"$T/log.$row.$run"
    if [ ${#fails[@]} = 0 ]; then
        echo ok >"$T/res.$row.$run"
        rm -rf "$d"
    else
        printf '%s\n' "${fails[@]}" >"$T/res.$row.$run"
    fi
}

start=$SECONDS
echo "== ${#rows[@]} rows x $RUNS runs, $JOBS at once, profiles of $SECS s (PE_HOST_LONG=$PE_HOST_LONG)"
i=0
for run in $(seq $RUNS); do
    for row in "${rows[@]}"; do
        [ -f test/progs/p_host_$row.alone ] && continue
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
        one_run "$row" "$run" $i &
        i=$((i + 1))
    done
done
wait
# rows that need the machine to themselves (tens of thousands of threads:
# next to other rows they would exhaust the kernel's thread limits), one at a time
for run in $(seq $RUNS); do
    for row in "${rows[@]}"; do
        [ -f test/progs/p_host_$row.alone ] || continue
        one_run "$row" "$run" $i
        i=$((i + 1))
    done
done

printf '%-24s %5s %9s\n' row runs failures
total=0 totfail=0
for row in "${rows[@]}"; do
    nf=0 why=
    for run in $(seq $RUNS); do
        r=$T/res.$row.$run
        if [ "$(cat "$r" 2>/dev/null)" != ok ]; then
            nf=$((nf + 1))
            [ -n "$why" ] || why=" (run $run: $(head -c 160 "$r" 2>/dev/null | tr '\n' ';'))"
            sed "s/^/    $row run $run: /" "$r" 2>/dev/null || echo "    $row run $run: no result"
            cat "$T/log.$row.$run" 2>/dev/null | sed 's/^/      /'
            for f in out err; do
                [ -s "$T/$row.$run/$f" ] && tail -n 5 "$T/$row.$run/$f" | sed "s/^/      $f: /"
            done
        fi
    done
    printf '%-24s %5d %9d\n' "$row" "$RUNS" "$nf"
    total=$((total + RUNS)) totfail=$((totfail + nf))
    # the first reason on the check's own line: a summary of the log that
    # keeps only FAIL lines still says why
    check "row $row: $RUNS runs, $nf failures$why" [ $nf = 0 ]
done
cat "$T"/log.* | grep 'figure:' | sort | uniq -c | sed 's/^/  /'
echo "matrix: ${#rows[@]} programs, $total runs, $totfail failures, $((SECONDS - start)) s"
pe_finish
