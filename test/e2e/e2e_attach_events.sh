#!/usr/bin/env bash
# e2e_attach_events: process events after an attach (issue 41).  Once
# attached, p_attach_events starts a thread (spawn_late), closes every
# descriptor from 3 up, forks a child and reaps it: the server still answers
# (the descriptor guard kept ours), threadcreate names spawn_late (the
# pthread_create interposer), the child's status is its own (7); and detach
# leaves every slot as before.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl go python3 readelf
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (make tests)"; exit 77; }

shim_start ev LD_BIND_NOW=1 -- "$BUILD/test/p_attach_events" "$T/go"
shim_wait ev waiting || { bad "p_attach_events did not start"; cat "$T/ev.err"; pe_finish; }
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
shim_cmd attach && ok "attached: $SHIM_LINE" || { bad "attach: $SHIM_RC $SHIM_LINE"; pe_finish; }
touch "$T/go"
shim_wait ev done 60 || { bad "p_attach_events did not finish"; cat "$T/ev.err"; }
[ "$(val ev done)" = 7 ] && ok "the fork child's status is its own (7)" || bad "child status '$(val ev done)'"
code=$(pe_fetch /debug/pprof/ "$T/index")
[ "$code" = 200 ] && ok "the server answers after the program closed every descriptor" ||
    bad "the index answered $code after the closes"
code=$(pe_fetch /debug/pprof/threadcreate "$T/tc.pb.gz")
[ "$code" = 200 ] && go tool pprof -traces "$T/tc.pb.gz" 2>/dev/null | grep -q spawn_late &&
    ok "threadcreate names spawn_late (started after the attach)" || bad "threadcreate ($code) without spawn_late"
shim_cmd detach && ok "detached: $SHIM_LINE" || bad "detach: $SHIM_RC $SHIM_LINE"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
pe_stop
pe_finish
