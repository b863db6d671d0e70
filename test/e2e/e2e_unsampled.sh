#!/usr/bin/env bash
# e2e_unsampled: every thread is accounted for (issue 38, item 2).  p_sigprof_half
# runs 4 busy threads, 2 of which block SIGPROF: a CPU and a wall profile say in
# their comments that 2 threads block SIGPROF (and which), the index page says
# it, goroutine?debug=2 marks those 2 threads and no other, and the CPU profile
# has samples of the other two only.
source test/e2e/lib.sh
P=$BUILD/test
pe_need go curl

# the timer engine's accounting: perf events (the default where allowed) sample
# threads that block SIGPROF (e2e_cpu_perf)
PE_ENV=PROFEP_CPU_ENGINE=timer pe_start $P/p_sigprof_half 60 || exit 1
eventually 20 grep -q '^ready$' "$PE_OUT" || { bad "p_sigprof_half never ready"; pe_finish; }
blk=$(awk '$2 == "busy-blk" { print $1 }' "$PE_OUT" | sort -n | tr '\n' ' ')

code=$(pe_fetch '/debug/pprof/profile?seconds=1' $T/cpu.pb.gz)
check "cpu profile: 200 ($code)" [ "$code" = 200 ]
go tool pprof -comments $T/cpu.pb.gz >$T/cpu.comments 2>/dev/null
check "cpu comments: 2 threads block SIGPROF ($(grep unsampled $T/cpu.comments))" \
    grep -q 'unsampled: 2 threads block SIGPROF' $T/cpu.comments
for t in $blk; do
    check "cpu comments name blocking thread $t" grep -q "unsampled:.*tids.*\b$t\b" $T/cpu.comments
done
go tool pprof -raw $T/cpu.pb.gz 2>/dev/null >$T/cpu.raw
check "cpu samples: the open threads are sampled" grep -q 'busy-open' $T/cpu.raw
check "cpu samples: no blocking thread is" bash -c "! grep -q 'busy-blk' $T/cpu.raw"

code=$(pe_fetch '/debug/fgprof?seconds=1&format=pprof' $T/wall.pb.gz)
check "wall profile: 200 ($code)" [ "$code" = 200 ]
go tool pprof -comments $T/wall.pb.gz >$T/wall.comments 2>/dev/null
check "wall comments: 2 threads block SIGPROF ($(grep -E 'unsampled|engine|perf' $T/wall.comments | tr '\n' ' '))" \
    grep -q 'unsampled: 2 threads block SIGPROF.*wall samples' $T/wall.comments

idx=$(pe_get /debug/pprof/)
check "index: 2 block SIGPROF" grep -q '2 block SIGPROF' <<<"$idx"

txt=$(pe_get '/debug/pprof/goroutine?debug=2')
check "debug=2: a count line" grep -q '^unsampled: 2 of [0-9]* threads block SIGPROF' <<<"$txt"
marked=$(awk '/^goroutine / { tid = $2 } /^# unsampled: blocks SIGPROF/ { print tid }' <<<"$txt" |
    sort -n | tr '\n' ' ')
check "debug=2 marks exactly the blocking threads ($marked = $blk)" [ "$marked" = "$blk" ]
check "the program still runs" kill -0 $PE_PID
pe_stop
pe_finish
