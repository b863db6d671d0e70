// busy.js: a CPU workload whose hot functions a JavaScript author would name:
// a recursive fib and a JSON.stringify loop (jsonWork).  Runs for argv[2]
// seconds (default 10).  Used by e2e_node.sh and bench_jit.sh.
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
    const end = Date.now() + secs * 1000;
    let sink = 0;
    while (Date.now() < end) {
        sink += fib(22);
        sink += jsonWork(2000);
    }
    console.log('done', sink > 0);
}

main();
