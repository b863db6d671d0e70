#!/usr/bin/env bash
# bench_real.sh: the cost of the library in programs nobody here wrote (make
# bench; ratios, never pass/fail).  Every group alternates its configurations
# round by round (the order rotates each round), reports per-configuration
# medians with min-max, per-round ratios to "none" as median [min-max], and an
# A/A noise floor ("none2": no library again, measured like the others):
#   1. redis-server under redis-benchmark (SET and GET, 50 clients), server and
#      client pinned to different cores: requests/s with no library, the
#      library idle, a CPU profile running (/debug/pprof/profile?seconds=5 back
#      to back) and /allocs_profile recording (?duration=5 back to back);
#   2. python3 (a CPU-bound script) and gzip -1 (a generated ~200 MB text
#      file): process CPU (user + sys of the whole process, all its threads,
#      from the shell's `times`) with no library, ours at 100 Hz
#      (/profile_start?delay=0.01 before the work begins) and gperftools'
#      libprofiler.so at 100 Hz (CPUPROFILE_FREQUENCY=100);
#   3. a fork+exec storm: bash running /bin/true 1000 times, every process
#      loading the library (LD_PRELOAD inherited), wall and CPU.
# The programs wait for their stdin until the profiler runs, so the profile covers
# all of the work.  The load average is printed with each group: the machine
# may be shared, and only differences beyond the A/A floor mean anything.
# Usage: scripts/bench_real.sh BUILD   (BENCH_REAL_ROUNDS, default 5; smaller runs on a busy
# machine: BENCH_REAL_PY_ROUNDS, default 80, BENCH_REAL_GZIP_CHUNKS of 8 MB, default 25)
set -u
source "${BASH_SOURCE%/*}/bench_lib.sh"
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LIB=$BUILD/libprofendpoints.so
GPERF=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so.0 2>/dev/null || true)
ROUNDS=${BENCH_REAL_ROUNDS:-5}
PY=/usr/bin/python3 # not a shim on PATH (pyenv's is a shell script)
T=$(mktemp -d /tmp/pe-bench-real.XXXXXX)
PID='' LOOP=''
cleanup() {
    [ -n "$LOOP" ] && kill -- -"$LOOP" 2>/dev/null
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
[ -f "$LIB" ] || { echo "bench_real: $LIB not built"; exit 1; }
NCPU=$(nproc)
CORE_S=0 CORE_C=$((NCPU > 1 ? 1 : 0)) # server (or program) core, client core

stat3() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
report() { # GROUP UNIT FMT CONFIGS...: one line per configuration
    local g=$1 unit=$2 fmt=$3 c m lo hi
    shift 3
    for c in "$@"; do
        [ -s "$T/$g.$c" ] || continue
        read -r m lo hi <<<"$(stat3 "$T/$g.$c")"
        printf "  %-8s $fmt $unit [$fmt-$fmt]" "$c" "$m" "$lo" "$hi"
        case $c in
        none) echo ;;
        none2) echo "   A/A floor: $(ratios "$T/$g.$c" "$T/$g.none")" ;;
        *) echo "   ratio to none $(ratios "$T/$g.$c" "$T/$g.none")" ;;
        esac
    done
}
waitport() { # PORTFILE: prints host:port once written (5 s at most)
    for _ in $(seq 250); do [ -s "$1" ] && break; sleep 0.02; done
    cat "$1" 2>/dev/null
}

