#!/usr/bin/env bash
# e2e_attach_mutex: lock contention after an attach (issue 41).  p_mutex_fight
# fights over one mutex for 6 s; the library is attached 1 s in, every wait
# recorded (PROFEP_MUTEX_RATE=1): the mutex and block profiles name its
# contended lock (fight_lock), the block profile its condition wait
# (wait_for_item, after the fight), and detach leaves every slot as before.
# run.sh: alone (the attach must land inside the program's 6 s fight; missed it beside others at load 18)
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl go python3 readelf
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (make tests)"; exit 77; }
cum_ns() {
    go tool pprof -top -unit=ns -nodefraction=0 -nodecount=200 -sample_index=delay "$1" 2>/dev/null |
        awk -v fn="$2" '$NF == fn { v = $4; sub(/ns$/, "", v); printf "%.0f\n", v + 0; found = 1 }
                        END { if (!found) print 0 }'
}

SHIM_SETTINGS='PROFEP_MUTEX_RATE=1'
shim_start fight LD_BIND_NOW=1 -- "$BUILD/test/p_mutex_fight" 6 "$T/truth" 60
sleep 1
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
shim_cmd attach && ok "attached: $SHIM_LINE" || { bad "attach: $SHIM_RC $SHIM_LINE"; pe_finish; }
eventually 60 test -s "$T/truth" || bad "p_mutex_fight wrote no truth"
code=$(pe_fetch /debug/pprof/mutex "$T/mutex.pb.gz")
[ "$code" = 200 ] && ok "/debug/pprof/mutex answers after attach" || bad "mutex answered $code: $(head -c 200 "$T/mutex.pb.gz")"
code=$(pe_fetch /debug/pprof/block "$T/block.pb.gz")
[ "$code" = 200 ] && ok "/debug/pprof/block answers after attach" || bad "block answered $code"
m=$(cum_ns "$T/mutex.pb.gz" fight_lock); b=$(cum_ns "$T/block.pb.gz" fight_lock)
[ "${m:-0}" -gt 0 ] && ok "mutex profile names fight_lock ($m ns)" || bad "mutex profile without fight_lock"
[ "${b:-0}" -gt 0 ] && ok "block profile names fight_lock ($b ns)" || bad "block profile without fight_lock"
for k in mutex block; do # the walk's figures and whatever it left alone, as the heap says them
    go tool pprof -comments "$T/$k.pb.gz" 2>/dev/null | grep -q 'lock interposers since attach at .*relocation slots redirected' &&
        ok "$k profile says what the attach redirected" || bad "$k profile without the attach's note"
done
w=$(cum_ns "$T/block.pb.gz" wait_for_item)
[ "${w:-0}" -gt 0 ] && ok "block profile names wait_for_item ($w ns)" || bad "block profile without wait_for_item"
shim_cmd detach && ok "detached: $SHIM_LINE" || bad "detach: $SHIM_RC $SHIM_LINE"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
pe_stop
pe_finish
