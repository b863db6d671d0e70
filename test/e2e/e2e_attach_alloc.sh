#!/usr/bin/env bash
# e2e_attach_alloc: attach/detach cycles on 8 threads allocating at full
# speed (their blocks checked before every free): each cycle bounded (30 s
# each way), no crash, the program's checks pass and it exits 0.  And a
# program started under LD_PRELOAD: `profep detach` stops our threads and
# gives back SIGPROF, a later `profep attach` serves again (its heap profile
# too: its interposers were there from the start).
source test/e2e/lib.sh
pe_need curl timeout
P=$BUILD/test
INJ=$BUILD/profep-inject
CYCLES=${ATTACH_ALLOC_CYCLES:-30}
[ -x "$INJ" ] || { echo "SKIP: $INJ not built"; exit 77; }
attach() { PROFEP_ADDR=127.0.0.1:0 timeout 30 "$INJ" attach "$1" --lib "$LIB"; }
detach() { timeout 30 "$INJ" detach "$1" --lib "$LIB"; }
addr_of() { grep -o 'http://[0-9.]*:[0-9]*' <<<"$1" | head -1; }

rm -f "$T/in"; mkfifo "$T/in"
"$P/p_attach_alloc" <"$T/in" >"$T/al.out" 2>"$T/al.err" &
PE_PID=$!
exec 3>"$T/in"
eventually 10 grep -q ready "$T/al.out" || { bad "p_attach_alloc did not start"; pe_finish; }
fails=0
for i in $(seq "$CYCLES"); do
    out=$(attach $PE_PID) || { fails=$((fails + 1)); echo "  cycle $i attach ($?): $out"; }
    [ $((i % 5)) = 1 ] && curl -s -o /dev/null -m 20 "$(addr_of "$out")/debug/pprof/profile?seconds=0.5"
    out=$(detach $PE_PID) || { fails=$((fails + 1)); echo "  cycle $i detach ($?): $out"; }
    kill -0 $PE_PID 2>/dev/null || break
done
check "$CYCLES attach/detach cycles on 8 allocating threads, each within 30 s" [ $fails = 0 ]
check "the program is alive after them ($(cat "$T/al.err"))" kill -0 $PE_PID
exec 3>&-
eventually 20 bash -c "! kill -0 $PE_PID 2>/dev/null"
wait $PE_PID; st=$?
PE_PID=
check "its blocks were intact at every free and it exits 0 ($(cat "$T/al.out" | tr '\n' ' '))" \
    bash -c "[ $st = 0 ] && grep -q '^ops [1-9]' '$T/al.out'"

# ---- started under LD_PRELOAD, detached, attached again -------------------------------------
pe_start_ready pre -- "$P/p_attach_block" || pe_finish
pid=$PE_PID
ours=$(ls /proc/$pid/task | wc -l)
out=$(detach $pid)
check "detach a process started under LD_PRELOAD ($out)" grep -q "detached from pid $pid" <<<"$out"
check "its server stopped" bash -c "! curl -s -o /dev/null --max-time 5 'http://$PE_ADDR/debug/pprof/'"
check "only the program's 11 threads left (were $ours)" eventually 10 [ "$(ls /proc/$pid/task | wc -l)" = 11 ]
out=$(attach $pid)
a=$(addr_of "$out")
check "attach it again: serving ($out)" [ -n "$a" ]
check "its heap profile answers 200 (the interposers were there from the start)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/debug/pprof/heap")" = 200 ]
out=$(detach $pid)
check "and detach again ($out)" grep -q detached <<<"$out"
pe_stop_ready pre && ok "the preloaded program exits 0"
pe_finish