# ---- 1. redis ---------------------------------------------------------------
redis_round() { # CONFIG -> requests/s (mean of SET and GET)
    local c=$1 pf=$T/port.$RANDOM port=$((20000 + RANDOM % 20000)) addr=
    local args=(--port "$port" --save "" --appendonly no --daemonize no)
    case $c in
    none | none2) taskset -c $CORE_S redis-server "${args[@]}" >/dev/null 2>&1 & ;;
    *) taskset -c $CORE_S env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf PROFEP_LOG=warn \
        LD_PRELOAD=$LIB redis-server "${args[@]}" >/dev/null 2>&1 & ;;
    esac
    PID=$!
    [ "$c" = none ] || [ "$c" = none2 ] || addr=$(waitport $pf)
    for _ in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.05; done
    # The scraper sits with the client, off the server's core.
    case $c in
    cpu) setsid taskset -c $CORE_C bash -c "while :; do curl -s -o /dev/null --max-time 30 \
        'http://$addr/debug/pprof/profile?seconds=5'; done" >/dev/null 2>&1 & LOOP=$! ;;
    allocs) setsid taskset -c $CORE_C bash -c "while :; do curl -s -o /dev/null --max-time 30 \
        'http://$addr/allocs_profile?duration=5'; done" >/dev/null 2>&1 & LOOP=$! ;;
    esac
    [ -n "$LOOP" ] && sleep 0.2 # the first request has reached the server
    taskset -c $CORE_C redis-benchmark -p $port -t set,get -n "$REDIS_N" -c 50 -q 2>/dev/null | tr '\r' '\n' |
        awk 'match($0, /[0-9.]+ requests per second/) { s += substr($0, RSTART, RLENGTH) + 0; n++ }
             END { printf "%.0f\n", n ? s / n : 0 }'
    [ -n "$LOOP" ] && kill -- -"$LOOP" 2>/dev/null
    LOOP=
    kill $PID 2>/dev/null
    wait $PID 2>/dev/null
    PID=
}
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
    REDIS_N=${BENCH_REAL_REDIS_N:-$(redis_calibrate 6)}
    echo "== redis-server (core $CORE_S) under redis-benchmark (core $CORE_C; SET,GET x$REDIS_N, 50 clients):" \
        "requests/s, $ROUNDS alternating rounds; $(load)"
    for r in $(seq "$ROUNDS"); do
        for c in $(rotate "$r" none idle cpu allocs none2); do redis_round $c >>"$T/redis.$c"; done
    done
    report redis req/s %.0f none none2 idle cpu allocs
    echo "  (cpu: /debug/pprof/profile?seconds=5 back to back; allocs: /allocs_profile?duration=5 back to back; $(load))"
else
    echo "== redis: redis-server/redis-benchmark not installed (scripts/deps.sh server)"
fi

# ---- 2. python3 and gzip at 100 Hz -----------------------------------------
cat >$T/work.py <<'PYEOF'
import sys
sys.stdin.read()  # wait until the profiler runs
words = ["w%d" % (i * 7919 % 100003) for i in range(20000)]
t = 0
for r in range(int(sys.argv[1])):
    d = {}
    for i, w in enumerate(words):
        d[w + str(r)] = [i, w.upper(), {"k": i * r}]
    s = sorted(d.items(), key=lambda kv: kv[1][0] ^ r)
    t += len(" ".join(k for k, _ in s[:5000]))
print(t)
PYEOF
# ~200 MB of text: 8 MB of random words repeated (gzip's window is 32 KiB, so
# the repetition does not make it easier).
$PY - "$T/chunk" <<'PYEOF'
import random, sys
random.seed(1)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 10)))
         for _ in range(5000)]
with open(sys.argv[1], "w") as f:
    while f.tell() < 8000000:
        f.write(" ".join(random.choice(words) for _ in range(12)) + " %d\n" % random.randint(0, 1 << 30))
PYEOF
for _ in $(seq "${BENCH_REAL_GZIP_CHUNKS:-25}"); do cat "$T/chunk"; done >"$T/data"
rm -f "$T/chunk"

