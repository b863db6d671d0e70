# bench_lib.sh: helpers the bench scripts share (sourced, not run).
# redis_calibrate wants CORE_S and CORE_C (the server's and the client's CPU).

load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; }

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

rotate() { # ROUND WORDS...: the words rotated by ROUND, so no configuration always runs first
    local r=$1; shift
    local a=("$@") n=$#
    for i in $(seq 0 $((n - 1))); do printf '%s ' "${a[$(((i + r) % n))]}"; done
}

ratios() { # FILE BASEFILE: per-round ratios, "median [min-max]"
    paste "$1" "$2" | awk '$2 > 0 { print $1 / $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.4f [%.4f-%.4f]", v[int((NR + 1) / 2)], v[1], v[NR]; else printf "n/a" }'
}

redis_calibrate() { # SECONDS: SET,GET requests (each) for a run of about SECONDS at today's speed
    local port=$((20000 + RANDOM % 20000)) pid rps
    taskset -c $CORE_S redis-server --port $port --save "" --appendonly no --daemonize no >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.05; done
    rps=$(taskset -c $CORE_C redis-benchmark -p $port -t set,get -n 20000 -c 50 -q 2>/dev/null | tr '\r' '\n' |
        awk 'match($0, /[0-9.]+ requests per second/) { s += substr($0, RSTART, RLENGTH) + 0; n++ }
             END { printf "%.0f", n ? s / n : 10000 }')
    kill $pid; wait $pid 2>/dev/null
    echo $((rps * $1 / 2 / 1000 * 1000 + 1000))
}
