#!/usr/bin/env bash
# e2e_names: what people read.  Programs built as distributions build them
# (test/progs/lines/: gcc -O2 -g, clang -O2 -g (DWARF 5), gcc -gdwarf-4,
# gcc -gz (compressed sections), g++ -O2 -g, and a stripped binary whose
# debug info is found through .gnu_debuglink) are profiled; every location of
# the program and of libc (with libc6-dbg) is compared with llvm-symbolizer
# --inlining, the truth: at least 99% the same innermost (function, file:line),
# 95% the same whole inline chain (test/e2e/lines_check.py).  Then the views:
# Julia's "File:Line; Function" text, folded stacks with inlined frames, the
# flame graph's tooltips and granularity=lines, Go's debug=1 FILE:LINE, C++
# and Rust names readable everywhere (names=full keeps parameters), pprof's
# system_name mangled, and go tool pprof -top/-raw naming everything without
# reading the binary again.  No view names a symbol version (@@GLIBC_2.34);
# glibc's msort_with_tmp, recursive and inlined into itself, has the chains
# llvm-symbolizer gives.  node without --perf-basic-prof gets a hint.
cd "$(dirname "$0")/../.." || exit 1
scripts/deps.sh names >/dev/null 2>&1 || echo "note: scripts/deps.sh names failed"
source test/e2e/lib.sh
pe_need curl go python3 gcc g++ llvm-symbolizer objcopy
SRC=test/progs/lines
GOLINES=$T/golines
env -u GOFLAGS GO111MODULE=off GOPATH=/usr/share/gocode go build -o "$GOLINES" ./test/e2e/golines \
    >$T/gobuild.log 2>&1 || { cat $T/gobuild.log; bad "build test/e2e/golines"; pe_finish; }

# profile NAME PROG: a 3 s CPU profile at 1000 Hz of PROG 8, its locations in $T/NAME.lines
profile() {
    pe_start "$2" 8 || return 1
    pe_get '/profile?duration=3&delay=0.001' -o "$T/$1.pb.gz"
    "$GOLINES" "$T/$1.pb.gz" >"$T/$1.lines"
    pe_stop
}
# lines NAME SUFFIX [min args]: lines_check on the locations of objects ending in SUFFIX
lines() {
    python3 test/e2e/lines_check.py "$T/$1.lines" "${@:2}" >"$T/$1.check" 2>&1
    local rc=$?
    sed 's/^/  | /' "$T/$1.check" | tail -5
    return $rc
}

# ---- the truth: names, files, lines and inline chains ------------------------------------
gcc -O2 -g -o $T/w-gcc $SRC/work.c
gcc -O2 -g -gdwarf-4 -o $T/w-dw4 $SRC/work.c
gcc -O2 -g -gz -o $T/w-gz $SRC/work.c
g++ -O2 -g -o $T/w-cxx $SRC/work.cc
gcc -O2 -g -o $T/w-link $SRC/work.c &&
    objcopy --only-keep-debug $T/w-link $T/w-link.debug &&
    objcopy --strip-debug --add-gnu-debuglink=$T/w-link.debug $T/w-link
check "w-gz has compressed debug sections" bash -c "readelf -S $T/w-gz | grep -A1 '.debug_info' | grep -q ' C '"
progs="w-gcc w-dw4 w-gz w-cxx w-link"
if command -v clang >/dev/null; then
    clang -O2 -g -o $T/w-clang $SRC/work.c && progs="$progs w-clang"
else
    echo "note: clang not installed: its DWARF 5 row is skipped"
fi
for w in $progs; do
    profile $w $T/$w || { bad "$w: profiled"; continue; }
    check "$w: names, files, lines and inline chains as llvm-symbolizer gives them" lines $w "/$w"
