// busy.js: a CPU workload whose hot functions a JavaScript author would name:
// a recursive fib and a JSON.stringify loop (jsonWork).
//   node busy.js SECS                 run for SECS seconds (default 10)
//   node busy.js 0 ROUNDS [WAIT_MS]   exactly ROUNDS rounds after WAIT_MS, then
//                                     print "WALL_S CPU_S" of the rounds (fixed
//                                     work, for scripts/bench_jit.sh)
// Used by e2e_node.sh and bench_jit.sh.
'use strict';

function fib(n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function jsonWork(rounds) {
    let len = 0;
    for (let i = 0; i < rounds; i++) {
        const o = {id: i, name: 'item' + i, tags: ['a', 'b', 'c'], nested: {x: i * 2, y: [i, i + 1]}};
        len += JSON.stringify(o).length;
    }
    return len;
}

function main() {
    const secs = Number(process.argv[2] || 10);
    const rounds = Number(process.argv[3] || 0);
    const end = Date.now() + secs * 1000;
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    let sink = 0;
    for (let r = 0; rounds ? r < rounds : Date.now() < end; r++) {
        sink += fib(22);
        sink += jsonWork(2000);
    }
    if (rounds) {
        const c = process.cpuUsage(c0);
        console.log((Number(process.hrtime.bigint() - t0) / 1e9).toFixed(3), ((c.user + c.system) / 1e6).toFixed(3));
    } else {
        console.log('done', sink > 0);
    }
}

setTimeout(main, Number(process.argv[4] || 0));
