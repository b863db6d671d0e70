// workers_exit.js: 8 worker_threads burn CPU and allocate; the main thread
// ends the process with process.exit(0) after argv[2] ms (default 1500),
// while the workers still run (e2e_exit_pprof).
const { Worker, isMainThread } = require('worker_threads');
const ms = +process.argv[2] || 1500;
if (isMainThread) {
    for (let i = 0; i < 8; i++) new Worker(__filename);
    setTimeout(() => process.exit(0), ms);
} else {
    let x = 0, keep = [];
    for (;;) {
        for (let i = 0; i < 1e5; i++) x += Math.sqrt(i);
        keep.push(new Array(64).fill(x));
        if (keep.length > 1000) keep = [];
    }
}