prog_run() { # CONFIG FEED CMD...: "wall cpu" of CMD, whose stdin FEED writes once the profiler runs
    local c=$1 feed=$2 pf=$T/port.$RANDOM sub t0 t1 kid
    shift 2
    rm -f "$T/go" "$T/times"
    mkfifo "$T/go"
    # Held open read-write here, the FIFO opens at once for CMD (whose
    # library then starts) and reaches EOF when this shell closes fd 4.
    exec 4<>"$T/go"
    # `times` in a subshell that ran only CMD: CMD's own user and sys CPU
    # (taskset and env exec it: one process; only CMD loads a preload).
    case $c in
    none | none2) ( taskset -c $CORE_S "$@" <"$T/go" >/dev/null 2>&1; times >"$T/times" ) 4>&- 2>/dev/null & ;;
    ours) ( taskset -c $CORE_S env PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$pf PROFEP_LOG=warn \
        LD_PRELOAD=$LIB "$@" <"$T/go" >/dev/null 2>&1; times >"$T/times" ) 4>&- 2>/dev/null & ;;
    gperf) ( taskset -c $CORE_S env CPUPROFILE=$T/gperf.prof CPUPROFILE_FREQUENCY=100 \
        LD_PRELOAD=$GPERF "$@" <"$T/go" >/dev/null 2>&1; times >"$T/times" ) 4>&- 2>/dev/null & ;;
    esac
    sub=$!
    # Close fd 4 only once CMD holds the FIFO open: closed before, the
    # FIFO would have no writer and CMD's open would wait forever.
    for _ in $(seq 1000); do
        kid=$(cat /proc/$sub/task/$sub/children 2>/dev/null)
        [ -n "$kid" ] && [ "$(readlink /proc/${kid%% *}/fd/0 2>/dev/null)" = "$T/go" ] && break
        sleep 0.01
    done
    [ "$c" = ours ] && curl -s -o /dev/null --max-time 10 "http://$(waitport $pf)/profile_start?delay=0.01"
    t0=$(date +%s%N)
    $feed >&4
    exec 4>&-
    wait $sub
    t1=$(date +%s%N)
    tail -1 "$T/times" | awk -v w=$(((t1 - t0) / 1000000)) '{
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%.3f %.3f\n", w / 1000, u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}
feed_go() { echo go; }
feed_data() { cat "$T/data"; }
prog_group() { # NAME FEED CMD...
    local g=$1 feed=$2 c w cpu cfgs="none ours none2"
    shift 2
    [ -n "$GPERF" ] && cfgs="none ours gperf none2"
    for r in $(seq "$ROUNDS"); do
        for c in $(rotate "$r" $cfgs); do
            read -r w cpu <<<"$(prog_run $c $feed "$@")"
            echo "$w" >>"$T/$g.$c.wall"
            echo "$cpu" >>"$T/$g.$c"
        done
    done
    report $g "s cpu" %.3f none none2 ours gperf
    [ -n "$GPERF" ] && echo "  ours/gperftools cpu (per round) $(ratios "$T/$g.ours" "$T/$g.gperf")"
    [ -n "$GPERF" ] || echo "  gperftools: libprofiler.so not installed (scripts/deps.sh bench)"
}
echo
echo "== python3 (dicts, strings, sort; CPU-bound) at 100 Hz, process CPU, $ROUNDS alternating rounds; $(load)"
prog_group python feed_go $PY "$T/work.py" ${BENCH_REAL_PY_ROUNDS:-80}
echo
echo "== gzip -1 of $(($(stat -c %s "$T/data") / 1000000)) MB of text at 100 Hz, process CPU, $ROUNDS alternating rounds; $(load)"
prog_group gzip feed_data gzip -1 -c

# ---- 3. fork+exec storm -----------------------------------------------------
echo
echo "== fork+exec storm: bash running /bin/true 1000 times, wall s, $ROUNDS alternating rounds; $(load)"
storm() { # CONFIG -> "wall cpu" (bash and all its children)
    local t0 t1
    t0=$(date +%s%N)
    case $1 in
    none | none2) ( bash -c 'for _ in $(seq 1000); do /bin/true; done'; times >"$T/times" ) ;;
    ours) ( PROFEP_ADDR=127.0.0.1:0 PROFEP_LOG=warn LD_PRELOAD=$LIB \
        bash -c 'for _ in $(seq 1000); do /bin/true; done'; times >"$T/times" ) ;;
    esac
    t1=$(date +%s%N)
    tail -1 "$T/times" | awk -v w=$(((t1 - t0) / 1000000)) '{
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%.3f %.3f\n", w / 1000, u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}
for r in $(seq "$ROUNDS"); do
    for c in $(rotate "$r" none ours none2); do
        read -r w cpu <<<"$(storm $c)"
        echo "$w" >>"$T/storm.$c"
        echo "$cpu" >>"$T/stormcpu.$c"
    done
done
report storm "s wall" %.3f none none2 ours
report stormcpu "s cpu" %.3f none none2 ours
awk -v n="$(stat3 "$T/storm.none" | cut -d' ' -f1)" -v o="$(stat3 "$T/storm.ours" | cut -d' ' -f1)" \
    'BEGIN { printf "  per process: +%.2f ms wall with the library (medians); %s\n", o - n, "" }' | sed 's/; $//'
echo "  ($(load))"