done
if [ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1; then
    cat $T/w-gcc.lines $T/w-cxx.lines >$T/libc.lines
    check "libc (libc6-dbg): as llvm-symbolizer gives it" lines libc libc.so.6 --min-locs 20
    # glibc's qsort: msort_with_tmp.part.0 calls itself and has msort_with_tmp inlined, so
    # each of its return addresses is 2 frames, as llvm-symbolizer gives them (a stack of 5
    # real calls reads as 10 frames: 5 addresses, not one chain repeated)
    gcc -O2 -g -o $T/w-sort $SRC/sort.c
    if profile w-sort $T/w-sort; then
        check "libc's msort_with_tmp, recursive and inlined into itself: every chain as llvm-symbolizer gives it" \
            lines w-sort libc.so.6 --min-inner 100 --min-chain 100 --min-locs 3
        check "w-sort: msort_with_tmp profiled" grep -q 'msort_with_tmp' $T/w-sort.lines
    else
        bad "w-sort: profiled"
    fi
else
    echo "note: libc6-dbg not installed: libc's rows are skipped"
fi
check "pprof: the program's mapping has functions, files, lines and inline frames" \
    grep -qP "^M\t$T/w-gcc\ttrue\ttrue\ttrue\ttrue$" $T/w-gcc.lines
check "pprof: the inlined helpers are frames of their own (hdr_scramble in work_inl.h)" \
    grep -qP '^F\thdr_scramble\thdr_scramble\t.*/work_inl.h\t[0-9]+$' $T/w-gcc.lines
check "pprof: C++ names readable (short, as pprof's demangler gives them), the mangled one as system_name" \
    grep -qP '^F\tshop::price_all\t_ZN4shop9price_allERSt6vectorIjSaIjEE\t' $T/w-cxx.lines

# ---- go tool pprof reads names and lines from the profile, not from the binary -----------
go tool pprof -top $T/w-cxx.pb.gz >$T/top.txt 2>&1
check "go tool pprof -top: shop::price_all and the inlined (anonymous namespace)::mix" \
    bash -c "grep -q 'shop::price_all' $T/top.txt && grep -q 'mix.*(inline)' $T/top.txt"
check "go tool pprof -top: no row naming only the binary" bash -c "! grep -q '\[w-cxx\]' $T/top.txt"
go tool pprof -raw $T/w-gcc.pb.gz >$T/raw.txt 2>&1
check "go tool pprof -raw: lines and inlined frames" \
    grep -Eq 'hdr_scramble .*/work_inl.h:[0-9]+' $T/raw.txt

# ---- our views -----------------------------------------------------------------------------
pe_start $T/w-cxx 30 || exit 1
pe_get '/profile?duration=2&format=text' >$T/tree.txt
pe_get '/profile?duration=2&format=flat' >$T/flat.txt
pe_get '/profile?duration=2&format=folded' >$T/folded.txt
pe_get '/profile?duration=2&format=svg' >$T/f.svg
pe_get '/profile?duration=2&format=svg&granularity=lines' >$T/l.svg
pe_get '/profile?duration=2&format=text&names=full' >$T/full.txt
pe_get '/debug/pprof/goroutine?debug=1' >$T/g1.txt
pe_get '/debug/pprof/goroutine?debug=2' >$T/g2.txt
pe_get '/debug/pprof/trace?seconds=1' >$T/trace.json
pe_get '/profile?duration=2' >$T/views.pb.gz
pe_stop
go tool pprof -top $T/views.pb.gz >$T/vtop.txt 2>&1
check "text tree: Julia's File:Line; Function (work.cc:NN; shop::price_all)" \
    grep -Eq '[0-9]+ work.cc:[0-9]+; shop::price_all$' $T/tree.txt
check "text tree: templates shortened (stl_algo.h:NN; std::__introsort_loop [clone .isra.0])" \
    grep -Eq ' stl_algo.h:[0-9]+; std::__introsort_loop( \[clone [^]]*\])?$' $T/tree.txt
check "flat: File and Line columns" grep -Eq '^ *[0-9]+ +[0-9]+ work.cc +[0-9]+ shop::price_all$' $T/flat.txt
check "folded: inlined frames (std::sort and std::__sort inlined into shop::price_all)" \
    grep -Eq ';shop::price_all;std::sort;std::__sort;std::__introsort_loop' $T/folded.txt
check "names=full: parameters kept" grep -q 'shop::price_all(std::vector<unsigned int, std::allocator<unsigned int> >&)' $T/full.txt
check "svg: the whole name, [inlined] and the file in the tooltip" \
    grep -Eq '<title>[^<]*mix[^<]*\[inlined\] at [^<]*work.cc \(' $T/f.svg
check "svg: inlined boxes marked" grep -Eq '<g class="f [^"]*inl"' $T/f.svg
check "svg granularity=lines: boxes by File:Line" grep -Eq 'data-n="work.cc:[0-9]+; shop::price_all"' $T/l.svg
check "debug=1: FILE:LINE as Go writes it" grep -Eq $'^#\t0x[0-9a-f]+\tmain\\+0x[0-9a-f]+\t/.*/work.cc:[0-9]+$' $T/g1.txt
check "debug=2: FILE:LINE too" grep -Eq $'^\t/.*/work.cc:[0-9]+( \\+0x[0-9a-f]+)?$' $T/g2.txt
for v in tree.txt flat.txt folded.txt f.svg l.svg g1.txt g2.txt; do
    check "$v: no mangled C++ name" bash -c "! grep -Eq '(^|[^A-Za-z0-9_])_Z[A-Z0-9]' $T/$v"
done
# one rule for names: no symbol version (libc6-dbg's .symtab spells __libc_start_main@@GLIBC_2.34)
check "views name __libc_start_main (the row below is not empty)" grep -q '__libc_start_main' $T/folded.txt
for v in tree.txt flat.txt folded.txt f.svg l.svg g1.txt g2.txt trace.json vtop.txt; do
    check "$v: no symbol version (@@GLIBC_...)" bash -c "! grep -q '@GLIBC' $T/$v"
done

# ---- Rust, both manglings (Debian's rustc) --------------------------------------------------
# Debian's rustc (a rustup proxy on PATH needs a HOME the harness replaces); its
# default mangling is legacy (naming it needs -Z unstable-options there)
RUSTC=$(command -v /usr/bin/rustc || command -v rustc)
if [ -n "$RUSTC" ]; then
    for m in legacy v0; do
        if "$RUSTC" -O -g -C symbol-mangling-version=$m -o $T/rs-$m $SRC/work.rs >$T/rs.log 2>&1 ||
            { [ $m = legacy ] && "$RUSTC" -O -g -o $T/rs-$m $SRC/work.rs >>$T/rs.log 2>&1; }; then
            pe_start $T/rs-$m 30 || { bad "rust $m: started"; continue; }
            sleep 0.5
            pe_get '/profile?duration=2&format=folded' >$T/rs-$m.folded
            pe_get '/debug/pprof/goroutine?debug=1' >>$T/rs-$m.folded
            pe_stop
            check "rust $m: mangled in the binary" bash -c "nm $T/rs-$m | grep -Eq ' (_ZN4work4shop|_RN)'"
            check "rust $m: readable names (work::shop::till), none mangled" \
                bash -c "grep -q 'work::shop::till' $T/rs-$m.folded && ! grep -Eq '(^|[;\t ])(_ZN|_R[A-Z])' $T/rs-$m.folded"
        else
            echo "note: rustc could not build the $m mangling: $(tail -1 $T/rs.log)"
        fi
    done
else
    echo "note: no rustc: the Rust rows are skipped"
fi

# node without --perf-basic-prof: its JIT code has no names; the profile says
# how to get them (a "hint: " comment, first in the text view).
if command -v node >/dev/null; then
    JS=$(cd test/e2e/js && pwd)/busy.js
    mkdir -p $T/nodecwd
    cd $T/nodecwd # node may write its logs into its cwd
    pe_start node "$JS" 8
    cd - >/dev/null
    sleep 1
    pe_get '/profile?duration=2&format=text' >$T/node.txt
    pe_stop
    rm -f /tmp/perf-$PE_PID.map
    check "node without --perf-basic-prof: the text view says --perf-basic-prof" \
        grep -q '^hint: [0-9]*% of the samples run JIT code without names; start node with --perf-basic-prof' $T/node.txt ||
        head -5 $T/node.txt
else
    echo "note: no node: the JIT hint row is skipped"
fi
pe_finish
