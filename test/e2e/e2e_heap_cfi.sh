#!/usr/bin/env bash
# e2e_heap_cfi.sh: heap samples are walked by cached unwind-table rules
# (stack/cfi.c), with libunwind only where the rules give up.  The check
# build (libprofendpoints-cfiverify.so) walks every such sample with
# libunwind too; in programs nobody here wrote (python3 with threads, perl,
# redis-server under redis-benchmark, node when present) and in C++ built
# -O2 without frame pointers (exceptions, threads, deep recursion) the two
# must agree on every sample, the rules must walk nearly all of them (node's
# JIT frames excepted), and each program's output must be unchanged.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
VFY=$BUILD/libprofendpoints-cfiverify.so
[ -f "$VFY" ] || { echo "SKIP: $VFY not built"; exit 77; }

# counts NAME ERRFILE MIN_SAME MAX_GAVE_UP_PERCENT: the check build's counts line
counts() {
    local name=$1 err=$2 min=$3 maxpct=$4 line same differ gave
    line=$(grep '^cfi verify: [0-9]' "$err" | tail -1)
    read -r same differ gave <<<"$(sed -E 's/.* ([0-9]+) same, ([0-9]+) differ, ([0-9]+) gave up.*/\1 \2 \3/' <<<"$line")"
    if [ -z "$line" ] || [ -z "$same" ]; then
        bad "$name: no counts ($(tail -2 "$err"))"
        return
    fi
    [ "$differ" = 0 ] && [ "$same" -ge "$min" ] &&
        ok "$name: $same samples the same both ways, $differ differ" ||
        { bad "$name: $same same, $differ differ (want 0, and at least $min same)"; grep -m6 '^cfi verify: r\|^cfi verify: l' "$err"; }
    [ $((gave * 100)) -le $(((same + gave) * maxpct)) ] &&
        ok "$name: the rules gave up on $gave of $((same + gave)) (at most $maxpct%)" ||
        bad "$name: the rules gave up on $gave of $((same + gave)), want at most $maxpct%"
}

# run NAME MIN_SAME MAX_GAVE_UP_PERCENT CMD...: once plain, once with the check
# build at a 4 KiB heap rate; compares the outputs and reads the counts
run() {
    local name=$1 min=$2 maxpct=$3
    shift 3
    "$@" >"$T/$name.plain" 2>/dev/null
    env LD_PRELOAD="$VFY" PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=4096 PROFEP_LOG=warn "$@" \
        >"$T/$name.out" 2>"$T/$name.err"
    cmp -s "$T/$name.plain" "$T/$name.out" && ok "$name: output unchanged" ||
        bad "$name: output changed: $(diff "$T/$name.plain" "$T/$name.out" | head -3)"
    counts "$name" "$T/$name.err" "$min" "$maxpct"
}

run python3 2000 2 python3 -c '
import json, threading
def work(k):
    d = [{"a": i, "b": str(i) * 10, "k": k} for i in range(40000)]
    json.loads(json.dumps(d))
ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
[t.start() for t in ts]; work(9); [t.join() for t in ts]
print("done")'

run perl 2000 2 perl -e 'my %h; for my $i (1 .. 200000) { $h{"k$i"} = [$i, "x" x ($i % 40)] } print scalar(keys %h), "\n"'

cat >"$T/walk.cc" <<'EOF'
// -O2, no frame pointers: allocations under exceptions, threads, recursion
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
static long deep(int d, long acc) {
    if (d == 0) {
        std::vector<std::string> v;
        for (int i = 0; i < 8; i++) v.emplace_back(std::to_string(acc + i) + std::string(48, 'a'));
        return (long)v.back().size();
    }
    std::string s(d % 7 + 20, 'b');
    return deep(d - 1, acc + (long)s.size()) + 1;
}
static long work(int t) {
    long sum = 0;
    std::map<std::string, int> m;
    for (int i = 0; i < 20000; i++) {
        try {
            if (i % 500 == 0) throw std::runtime_error(std::string(200, 'x'));
            sum += deep(i % 40, t);
        } catch (const std::exception &e) { sum += 3; }
        m[std::to_string(i % 1000)] += 1;
    }
    return sum + (long)m.size();
}
int main() {
    long sums[4] = {0};
    std::vector<std::thread> th;
    for (int t = 0; t < 3; t++) th.emplace_back([&sums, t] { sums[t] = work(t); });
    sums[3] = work(3);
    for (auto &x : th) x.join();
    std::printf("%ld %ld %ld %ld\n", sums[0], sums[1], sums[2], sums[3]);
}
EOF
if g++ -O2 -fomit-frame-pointer -pthread -o "$T/walk" "$T/walk.cc"; then
    run cxx-O2 2000 2 "$T/walk"
else
    bad "g++ could not build the C++ program"
fi

scripts/deps.sh server >/dev/null 2>&1 || echo "note: scripts/deps.sh server failed"
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
    # a free port, another if it was taken meanwhile (redis-server exits at once)
    for _ in 1 2 3 4 5; do
        rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') # free, not another test's
        env LD_PRELOAD="$VFY" PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=4096 PROFEP_LOG=warn \
            redis-server --port $rport --save '' --appendonly no --dir "$T" >"$T/redis.out" 2>"$T/redis.err" &
        rpid=$!
        for _ in $(seq 300); do
            redis-cli -p $rport ping >/dev/null 2>&1 && break 2
            kill -0 $rpid 2>/dev/null || break
            sleep 0.1
        done
        kill $rpid 2>/dev/null
        wait $rpid
    done
    redis-benchmark -p $rport -n 30000 -q -t set,lpush,get,hset >/dev/null 2>&1
    got=$(redis-cli -p $rport dbsize 2>/dev/null)
    redis-cli -p $rport shutdown nosave >/dev/null 2>&1
    wait $rpid
    [ -n "$got" ] && [ "$got" -gt 0 ] && ok "redis-server: served redis-benchmark ($got keys)" ||
        bad "redis-server did not serve ($got)"
    counts redis-server "$T/redis.err" 2000 2
else
    echo "note: redis-server not installed; skipped it"
fi

if command -v node >/dev/null; then
    # JIT frames have no unwind tables: those samples go to libunwind's walk
    run node 500 100 node -e 'let a = []; for (let i = 0; i < 200000; i++) a.push({x: i, s: "y".repeat(i % 50)}); console.log(a.length)'
fi
pe_finish
