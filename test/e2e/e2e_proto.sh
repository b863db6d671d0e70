#!/usr/bin/env bash
# e2e_proto: the pprof encoder read back by independent readers.  u_prof
# --write makes a fixed profile (known functions of u_prof itself, getpid,
# a named pseudo-frame, an unknown address); go tool pprof -raw/-top and
# protoc --decode must see the names, values, labels, mappings and build id.
# With --no-names, go tool pprof must name the frames itself from the
# binary, which only works if the mapping's start/limit/offset are right.
source test/e2e/lib.sh
U=$BUILD/test/u_prof
command -v go >/dev/null || { echo "skip: go not installed"; exit 77; }
[ -x "$U" ] || { echo "skip: $U not built (make $U)"; exit 77; }

raw() { # file [pprof args]: -raw output into $T/<name>.raw; fails if pprof does
    local f=$1; shift
    go tool pprof -raw "$@" "$f" >"${f%.pb.gz}.raw" 2>&1
}
top() { # file [pprof args]: -top output
    local f=$1; shift
    go tool pprof -top "$@" "$f" 2>/dev/null
}
col() { # top-output func column: flat (1) or cum (4) of func
    awk -v fn="$2" -v c="$3" '$6 == fn { print $c; found = 1 } END { if (!found) print "none" }' "$1"
}
expect() { # message, got, want
    if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}

# ---- named profile ------------------------------------------------------------
check "u_prof --write succeeds" "$U" --write "$T/p.pb.gz"
check "go tool pprof -raw reads it" raw "$T/p.pb.gz"
grep -q '^PeriodType: cpu nanoseconds' "$T/p.raw" && ok "period type" || bad "period type"
grep -q '^Period: 10000000' "$T/p.raw" && ok "period" || bad "period"
grep -q '^Comment: u_prof fixed profile 1' "$T/p.raw" && ok "comment" || bad "comment"
grep -q '^Duration: 1s' "$T/p.raw" && ok "duration" || bad "duration"
grep -q 'samples/count cpu/nanoseconds\[dflt\]' "$T/p.raw" && ok "sample types, default cpu" ||
    bad "sample types, default cpu"
grep -Eq '^ +3 +30000000: [0-9]+ [0-9]+ [0-9]+ *$' "$T/p.raw" && ok "merged sample 3 / 30 ms" ||
    bad "merged sample 3 / 30 ms"
grep -q 'thread:\[101\]' "$T/p.raw" && grep -q 'thread_name:\[worker\]' "$T/p.raw" &&
    ok "labels" || bad "labels"
for fn in leaf_static mid_static u_prof_root getpid '\[truncated\]'; do
    grep -Eq "^ +[0-9]+: 0x[0-9a-f]+ .*$fn :0" "$T/p.raw" && ok "location named $fn" ||
        bad "location named $fn"
done
grep -Eq '^ +[0-9]+: 0x1000 *$' "$T/p.raw" && ok "unknown address left unnamed" ||
    bad "unknown address left unnamed"
grep -Eq "^1: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ .*/u_prof [0-9a-f]+ \[FN\]" "$T/p.raw" &&
    ok "mapping 1 is u_prof, with functions" || bad "mapping 1 is u_prof, with functions"
if command -v readelf >/dev/null; then
    want=$(readelf -n "$U" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
    got=$(sed -n 's|^1: .*/u_prof \([0-9a-f]*\) .*|\1|p' "$T/p.raw")
    expect "build id matches readelf" "$got" "$want"
fi

top "$T/p.pb.gz" >"$T/p.top"
grep -q 'Total samples = 90ms' "$T/p.top" && ok "total 90ms" || bad "total 90ms"
expect "leaf_static flat" "$(col "$T/p.top" leaf_static 1)" 40ms
expect "mid_static flat" "$(col "$T/p.top" mid_static 1)" 20ms
expect "mid_static cum" "$(col "$T/p.top" mid_static 4)" 60ms
expect "u_prof_root cum" "$(col "$T/p.top" u_prof_root 4)" 80ms
expect "[truncated] flat" "$(col "$T/p.top" '[truncated]' 1)" 10ms
top "$T/p.pb.gz" -sample_index=samples >"$T/p.top2"
expect "leaf_static samples" "$(col "$T/p.top2" leaf_static 1)" 4

if command -v protoc >/dev/null; then
    if gzip -dc "$T/p.pb.gz" | protoc --decode perftools.profiles.Profile -I proto \
        proto/profile.proto >"$T/p.txt" 2>&1; then
        ok "protoc decodes it"
        expect "string_table[0] is empty" "$(grep -m1 '^string_table:' "$T/p.txt")" 'string_table: ""'
        expect "6 samples" "$(grep -c '^sample {' "$T/p.txt")" 6
    else
        bad "protoc decodes it: $(head -3 "$T/p.txt")"
    fi
fi

# ---- no names: go tool pprof symbolizes from the binary ------------------------------
check "u_prof --write --no-names succeeds" "$U" --write "$T/n.pb.gz" --no-names
# -symbolize=none: show the mapping as sent, before pprof fills in names.
check "go tool pprof -raw reads it" raw "$T/n.pb.gz" -symbolize=none
grep -Eq '^1: .*/u_prof [0-9a-f]+ *$' "$T/n.raw" && ok "mapping without [FN]" ||
    bad "mapping without [FN]: $(grep '^1:' "$T/n.raw")"
top "$T/n.pb.gz" -sample_index=samples >"$T/n.top"
expect "pprof names leaf_static itself" "$(col "$T/n.top" leaf_static 1)" 4
expect "pprof names mid_static itself" "$(col "$T/n.top" mid_static 4)" 6
expect "pseudo-frame keeps its name" "$(col "$T/n.top" '[truncated]' 1)" 1

# ---- a stripped Debian binary: exported names come from .dynsym ------------------------
PY=/usr/bin/python3.11
if [ -x $PY ] && [ -f "$BUILD/libpe_core.a" ] && command -v cc >/dev/null; then
    # pe_sym_symbolize is hidden in the library; a tiny wrapper exports it to ctypes (linked
    # with the library's own dependencies: the core archive's objects reach nanopb and civetweb).
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'const char *pe_sym_symbolize(uintptr_t, char *, size_t);' \
        '__attribute__((visibility("default"))) const char *' \
        'sym(uintptr_t a, char *b, size_t n) { return pe_sym_symbolize(a, b, n); }' >"$T/symw.c"
    if cc -shared -fPIC -o "$T/symw.so" "$T/symw.c" "$BUILD/libpe_core.a" -lz -l:libprotobuf-nanopb.a -lcivetweb -lpthread -ldl; then
        got=$($PY - "$T/symw.so" <<'PYEOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.sym.restype = ctypes.c_char_p
lib.sym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
buf = ctypes.create_string_buffer(256)
out = []
for name in ["PyObject_Call", "PyList_Append", "PyEval_EvalCode"]:
    addr = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    r = lib.sym(addr + 3, buf, 256)
    out.append(r.decode() if r else "NULL")
print(" ".join(out))
PYEOF
)
        expect "$PY .dynsym names" "$got" "PyObject_Call PyList_Append PyEval_EvalCode"
    else
        bad "building the symbolize wrapper"
    fi
else
    echo "skip: $PY .dynsym check (no $PY, $BUILD/libpe_core.a or cc)"
fi

pe_finish
