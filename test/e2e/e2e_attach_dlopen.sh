#!/usr/bin/env bash
# e2e_attach_dlopen: a library loaded after the attach (issue 41).
# p_attach_dlopen dlopens libpe_attach_plugin.so (its slots on a read-only
# RELRO page) once attached and keeps 64 MiB from plugin_site: that site is
# in the heap profile; after detach the plugin's malloc and free slots hold
# libc's functions again, and every slot of the objects loaded before the
# attach is as it was.
cd "$(dirname "$0")/../.." || exit 1
source test/e2e/lib.sh
source test/e2e/attach_shim.sh
pe_need curl go python3 readelf
PLUGIN=$BUILD/test/libpe_attach_plugin.so
[ -f "$SHIM" ] && [ -f "$PLUGIN" ] || { echo "SKIP: the attach test libraries are not built (make tests)"; exit 77; }

SHIM_SETTINGS='PROFEP_HEAP_RATE=65536'
shim_start dl LD_BIND_NOW=1 -- "$BUILD/test/p_attach_dlopen" "$T/go" "$PLUGIN"
shim_wait dl waiting || { bad "p_attach_dlopen did not start"; cat "$T/dl.err"; pe_finish; }
python3 test/e2e/got_check.py snap "$PE_PID" "$T/before.json" || bad "cannot read the slots before"
shim_cmd attach && ok "attached: $SHIM_LINE" || { bad "attach: $SHIM_RC $SHIM_LINE"; pe_finish; }
touch "$T/go"
shim_wait dl loaded 60 || { bad "the plugin was not loaded"; cat "$T/dl.err"; pe_finish; }
kept=$(val dl kept)
code=$(pe_fetch /debug/pprof/heap "$T/heap.pb.gz")
[ "$code" = 200 ] || bad "/debug/pprof/heap answered $code"
got=$(bytes_flat "$T/heap.pb.gz" inuse_space plugin_site)
within "$got" "$kept" 10 && ok "plugin_site in use $got of $kept kept ($(pct "$got" "$kept"))" ||
    bad "plugin_site in use $got, want $kept within 10%"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/attached.json" "$T/before.json"
malloc=$(val dl libc_malloc)
slot() { # FILE NAME: the plugin's slot of NAME in snapshot FILE, in hex
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for p, o in d.items():
    if p.endswith("libpe_attach_plugin.so"):
        for k, v in o["slots"].items():
            if k.split()[1].split("@")[0] == sys.argv[2]: print(hex(v))' "$1" "$2"
}
m1=$(slot "$T/attached.json" malloc)
[ -n "$m1" ] && [ "$((m1))" != "$((malloc))" ] && ok "while attached the plugin's malloc slot is ours ($m1)" ||
    bad "the plugin's malloc slot while attached: '$m1' (libc's $malloc)"
shim_cmd detach && ok "detached: $SHIM_LINE" || bad "detach: $SHIM_RC $SHIM_LINE"
python3 test/e2e/got_check.py snap "$PE_PID" "$T/after.json" "$T/before.json"
m2=$(slot "$T/after.json" malloc); f2=$(slot "$T/after.json" free)
libc_free=$(val dl libc_free)
[ -n "$m2" ] && [ "$((m2))" = "$((malloc))" ] && ok "after detach the plugin's malloc slot is libc's again" ||
    bad "the plugin's malloc slot after detach: '$m2', libc's $malloc"
[ -n "$f2" ] && [ -n "$libc_free" ] && [ "$((f2))" = "$((libc_free))" ] && ok "and its free slot too" ||
    bad "the plugin's free slot after detach: '$f2', libc's $libc_free"
out=$(python3 test/e2e/got_check.py same "$T/before.json" "$T/after.json") &&
    ok "after detach: $out" || { bad "after detach, not as before:"; echo "$out"; }
pe_stop_ready dl && ok "the program ended with status 0"
pe_finish
